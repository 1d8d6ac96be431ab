"""A configuration mistake stops only what it touches, in one line: a bad
``[gatekeeper.calendars]`` line is refused by the classes (and commands) that use that
calendar, naming its key and word, while ``--version``, ``--help`` and every other job go on;
a task that opens a new, empty ledger says so at WARNING, naming where its URL came from."""

from __future__ import annotations

import datetime as dt
import logging
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from gatekeeper.core.causes import profile
from gatekeeper.core.periods import DAILY
from gatekeeper.core.periods.calendars import parse_calendar, parse_calendar_overrides
from gatekeeper.core.periods.registry import DEFINED
from gatekeeper.luigi.calendar_config import CALENDARS
from gatekeeper.luigi.tasks import shared_ledger
from tests.helpers.cli import clean_env, run_gatekeeper
from tests.helpers.ledgers import snapshot

BAD = "weekdays close 2026-13-01"
T = dt.datetime(2026, 10, 2, 1, tzinfo=dt.timezone.utc)


def _task_class(name: str, calendar: str) -> type:
    return type(name, (gk.BusinessDateTask,), {"calendar": calendar, "__module__": __name__})


def test_calendars_bad_line_stops_only_the_classes_that_use_it(luigi_config: Any) -> None:
    luigi_config(CALENDARS, "desk", BAD)
    luigi_config(CALENDARS, "firm", "weekdays close 2026-10-14")
    assert _task_class("CfgErrAll", "all").period_kind.name == "daily"
    assert _task_class("CfgErrFirm", "firm").period_kind.calendar.name == "firm"
    with pytest.raises(gk.InvalidInput) as caught:
        _task_class("CfgErrDesk", "desk")
    assert (caught.value.field, caught.value.value) == ("gatekeeper.calendars.desk", "2026-13-01")


def test_calendars_of_luigi_cfg_resolve_once_the_adapter_resolves_one(luigi_config: Any) -> None:
    """The registry of named calendars is filled where the adapter resolves a calendar (here
    a class binding its own), not when the adapter is imported."""
    luigi_config(CALENDARS, "firm", "weekdays close 2026-10-14")
    DEFINED.use(None)  # as in a process that imported the adapter and resolved nothing yet
    with pytest.raises(gk.InvalidInput):
        parse_calendar("firm")
    assert _task_class("CfgRegFirm", "firm").period_kind.calendar.name == "firm"
    assert not parse_calendar("firm").is_business_day(dt.date(2026, 10, 14))


#: run in a new interpreter: what resolves once gatekeeper, its Luigi adapter and the Delta
#: layer are imported, then once a task class of one's own binds a calendar luigi.cfg defines
FRESH_PROCESS = """
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.calendars import parse_calendar
from gatekeeper.core.periods.registry import DEFINED

def resolves(name):
    try:
        return parse_calendar(name).is_business_day(__import__("datetime").date(2026, 10, 14))
    except InvalidInput:
        return "refused"

core = (DEFINED.source is None, resolves("firm"), resolves("weekdays"))
import gatekeeper, gatekeeper.luigi.gated, gatekeeper.luigi.period_ranges, gatekeeper.delta
adapter = (DEFINED.source is None, resolves("firm"), resolves("weekdays"))

class FreshLoad(gatekeeper.BusinessDateTask):
    calendar = "firm"

print(core, adapter, (DEFINED.source is None, resolves("firm"), resolves("weekdays")))
"""


