"""``freshnesses`` judges each job's deadlines as the per-period judgement does, reading only
what breaches (report/freshness.py): the reference here is the per-period step it replaced,
``window_states`` then ``core/freshness.py assess`` over every period of the window."""

from __future__ import annotations

import dataclasses
import datetime as dt
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.causes import Requirement
from gatekeeper.core.freshness import Freshness, assess, last_in_force
from gatekeeper.core.periods import DAILY, HOURLY, MONTHLY, Period
from gatekeeper.core.schedule import Schedule
from gatekeeper.report.fleet import job_windows
from gatekeeper.report.freshness import freshnesses, job_freshness
from gatekeeper.report.states import PeriodState, window_states
from gatekeeper.report.windows import JobWindow
from tests.helpers.examples import examples
from tests.helpers.histories import write_history

UTC = dt.timezone.utc
H = dt.timedelta(hours=1)
#: kind, the first period of the cases, and the step of ``now`` past it
KINDS: dict[str, tuple[Period, str, dt.timedelta]] = {
    "daily": (DAILY, "2026-10-01", dt.timedelta(days=1)),
    "daily-spring": (DAILY, "2026-03-03", dt.timedelta(days=1)),
    "weekdays-fall": (DAILY.on("weekdays"), "2026-10-26", dt.timedelta(days=1)),
    "hourly-fall": (HOURLY, "2026-11-01T00", dt.timedelta(hours=1)),
    "monthly": (MONTHLY, "2026-01", dt.timedelta(days=31)),
}
#: what a period holds: its attempts, oldest first ("running": a live lease at ``now``,
#: "expired": a lease that ran out, "published": an attempt that published its period and
#: succeeded, "published-failed": that, then a second attempt that failed)
OUTCOMES = (
    (),
    ("succeeded",),
    ("failed",),
    ("failed", "succeeded"),
    ("succeeded", "failed"),
    ("abandoned",),
    ("running",),
    ("expired",),
    ("published",),
    ("published", "failed"),
)
outcomes = st.lists(st.sampled_from(OUTCOMES), max_size=14)


def per_period(
    ledger: gk.Ledger, job: str, *, within: dt.timedelta, now: Any, window: JobWindow
) -> Freshness:
    """The reference: every period of the window judged, then ``assess`` (the step
    ``job_freshness`` took before it read in proportion to the breaches)."""
    plan_of = window.schedule
    kind, zone = plan_of.period, plan_of.timezone
    last = last_in_force(kind, zone.key, within, now)
    through = window.through
    if plan_of.stop is None and last is not None:
        if through is None or kind.rank(through) < kind.rank(last):
            through = kind.key(last)
    _, states = window_states(
        ledger, job, now=now, task_limit=None, window=dataclasses.replace(window, through=through)
    )
    publishes = ledger.has_published(job)
    published = {s.period for s in states if s.revision is not None} if publishes else None
    judged = [(s.period, s.state.value) for s in states if s.state is not PeriodState.NON_BUSINESS]
    return assess(job, kind, zone.key, within, judged, now, published)


