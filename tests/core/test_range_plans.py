"""``plan_range`` and the fetch-then-plan step, rule by rule.

- ``RangePlan.to_json`` is the documented ``gatekeeper plan --json`` shape;
- ``plan_range`` agrees with a brute-force, period-by-period model of its documented rules;
- ``plan_from_ledger`` fetches exactly the plan's due window and passes every argument on;
- the plan's options (task limit, catch-up, lateness) are canonical or refused naming them.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import (
    DAILY,
    HOURLY,
)
from gatekeeper.core.planning import due_span, plan, plan_from_ledger, plan_range, plans
from gatekeeper.core.schedule import Schedule
from gatekeeper.core.spans import PeriodRuns
from tests.helpers.ledgers import T0, succeed

UTC = dt.timezone.utc


D = "2026-10-22"


# -- RangePlan.to_json: the `gatekeeper plan --json` shape ------------------------------------
def test_range_plan_to_json_daily_is_the_documented_shape() -> None:
    plan = plan_range(
        ["2026-10-01", "2026-10-03"],
        start="2026-10-01",
        stop="2026-10-06",
        now=dt.datetime(2026, 10, 5, 2, tzinfo=UTC),
        lateness="2h",
        timezone="Europe/Berlin",
        strategy="reverse",
        catchup="last:1",
        task_limit=3,
    )
    assert plan.to_json() == {
        "start": "2026-10-01",
        "stop": "2026-10-06",
        "now": "2026-10-05T02:00:00+00:00",
        "lateness_seconds": 7200.0,
        "period": "daily",
        "timezone": "Europe/Berlin",
        "strategy": "reverse",
        "catchup": "last:1",
        "task_limit": 3,
        "total": 4,
        "complete_count": 2,
        "due": ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04"],
        "gaps": ["2026-10-04"],
        "scheduled": ["2026-10-04"],
        "skipped_by_policy": ["2026-10-02"],
        "contiguous_through": "2026-10-01",
        "next_due_at": "2026-10-06T00:00:00+00:00",
        "description": "filled 2/4, contiguous through 2026-10-01, next due at "
        "2026-10-06T00:00:00+00:00, 1 skipped by policy",
    }


def test_range_plan_to_json_hourly_open_ended_is_the_documented_shape() -> None:
    plan = plan_range(
        [],
        start="2026-10-25T05:00Z",
        now="2026-10-25T07:30:00+00:00",
        period=HOURLY,
        task_limit=None,
    )
    assert plan.to_json() == {
        "start": "2026-10-25T05:00Z",
        "stop": None,
        "now": "2026-10-25T07:30:00+00:00",
        "lateness_seconds": 0.0,
        "period": "hourly",
        "timezone": "UTC",
        "strategy": "contiguous",
        "catchup": "all",
        "task_limit": None,
        "total": 2,
        "complete_count": 0,
        "due": ["2026-10-25T05:00Z", "2026-10-25T06:00Z"],
        "gaps": ["2026-10-25T05:00Z", "2026-10-25T06:00Z"],
        "scheduled": ["2026-10-25T05:00Z", "2026-10-25T06:00Z"],
        "skipped_by_policy": [],
        "contiguous_through": None,
        "next_due_at": "2026-10-25T08:00:00+00:00",
        "description": "filled 0/2, contiguous through nothing, next due at "
        "2026-10-25T08:00:00+00:00, 0 skipped by policy",
    }


# -- plan_range against a brute-force model of its documented rules ----------------------------
ZONES = ["UTC", "Europe/Berlin", "America/New_York"]  # local midnight always exists


def model_plan(
    kind: str,
    start: dt.datetime | dt.date,
    span: int | None,
    now: dt.datetime,
    late: dt.timedelta,
    zone: str,
    done: set[int],
    catchup: str,
    strategy: str,
    limit: int | None,
) -> dict[str, Any]:
    """The plan, period by period, from the docstring of ``plan_range`` (labels by position)."""

    def label(i: int) -> Any:
        return start + (dt.timedelta(hours=i) if kind == HOURLY else dt.timedelta(days=i))

    def due_at(i: int) -> dt.datetime:
        if kind == HOURLY:
            return label(i + 1) + late
        day = label(i + 1)
        local = dt.datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(zone))
        return local.astimezone(UTC) + late

    due = []
    while (span is None or len(due) < span) and due_at(len(due)) <= now:
        due.append(len(due))
    missing = [i for i in due if i not in done]
    windows = {"all": len(due), "none": 1}
    window = windows[catchup] if catchup in windows else int(catchup.removeprefix("last:"))
    cut = max(0, len(due) - window)
    skipped = [i for i in missing if i < cut]
    gaps = [i for i in missing if i >= cut]
    gaps = gaps[::-1] if strategy == "reverse" else gaps
    through = (missing[0] if missing else len(due)) - 1
    pending = len(due)
    return {
        "due": [label(i) for i in due],
        "gaps": [label(i) for i in gaps],
        "scheduled": [label(i) for i in (gaps if limit is None else gaps[:limit])],
        "skipped_by_policy": [label(i) for i in skipped],
        "contiguous_through": label(through) if through >= 0 else None,
        "next_due_at": None if span is not None and pending >= span else due_at(pending),
        "complete_count": len(due) - len(missing),
    }


@st.composite
def plan_requests(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from([DAILY, HOURLY]))
    unit = dt.timedelta(hours=1) if kind == HOURLY else dt.timedelta(days=1)
    base = draw(st.dates(dt.date(2025, 1, 1), dt.date(2027, 12, 31)))
    if kind == HOURLY:
        start: Any = dt.datetime.combine(base, dt.time(draw(st.integers(0, 23))), tzinfo=UTC)
        anchor = start
    else:
        start = base
        anchor = dt.datetime.combine(base, dt.time(), tzinfo=UTC)
    span = draw(st.one_of(st.none(), st.integers(0, 30)))
    now = (
        anchor
        + unit * draw(st.integers(-3, 36))
        + dt.timedelta(minutes=draw(st.sampled_from([0, 0, 1, 59, 61, 150, 1439])))
    )
    return {
        "kind": kind,
        "start": start,
        "span": span,
        "now": now,
        "late": dt.timedelta(hours=draw(st.sampled_from([0, 0, 1, 2, 25, 49]))),
        "zone": draw(st.sampled_from(ZONES)) if kind == DAILY else "UTC",
        "done": draw(st.sets(st.integers(-2, 40), max_size=30)),
        "catchup": draw(st.sampled_from(["all", "none", "last:1", "last:3", "last:40"])),
        "strategy": draw(st.sampled_from(["contiguous", "forward", "reverse"])),
        "limit": draw(st.sampled_from([None, 0, 1, 2, 50])),
    }


@given(plan_requests())
def test_plan_range_agrees_with_a_period_by_period_model(req: dict[str, Any]) -> None:
    unit = dt.timedelta(hours=1) if req["kind"] == HOURLY else dt.timedelta(days=1)
    complete = [req["start"] + unit * i for i in req["done"]]
    stop = None if req["span"] is None else req["start"] + unit * req["span"]
    plan = plan_range(
        complete,
        start=req["start"],
        stop=stop,
        now=req["now"],
        lateness=req["late"],
        timezone=req["zone"],
        period=req["kind"],
        strategy=req["strategy"],
        catchup=req["catchup"],
        task_limit=req["limit"],
    )
    got = {
        name: getattr(plan, name)
        for name in (
            "due",
            "gaps",
            "scheduled",
            "skipped_by_policy",
            "contiguous_through",
            "next_due_at",
            "complete_count",
        )
    }
    got.update({k: list(v) for k, v in got.items() if isinstance(v, tuple)})
    assert got == model_plan(**req)
    assert plan.total == len(plan.due)


def test_plan_from_ledger_with_a_consumer_counts_only_published_periods(ledger: gk.Ledger) -> None:
    days = ["2026-10-20", "2026-10-21", D]
    for day in days:
        succeed(ledger, "Dim", day, run_id=f"dim-{day}")
    ledger.publish("Dim", "2026-10-21", ["Dim"], "fp", now=T0)
    window = Schedule.parse(start=days[0], stop="2026-10-23")
    plan = plan_from_ledger(ledger, "Dim", schedule=window, now=T0, consumer="Dim")
    assert (plan.due, plan.gaps) == (
        tuple(dt.date.fromisoformat(d) for d in days),
        (dt.date(2026, 10, 20), dt.date(2026, 10, 22)),
    )
    assert plan_from_ledger(ledger, "Dim", schedule=window, now=T0).gaps == ()


# -- the fetch-then-plan step: the due window fetched is the plan's, every argument passed on ---
WINDOWS = [  # (request, the due window the completeness fetch must be asked for)
    ({"start": "2026-10-18", "stop": "2026-10-21", "now": T0}, ("2026-10-18", "2026-10-20")),
    ({"start": "2026-10-18", "now": T0}, ("2026-10-18", "2026-10-22")),
    ({"start": "2026-10-18", "now": T0, "lateness": "8h"}, ("2026-10-18", "2026-10-21")),
    (
        {
            "start": "2026-10-18",
            "now": dt.datetime(2026, 10, 22, 23, 30, tzinfo=UTC),
            "timezone": "Europe/Berlin",
        },
        ("2026-10-18", "2026-10-22"),
    ),
    (
        {
            "start": "2026-10-18",
            "now": dt.datetime(2026, 10, 22, 21, 30, tzinfo=UTC),
            "timezone": "Europe/Berlin",
        },
        ("2026-10-18", "2026-10-21"),
    ),
    (
        {"start": "2026-10-23T04:00Z", "stop": "2026-10-23T06:00Z", "now": T0, "period": HOURLY},
        ("2026-10-23T04:00Z", "2026-10-23T05:00Z"),
    ),
    ({"start": "2026-10-23", "now": T0}, None),
    ({"start": "2026-10-18", "stop": "2026-10-18", "now": T0}, None),
    # from Saturday: the first due weekday is Monday (every day counts without the calendar)
    ({"start": "2026-10-17", "now": T0, "calendar": "weekdays"}, ("2026-10-19", "2026-10-22")),
]


@pytest.mark.parametrize(("request_", "window"), WINDOWS)
def test_plan_from_ledger_fetches_the_due_window_and_plans_with_every_argument(
    ledger: gk.Ledger, request_: dict[str, Any], window: tuple[str, str] | None
) -> None:
    asked: list[tuple[str, str]] = []

    def complete(first: str, last: str) -> list[str]:
        asked.append((first, last))
        return [first]  # the first due period is complete

    assert due_span(**request_) == window
    given = {k: v for k, v in request_.items() if k != "now"}
    plan = plan_from_ledger(
        ledger,
        "Job",
        complete=complete,
        schedule=Schedule.parse(strategy="reverse", catchup="none", **given),
        now=request_["now"],
        task_limit=1,
    )
    assert asked == ([] if window is None else [window])
    done = [] if window is None else [window[0]]
    assert plan == plan_range(done, strategy="reverse", catchup="none", task_limit=1, **request_)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"start": "2026-10-18", "now": dt.datetime(2026, 10, 23)}, "now"),
        ({"start": "2026-13-01", "now": T0}, "start"),
        ({"start": "2026-10-18", "stop": "2026-10-1", "now": T0}, "stop"),
        ({"start": "2026-10-18", "now": T0, "lateness": "-1h"}, "lateness"),
        ({"start": "2026-10-18", "now": T0, "timezone": "utc"}, "timezone"),
    ],
)
def test_due_span_refuses_bad_input_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        due_span(**kwargs)
    assert caught.value.field == field


def test_plan_range_with_a_lateness_beyond_the_calendar_has_nothing_due() -> None:
    plan = plan_range([], start="2026-10-01", now=T0, lateness="999999999d")
    assert (plan.due, plan.contiguous_through, plan.next_due_at) == ((), None, None)
    assert due_span(start="2026-10-01", now=T0, lateness="999999999d") is None


@pytest.mark.parametrize(
    ("limit", "reason"),
    [
        ("3", "expected a whole number or None"),
        (True, "expected a whole number or None"),
        (-1, "negative"),
    ],
)
def test_plan_range_refuses_a_task_limit_naming_it(limit: Any, reason: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        plan_range([], start="2026-10-01", now=T0, task_limit=limit)
    assert (caught.value.field, caught.value.value, caught.value.reason) == (
        "task_limit",
        limit,
        reason,
    )


@pytest.mark.parametrize(
    ("catchup", "canonical", "reason"),
    [
        ("none", "none", None),
        ("last:007", "last:7", None),
        ("last:0", None, "last:N needs a whole number N >= 1"),
        ("last:x", None, "last:N needs a whole number N >= 1"),
        ("some", None, "unknown catch-up policy; expected all, none or last:N"),
        (1, None, "unknown catch-up policy; expected all, none or last:N"),
    ],
)
def test_plan_range_catchup_is_canonical_or_refused_naming_it(
    catchup: Any, canonical: str | None, reason: str | None
) -> None:
    if reason is None:
        assert plan_range([], start="2026-10-01", now=T0, catchup=catchup).catchup == canonical
        return
    with pytest.raises(InvalidInput) as caught:
        plan_range([], start="2026-10-01", now=T0, catchup=catchup)
    assert (caught.value.field, caught.value.value, caught.value.reason) == (
        "catchup",
        catchup,
        reason,
    )


def test_plan_range_schedules_fifty_gaps_by_default() -> None:
    plan = plan_range([], start="2026-08-01", now=T0)
    assert len(plan.gaps) > 51 and plan.scheduled == plan.gaps[:50]


def test_plan_from_ledger_schedules_fifty_gaps_by_default_and_refuses_now_naming_it(
    ledger: gk.Ledger,
) -> None:
    window = Schedule.parse(start="2026-08-01")
    plan = plan_from_ledger(ledger, "Job", schedule=window, now=T0)
    assert len(plan.gaps) > 51 and plan.scheduled == plan.gaps[:50]
    with pytest.raises(InvalidInput) as caught:
        plan_from_ledger(ledger, "Job", schedule=window, now=dt.datetime(2026, 10, 23))
    assert caught.value.field == "now"


def test_plan_from_ledger_reads_an_hourly_jobs_runs_as_hours(ledger: gk.Ledger) -> None:
    """The ledger's completeness is read on the schedule's kind: complete hours are complete."""
    hours = [f"2026-10-23T0{h}:00Z" for h in range(4)]
    for hour in hours[:3]:
        succeed(ledger, "Clicks", hour)
    window = Schedule.parse(start="2026-10-23T00", stop="2026-10-23T04", period=HOURLY)
    plan = plan_from_ledger(ledger, "Clicks", schedule=window, now=T0)
    assert [HOURLY.key(g) for g in plan.gaps] == [hours[3]]


def test_plan_from_ledger_reads_a_calendars_runs_in_business_days(ledger: gk.Ledger) -> None:
    """On ``weekdays``, Friday and the Monday after are one run: no gap across the weekend."""
    days = ["2026-10-14", "2026-10-15", "2026-10-16", "2026-10-19", "2026-10-20"]
    for day in days:
        succeed(ledger, "Weekly", day)
    window = Schedule.parse(start="2026-10-14", stop="2026-10-22", calendar="weekdays")
    plan = plan_from_ledger(ledger, "Weekly", schedule=window, now=T0)
    assert [DAILY.key(g) for g in plan.gaps] == ["2026-10-21"]


# -- plan(): a Schedule's plan, called directly ------------------------------------------------
WEEKDAYS = Schedule.parse(start="2026-10-12", stop="2026-10-24", calendar="weekdays")


def test_plan_of_a_schedule_schedules_fifty_gaps_by_default_and_refuses_now_naming_it() -> None:
    schedule = Schedule.parse(start="2026-08-01")
    found = plan([], schedule, now=T0)
    assert len(found.gaps) > 51 and found.scheduled == found.gaps[:50]
    assert plan([], schedule, now=T0, task_limit=None).scheduled == found.gaps
    naive = dt.datetime(2026, 10, 23)
    with pytest.raises(InvalidInput) as caught:
        plan([], schedule, now=naive)
    assert (caught.value.field, caught.value.value) == ("now", naive)


def test_plans_schedule_fifty_gaps_by_default_and_refuse_now_and_a_task_limit_naming_them() -> None:
    """``plans`` (a fleet's plans at once) takes ``plan``'s defaults and refusals."""
    schedules = {"A": Schedule.parse(start="2026-08-01"), "B": WEEKDAYS}
    found = plans({"B": ["2026-10-12"]}, schedules, now=T0)
    assert len(found["A"].gaps) > 51 and found["A"].scheduled == found["A"].gaps[:50]
    assert found["B"] == plan(["2026-10-12"], WEEKDAYS, now=T0)
    unlimited = plans({}, schedules, now=T0, task_limit=None)
    assert unlimited["A"].scheduled == found["A"].gaps
    assert plans({}, schedules, now=T0, task_limit=2)["A"].scheduled == found["A"].gaps[:2]
    naive = dt.datetime(2026, 10, 23)
    for bad, field in ((dict(now=naive), "now"), (dict(now=T0, task_limit=-1), "task_limit")):
        with pytest.raises(InvalidInput) as caught:
            plans({}, schedules, **bad)  # type: ignore[arg-type]
        assert caught.value.field == field, bad


def test_plan_takes_runs_of_the_base_kind_on_a_calendar_as_its_business_periods() -> None:
    """Runs of every day over a weekday window are counted on the calendar, as runs of the
    calendar's kind and as keys are."""
    days = ["2026-10-12", "2026-10-13", "2026-10-16", "2026-10-19", "2026-10-20"]
    expected = ["2026-10-14", "2026-10-15", "2026-10-21", "2026-10-22"]  # T0: the 23rd open
    base = PeriodRuns.of(DAILY, (DAILY.ordinal(d) for d in days))
    kind = WEEKDAYS.period
    on_calendar = PeriodRuns.of(kind, (kind.ordinal(d) for d in days))
    for runs in (base, on_calendar, days):
        found = plan(runs, WEEKDAYS, now=T0)
        assert [DAILY.key(g) for g in found.gaps] == expected, runs


def test_plan_refuses_runs_or_keys_of_another_kind_naming_complete() -> None:
    hours = PeriodRuns.of(HOURLY, [HOURLY.ordinal("2026-10-12T05")])
    with pytest.raises(InvalidInput) as caught:
        plan(hours, WEEKDAYS, now=T0)
    assert (caught.value.field, caught.value.value, caught.value.reason) == (
        "complete",
        hours,
        "runs of hourly periods",
    )
    with pytest.raises(InvalidInput) as caught:
        plan(["2026-10-12", "2026-13-01"], WEEKDAYS, now=T0)
    assert (caught.value.field, caught.value.value) == ("complete", "2026-13-01")
