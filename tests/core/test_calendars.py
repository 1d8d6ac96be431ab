"""Business calendars and the period kinds bound to them, against the reference libraries."""

from __future__ import annotations

import copy
import datetime as dt
import pickle
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, HOURLY, MONTHLY, PERIODS, WEEKLY, parse_period, shift
from gatekeeper.core.periods.calendars import (
    WEEKDAYS,
    BusinessCalendar,
    parse_calendar,
    parse_calendar_overrides,
)
from gatekeeper.core.periods.registry import DEFINED
from gatekeeper.core.planning import plan_range

FIRST, STOP = dt.date(1990, 1, 1), dt.date(2041, 1, 1)


def _days(first: dt.date, stop: dt.date) -> list[dt.date]:
    return [dt.date.fromordinal(n) for n in range(first.toordinal(), stop.toordinal())]


def _reference(name: str) -> list[dt.date]:
    """Every business day of 1990-2040 as the reference library has it."""
    if name == "weekdays":
        return [d for d in _days(FIRST, STOP) if d.weekday() < 5]
    if name.startswith("holidays:"):
        holidays = pytest.importorskip("holidays", reason="needs the holidays package")
        country, _, subdiv = name[len("holidays:") :].partition("-")
        closed = holidays.country_holidays(country, subdiv=subdiv or None, years=range(1990, 2041))
        return [d for d in _days(FIRST, STOP) if d.weekday() < 5 and d not in closed]
    xcals = pytest.importorskip("exchange_calendars", reason="needs exchange_calendars")
    found = xcals.get_calendar(name.split(":")[1], start="1990-01-01", end="2040-12-31")
    return [d.date() for d in found.sessions]


@pytest.mark.parametrize("name", ["weekdays", "holidays:US", "holidays:GB-ENG", "exchange:XNYS"])
def test_calendar_business_days_equal_the_reference_library(name: str) -> None:
    expected = _reference(name)
    kind = DAILY.on(name)
    planned = list(kind.between(FIRST, STOP))
    assert planned == expected
    ordinals = [kind.ordinal(d) for d in expected]
    assert ordinals == list(range(ordinals[0], ordinals[0] + len(ordinals)))
    walked = [expected[-1]]
    while len(walked) < len(expected):
        walked.append(kind.shift(walked[-1], -1))
    assert walked[::-1] == expected


@pytest.mark.parametrize(
    ("calendar", "day", "previous", "following"),
    [
        ("weekdays", "2026-10-05", "2026-10-02", "2026-10-06"),  # Monday: the Friday before
        ("holidays:US", "2025-11-28", "2025-11-26", "2025-12-01"),  # after Thanksgiving
        ("holidays:GB-ENG", "2025-12-29", "2025-12-24", "2025-12-30"),
        ("all", "2026-10-05", "2026-10-04", "2026-10-06"),
    ],
)
def test_shift_walks_business_days(calendar: str, day: str, previous: str, following: str) -> None:
    pytest.importorskip("holidays", reason="needs the holidays package")
    kind = DAILY.on(calendar)
    assert kind.shift(day, -1).isoformat() == previous
    assert kind.shift(day, 1).isoformat() == following
    assert kind.shift(kind.shift(day, -7), 7).isoformat() == day


def test_holidays_us_2025_leaves_thanksgiving_closed_and_the_friday_open() -> None:
    pytest.importorskip("holidays", reason="needs the holidays package")
    kind = DAILY.on("holidays:US")
    days = list(kind.between("2025-01-01", "2026-01-01"))
    assert dt.date(2025, 11, 27) not in days and dt.date(2025, 11, 28) in days
    assert len(days) == 250