def test_importing_the_adapter_fills_no_registry_in_a_new_process(tmp_path: Path) -> None:
    """No import-time side effect decides what a calendar name resolves to: in a new
    interpreter, a name luigi.cfg defines resolves neither after importing the core nor after
    importing the Luigi adapter (gatekeeper's own task classes are made then), the same
    answers both times; it resolves once a class of one's own binds it."""
    cfg = tmp_path / "luigi.cfg"
    cfg.write_text(f"[{CALENDARS}]\nfirm = weekdays close 2026-10-14\n")
    done = subprocess.run(
        [sys.executable, "-c", FRESH_PROCESS],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=clean_env(LUIGI_CONFIG_PATH=str(cfg)),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    empty = (True, "refused", True)
    assert done.stdout.strip() == f"{empty} {empty} (False, False, True)"


def test_public_shift_and_plan_range_resolve_the_calendars_of_luigi_cfg(luigi_config: Any) -> None:
    luigi_config(CALENDARS, "firm", "weekdays close 2026-10-14")
    DEFINED.use(None)
    assert gk.shift("2026-10-15", -1, calendar="firm") == dt.date(2026, 10, 13)
    DEFINED.use(None)
    now = dt.datetime(2026, 10, 20, tzinfo=dt.timezone.utc)
    plan = gk.plan_range([], start="2026-10-12", stop="2026-10-17", now=now, calendar="firm")
    assert [d.day for d in plan.due] == [12, 13, 15, 16]


def test_status_of_a_job_on_a_bad_calendar_is_one_line_and_the_others_go_on(
    sqlite_url: str, luigi_config: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    desk = parse_calendar_overrides({"desk": "weekdays close 2026-10-14"})["desk"]
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record_profile(profile("DeskLoad", DAILY.on(desk), "UTC", start="2026-10-12"))
        ledger.record("DeskLoad", "2026-10-12", 1, "d-1", "succeeded", T, now=T)
        ledger.record("Load", "2026-10-01", 1, "l-1", "succeeded", T, now=T)
        before = snapshot(ledger)
    luigi_config(CALENDARS, "desk", BAD)
    now = ["--now", "2026-10-02T06:00:00+00:00"]
    capsys.readouterr()
    assert main(["--ledger", sqlite_url, "status", "Load", "--start", "2026-10-01", *now]) == 0
    assert capsys.readouterr().err == ""
    assert main(["--ledger", sqlite_url, "status", "DeskLoad", *now]) == 2
    assert capsys.readouterr().err == (
        "gatekeeper: InvalidInput: invalid gatekeeper.calendars.desk='2026-13-01': expected a "
        "date YYYY-MM-DD\n"
    )
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


def test_calendars_bad_line_leaves_version_help_and_other_jobs_answering(
    tmp_path: Path,
) -> None:
    """Start-up imports are the subject: a real process for ``--version``."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with gk.open_ledger(url) as ledger:
        ledger.record("Load", "2026-10-01", 1, "l-1", "succeeded", T, now=T)
    cfg = tmp_path / "luigi.cfg"
    cfg.write_text(f"[{CALENDARS}]\ndesk = {BAD}\n")
    env = clean_env(LUIGI_CONFIG_PATH=str(cfg))
    version = run_gatekeeper("--version", cwd=tmp_path, env=env, process=True)
    assert (version.returncode, version.stderr) == (0, ""), version.stderr[-2000:]
    assert version.stdout.startswith("gatekeeper ")
    shown = run_gatekeeper("--ledger", url, "history", "Load", cwd=tmp_path, env=env)
    assert shown.returncode == 0, shown.stderr
    helped = run_gatekeeper("--help", cwd=tmp_path, env=env)
    assert helped.returncode == 0 and "usage: gatekeeper" in helped.stdout


def _warnings(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]


def test_shared_ledger_new_and_empty_is_a_warning_naming_the_urls_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    typo = tmp_path / "ledgr.db"
    monkeypatch.setenv("GATEKEEPER_LEDGER_URL", f"sqlite:///{typo}")
    with caplog.at_level(logging.INFO, logger="luigi-interface.gatekeeper"):
        shared_ledger()
    assert _warnings(caplog) == [
        f"gatekeeper: sqlite file {typo} is a new, empty ledger (from $GATEKEEPER_LEDGER_URL): "
        "this run starts its history; if another ledger was meant, check "
        "$GATEKEEPER_LEDGER_URL"
    ]


def test_shared_ledger_with_history_is_named_at_info_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with gk.open_ledger(url) as ledger:
        ledger.record("Load", "2026-10-01", 1, "l-1", "succeeded", T, now=T)
    monkeypatch.setenv("GATEKEEPER_LEDGER_URL", url)
    with caplog.at_level(logging.INFO, logger="luigi-interface.gatekeeper"):
        shared_ledger()
    assert _warnings(caplog) == []
    assert any("gatekeeper: ledger: sqlite file" in r.getMessage() for r in caplog.records)