@settings(
    max_examples=examples(90),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind_name=st.sampled_from(sorted(KINDS)),
    zone=st.sampled_from(["UTC", "America/New_York"]),
    held=outcomes,
    upstream=st.lists(st.sampled_from(OUTCOMES[:8]), max_size=14),
    steps=st.integers(0, 16),
    hours=st.integers(0, 23),
    stop=st.none() | st.integers(0, 16),
    catchup=st.sampled_from(["all", "none", "last:3"]),
    lateness=st.sampled_from(["0s", "2h", "2d"]),
    within=st.sampled_from([0, 1, 6, 30, 75]),
    through=st.booleans(),
)
def test_freshness_is_the_per_period_judgement(
    ledger: gk.Ledger,
    kind_name: str,
    zone: str,
    held: list[tuple[str, ...]],
    upstream: list[tuple[str, ...]],
    steps: int,
    hours: int,
    stop: int | None,
    catchup: str,
    lateness: str,
    within: int,
    through: bool,
) -> None:
    kind, first, step = KINDS[kind_name]
    start = kind.rank(first)
    keys = [kind.key(kind.at(start + i)) for i in range(14)]
    now = kind.interval(kind.at(start), zone).start + steps * step + hours * H
    job, up = f"Job{uuid.uuid4().hex[:8]}", f"Up{uuid.uuid4().hex[:8]}"
    write_history(ledger, job, keys, held, now)
    write_history(ledger, up, keys, upstream, now)
    schedule = Schedule.parse(
        start=keys[0],
        stop=None if stop is None else kind.key(kind.at(start + stop)),
        period=kind,
        calendar=kind.calendar.name,
        timezone=zone,
        lateness=lateness,
        catchup=catchup,
    )
    recorded = [k for k, h in zip(keys, held, strict=False) if h]
    last = recorded[-1] if recorded and through else None
    window = JobWindow(schedule, (Requirement(up),), last)

    expected = per_period(ledger, job, within=within * H, now=now, window=window)
    found = job_freshness(ledger, job, within=within * H, now=now, window=window)
    assert found == expected
    assert found.to_json() == expected.to_json()


@pytest.mark.parametrize("calendar", ["all", "weekdays"])
def test_freshness_of_years_judges_what_breaches(ledger: gk.Ledger, calendar: str) -> None:
    """Four years of a daily job with a failed day and a missing one, checked two days after
    the last: every deadline in force counted, the two breaches named, oldest first."""
    kind = DAILY.on(calendar)
    days = [kind.key(d) for d in kind.between("2022-01-01", "2026-01-01")]
    failed, missing = days[100], days[1000]
    with ledger.transaction():
        for n, key in enumerate(days):
            if key != missing:
                state = "failed" if key == failed else "succeeded"
                ledger.record("Load", key, 1, f"r{n}", state, dt.datetime(2026, 1, 2, tzinfo=UTC))
    now = dt.datetime(2026, 1, 2, 5, tzinfo=UTC)  # 2025-12-31 due at 06:00 the day after
    window = JobWindow(Schedule.parse(start="2022-01-01", period=kind, calendar=calendar))
    found = job_freshness(ledger, "Load", within=6 * H, now=now, window=window)
    assert found.in_force == len(days)
    assert [(b.period, b.state) for b in found.breaches] == [
        (failed, "failed"),
        (missing, "missing"),
    ]
    assert found == per_period(ledger, "Load", within=6 * H, now=now, window=window)


def test_freshnesses_of_many_jobs_in_batches_are_each_jobs_own(
    ledger: gk.Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs of every kind, publishing or not, some without a rule, read in batches of 2
    rows: each job's Freshness is the per-period one, and a job without a rule has none."""
    from gatekeeper.ledger import batches

    monkeypatch.setattr(batches, "BATCH", 2)
    now = dt.datetime(2026, 11, 1, 20, tzinfo=UTC)
    held = [("succeeded",), (), ("published",), ("failed",), ("published", "failed"), ("expired",)]
    jobs = []
    for name, (kind, first, _) in sorted(KINDS.items()):
        start = kind.rank(first)
        keys = [kind.key(kind.at(start + i)) for i in range(len(held))]
        for n in range(3):
            job = f"{name}{n}"
            write_history(ledger, job, keys[n:], held[n:], now)
            jobs.append(job)
    write_history(ledger, "Fresh", ["2026-10-31"], [("succeeded",)], now)  # its one deadline met
    windows = job_windows(ledger, [*jobs, "Fresh"])
    rules = {job: (n * H, f"rule {n}") for n, job in enumerate(jobs) if n % 4}
    rules["Fresh"] = (6 * H, "rule")
    found = freshnesses(ledger, windows, rules, now)  # type: ignore[arg-type]
    assert sorted(found) == sorted(rules)
    for job, (within, source) in rules.items():
        window = windows[job]
        assert isinstance(window, JobWindow)
        expected = per_period(ledger, job, within=within, now=now, window=window)
        assert found[job] == dataclasses.replace(expected, source=source), job
    assert any(not f.met for f in found.values()) and any(f.met for f in found.values())
