"""The gatekeeper command: in process by default (``tests/helpers/in_process.py``: a fresh
process's environment, working directory and Luigi configuration, for milliseconds instead of
a process's 0.4 s of CPU), or as a real process (``process=True``, ``script=True``) where the
process is what a test checks."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from tests.helpers.in_process import gatekeeper_in_process

ROOT = Path(__file__).resolve().parents[2]
CONSOLE_SCRIPT = Path(sys.executable).parent / "gatekeeper"


def _run(
    command: list[str], cwd: Path | None, env: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def gatekeeper(
    *args: str,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The command with this environment (no ledger URL) plus ``env``: in process, or
    ``python -m gatekeeper.cli`` when ``process``."""
    full_env = {k: v for k, v in os.environ.items() if k != "GATEKEEPER_LEDGER_URL"}
    full_env.update(env or {})
    if not process:
        return gatekeeper_in_process(*args, cwd=cwd, env=full_env)
    return _run([sys.executable, "-m", "gatekeeper.cli", *args], cwd, full_env)


def clean_env(**extra: str) -> dict[str, str]:
    """The environment minus anything that would pick a ledger or a luigi.cfg for the test."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GATEKEEPER_LEDGER_URL", "LUIGI_CONFIG_PATH")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def run_gatekeeper(
    *args: str,
    cwd: Path,
    script: bool = False,
    env: dict[str, str] | None = None,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The command in ``cwd`` and ``env`` (by default ``clean_env()``): in process, or as
    ``python -m gatekeeper.cli`` (``process``) or the installed ``gatekeeper`` script
    (``script``)."""
    if not (process or script):
        return gatekeeper_in_process(*args, cwd=cwd, env=env or clean_env())
    command = [str(CONSOLE_SCRIPT)] if script else [sys.executable, "-m", "gatekeeper.cli"]
    return _run([*command, *args], cwd, env or clean_env())


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def run_main(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from gatekeeper.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err
