"""The gatekeeper command in a subprocess, as a user runs it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path


def gatekeeper(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if k != "GATEKEEPER_LEDGER_URL"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "gatekeeper.cli", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
