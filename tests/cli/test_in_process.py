"""The in-process runner the CLI tests use (``tests/helpers/in_process.py``) gives what a real
process gives: the same exit code, stdout and stderr for the same command line, working
directory and environment; and it leaves this process as it found it."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import luigi.configuration
import pytest

import gatekeeper as gk
from tests.helpers.cli import clean_env, run_gatekeeper
from tests.helpers.in_process import gatekeeper_in_process
from tests.helpers.ledgers import T0

D = "2026-10-23"
CASES = {
    "ok": ["history", "A"],
    "not ready (1)": ["ready", D, "B"],
    "bad input (2)": ["record", "A", "2026-02-30", "1", "r9", "running"],
    "conflict (3)": ["record", "A", D, "1", "r1", "failed"],
    "unknown name (2)": ["status", "Aa", "--start", D, "--json"],
    "usage (2)": ["status", "--no-such-flag"],
    "ledger from luigi.cfg": ["status", "A", "--start", D, "--stop", "2026-10-25"],
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A working directory whose luigi.cfg names a ledger holding A (succeeded) and B (failed)."""
    with gk.open_ledger(f"sqlite:///{tmp_path / 'cfg.db'}") as ledger:
        ledger.record("A", D, 1, "r1", "succeeded", T0)
        ledger.record("B", D, 1, "r2", "failed", T0, error="boom")
    (tmp_path / "luigi.cfg").write_text("[gatekeeper]\nledger_url = sqlite:///cfg.db\n")
    return tmp_path


@pytest.mark.slow  # a real process per case
@pytest.mark.parametrize("case", list(CASES))
def test_in_process_gives_what_the_process_gives(folder: Path, case: str) -> None:
    args = CASES[case]
    real = run_gatekeeper(*args, cwd=folder, process=True)
    here = run_gatekeeper(*args, cwd=folder)
    assert (here.returncode, here.stdout, here.stderr) == (
        real.returncode,
        real.stdout,
        real.stderr,
    )


def test_in_process_puts_this_process_back(folder: Path) -> None:
    cwd, env, path = os.getcwd(), dict(os.environ), sys.path[:]
    parser = luigi.configuration.get_config()
    handlers = logging.getLogger().handlers[:]
    done = gatekeeper_in_process(
        "status",
        "A",
        "--start",
        D,
        "--stop",
        "2026-10-24",
        cwd=folder,
        env=clean_env(PYTHONPATH=str(folder)),
    )
    assert done.returncode == 0, done.stderr
    assert "filled 1/1" in done.stdout  # the luigi.cfg of ``folder`` was read
    assert (os.getcwd(), dict(os.environ), sys.path) == (cwd, env, path)
    assert luigi.configuration.get_config() is parser
    assert not parser.has_option("gatekeeper", "ledger_url") or "cfg.db" not in parser.get(
        "gatekeeper", "ledger_url"
    )
    assert logging.getLogger().handlers == handlers
