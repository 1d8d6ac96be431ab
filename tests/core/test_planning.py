"""Tests of the pure range planner: due periods, gaps, catch-up policy, strategy, next due."""

from __future__ import annotations

import datetime as dt
import json
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import (
    DAILY,
    HOURLY,
    interval,
    parse_lateness,
    period_at,
    period_ordinal,
    periods_between,
)
from gatekeeper.core.planning import STRATEGIES, RangePlan, plan_range

UTC = dt.timezone.utc
NY = ZoneInfo("America/New_York")
DAY = dt.timedelta(days=1)
HOUR = dt.timedelta(hours=1)
US = dt.timedelta(microseconds=1)
ZONES = ["UTC", "America/New_York", "Europe/London", "America/Santiago", "Australia/Lord_Howe"]
CATCHUPS = ["all", "none", "last:1", "last:3", "last:50"]


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> dt.datetime:
    """An aware UTC datetime."""
    return dt.datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


def march(*days: int) -> tuple[dt.date, ...]:
    return tuple(dt.date(2026, 3, d) for d in days)


# --- one scenario under every strategy and catch-up policy ----------------------------------

# 2026-03-01 .. 03-10 at 03-10T00:00Z: 03-01 .. 03-09 are due; 01, 02, 04, 07 are complete.
SCENARIO: dict[str, Any] = {
    "start": dt.date(2026, 3, 1),
    "stop": dt.date(2026, 3, 11),
    "now": utc(2026, 3, 10),
}
SCENARIO_COMPLETE = set(march(1, 2, 4, 7))


@pytest.mark.parametrize(
    ("strategy", "catchup", "gaps", "skipped"),
    [
        ("contiguous", "all", march(3, 5, 6, 8, 9), ()),
        ("forward", "all", march(3, 5, 6, 8, 9), ()),
        ("reverse", "all", march(9, 8, 6, 5, 3), ()),
        ("contiguous", "none", march(9), march(3, 5, 6, 8)),
        ("forward", "none", march(9), march(3, 5, 6, 8)),
        ("reverse", "none", march(9), march(3, 5, 6, 8)),
        ("contiguous", "last:1", march(9), march(3, 5, 6, 8)),
        ("contiguous", "last:3", march(8, 9), march(3, 5, 6)),
        ("forward", "last:3", march(8, 9), march(3, 5, 6)),
        ("reverse", "last:3", march(9, 8), march(3, 5, 6)),
        ("forward", "last:5", march(5, 6, 8, 9), march(3)),
        ("reverse", "last:5", march(9, 8, 6, 5), march(3)),
        ("contiguous", "last:9", march(3, 5, 6, 8, 9), ()),
        ("reverse", "last:100", march(9, 8, 6, 5, 3), ()),
    ],
)
def test_plan_range_orders_and_limits_gaps_by_strategy_and_catchup(
    strategy: str, catchup: str, gaps: tuple[dt.date, ...], skipped: tuple[dt.date, ...]
) -> None:
    plan = plan_range(SCENARIO_COMPLETE, **SCENARIO, strategy=strategy, catchup=catchup)
    assert plan.due == march(*range(1, 10))
    assert plan.gaps == gaps
    assert plan.scheduled == gaps
    assert plan.skipped_by_policy == skipped
    assert plan.contiguous_through == dt.date(2026, 3, 2)
    assert plan.next_due_at == utc(2026, 3, 11)
    assert (plan.total, plan.complete_count) == (9, 4)


def test_plan_range_catchup_none_schedules_nothing_when_the_latest_is_complete() -> None:
    plan = plan_range(SCENARIO_COMPLETE | {dt.date(2026, 3, 9)}, **SCENARIO, catchup="none")
    assert plan.gaps == ()
    assert plan.skipped_by_policy == march(3, 5, 6, 8)


@pytest.mark.parametrize(
    ("strategy", "task_limit", "scheduled"),
    [
        ("contiguous", None, march(3, 5, 6, 8, 9)),
        ("contiguous", 0, ()),
        ("contiguous", 2, march(3, 5)),
        ("reverse", 2, march(9, 8)),
        ("forward", 50, march(3, 5, 6, 8, 9)),
    ],
)
def test_plan_range_schedules_the_first_task_limit_gaps(
    strategy: str, task_limit: int | None, scheduled: tuple[dt.date, ...]
) -> None:
    plan = plan_range(SCENARIO_COMPLETE, **SCENARIO, strategy=strategy, task_limit=task_limit)
    assert plan.scheduled == scheduled
    assert len(plan.gaps) == 5


