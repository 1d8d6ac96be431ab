"""The calendars docs' own example (example_pipelines/trading.py), caught up: a monthly range
over MonthEnd runs every trading day of its months, and then ``status``, ``check`` and serve's
/api/jobs and /metrics judge TradingDayLoad on its own weekday calendar (issue 47): nothing
missing, no deadline breached, no weekend due, though the range that required it is monthly."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

import luigi
import pytest
from luigi.task_register import Register

import gatekeeper as gk
from example_pipelines.trading import MonthEnd
from gatekeeper.cli import main
from tests.helpers.luigi_support import build, config_state, configure, restore_config
from tests.helpers.serve import in_thread, read

pytestmark = pytest.mark.luigi

UTC = dt.timezone.utc
#: a Tuesday morning, the months October and November 2026 closed and filled (faked clock)
NOW = dt.datetime(2026, 12, 1, 6, tzinfo=UTC)
WEEKDAYS = 22 + 21  # October and November 2026


@pytest.fixture
def filled(ledger_url: str) -> Iterator[str]:
    """``RangeBusinessMonthly --of MonthEnd`` over October and November 2026 at NOW, in
    process (UTC, no lateness), with a one-day freshness deadline on TradingDayLoad."""
    saved = config_state()
    cfg = luigi_config()
    if not cfg.has_section("gatekeeper.freshness"):  # an earlier test's may be left
        cfg.add_section("gatekeeper.freshness")
    cfg.set("gatekeeper.freshness", "TradingDayLoad", "1d")
    try:
        for _ in configure({"ledger_url": ledger_url, "lateness": "0s", "timezone": "UTC"}):
            task = gk.RangeBusinessMonthly(
                of=MonthEnd,
                start=dt.date(2026, 10, 1),
                stop=dt.date(2026, 12, 1),
                now=int(NOW.timestamp()),
            )
            with sole_family(MonthEnd):  # tests/helpers/calendar_tasks.py has one too
                assert build(task).scheduling_succeeded
            yield ledger_url
    finally:
        restore_config(saved)


@contextlib.contextmanager
def sole_family(cls: type[luigi.Task]) -> Iterator[None]:
    """While it runs, hide every other registered task class of ``cls``'s family (another
    test module's ``MonthEnd``): Luigi refuses a family two classes share when it resolves
    one by name (a range's ``of``), and a test process imports them all."""
    family = cls.get_task_family()
    others = [
        c
        for c in Register._reg
        if c is not cls and c._visible_in_registry and c.get_task_family() == family
    ]
    own = {c: c.__dict__.get("_visible_in_registry") for c in others}
    for other in others:
        other._visible_in_registry = False
    try:
        yield
    finally:
        for other, value in own.items():
            if value is None:
                del other._visible_in_registry  # inherited again
            else:
                other._visible_in_registry = value


def luigi_config() -> Any:
    import luigi.configuration

    return luigi.configuration.get_config()


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(list(args))
    return code, capsys.readouterr().out


def test_trading_example_status_and_check_judge_the_weekday_calendar(
    filled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    at = NOW.isoformat()
    code, out = run(capsys, "--ledger", filled, "status", "TradingDayLoad", "--now", at, "--json")
    assert code == 0, out
    shown = json.loads(out)
    states = {p["period"]: p["state"] for p in shown["periods"]}
    assert states["2026-10-31"] == states["2026-11-01"] == "non_business"
    assert [k for k, s in states.items() if s == "succeeded"][::42] == ["2026-10-01", "2026-11-30"]
    assert set(states.values()) == {"succeeded", "non_business"}
    assert shown["total"] == shown["complete_count"] == WEEKDAYS
    assert shown["freshness"]["met"] is True

    code, out = run(capsys, "--ledger", filled, "check", "--now", at)
    assert code == 0, out
    assert "BREACHED" not in out


def test_trading_example_serve_judges_the_weekday_calendar(filled: str) -> None:
    pytest.importorskip("uvicorn")  # the web extra (not in the oldest-Luigi session)
    with in_thread(filled, lambda: NOW) as base:
        jobs = {j["job"]: j for j in json.loads(read(base + "/api/jobs"))["jobs"]}
        scrape = read(base + "/metrics")
    day = jobs["TradingDayLoad"]
    assert day["calendar"] == "weekdays"
    assert day["counts"]["missing"] == 0 and day["counts"]["succeeded"] == WEEKDAYS
    month = jobs["MonthEnd"]["counts"]
    assert month["succeeded"] == 2 and sum(month.values()) == 2
    assert 'gatekeeper_freshness_breached{job="TradingDayLoad"} 0.0' in scrape
    assert 'gatekeeper_periods{job="TradingDayLoad",state="missing"} 0.0' in scrape


def test_trading_day_load_run_alone_records_its_weekday_calendar_and_no_window(
    ledger_url: str,
) -> None:
    from example_pipelines.trading import TradingDayLoad

    for _ in configure({"ledger_url": ledger_url, "lateness": "0s", "timezone": "UTC"}):
        assert build(TradingDayLoad(business_date=dt.date(2026, 11, 27))).scheduling_succeeded
        with gk.open_ledger(ledger_url) as ledger:
            own = ledger.job_profile("TradingDayLoad")
            rows = ledger.read("SELECT * FROM gk_jobs")
            assert build(TradingDayLoad(business_date=dt.date(2026, 11, 30))).scheduling_succeeded
            assert ledger.read("SELECT * FROM gk_jobs") == rows  # once: nothing written again
    assert own is not None
    assert (own.period.name, own.calendar, own.timezone) == ("daily", "weekdays", "UTC")
    assert (own.start, own.stop, own.lateness, own.requires) == (None, None, None, ())


def test_trading_day_load_window_is_the_monthly_range_s_days_mapped_by_time(
    filled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    later = (NOW + dt.timedelta(days=20)).isoformat()  # weeks after the range's last month
    status = ("--ledger", filled, "status", "TradingDayLoad", "--now", later)
    code, out = run(capsys, *status, "--json")
    assert code == 0, out
    shown = json.loads(out)
    states = {p["period"]: p["state"] for p in shown["periods"]}
    assert min(states) == "2026-10-01" and max(states) == "2026-11-30"  # the months' days
    assert "missing" not in states.values()
    assert shown["total"] == shown["complete_count"] == WEEKDAYS

    code, out = run(capsys, *status)
    assert code == 0 and "filled 43/43" in out, out
