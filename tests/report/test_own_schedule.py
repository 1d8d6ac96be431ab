"""A job's schedule is its own (issue 47): a job run only as a dependency is judged on the
calendar recorded for it over the window of the ranges that required it, and a consumer with
no range of its own requires its newest publication's (job, period) pairs, never a label."""

from __future__ import annotations

import datetime as dt

import gatekeeper as gk
from gatekeeper.core.causes import Requirement, profile
from gatekeeper.core.periods import DAILY
from gatekeeper.report.states import PeriodState, window_states
from gatekeeper.report.windows import job_window
from tests.helpers.ledgers import T0

NOW = dt.datetime(2026, 11, 2, 6, tzinfo=dt.timezone.utc)  # a Monday morning


def test_job_window_reads_a_dependency_on_its_own_calendar_over_its_consumers_window(
    ledger: gk.Ledger,
) -> None:
    consumer = profile(
        "Total", "daily", "UTC", [Requirement("Load")], start="2026-10-01", stop="2026-11-01"
    )
    ledger.record_profile(consumer)  # an every-day range requiring Load
    ledger.record_schedule(profile("Load", DAILY.on("weekdays"), "UTC"))
    weekdays = [d for d in range(1, 32) if dt.date(2026, 10, d).weekday() < 5]
    for d in weekdays:
        ledger.record("Load", f"2026-10-{d:02}", 1, f"l-{d}", "succeeded", T0)

    found = job_window(ledger, "Load")
    assert found.schedule.calendar == "weekdays"
    assert (found.schedule.start, found.schedule.stop) == (
        dt.date(2026, 10, 1),
        dt.date(2026, 11, 1),
    )
    _, states = window_states(ledger, "Load", now=NOW, task_limit=None, window=found)
    shown = {s.period: s.state for s in states}
    assert shown["2026-10-03"] is shown["2026-10-04"] is PeriodState.NON_BUSINESS
    assert {s.state for s in states} == {PeriodState.SUCCEEDED, PeriodState.NON_BUSINESS}
    assert sum(s.state is PeriodState.SUCCEEDED for s in states) == len(weekdays)


def test_job_window_takes_an_upstream_for_another_period_as_a_pair(ledger: gk.Ledger) -> None:
    for day in ("2026-10-01", "2026-10-02"):
        ledger.record("Orders", day, 1, f"o-{day}", "succeeded", T0)
        ledger.record("Prices", day, 1, f"p-{day}", "succeeded", T0)
    ledger.publish("Total", "2026-10-02", ["Orders", ("Prices", "2026-10-01")], "fp")

    found = job_window(ledger, "Total")  # no range: its newest publication's upstreams
    assert found.requires == (Requirement("Orders"), Requirement("Prices", -1))
    _, states = window_states(ledger, "Total", now=NOW, task_limit=None, window=found)
    blocked = {s.period: s for s in states if s.state is PeriodState.BLOCKED}
    assert blocked["2026-10-04"].cause is not None
    assert (blocked["2026-10-04"].cause.job, blocked["2026-10-04"].cause.period) == (
        "Orders",
        "2026-10-04",
    )
    assert all("@" not in s.cause.job for s in blocked.values() if s.cause is not None)