@pytest.mark.parametrize(
    ("complete", "through"),
    [
        (set(march(*range(1, 10))), dt.date(2026, 3, 9)),
        (set(march(*range(1, 11))), dt.date(2026, 3, 9)),  # 03-10 is complete but not due
        (set(march(*range(2, 10))), None),
        (set(), None),
    ],
)
def test_plan_range_contiguous_through(complete: set[dt.date], through: dt.date | None) -> None:
    assert plan_range(complete, **SCENARIO).contiguous_through == through


def test_plan_range_accepts_iso_strings_and_ledger_keys() -> None:
    keys = ["2026-03-01", "2026-03-02", "2026-03-04", "2026-03-07"]
    plan = plan_range(keys, start="2026-03-01", stop="2026-03-11", now="2026-03-10T00:00:00+00:00")
    assert plan == plan_range(SCENARIO_COMPLETE, **SCENARIO)


# --- the due boundary: end + lateness, DST, leap days ------------------------------------------


@pytest.mark.parametrize(
    ("period", "label", "zone", "lateness", "due_at"),
    [
        (DAILY, dt.date(2026, 3, 8), "UTC", "0s", utc(2026, 3, 9)),
        (DAILY, dt.date(2028, 2, 29), "UTC", "2h", utc(2028, 3, 1, 2)),
        (DAILY, dt.date(2026, 3, 7), "America/New_York", "0s", utc(2026, 3, 8, 5)),
        (DAILY, dt.date(2026, 3, 8), "America/New_York", "0s", utc(2026, 3, 9, 4)),  # 23 h
        (DAILY, dt.date(2026, 3, 8), "America/New_York", "2h", utc(2026, 3, 9, 6)),
        (DAILY, dt.date(2026, 11, 1), "America/New_York", "0s", utc(2026, 11, 2, 5)),  # 25 h
        (DAILY, dt.date(2026, 3, 29), "Europe/London", "1h", utc(2026, 3, 30)),  # 23 h
        (DAILY, dt.date(2026, 10, 25), "Europe/London", "30m", utc(2026, 10, 26, 0, 30)),
        (DAILY, dt.date(2026, 3, 8), "UTC", dt.timedelta(days=3), utc(2026, 3, 12)),
        (HOURLY, utc(2026, 11, 1, 5), "America/New_York", "15m", utc(2026, 11, 1, 6, 15)),
        (HOURLY, utc(2026, 3, 8, 6), "America/New_York", "0s", utc(2026, 3, 8, 7)),
        (HOURLY, utc(2028, 2, 29, 23), "UTC", "1d", utc(2028, 3, 2)),
    ],
)
def test_plan_range_period_is_due_exactly_at_end_plus_lateness(
    period: str, label: dt.date, zone: str, lateness: Any, due_at: dt.datetime
) -> None:
    following = period_at(period_ordinal(label, period) + 1, period)
    common: dict[str, Any] = {
        "start": label,
        "stop": following,
        "period": period,
        "timezone": zone,
        "lateness": lateness,
    }
    before = plan_range(set(), now=due_at - US, **common)
    assert before.due == ()
    assert before.next_due_at == due_at
    at = plan_range(set(), now=due_at, **common)
    assert at.due == (label,)
    assert at.gaps == (label,)
    assert at.next_due_at is None


def test_plan_range_next_due_at_follows_dst_day_lengths() -> None:
    common: dict[str, Any] = {"start": "2026-03-07", "timezone": "America/New_York"}
    plan = plan_range(set(), now=utc(2026, 3, 8, 5), **common)
    assert plan.due == (dt.date(2026, 3, 7),)
    assert plan.next_due_at == utc(2026, 3, 9, 4)  # 03-08 lasts 23 hours
    autumn = plan_range(set(), start="2026-10-31", now=utc(2026, 11, 1, 4), timezone=NY)
    assert autumn.next_due_at == utc(2026, 11, 2, 5)  # 11-01 lasts 25 hours
    assert autumn.timezone == "America/New_York"


