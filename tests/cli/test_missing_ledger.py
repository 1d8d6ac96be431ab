"""Read-only commands refuse a SQLite file that does not exist and create nothing; only a
command that writes creates the ledger (and ``open_ledger(create=False)`` is the rule they
use)."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.cli import build_parser
from tests.helpers.cli import files_in, run_gatekeeper

D = "2026-10-23"


READ_ONLY = {
    "ready": [D, "A"],
    "history": ["A"],
    "evidence": ["Sales", D],
    "stale": ["Sales"],
    "status": ["A", "--start", D, "--stop", "2026-10-25"],
    "jobs": [],
    "report": ["A", "--start", D, "--stop", "2026-10-25", "-o", "{tmp}/coverage.html"],
    "plan": ["A", "--start", D, "--stop", "2026-10-25", "-o", "{tmp}/plan.json"],
    "plan-recovery": ["--stages", "A,B", "--business-date", D],
    "check": ["A"],
    "verify": [],
}


def ledger_commands() -> dict[str, bool]:
    """Every subcommand that opens the ledger, and whether it writes."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = {}
    for name, p in sub.choices.items():
        defaults = p._defaults
        opens = defaults["needs_ledger"] or name == "plan-recovery"  # --stages opens it itself
        if opens:
            found[name] = bool(defaults["writes"])
    return found


def test_cli_every_read_only_command_is_in_the_table() -> None:
    commands = ledger_commands()
    assert {name for name, writes in commands.items() if not writes} == set(READ_ONLY)
    writing = {name for name, writes in commands.items() if writes}
    assert writing == {"record", "abandon", "compact"}


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "console script"])
@pytest.mark.parametrize("command", sorted(READ_ONLY))
def test_cli_read_only_command_refuses_a_missing_sqlite_file_and_creates_nothing(
    tmp_path: Path, command: str, script: bool
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = [a.replace("{tmp}", str(work)) for a in READ_ONLY[command]]
    for url, path in (
        ("sqlite:///nonexist.db", work / "nonexist.db"),
        (f"sqlite:///{work / 'abs.db'}", work / "abs.db"),
    ):
        done = run_gatekeeper(command, *args, "--ledger", url, cwd=work, script=script)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert "ledger_url" in done.stderr and str(path) in done.stderr
        assert "nothing was created" in done.stderr
    assert files_in(work) == set()


def test_cli_read_only_command_refuses_a_missing_file_from_luigi_cfg(tmp_path: Path) -> None:
    (tmp_path / "luigi.cfg").write_text("[gatekeeper]\nledger_url = sqlite:///typo.db\n")
    done = run_gatekeeper("status", "A", "--start", D, cwd=tmp_path)
    assert done.returncode == 2
    assert "[gatekeeper] ledger_url" in done.stderr and "typo.db" in done.stderr
    assert files_in(tmp_path) == {"luigi.cfg"}


def test_cli_record_creates_the_ledger_then_reads_work(tmp_path: Path) -> None:
    done = run_gatekeeper(
        "record", "A", D, "1", "r1", "succeeded", "--ledger", "sqlite:///new.db", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "new.db").exists()
    ready = run_gatekeeper("ready", D, "A", "--ledger", "sqlite:///new.db", cwd=tmp_path)
    assert ready.returncode == 0 and "READY" in ready.stdout


def test_open_ledger_create_false_refuses_a_missing_file_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    with pytest.raises(gk.InvalidInput) as caught:
        gk.open_ledger(url, create=False)
    assert caught.value.field == "ledger_url" and caught.value.value == url
    assert files_in(tmp_path) == set()
    gk.open_ledger(url).close()
    with gk.open_ledger(url, create=False) as ledger:
        assert ledger.history("A") == []