def test_non_business_day_is_refused_naming_the_days_around_it() -> None:
    with pytest.raises(InvalidInput) as caught:
        DAILY.on("weekdays").ordinal("2026-10-03")
    assert caught.value.field == "business_date"
    assert "2026-10-02" in str(caught.value) and "2026-10-05" in str(caught.value)


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ("weekday", "calendar"),
        ("holidays:", "calendar"),
        (3, "calendar"),
        ("exchange:", "calendar"),
    ],
)
def test_parse_calendar_refuses_unknown_names(value: object, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_calendar(value)
    assert caught.value.field == field


def test_hourly_refuses_a_calendar() -> None:
    with pytest.raises(InvalidInput, match="hourly periods run on every day"):
        HOURLY.on("weekdays")
    assert HOURLY.on("all") is HOURLY


def test_own_calendar_plugs_in_by_protocol() -> None:
    class MonWedFri(BusinessCalendar):
        name = "mwf"

        def is_business_day(self, day: dt.date) -> bool:
            return day.weekday() in (0, 2, 4)

    kind = DAILY.on(MonWedFri())
    assert [d.isoformat() for d in kind.between("2026-10-05", "2026-10-12")] == [
        "2026-10-05",
        "2026-10-07",
        "2026-10-09",
    ]
    assert kind.shift("2026-10-05", -1).isoformat() == "2026-10-02"
    assert MonWedFri().next_business_day(dt.date(2026, 10, 5)) == dt.date(2026, 10, 7)


def test_calendar_overrides_close_and_open_days() -> None:
    defined = parse_calendar_overrides(
        {
            "desk": "weekdays close 2026-12-24 open 2026-11-28",
            "weekdays": "weekdays close 2026-12-31",
        }
    )
    desk = DAILY.on(parse_calendar("desk", defined=defined))
    days = {d.isoformat() for d in desk.between("2026-11-27", "2026-12-28")}
    assert "2026-11-28" in days and "2026-12-24" not in days and "2026-12-23" in days
    adjusted = parse_calendar("weekdays", defined=defined)
    assert not adjusted.is_business_day(dt.date(2026, 12, 31))
    assert parse_calendar("weekdays") is WEEKDAYS


@pytest.mark.parametrize(
    ("text", "word"),
    [("weekdays 2026-12-24", "2026-12-24"), ("weekdays close 2026-13-01", "2026-13-01"), ("", "")],
)
def test_calendar_overrides_refuse_what_they_cannot_read(text: str, word: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_calendar_overrides({"desk": text})
    assert caught.value.field == "gatekeeper.calendars.desk"
    assert caught.value.value == word


def test_business_kind_is_one_object_and_pickles_as_itself() -> None:
    kind = DAILY.on("weekdays")
    assert kind is DAILY.on(WEEKDAYS) and kind.base is DAILY and kind.name == "daily"
    assert pickle.loads(pickle.dumps(kind)) is kind
    assert parse_period(kind) is kind
    assert DAILY.on("all") is DAILY


def test_period_kinds_pickle_and_copy_as_their_one_instance() -> None:
    for kind in PERIODS:
        assert pickle.loads(pickle.dumps(kind)) is kind
        assert copy.deepcopy(kind) is kind and copy.copy(kind) is kind


def test_calendar_registry_resolves_a_defined_name_only_while_filled() -> None:
    desk = parse_calendar_overrides({"desk": "weekdays close 2026-12-24"})["desk"]
    before = DEFINED.source
    try:
        DEFINED.use({"desk": desk}.get)
        assert parse_calendar("desk") is desk
        assert DAILY.on("desk").calendar is desk
        with pytest.raises(InvalidInput):
            parse_calendar("desk", defined={})  # what is passed, not the registry
        DEFINED.use(None)
        with pytest.raises(InvalidInput) as caught:
            parse_calendar("desk")
        assert caught.value.field == "calendar"
    finally:
        DEFINED.use(before)


@pytest.mark.parametrize(
    "weekdays",
    [{"period": DAILY.on("weekdays")}, {"calendar": "weekdays"}],
    ids=["period", "calendar"],
)
def test_weekday_range_plans_its_22_weekdays_of_october_2026(weekdays: dict[str, Any]) -> None:
    plan = plan_range(
        ["2026-10-03", "2026-10-01"],  # a Saturday done under another calendar counts for nothing
        start="2026-10-01",
        stop="2026-11-01",
        now="2026-12-01T00:00Z",
        task_limit=None,
        **weekdays,
    )
    assert plan.total == 22 and plan.complete_count == 1
    assert all(d.weekday() < 5 for d in plan.gaps)
    assert plan.contiguous_through == dt.date(2026, 10, 1)


def test_weekday_plan_is_due_on_the_last_closed_business_day() -> None:
    # Sunday noon: Friday is the latest due weekday; the next due is Monday's close.
    plan = plan_range(
        [],
        start="2026-10-01",
        now="2026-10-11T12:00Z",
        period=DAILY.on("weekdays"),
        task_limit=None,
    )
    assert plan.due[-1] == dt.date(2026, 10, 9)
    assert plan.next_due_at == dt.datetime(2026, 10, 13, tzinfo=dt.timezone.utc)


@given(st.dates(dt.date(1995, 1, 1), dt.date(2035, 12, 31)), st.integers(-600, 600))
def test_weekday_shift_round_trips(day: dt.date, n: int) -> None:
    kind = DAILY.on("weekdays")
    first = kind.at(kind.rank(day))  # the weekday at or after ``day``
    assert kind.shift(kind.shift(first, n), -n) == first
    assert kind.ordinal(kind.shift(first, n)) - kind.ordinal(first) == n


@given(st.dates(dt.date(1995, 1, 1), dt.date(2035, 12, 31)))
def test_monthly_on_weekdays_is_every_month(day: dt.date) -> None:
    kind = MONTHLY.on("weekdays")
    first = day.replace(day=1)
    assert kind.is_business(first)
    assert MONTHLY.at(MONTHLY.ordinal(first)) == first
    assert kind.shift(first, 1) == MONTHLY.shift(first, 1)


def test_weekly_on_a_calendar_skips_a_week_with_no_business_day() -> None:
    closed = [dt.date(2026, 12, 21) + dt.timedelta(d) for d in range(7)]
    defined = parse_calendar_overrides({"shut": "weekdays close " + " ".join(map(str, closed))})
    kind = WEEKLY.on(parse_calendar("shut", defined=defined))
    assert kind.shift("2026-W51", 1) == dt.date(2026, 12, 28)
    assert not kind.is_business("2026-W52")


def test_shift_without_a_calendar_counts_every_period() -> None:
    # Saturday's next period is Sunday, in the core's function as in gk.shift
    assert shift("2026-10-03", 1) == gk.shift("2026-10-03", 1) == dt.date(2026, 10, 4)
    assert shift("2026-10-05", -1) == dt.date(2026, 10, 4)


def test_gk_shift_counts_business_periods_of_any_kind() -> None:
    assert gk.shift("2026-10-05", -1, calendar="weekdays") == dt.date(2026, 10, 2)
    assert gk.shift("2025-11-28", -1, calendar="holidays:US") == dt.date(2025, 11, 26)
    assert gk.shift("2025-12", 1, period="monthly") == dt.date(2026, 1, 1)
    assert gk.shift("2025-Q4", -4, period="quarterly") == dt.date(2024, 10, 1)
    with pytest.raises(InvalidInput) as refused:
        gk.shift("2026-10-03", 1, calendar="weekdays")
    assert refused.value.field == "label" and "2026-10-02" in str(refused.value)
    with pytest.raises(InvalidInput) as refused:
        gk.shift("2026-10-05", 1, calendar="no-such-calendar")
    assert refused.value.field == "calendar"
