"""A reader that goes away (a closed pipe, ``| head``) ends the command quietly, exit 0."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.cli import CONSOLE_SCRIPT, clean_env
from tests.helpers.ledgers import T0


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "console script"])
def test_cli_reader_gone_before_output_ends_quietly(
    filled: str, tmp_path: Path, script: bool
) -> None:
    command = [str(CONSOLE_SCRIPT)] if script else [sys.executable, "-m", "gatekeeper.cli"]
    proc = subprocess.Popen(
        [*command, "history", "A", "--ledger", filled],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the interpreter has even started: every write hits EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert err == ""


def test_cli_history_piped_to_head_ends_quietly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'big.db'}"
    with gk.open_ledger(url) as ledger:
        start = dt.date(2020, 1, 1)
        for day in range(1500):  # ~200 kB of table: more than a pipe buffer holds
            date = (start + dt.timedelta(days=day)).isoformat()
            ledger.record("Big", date, 1, f"run-{date}-" + "x" * 60, "succeeded", T0)
    script = (
        f'"{sys.executable}" -m gatekeeper.cli history Big --ledger "{url}" | head -1; '
        'echo "status=${PIPESTATUS[0]}"'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "date",
        "attempt",
        "state",
        "run_id",
        "started_at",
        "lease",
        "error",
        "reason",
    ]
    assert lines[1] == "status=0"
    assert done.stderr == ""