def test_plan_range_leap_day_is_a_period_like_any_other() -> None:
    complete = {dt.date(2028, 2, 27), dt.date(2028, 2, 28), dt.date(2028, 3, 1)}
    plan = plan_range(complete, start="2028-02-27", stop="2028-03-02", now=utc(2028, 3, 2))
    assert plan.due == tuple(periods_between("2028-02-27", "2028-03-02"))
    assert plan.total == 4
    assert plan.gaps == (dt.date(2028, 2, 29),)
    assert plan.contiguous_through == dt.date(2028, 2, 28)


# --- empty, future, open-ended and long ranges ------------------------------------------------


@pytest.mark.parametrize(
    ("period", "bound"), [(DAILY, dt.date(2026, 3, 8)), (HOURLY, utc(2026, 3, 8, 7))]
)
def test_plan_range_empty_range(period: str, bound: dt.date) -> None:
    plan = plan_range({bound}, start=bound, stop=bound, now=utc(2030, 1, 1), period=period)
    assert (plan.due, plan.gaps, plan.scheduled, plan.skipped_by_policy) == ((), (), (), ())
    assert plan.contiguous_through is None
    assert plan.next_due_at is None
    assert plan.describe() == (
        "filled 0/0, contiguous through nothing, next due at never, 0 skipped by policy"
    )


@pytest.mark.parametrize("stop", [None, dt.date(2030, 1, 5)])
def test_plan_range_entirely_in_the_future(stop: dt.date | None) -> None:
    plan = plan_range(
        set(), start=dt.date(2030, 1, 1), stop=stop, now=utc(2026, 3, 8), lateness="1h"
    )
    assert (plan.due, plan.gaps, plan.skipped_by_policy) == ((), (), ())
    assert plan.contiguous_through is None
    assert plan.next_due_at == utc(2030, 1, 2, 1)


def test_plan_range_open_ended_runs_up_to_now() -> None:
    plan = plan_range({dt.date(2026, 3, 1)}, start="2026-03-01", now=utc(2026, 3, 5, 12))
    assert plan.stop is None
    assert plan.due == march(1, 2, 3, 4)
    assert plan.gaps == march(2, 3, 4)
    assert plan.next_due_at == utc(2026, 3, 6)


def test_plan_range_ten_years_daily() -> None:
    days = set(periods_between("2016-01-01", "2026-01-01"))
    days.discard(dt.date(2020, 5, 5))
    plan = plan_range(days, start="2016-01-01", stop="2026-01-01", now=utc(2026, 6, 1))
    assert plan.total == 3653
    assert plan.gaps == (dt.date(2020, 5, 5),)
    assert plan.contiguous_through == dt.date(2020, 5, 4)
    assert plan.next_due_at is None


# --- hourly -----------------------------------------------------------------------------------


def test_plan_range_hourly_matches_complete_hours_by_utc_instant() -> None:
    complete = [
        dt.datetime(2026, 11, 1, 0, tzinfo=NY),  # 04:00Z
        dt.datetime(2026, 11, 1, 1, tzinfo=NY),  # 05:00Z, 01:00 EDT
        dt.datetime(2026, 11, 1, 1, tzinfo=NY, fold=1),  # 06:00Z, the repeated 01:00 EST
        "2026-11-01T08:00Z",
    ]
    plan = plan_range(
        complete,
        start="2026-11-01T04:00Z",
        stop=dt.datetime(2026, 11, 1, 5, tzinfo=NY),  # 10:00Z
        now=utc(2026, 11, 1, 9, 30),
        lateness="30m",
        period=HOURLY,
        timezone="America/New_York",
    )
    assert plan.due == tuple(utc(2026, 11, 1, h) for h in range(4, 9))
    assert plan.gaps == (utc(2026, 11, 1, 7),)
    assert plan.contiguous_through == utc(2026, 11, 1, 6)
    assert plan.next_due_at == utc(2026, 11, 1, 10, 30)
    assert plan.to_json()["gaps"] == ["2026-11-01T07:00Z"]


def test_plan_range_hourly_year() -> None:
    hours = list(periods_between(utc(2025, 1, 1), utc(2026, 1, 1), HOURLY))
    plan = plan_range(
        hours[:100] + hours[101:],
        start=hours[0],
        stop=utc(2026, 1, 1),
        now=utc(2026, 1, 1),
        period=HOURLY,
        catchup="last:8000",
        strategy="reverse",
    )
    assert plan.total == 8760
    assert plan.gaps == ()
    assert plan.skipped_by_policy == (hours[100],)
    assert plan.contiguous_through == hours[99]


