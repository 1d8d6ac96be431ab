"""Calendars and coarse periods through the real `luigi` command and in-process tasks."""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers import calendar_tasks
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import run_luigi, write_config

pytestmark = pytest.mark.luigi

MODULE = "tests.helpers.calendar_tasks"


def _keys(url: str, job: str) -> list[str]:
    """The periods of ``job`` with an attempt, each of them succeeded once (one attempt)."""
    with gk.open_ledger(url) as ledger:
        span = ledger.period_span(job)
        if span is None:
            return []
        keys = list(ledger.complete_runs(job, span[0], span[1]).keys())
        assert all(len(ledger.attempts(job, key)) == 1 for key in keys)
        return keys


def _range(cfg: Path, tmp_path: Path, kind: str, of: str, start: str, stop: str) -> None:
    done = run_luigi(
        cfg,
        "--module",
        MODULE,
        f"RangeBusiness{kind}",
        "--of",
        of,
        "--start",
        start,
        "--stop",
        stop,
        "--task-limit",
        "400",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.process
def test_weekday_range_attempts_exactly_the_22_weekdays_of_october_2026(
    ledger_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, ledger_url)
    _range(cfg, tmp_path, "Daily", "WeekdayLoad", "2026-10-01", "2026-11-01")
    keys = _keys(ledger_url, "WeekdayLoad")
    expected = [
        d.isoformat()
        for d in (dt.date(2026, 10, 1) + dt.timedelta(n) for n in range(31))
        if d.weekday() < 5
    ]
    assert keys == expected and len(keys) == 22


@pytest.mark.process
def test_holidays_us_range_over_2025_attempts_the_open_weekdays(
    sqlite_url: str, tmp_path: Path
) -> None:
    holidays = pytest.importorskip("holidays", reason="needs the holidays package")
    cfg = write_config(tmp_path, sqlite_url)
    _range(cfg, tmp_path, "Daily", "UsTradingLoad", "2025-01-01", "2026-01-01")
    closed = holidays.country_holidays("US", years=2025)
    expected = [
        d.isoformat()
        for d in (dt.date(2025, 1, 1) + dt.timedelta(n) for n in range(365))
        if d.weekday() < 5 and d not in closed
    ]
    keys = _keys(sqlite_url, "UsTradingLoad")
    assert keys == expected
    assert "2025-11-27" not in keys and "2025-11-28" in keys


@pytest.mark.process
def test_monthly_and_weekly_ranges_key_their_periods(sqlite_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    _range(cfg, tmp_path, "Monthly", "MonthEnd", "2025-01", "2026-01")
    assert _keys(sqlite_url, "MonthEnd") == [f"2025-{m:02d}" for m in range(1, 13)]
    _range(cfg, tmp_path, "Weekly", "WeekLoad", "2026-W41", "2026-W43")
    assert _keys(sqlite_url, "WeekLoad") == ["2026-W41", "2026-W42"]
    _range(cfg, tmp_path, "Quarterly", "QuarterLoad", "2025-Q1", "2026-Q1")
    assert _keys(sqlite_url, "QuarterLoad") == [f"2025-Q{q}" for q in range(1, 5)]


@pytest.mark.process
def test_task_for_a_non_business_day_is_refused_before_anything_is_written(
    sqlite_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
    done = run_luigi(
        cfg, "--module", MODULE, "WeekdayLoad", "--business-date", "2026-10-03", cwd=tmp_path
    )
    assert done.returncode != 0
    assert "not a business day of weekdays" in done.stderr
    assert "2026-10-02" in done.stderr and "2026-10-05" in done.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


@pytest.mark.parametrize(
    ("cls", "value", "previous", "following"),
    [
        (
            calendar_tasks.WeekdayLoad,
            dt.date(2026, 10, 5),
            dt.date(2026, 10, 2),
            dt.date(2026, 10, 6),
        ),
        (
            calendar_tasks.UsTradingLoad,
            dt.date(2025, 11, 28),
            dt.date(2025, 11, 26),
            dt.date(2025, 12, 1),
        ),
        (calendar_tasks.MonthEnd, dt.date(2025, 1, 1), dt.date(2024, 12, 1), dt.date(2025, 2, 1)),
    ],
)
def test_previous_and_next_period_walk_the_calendar(
    cls: type, value: dt.date, previous: dt.date, following: dt.date
) -> None:
    pytest.importorskip("holidays", reason="needs the holidays package")
    task = cls(**{cls.period_param: value}, attempt=3)
    before, after = task.previous_period(), task.next_period()
    assert getattr(before, cls.period_param) == previous and before.attempt == 0
    assert getattr(after, cls.period_param) == following
    assert type(before) is cls and before.previous_period(-1).task_id == task.task_id


@pytest.mark.process
def test_status_knows_the_calendar_from_the_profile(ledger_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, ledger_url)
    _range(cfg, tmp_path, "Daily", "WeekdayLoad", "2026-10-01", "2026-11-01")
    with gk.open_ledger(ledger_url) as ledger:
        found = ledger.job_profile("WeekdayLoad")
        before = snapshot(ledger)
    assert found is not None and found.calendar == "weekdays"
    assert found.period is calendar_tasks.WeekdayLoad.period_kind
    done = gatekeeper("--ledger", ledger_url, "status", "WeekdayLoad", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert shown["total"] == shown["complete_count"] == 22
    assert shown["contiguous_through"] == "2026-10-30"
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before  # status reads only


def _firm_week(cfg: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """The week of 2026-10-12 of FirmLoad, on the ``firm`` calendar ``cfg`` defines."""
    return run_luigi(
        cfg,
        "--module",
        "tests.helpers.firm_tasks",
        "RangeBusinessDaily",
        "--of",
        "FirmLoad",
        "--start",
        "2026-10-12",
        "--stop",
        "2026-10-19",
        cwd=tmp_path,
    )


@pytest.mark.process
@pytest.mark.oldest
def test_a_calendar_luigi_cfg_defines_is_planned_and_shown(ledger_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, ledger_url)
    with cfg.open("a") as f:  # weekdays, but closed on a Wednesday and open on a Saturday
        f.write("[gatekeeper.calendars]\nfirm = weekdays close 2026-10-14 open 2026-10-17\n")
    done = _firm_week(cfg, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    env = {"LUIGI_CONFIG_PATH": str(cfg)}
    shown = gatekeeper("--ledger", ledger_url, "status", "FirmLoad", "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    states = {p["period"]: p["state"] for p in json.loads(shown.stdout)["periods"]}
    assert states == {
        "2026-10-12": "succeeded",
        "2026-10-13": "succeeded",
        "2026-10-14": "non_business",
        "2026-10-15": "succeeded",
        "2026-10-16": "succeeded",
        "2026-10-17": "succeeded",
        "2026-10-18": "non_business",
    }
    with gk.open_ledger(ledger_url) as ledger:  # this process's luigi.cfg defines no firm
        found = ledger.read("SELECT calendar FROM gk_jobs WHERE job = ?", ("FirmLoad",))
    assert [tuple(row) for row in found] == [("firm",)]


@pytest.mark.process
def test_a_bad_calendars_line_is_refused_naming_it_before_anything_is_written(
    ledger_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, ledger_url)
    with cfg.open("a") as f:
        f.write("[gatekeeper.calendars]\nfirm = weekdays close 2026-13-01\n")
    done = _firm_week(cfg, tmp_path)
    assert (done.returncode, done.stderr) == (
        2,
        "luigi: InvalidInput: invalid gatekeeper.calendars.firm='2026-13-01': expected a date "
        "YYYY-MM-DD\n",
    )  # one line, exit 2, as the gatekeeper command refuses bad input
    assert _keys(ledger_url, "FirmLoad") == []


@pytest.mark.process
def test_a_monthly_gated_task_publishes_with_every_business_days_run(
    ledger_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, ledger_url)
    done = run_luigi(
        cfg, "--module", MODULE, "MonthReport", "--business-month", "2026-10", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]
    with gk.open_ledger(ledger_url) as ledger:
        published = ledger.publication("MonthReport", "2026-10")
        days = _keys(ledger_url, "WeekdayLoad")
        runs = {key: ledger.attempts("WeekdayLoad", key)[-1].run_id for key in days}
    assert len(days) == 22 and "2026-10-03" not in days  # the weekdays of October 2026
    assert published is not None and published.attempt == 1
    assert {(i.job, i.business_date): i.run_id for i in published.items} == {
        ("WeekdayLoad", key): run for key, run in runs.items()
    }
    assert published.evidence["WeekdayLoad@2026-10-30"] == runs["2026-10-30"]


def test_a_monthly_gated_task_is_not_ready_while_a_business_day_is_missing(
    ledger_url: str, tmp_path: Path
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        led = calendar_tasks.MonthReport(business_month=dt.date(2026, 10, 1))
        ready = ledger.readiness(led.required_jobs(), "2026-10")
        before = snapshot(ledger)
    assert not ready and len(ready.blockers) == 22
    assert ready.blockers["WeekdayLoad@2026-10-01"] == "missing"
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before
