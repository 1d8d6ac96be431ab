"""Freshness deadlines (pure): deadlines in the job's zone, which are in force, which breached,
and which rule a job has; a property against a reference model built on zoneinfo directly."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.freshness import (
    Breach,
    assess,
    choose_within,
    deadline,
    in_force_at,
    in_force_end,
    last_in_force,
    parse_freshness,
)
from gatekeeper.core.periods import DAILY, HOURLY

UTC = dt.timezone.utc
H = dt.timedelta(hours=1)
DAY = dt.timedelta(days=1)
NY = "America/New_York"


@pytest.mark.parametrize(
    ("kind", "key", "zone", "within", "expected"),
    [
        (DAILY, "2026-10-01", "UTC", 6 * H, "2026-10-02T06:00:00+00:00"),
        (DAILY, "2026-10-01", "Europe/Berlin", 6 * H, "2026-10-02T06:00:00+02:00"),
        (DAILY, "2026-10-01", "Asia/Kolkata", 0 * H, "2026-10-02T00:00:00+05:30"),
        # the 23-hour day: it ends at its local midnight (04:00Z), not 24 h after its start
        (DAILY, "2026-03-08", NY, 6 * H, "2026-03-09T06:00:00-04:00"),
        # the 25-hour day ends at 05:00Z
        (DAILY, "2026-11-01", NY, 6 * H, "2026-11-02T06:00:00-05:00"),
        # elapsed time, as lateness: 6 h after the midnight before the spring-forward is 07:00
        (DAILY, "2026-03-07", NY, 6 * H, "2026-03-08T07:00:00-04:00"),
        (HOURLY, "2026-10-23T05:00Z", "UTC", H, "2026-10-23T07:00:00+00:00"),
        (HOURLY, "2026-10-23T05:00Z", "Europe/London", 30 * H / 60, "2026-10-23T07:30:00+01:00"),
    ],
)
def test_deadline_end_of_interval_in_zone_plus_within(
    kind: object, key: str, zone: str, within: dt.timedelta, expected: str
) -> None:
    found = deadline(kind, key, zone, within)  # type: ignore[arg-type]
    assert found.isoformat() == expected
    assert found == dt.datetime.fromisoformat(expected)


def test_last_in_force_is_the_latest_deadline_at_or_before_now() -> None:
    now = dt.datetime(2026, 3, 9, 10, 0, tzinfo=UTC)  # 2026-03-08's deadline, exactly
    assert last_in_force(DAILY, NY, 6 * H, now) == dt.date(2026, 3, 8)
    assert last_in_force(DAILY, NY, 6 * H, now - dt.timedelta(seconds=1)) == dt.date(2026, 3, 7)


def test_assess_states_published_and_not_yet_in_force() -> None:
    now = dt.datetime(2026, 10, 5, 6, 0, tzinfo=UTC)
    states = [
        ("2026-10-01", "succeeded"),  # published: met
        ("2026-10-02", "succeeded"),  # not published: breached
        ("2026-10-03", "failed"),
        ("2026-10-04", "not_due"),  # due by the deadline though not by lateness: missing
        ("2026-10-05", "missing"),  # deadline 2026-10-06T06:00Z: not in force
    ]
    found = assess("Sales", DAILY, "UTC", 6 * H, states, now, published={"2026-10-01"})
    assert found.in_force == 4 and not found.met
    assert [(b.period, b.describe_state(), b.overdue) for b in found.breaches] == [
        ("2026-10-02", "succeeded, not published", 48 * H),
        ("2026-10-03", "failed", 24 * H),
        ("2026-10-04", "missing", 0 * H),
    ]
    assert found.describe() == (
        "freshness 6h: breached: 3 periods, oldest 2026-10-02 overdue by 2d"
    )
    assert found.breaches[0].describe() == (
        "Sales 2026-10-02 due 2026-10-03T06:00:00+00:00, overdue by 2d: succeeded, not published"
    )
    assert found.to_json()["breaches"][1] == {
        "job": "Sales",
        "period": "2026-10-03",
        "due_at": "2026-10-04T06:00:00+00:00",
        "overdue_seconds": 86400,
        "overdue": "1d",
        "state": "failed",
        "published": False,
    }
    # a job that does not publish: succeeded is met
    plain = assess("Load", DAILY, "UTC", 6 * H, states[:2], now)
    assert plain.met and plain.in_force == 2
    assert plain.describe() == "freshness 6h: met (2 deadlines in force)"


def test_choose_within_luigi_cfg_over_family_over_class() -> None:
    cfg = {"Sales": 6 * H, "RegionLoad": 2 * H}
    assert choose_within("Sales", cfg, "1d") == (6 * H, "[gatekeeper.freshness] Sales")
    assert choose_within("RegionLoad(region=eu)", cfg, "1d") == (
        2 * H,
        "[gatekeeper.freshness] RegionLoad",
    )
    assert choose_within("Other", cfg, "1d") == (24 * H, "task class")
    assert choose_within("Other", cfg, None) is None


@pytest.mark.parametrize("value", ["6x", "-1h", "h6", "", "6 hours"])
def test_parse_freshness_refuses_naming_field_and_value(value: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_freshness(value, "[gatekeeper.freshness] Sales")
    assert caught.value.field == "[gatekeeper.freshness] Sales"
    assert caught.value.value == value
    assert "[gatekeeper.freshness] Sales" in str(caught.value)


ZONES = ("UTC", NY, "Europe/Berlin", "Australia/Lord_Howe", "Asia/Kolkata")
STATES = ("succeeded", "failed", "running", "abandoned", "missing", "not_due", "blocked")


@settings(max_examples=60, deadline=None)
@given(
    zone=st.sampled_from(ZONES),
    first=st.dates(dt.date(2026, 1, 1), dt.date(2026, 12, 20)),
    states=st.lists(st.sampled_from(STATES), min_size=1, max_size=8),
    published=st.lists(st.booleans(), min_size=8, max_size=8),
    within_minutes=st.integers(0, 3 * 24 * 60),
    now_minutes=st.integers(0, 14 * 24 * 60),
    publishes=st.booleans(),
)
def test_assess_matches_reference_model(
    zone: str,
    first: dt.date,
    states: list[str],
    published: list[bool],
    within_minutes: int,
    now_minutes: int,
    publishes: bool,
) -> None:
    """A day's deadline is the next local midnight (zoneinfo) plus ``within``; a deadline at or
    before now that is not succeeded (and published, for a publisher) is a breach."""
    tz = ZoneInfo(zone)
    within = dt.timedelta(minutes=within_minutes)
    now = dt.datetime.combine(first, dt.time(), tz) + dt.timedelta(minutes=now_minutes)
    days = [first + dt.timedelta(days=n) for n in range(len(states))]
    keyed = [(d.isoformat(), s) for d, s in zip(days, states, strict=False)]
    out = {d.isoformat() for d, p in zip(days, published, strict=False) if p}
    found = assess("J", DAILY, zone, within, keyed, now, out if publishes else None)

    expected = []
    in_force = 0
    for day, state in zip(days, states, strict=False):
        midnight = dt.datetime.combine(day + dt.timedelta(days=1), dt.time(), tz)
        due = midnight.astimezone(UTC) + within  # elapsed time, not wall-clock time
        if due > now.astimezone(UTC):
            continue
        in_force += 1
        done = state == "succeeded" and (not publishes or day.isoformat() in out)
        if not done:
            expected.append((day.isoformat(), now.astimezone(UTC) - due))
    assert found.in_force == in_force
    assert [(b.period, b.overdue) for b in found.breaches] == expected
    assert all(isinstance(b, Breach) and b.overdue >= dt.timedelta(0) for b in found.breaches)
    assert found.met == (not expected)
    last = last_in_force(DAILY, zone, within, now)  # now in the job's zone: elapsed time too
    assert last is not None
    assert deadline(DAILY, last, zone, within) <= now < deadline(DAILY, last + DAY, zone, within)


KINDS = {"daily": DAILY, "weekdays": DAILY.on("weekdays"), "hourly": HOURLY}


@settings(max_examples=60, deadline=None)
@given(
    kind_name=st.sampled_from(sorted(KINDS)),
    zone=st.sampled_from(ZONES),
    first=st.dates(dt.date(2026, 1, 1), dt.date(2026, 12, 20)),
    length=st.none() | st.integers(0, 40),
    within_minutes=st.integers(0, 3 * 24 * 60),
    now_minutes=st.integers(-24 * 60, 40 * 24 * 60),
)
def test_in_force_end_counts_the_deadlines_in_force(
    kind_name: str,
    zone: str,
    first: dt.date,
    length: int | None,
    within_minutes: int,
    now_minutes: int,
) -> None:
    """``in_force_end`` on ordinals is the count, period by period, of the deadlines at or
    before now (``in_force_at``, the rule ``assess`` applies), from ``first`` to ``end``."""
    kind = KINDS[kind_name]
    tz = ZoneInfo(zone)
    start = dt.datetime.combine(first, dt.time(), tz)
    lo = kind.rank(first if kind is not HOURLY else dt.datetime.combine(first, dt.time(), UTC))
    end = None if length is None else lo + length
    within = dt.timedelta(minutes=within_minutes)
    now = (start + dt.timedelta(minutes=now_minutes)).astimezone(UTC)
    found = in_force_end(kind, zone, within, now, lo, end)
    n = lo
    while (end is None or n < end) and in_force_at(kind, kind.at(n), zone, within, now):
        n += 1
    assert found == n
    assert end is None or found <= end