# --- echo, describe, to_json --------------------------------------------------------------------


def test_plan_range_echoes_the_validated_request() -> None:
    plan = plan_range(
        set(),
        start="2026-03-01",
        stop="2026-03-03",
        now=dt.datetime(2026, 3, 10, 1, tzinfo=NY),
        lateness="2h",
        timezone="Europe/London",
        strategy="reverse",
        catchup="last:03",
        task_limit=None,
    )
    assert plan.start == dt.date(2026, 3, 1) and plan.stop == dt.date(2026, 3, 3)
    assert plan.now == utc(2026, 3, 10, 5) and plan.now.tzinfo is UTC  # EDT since 03-08
    assert plan.lateness == dt.timedelta(hours=2)
    assert (plan.period, plan.timezone, plan.strategy) == (DAILY, "Europe/London", "reverse")
    assert (plan.catchup, plan.task_limit) == ("last:3", None)


def test_range_plan_is_frozen() -> None:
    plan = plan_range(set(), **SCENARIO)
    with pytest.raises(AttributeError):
        plan.gaps = ()  # type: ignore[misc]


def test_range_plan_describe_and_to_json() -> None:
    plan = plan_range(SCENARIO_COMPLETE, **SCENARIO, catchup="last:3", task_limit=1)
    assert plan.describe() == (
        "filled 4/9, contiguous through 2026-03-02, next due at 2026-03-11T00:00:00+00:00, "
        "3 skipped by policy"
    )
    data = json.loads(json.dumps(plan.to_json()))
    assert data["gaps"] == ["2026-03-08", "2026-03-09"]
    assert data["scheduled"] == ["2026-03-08"]
    assert data["skipped_by_policy"] == ["2026-03-03", "2026-03-05", "2026-03-06"]
    assert data["contiguous_through"] == "2026-03-02"
    assert data["next_due_at"] == "2026-03-11T00:00:00+00:00"
    assert data["stop"] == "2026-03-11" and data["start"] == "2026-03-01"
    assert (data["total"], data["complete_count"]) == (9, 4)
    assert data["lateness_seconds"] == 0
    assert data["catchup"] == "last:3" and data["task_limit"] == 1
    assert data["description"] == plan.describe()


# --- bad input ----------------------------------------------------------------------------------

DAILY_REQUEST: dict[str, Any] = {
    "start": "2026-03-01",
    "stop": "2026-03-05",
    "now": utc(2026, 4, 1),
}
HOURLY_REQUEST: dict[str, Any] = {
    "start": utc(2026, 3, 1),
    "stop": utc(2026, 3, 2),
    "now": utc(2026, 4, 1),
    "period": HOURLY,
}


@pytest.mark.parametrize(
    ("base", "override", "field"),
    [
        (DAILY_REQUEST, {"now": dt.datetime(2026, 4, 1)}, "now"),
        (DAILY_REQUEST, {"now": "2026-04-01"}, "now"),
        (DAILY_REQUEST, {"lateness": dt.timedelta(seconds=-1)}, "lateness"),
        (DAILY_REQUEST, {"lateness": "-2h"}, "lateness"),
        (DAILY_REQUEST, {"lateness": "soon"}, "lateness"),
        (DAILY_REQUEST, {"start": "2026-03-06"}, "stop"),
        (HOURLY_REQUEST, {"stop": utc(2026, 2, 28, 23)}, "stop"),
        (DAILY_REQUEST, {"strategy": "sideways"}, "strategy"),
        (DAILY_REQUEST, {"strategy": None}, "strategy"),
        (DAILY_REQUEST, {"catchup": "some"}, "catchup"),
        (DAILY_REQUEST, {"catchup": "last:0"}, "catchup"),
        (DAILY_REQUEST, {"catchup": "last:x"}, "catchup"),
        (DAILY_REQUEST, {"catchup": "last:-1"}, "catchup"),
        (DAILY_REQUEST, {"catchup": "last:"}, "catchup"),
        (DAILY_REQUEST, {"catchup": 3}, "catchup"),
        (DAILY_REQUEST, {"timezone": "Mars/Olympus"}, "timezone"),
        (DAILY_REQUEST, {"timezone": ""}, "timezone"),
        (DAILY_REQUEST, {"task_limit": -1}, "task_limit"),
        (DAILY_REQUEST, {"task_limit": True}, "task_limit"),
        (DAILY_REQUEST, {"task_limit": 2.5}, "task_limit"),
        (DAILY_REQUEST, {"period": "fortnightly"}, "period"),
        (DAILY_REQUEST, {"start": utc(2026, 3, 1)}, "start"),
        (DAILY_REQUEST, {"start": "2026-02-30"}, "start"),
        (DAILY_REQUEST, {"start": None}, "start"),
        (DAILY_REQUEST, {"stop": dt.datetime(2026, 3, 5, tzinfo=UTC)}, "stop"),
        (HOURLY_REQUEST, {"start": dt.date(2026, 3, 1)}, "start"),
        (HOURLY_REQUEST, {"start": utc(2026, 3, 1, 0, 30)}, "start"),
        (HOURLY_REQUEST, {"start": dt.datetime(2026, 3, 1)}, "start"),
        (HOURLY_REQUEST, {"start": "2026-03-01"}, "start"),
        (HOURLY_REQUEST, {"stop": dt.date(2026, 3, 2)}, "stop"),
    ],
)
def test_plan_range_rejects_bad_input(
    base: dict[str, Any], override: dict[str, Any], field: str
) -> None:
    with pytest.raises(InvalidInput) as info:
        plan_range(set(), **{**base, **override})
    assert info.value.field == field


