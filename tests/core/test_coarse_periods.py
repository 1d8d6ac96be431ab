"""Weekly, monthly and quarterly periods: keys, labels, ordinals, intervals, closing (pure)."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import MONTHLY, QUARTERLY, WEEKLY, kind_of_key, parse_period
from gatekeeper.core.planning import plan_range

DAYS = st.dates(dt.date(2, 1, 8), dt.date(9998, 12, 1))  # every year with a closed quarter


@pytest.mark.parametrize("kind", [WEEKLY, MONTHLY, QUARTERLY])
@given(day=DAYS)
def test_coarse_period_round_trips(kind, day: dt.date) -> None:
    instant = dt.datetime.combine(day, dt.time(), tzinfo=dt.timezone.utc)
    first = kind.last_closed(instant, "UTC")
    key = kind.key(first)
    assert kind_of_key(key) is kind
    assert kind.label(key) == first == kind.parse(key) == kind.from_param(kind.to_param(first))
    assert kind.at(kind.ordinal(first)) == first
    assert kind.ordinal(kind.shift(first, 1)) == kind.ordinal(first) + 1
    span = kind.interval(first, "UTC")
    assert span.end == kind.interval(kind.shift(first, 1), "UTC").start
    assert span.end <= instant < kind.interval(kind.shift(first, 1), "UTC").end


@pytest.mark.parametrize(
    ("kind", "label", "key"),
    [
        (WEEKLY, dt.date(2026, 10, 5), "2026-W41"),
        (WEEKLY, dt.date(2020, 12, 28), "2020-W53"),
        (MONTHLY, dt.date(2025, 1, 1), "2025-01"),
        (QUARTERLY, dt.date(2025, 4, 1), "2025-Q2"),
        (MONTHLY, dt.date(999, 12, 1), "0999-12"),  # four digits, as a day's key
        (QUARTERLY, dt.date(999, 10, 1), "0999-Q4"),
        (WEEKLY, dt.date(999, 12, 23), "0999-W52"),
    ],
)
def test_coarse_period_keys(kind, label: dt.date, key: str) -> None:
    assert kind.key(label) == key
    assert kind.label(key) == label


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (WEEKLY, "2026-10-06"),  # a Tuesday
        (WEEKLY, "2026-W54"),
        (MONTHLY, "2025-13"),
        (MONTHLY, dt.date(2025, 1, 2)),
        (QUARTERLY, "2025-Q5"),
        (QUARTERLY, dt.date(2025, 2, 1)),
        (MONTHLY, dt.datetime(2025, 1, 1)),
    ],
)
def test_coarse_period_refuses_what_is_not_one(kind, value: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        kind.key(value, "start")
    assert caught.value.field == "start"


def test_month_interval_in_a_dst_zone_and_its_closing() -> None:
    paris = ZoneInfo("Europe/Paris")
    span = MONTHLY.interval("2026-03", "Europe/Paris")
    assert span.start == dt.datetime(2026, 3, 1, tzinfo=paris)
    assert span.end == dt.datetime(2026, 4, 1, tzinfo=paris)
    assert span.end - span.start == dt.timedelta(days=31, hours=-1)
    assert MONTHLY.last_closed(span.end, "Europe/Paris") == dt.date(2026, 3, 1)
    assert MONTHLY.last_closed(span.end - dt.timedelta(seconds=1), "Europe/Paris") == dt.date(
        2026, 2, 1
    )
    week = WEEKLY.interval("2026-W43", "Europe/Paris")  # holds the end of summer time (25 Oct)
    assert week.end - week.start == dt.timedelta(days=7, hours=1)


def test_monthly_range_over_2025_plans_12_months() -> None:
    plan = plan_range(
        [],
        start="2025-01",
        stop="2026-01",
        now="2026-02-01T00:00Z",
        period="monthly",
        task_limit=None,
    )
    assert [plan.key(m) for m in plan.gaps] == [f"2025-{m:02d}" for m in range(1, 13)]
    assert parse_period("quarterly") is QUARTERLY
