"""A first run cannot mislead: a range under the ``luigi`` command says once, at WARNING, that
``luigi`` will exit 0 on a failure when luigi.cfg has no ``[retcode]`` section (and how to fix
it), and never with one; the ledger a task opens is named once, at INFO, with where its URL
came from."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from gatekeeper.luigi import first_run
from tests.helpers.luigi_support import configure, run_luigi, write_config

WARNING = "WARNING: gatekeeper: `luigi` will exit 0 even when a period fails"


def failing_range(cfg: Path, folder: Path, *extra: str) -> tuple[int, str]:
    """A range of three dates whose second fails, over the real ``luigi`` command."""
    (folder / "fail-2026-10-02").write_text("OSError: disk full")
    done = run_luigi(
        cfg,
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        "--of",
        "Controlled",
        "--of-params",
        json.dumps({"control": str(folder)}),
        "--start",
        "2026-10-01",
        "--stop",
        "2026-10-04",
        *extra,
        cwd=folder,
    )
    return done.returncode, done.stderr


@pytest.mark.luigi
@pytest.mark.slow
def test_a_range_without_retcode_says_once_that_luigi_exits_zero(
    tmp_path: Path, sqlite_url: str
) -> None:
    bare = tmp_path / "bare"
    bare.mkdir()
    cfg = bare / "luigi.cfg"
    cfg.write_text(f"[core]\nlog_level = INFO\n[gatekeeper]\nledger_url = {sqlite_url}\n")
    code, log = failing_range(cfg, bare, "--workers", "2")
    assert code == 0, log[-3000:]  # what the warning says: Luigi's default
    warned = [line for line in log.splitlines() if "will exit 0" in line]
    assert warned == [
        f"{WARNING} (luigi.cfg has no [retcode] section); to exit non-zero, add to luigi.cfg a "
        f"[retcode] section: {first_run.RETCODES} (docs/configuration.md, Exit codes of luigi)"
    ], log[-3000:]
    named = [line for line in log.splitlines() if "gatekeeper: ledger: " in line]
    assert named == [
        f"INFO: gatekeeper: ledger: sqlite file {tmp_path / 'ledger.db'} "
        "(from [gatekeeper] ledger_url)"
    ], log[-3000:]

    told = tmp_path / "told"
    told.mkdir()
    code, log = failing_range(write_config(told, sqlite_url), told)
    assert code == 30, log[-3000:]  # [retcode] task_failed
    assert "will exit 0" not in log, log[-3000:]


def test_ledger_source_names_where_the_url_came_from(
    monkeypatch: pytest.MonkeyPatch, sqlite_url: str
) -> None:
    """luigi.cfg's, the environment's or a task's own: each said as such (the default's:
    tests/docs/test_readme_example.py, through the real command)."""
    monkeypatch.delenv("GATEKEEPER_LEDGER_URL", raising=False)
    for _ in configure({"ledger_url": sqlite_url}):
        assert first_run.ledger_source(sqlite_url) == "from [gatekeeper] ledger_url"
        assert first_run.ledger_source("sqlite:///other.db") == "given by the task"
        monkeypatch.setenv("GATEKEEPER_LEDGER_URL", "sqlite:///env.db")
        assert first_run.ledger_source("sqlite:///env.db") == "from $GATEKEEPER_LEDGER_URL"


def test_no_retcode_warning_outside_the_luigi_command(caplog: pytest.LogCaptureFixture) -> None:
    """``luigi.build`` returns its result and has no exit code: nothing to warn about."""
    with caplog.at_level(logging.WARNING, logger="luigi-interface.gatekeeper"):
        first_run.warn_if_failures_exit_zero()
    assert not [r for r in caplog.records if "will exit 0" in r.getMessage()]