@pytest.mark.parametrize(
    ("base", "complete"),
    [
        (DAILY_REQUEST, {utc(2026, 3, 1)}),
        (DAILY_REQUEST, ["2026-03-01", "March 2"]),
        (HOURLY_REQUEST, [dt.datetime(2026, 3, 1, 1)]),
        (HOURLY_REQUEST, [utc(2026, 3, 1, 1, 30)]),
        (HOURLY_REQUEST, [dt.date(2026, 3, 1)]),
    ],
)
def test_plan_range_rejects_foreign_complete_items(base: dict[str, Any], complete: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        plan_range(complete, **base)
    assert info.value.field == "complete"


# --- properties against a tiny reference model ---------------------------------------------------


def reference_due(
    labels: list[dt.date], now: dt.datetime, lateness: dt.timedelta, zone: str, period: str
) -> list[dt.date]:
    """Every label whose interval end + lateness <= now, checked one by one."""
    return [p for p in labels if interval(p, period, zone).end + lateness <= now]


def reference_through(due: list[dt.date], complete: set[dt.date]) -> dt.date | None:
    through = None
    for p in due:
        if p not in complete:
            break
        through = p
    return through


@st.composite
def requests(draw: st.DrawFn, period: str) -> dict[str, Any]:
    """A random plan_range request plus the candidate labels the reference model walks."""
    if period == DAILY:
        start: dt.date = draw(st.dates(dt.date(2025, 1, 1), dt.date(2028, 12, 31)))
        anchor = dt.datetime.combine(start, dt.time(), tzinfo=UTC)
        unit = DAY
    else:
        moment = draw(st.datetimes(dt.datetime(2025, 1, 1), dt.datetime(2028, 12, 31)))
        start = anchor = moment.replace(minute=0, second=0, microsecond=0, tzinfo=UTC)
        unit = HOUR
    length = draw(st.integers(0, 40))
    open_ended = draw(st.booleans())
    now = anchor + draw(st.integers(-2 * 86400, (length + 3) * 86400)) * dt.timedelta(seconds=1)
    lateness = draw(st.sampled_from([0, 1, 1800, 3600, 7200, 86400, 100000])) * dt.timedelta(
        seconds=1
    )
    # Candidates: [start, stop) or, open-ended, far enough past now that the last is not due.
    horizon = length if not open_ended else max(1, (now - anchor) // unit + 3)
    labels = [start + unit * i for i in range(horizon)]
    outside = [start - unit * i for i in range(1, 4)]
    complete = [p for p in labels + outside if draw(st.booleans())]
    return {
        "complete": complete,
        "labels": labels,
        "start": start,
        "stop": None if open_ended else start + unit * length,
        "now": now,
        "lateness": lateness,
        "period": period,
        "timezone": draw(st.sampled_from(ZONES)),
        "strategy": draw(st.sampled_from(STRATEGIES)),
        "catchup": draw(st.sampled_from(CATCHUPS)),
        "task_limit": draw(st.one_of(st.none(), st.integers(0, 8))),
    }


def plan_of(request: dict[str, Any], complete: Any) -> RangePlan:
    args = {k: v for k, v in request.items() if k not in ("complete", "labels")}
    return plan_range(complete, **args)


def check_against_reference(request: dict[str, Any]) -> None:
    plan = plan_of(request, request["complete"])
    complete = set(request["complete"])
    late, zone, period = request["lateness"], request["timezone"], request["period"]
    due = reference_due(request["labels"], request["now"], late, zone, period)
    assert list(plan.due) == due

    done, gaps, skipped = set(due) & complete, set(plan.gaps), set(plan.skipped_by_policy)
    assert done | gaps | skipped == set(due)
    assert len(done) + len(gaps) + len(skipped) == len(due)
    assert plan.complete_count == len(done) and plan.total == len(due)

    window = {"all": len(due), "none": 1}.get(request["catchup"])
    window = int(request["catchup"].split(":")[1]) if window is None else window
    admitted = due[max(0, len(due) - window) :]
    assert list(plan.gaps) == sorted(
        (p for p in admitted if p not in complete), reverse=request["strategy"] == "reverse"
    )
    assert skipped == {p for p in due if p not in complete and p not in admitted}

    limit = request["task_limit"]
    assert plan.scheduled == plan.gaps[: len(plan.scheduled)]
    assert len(plan.scheduled) == (len(plan.gaps) if limit is None else min(limit, len(plan.gaps)))
    assert plan.contiguous_through == reference_through(due, complete)

    pending = [p for p in request["labels"] if p not in due]
    expected_next = interval(pending[0], period, zone).end + late if pending else None
    assert plan.next_due_at == expected_next

    refilled = plan_of(request, list(request["complete"]) + list(plan.scheduled))
    assert not set(refilled.gaps) & set(plan.scheduled)
    assert refilled.gaps == tuple(p for p in plan.gaps if p not in set(plan.scheduled))


@given(requests(DAILY))
def test_plan_range_daily_matches_reference_model(request: dict[str, Any]) -> None:
    check_against_reference(request)


@given(requests(HOURLY))
def test_plan_range_hourly_matches_reference_model(request: dict[str, Any]) -> None:
    check_against_reference(request)


@given(requests(HOURLY), st.sampled_from(["America/New_York", "Asia/Kolkata", "Europe/London"]))
def test_plan_range_hourly_complete_in_any_zone_matches_by_instant(
    request: dict[str, Any], zone: str
) -> None:
    local = [p.astimezone(ZoneInfo(zone)) for p in request["complete"]]
    assert plan_of(request, local) == plan_of(request, request["complete"])


def test_plan_range_lateness_string_and_timedelta_agree() -> None:
    a = plan_range(SCENARIO_COMPLETE, **SCENARIO, lateness="1d2h")
    b = plan_range(SCENARIO_COMPLETE, **SCENARIO, lateness=parse_lateness("26h"))
    assert a == b


def test_plans_share_the_due_periods_of_a_schedule_only_when_it_is_the_same() -> None:
    """``plans`` works out which periods are due once per distinct schedule: jobs on the
    same one share it and keep their own gaps; a schedule differing only in its calendar
    (equal to it as a value: a Period equals its name) or its lateness is planned apart."""
    from gatekeeper.core.planning import plan, plans
    from gatekeeper.core.schedule import Schedule, schedule_key

    now = dt.datetime(2026, 1, 12, 3, tzinfo=UTC)  # a Monday
    every = Schedule.parse(start="2026-01-01")
    weekdays = Schedule.parse(start="2026-01-01", calendar="weekdays")
    late = Schedule.parse(start="2026-01-01", lateness="4h")
    assert weekdays == every  # why the key holds the kind itself
    assert len({schedule_key(s) for s in (every, weekdays, late)}) == 3
    schedules = {"A": every, "B": Schedule.parse(start="2026-01-01"), "C": weekdays, "D": late}
    complete = {"A": ["2026-01-01"], "B": ["2026-01-02", "2026-01-05"], "C": ["2026-01-02"]}
    found = plans(complete, schedules, now=now, task_limit=None)
    for job, schedule in schedules.items():
        assert found[job] == plan(complete.get(job, ()), schedule, now=now, task_limit=None)
    assert found["A"].gaps != found["B"].gaps
    assert len(found["C"].due) == 7 and len(found["A"].due) == 11
    assert len(found["D"].due) == 10  # the 11th is due at 04:00
