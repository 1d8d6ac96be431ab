"""What the Databricks collector tests share: ledger rows, epoch milliseconds, the command."""

from __future__ import annotations

import datetime as dt
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gatekeeper as gk
from tests.helpers.databricks_fake import TOKEN
from tests.helpers.in_process import gatekeeper_in_process

ROOT = Path(__file__).resolve().parents[2]


def at(ms: int) -> dt.datetime:
    """Epoch milliseconds as a UTC datetime."""
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc)


def rows(ledger: gk.Ledger, job: str = "orders") -> list[tuple[str, int, str, str]]:
    """(date, attempt, run ID, state) of every attempt of ``job``."""
    return [(a.business_date, a.attempt, a.run_id, a.state.value) for a in ledger.history(job)]


def command(
    *args: str, env: dict[str, str], process: bool = False
) -> subprocess.CompletedProcess[str]:
    """The ``gatekeeper`` command in ``env``, run from the repository root: in process, or the
    installed console script (``process``)."""
    if not process:
        return gatekeeper_in_process(*args, cwd=ROOT, env=env)
    exe = shutil.which("gatekeeper", path=str(Path(sys.executable).parent))
    assert exe, "the gatekeeper console script is not installed next to this Python"
    return subprocess.run(
        [exe, *args], env=env, capture_output=True, text=True, timeout=60, cwd=ROOT
    )


def clean_env(url: str, **extra: str) -> dict[str, str]:
    """This environment without DATABRICKS_* and GATEKEEPER_*, pointed at the fake ``url``."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABRICKS_", "GATEKEEPER_"))}
    return {**env, "DATABRICKS_HOST": url, "DATABRICKS_TOKEN": TOKEN, **extra}
