"""Tests of business periods: labels, ledger keys, intervals, DST, closing time (pure)."""

from __future__ import annotations

import datetime as dt
import json
import pickle
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import (
    DAILY,
    HOURLY,
    PERIODS,
    Interval,
    Period,
    hour_key,
    interval,
    kind_of_key,
    last_closed,
    parse_aware_datetime,
    parse_business_date,
    parse_hour,
    parse_label,
    parse_lateness,
    parse_period,
    parse_period_key,
    parse_timezone,
    period_at,
    period_from_key,
    period_key,
    period_ordinal,
    period_ordinals,
    periods_between,
)
from gatekeeper.core.planning import plan_range

UTC = dt.timezone.utc
NY = ZoneInfo("America/New_York")
LONDON = ZoneInfo("Europe/London")
ZONES = [
    "UTC",
    "America/New_York",
    "Europe/London",
    "America/Santiago",
    "Australia/Lord_Howe",
    "Asia/Kolkata",
    "Pacific/Apia",
]
DAY = dt.timedelta(days=1)
HOUR = dt.timedelta(hours=1)
US = dt.timedelta(microseconds=1)


def utc(
    year: int, month: int, day: int, hour: int = 0, minute: int = 0, second: int = 0, us: int = 0
) -> dt.datetime:
    """An aware UTC datetime."""
    return dt.datetime(year, month, day, hour, minute, second, us, tzinfo=UTC)


def assert_invalid(expected_field: str, call: Any, *args: Any, **kwargs: Any) -> InvalidInput:
    """Call ``call`` and assert it raises InvalidInput naming ``expected_field``."""
    with pytest.raises(InvalidInput) as info:
        call(*args, **kwargs)
    assert info.value.field == expected_field
    return info.value


# --- the functions the ledger already relies on keep their behaviour -------------------------


def test_parse_business_date_accepts_dates_and_iso_strings() -> None:
    assert parse_business_date(dt.date(2028, 2, 29)) == dt.date(2028, 2, 29)
    assert parse_business_date("2028-02-29") == dt.date(2028, 2, 29)
    assert period_key("2026-03-08") == "2026-03-08"


@pytest.mark.parametrize(
    "value", [dt.datetime(2026, 3, 8), "2026-02-30", "2026-3-8", "20260308", True, 20260308, None]
)
def test_parse_business_date_rejects(value: Any) -> None:
    assert_invalid("d", parse_business_date, value, "d")


def test_parse_aware_datetime_converts_to_utc_and_rejects_naive() -> None:
    assert parse_aware_datetime("2026-03-08T01:00-05:00", "t") == utc(2026, 3, 8, 6)
    assert parse_aware_datetime("2026-03-08T06:00Z", "t") == utc(2026, 3, 8, 6)
    assert parse_aware_datetime(utc(2026, 1, 1), "t").tzinfo is UTC
    assert_invalid("t", parse_aware_datetime, dt.datetime(2026, 3, 8), "t")
    assert_invalid("t", parse_aware_datetime, "yesterday", "t")


# --- Interval ---------------------------------------------------------------------------------


def test_interval_record_is_half_open_and_held_in_utc() -> None:
    span = Interval(dt.datetime(2026, 3, 8, tzinfo=NY), dt.datetime(2026, 3, 9, tzinfo=NY))
    assert span.start == utc(2026, 3, 8, 5) and span.start.tzinfo is UTC
    assert span.end == utc(2026, 3, 9, 4)
    assert span.duration == dt.timedelta(hours=23)
    assert span.start in span
    assert span.end - US in span
    assert span.end not in span
    assert span.start - US not in span
    assert "2026-03-08" not in span


def test_interval_record_rejects_naive_and_reversed_bounds() -> None:
    assert_invalid("start", Interval, dt.datetime(2026, 1, 1), utc(2026, 1, 2))
    assert_invalid("end", Interval, utc(2026, 1, 1), dt.datetime(2026, 1, 2))
    assert_invalid("end", Interval, utc(2026, 1, 2), utc(2026, 1, 1))
    assert Interval(utc(2026, 1, 1), utc(2026, 1, 1)).duration == dt.timedelta(0)


# --- daily and hourly intervals, DST ----------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "day", "start", "hours"),
    [
        ("UTC", "2026-03-08", utc(2026, 3, 8), 24),
        ("America/New_York", "2026-03-07", utc(2026, 3, 7, 5), 24),
        ("America/New_York", "2026-03-08", utc(2026, 3, 8, 5), 23),
        ("America/New_York", "2026-11-01", utc(2026, 11, 1, 4), 25),
        ("America/New_York", "2026-11-02", utc(2026, 11, 2, 5), 24),
        ("Europe/London", "2026-03-29", utc(2026, 3, 29), 23),
        ("Europe/London", "2026-10-25", utc(2026, 10, 24, 23), 25),
        ("Europe/London", "2026-07-01", utc(2026, 6, 30, 23), 24),
        ("UTC", "2028-02-29", utc(2028, 2, 29), 24),
        ("Asia/Kolkata", "2026-01-01", dt.datetime(2025, 12, 31, 18, 30, tzinfo=UTC), 24),
        # Santiago skips local midnight: the day starts at the transition, 01:00 -03.
        ("America/Santiago", "2026-09-06", utc(2026, 9, 6, 4), 23),
        # Apia skipped 2011-12-30 altogether: an empty interval.
        ("Pacific/Apia", "2011-12-30", utc(2011, 12, 30, 10), 0),
    ],
)
def test_interval_daily_is_local_midnight_to_next_local_midnight(
    zone: str, day: str, start: dt.datetime, hours: int
) -> None:
    span = interval(day, DAILY, zone)
    assert span.start == start
    assert span.duration == dt.timedelta(hours=hours)
    assert span.start.tzinfo is UTC and span.end.tzinfo is UTC


def test_interval_defaults_to_daily_utc() -> None:
    assert interval(dt.date(2028, 2, 29)) == Interval(utc(2028, 2, 29), utc(2028, 3, 1))


@given(
    day=st.dates(min_value=dt.date(1990, 1, 1), max_value=dt.date(2040, 12, 31)),
    zone=st.sampled_from(ZONES),
)
def test_interval_daily_intervals_tile_the_timeline(day: dt.date, zone: str) -> None:
    today, tomorrow = interval(day, DAILY, zone), interval(day + DAY, DAILY, zone)
    assert today.end == tomorrow.start
    assert dt.timedelta(0) <= today.duration <= dt.timedelta(hours=26)


@pytest.mark.parametrize(
    "hour",
    [
        utc(2026, 11, 1, 6),
        dt.datetime(2026, 11, 1, 1, tzinfo=NY, fold=1),  # the repeated 01:00, EST
        "2026-11-01T01:00-05:00",
        "2026-11-01T06:00Z",
    ],
)
def test_interval_hourly_is_one_real_hour(hour: Any) -> None:
    span = interval(hour, HOURLY, "America/New_York")
    assert span == Interval(utc(2026, 11, 1, 6), utc(2026, 11, 1, 7))
    assert span.duration == HOUR


def test_interval_rejects_labels_of_the_other_period_and_out_of_range_days() -> None:
    assert_invalid("business_date", interval, utc(2026, 1, 1), DAILY)
    assert_invalid("business_date", interval, dt.date(2026, 1, 1), HOURLY)
    assert_invalid("when", interval, "2026-01-01T00:30Z", HOURLY, field="when")
    assert_invalid("period", interval, dt.date(2026, 1, 1), "fortnightly")
    assert_invalid("timezone", interval, dt.date(2026, 1, 1), DAILY, "Mars/Olympus")
    assert_invalid("business_date", interval, dt.date.max)


# --- time zones, periods, lateness -------------------------------------------------------------


def test_parse_timezone_returns_zoneinfo() -> None:
    assert parse_timezone("America/New_York") == NY
    assert parse_timezone(LONDON) is LONDON


@pytest.mark.parametrize(
    "name", ["Mars/Olympus", "", "America", "utc ", "../etc/passwd", "/etc/localtime", None, 5]
)
def test_parse_timezone_rejects_unknown_zones(name: Any) -> None:
    assert_invalid("timezone", parse_timezone, name)
    assert_invalid("business_tz", parse_timezone, name, "business_tz")


def test_parse_period_accepts_daily_and_hourly_only() -> None:
    assert parse_period("daily") == DAILY and parse_period("hourly") == HOURLY
    for bad in ["fortnightly", "Daily", "", None]:
        assert_invalid("period", parse_period, bad)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2h", dt.timedelta(hours=2)),
        ("30m", dt.timedelta(minutes=30)),
        ("1d", dt.timedelta(days=1)),
        ("90s", dt.timedelta(seconds=90)),
        ("1h30m", dt.timedelta(hours=1, minutes=30)),
        ("1d2h3m4s", dt.timedelta(days=1, hours=2, minutes=3, seconds=4)),
        ("1h 30m", dt.timedelta(hours=1, minutes=30)),
        (" 2H ", dt.timedelta(hours=2)),
        ("0s", dt.timedelta(0)),
        ("0", dt.timedelta(0)),
        (dt.timedelta(minutes=5), dt.timedelta(minutes=5)),
        (dt.timedelta(0), dt.timedelta(0)),
    ],
)
def test_parse_lateness_accepts_durations(text: Any, expected: dt.timedelta) -> None:
    assert parse_lateness(text) == expected


@pytest.mark.parametrize(
    "value",
    [
        dt.timedelta(seconds=-1),
        -US,
        "-2h",
        "- 1h",
        "",
        "h",
        "2",
        "2 hours",
        "30m1h",
        "1.5h",
        "P1D",
        "999999999999d",
        7200,
        True,
        None,
    ],
)
def test_parse_lateness_rejects(value: Any) -> None:
    assert_invalid("lateness", parse_lateness, value)


# --- hourly keys, dispatch and the inverse ------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "key"),
    [
        (utc(2026, 3, 8, 7), "2026-03-08T07:00Z"),
        (dt.datetime(2026, 3, 8, 3, tzinfo=NY), "2026-03-08T07:00Z"),
        (dt.datetime(2026, 11, 1, 1, tzinfo=NY), "2026-11-01T05:00Z"),
        (dt.datetime(2026, 11, 1, 1, tzinfo=NY, fold=1), "2026-11-01T06:00Z"),
        ("2026-03-08T07:00Z", "2026-03-08T07:00Z"),
        ("2026-03-08T12:30+05:30", "2026-03-08T07:00Z"),
        (utc(2, 1, 1, 0), "0002-01-01T00:00Z"),
    ],
)
def test_hour_key_is_canonical_utc(value: Any, key: str) -> None:
    assert hour_key(value) == key
    assert parse_period_key(value, HOURLY) == key


@pytest.mark.parametrize(
    "value",
    [
        dt.datetime(2026, 3, 8, 7),  # naive
        utc(2026, 3, 8, 7, 30),
        utc(2026, 3, 8, 7, 0, 1),
        utc(2026, 3, 8, 7, 0, 0, 1),
        dt.datetime(2026, 3, 8, 7, tzinfo=ZoneInfo("Asia/Kolkata")),  # 01:30 UTC
        dt.date(2026, 3, 8),
        "2026-03-08",
        "2026-03-08T07:00",
        True,
        1772953200,
        None,
    ],
)
def test_hour_key_rejects(value: Any) -> None:
    assert_invalid("business_date", hour_key, value)
    assert_invalid("hour", hour_key, value, "hour")


def test_parse_period_key_dispatches_on_period() -> None:
    assert parse_period_key(dt.date(2026, 3, 8), DAILY) == "2026-03-08"
    assert parse_period_key("2026-03-08", DAILY) == "2026-03-08"
    assert_invalid("business_date", parse_period_key, utc(2026, 3, 8), DAILY)
    assert_invalid("d", parse_period_key, dt.date(2026, 3, 8), HOURLY, "d")
    assert_invalid("period", parse_period_key, dt.date(2026, 3, 8), "fortnightly")


def test_parse_label_returns_dates_and_utc_hours() -> None:
    assert parse_label("2026-03-08", DAILY) == dt.date(2026, 3, 8)
    hour = parse_label(dt.datetime(2026, 3, 8, 3, tzinfo=NY), HOURLY)
    assert isinstance(hour, dt.datetime)
    assert hour == utc(2026, 3, 8, 7) and hour.tzinfo is UTC
    assert parse_hour("2026-03-08T07:00Z") == utc(2026, 3, 8, 7)


@pytest.mark.parametrize(
    ("key", "label"),
    [
        ("2026-03-08", dt.date(2026, 3, 8)),
        ("2028-02-29", dt.date(2028, 2, 29)),
        ("2026-03-08T07:00Z", utc(2026, 3, 8, 7)),
        ("2026-12-31T23:00Z", utc(2026, 12, 31, 23)),
    ],
)
def test_period_from_key_inverts_keys(key: str, label: dt.date) -> None:
    got = period_from_key(key)
    assert got == label and type(got) is type(label)
    if isinstance(got, dt.datetime):
        assert got.tzinfo is UTC


@pytest.mark.parametrize(
    "key",
    [
        "2026-02-30",
        "2027-02-29",
        "2026-03-08T07:30Z",
        "2026-03-08T24:00Z",
        "2026-02-30T07:00Z",
        "2026-03-08T07:00",
        "2026-03-08T07:00+00:00",
        "",
        20260308,
        dt.date(2026, 3, 8),
    ],
)
def test_period_from_key_rejects(key: Any) -> None:
    assert_invalid("key", period_from_key, key, "key")


@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)))
def test_period_keys_round_trip(moment: dt.datetime) -> None:
    hour = moment.replace(minute=0, second=0, microsecond=0, tzinfo=UTC)
    assert period_from_key(hour_key(hour)) == hour
    assert period_from_key(period_key(moment.date())) == moment.date()


# --- ordinals and ranges -------------------------------------------------------------------------


@given(st.datetimes(min_value=dt.datetime(1, 1, 2), max_value=dt.datetime(9999, 12, 30)))
def test_period_ordinal_and_period_at_are_inverse(moment: dt.datetime) -> None:
    day = moment.date()
    hour = moment.replace(minute=0, second=0, microsecond=0, tzinfo=UTC)
    assert period_at(period_ordinal(day, DAILY), DAILY) == day
    assert period_at(period_ordinal(hour, HOURLY), HOURLY) == hour
    assert period_ordinal(day + DAY) == period_ordinal(day) + 1
    assert period_ordinal(hour + HOUR, HOURLY) == period_ordinal(hour, HOURLY) + 1


def test_period_at_rejects_positions_outside_the_calendar() -> None:
    assert_invalid("ordinal", period_at, 0, DAILY)
    assert_invalid("ordinal", period_at, dt.date.max.toordinal() + 1, DAILY)
    assert_invalid("ordinal", period_at, 23, HOURLY)


def test_period_ordinals_matches_period_ordinal_on_every_path() -> None:
    days = [dt.date(2026, 3, 8), "2026-03-09"]
    assert period_ordinals(days, DAILY) == {period_ordinal(d) for d in days}
    hours = [
        utc(2026, 11, 1, 5),
        dt.datetime(2026, 11, 1, 1, tzinfo=NY, fold=1),  # 06:00Z, the repeated hour
        dt.datetime(2026, 11, 1, 7, tzinfo=ZoneInfo("UTC")),
        "2026-11-01T08:00Z",
    ]
    expected = {period_ordinal(utc(2026, 11, 1, h), HOURLY) for h in (5, 6, 7, 8)}
    assert period_ordinals(hours, HOURLY) == expected


@pytest.mark.parametrize(
    ("values", "period"),
    [
        ([dt.date(2026, 3, 8), utc(2026, 3, 9)], DAILY),
        (["2026-03-08", 17], DAILY),
        ([utc(2026, 3, 8, 7), utc(2026, 3, 8, 7, 30)], HOURLY),
        ([dt.datetime(2026, 3, 8, 7)], HOURLY),
        ([dt.date(2026, 3, 8)], HOURLY),
    ],
)
def test_period_ordinals_rejects_foreign_items(values: list[Any], period: str) -> None:
    assert_invalid("complete", period_ordinals, values, period)


def test_periods_between_daily_is_start_inclusive_stop_exclusive() -> None:
    got = list(periods_between(dt.date(2028, 2, 27), "2028-03-02"))
    assert got == [dt.date(2028, 2, d) for d in (27, 28, 29)] + [dt.date(2028, 3, 1)]
    assert list(periods_between("2026-03-08", "2026-03-08")) == []
    assert sum(1 for _ in periods_between("2016-01-01", "2026-01-01")) == 3653


def test_periods_between_hourly_walks_real_hours_through_dst() -> None:
    start = dt.datetime(2026, 11, 1, 0, tzinfo=NY)  # 04:00Z
    got = list(periods_between(start, utc(2026, 11, 1, 8), HOURLY, "America/New_York"))
    assert got == [utc(2026, 11, 1, h) for h in range(4, 8)]
    assert all(isinstance(h, dt.datetime) and h.tzinfo is UTC for h in got)
    year = list(periods_between(utc(2025, 1, 1), utc(2026, 1, 1), HOURLY))
    assert len(year) == 8760 and year[-1] == utc(2025, 12, 31, 23)


def test_periods_between_labels_do_not_depend_on_the_time_zone() -> None:
    for zone in ZONES:
        days = list(periods_between("2026-10-24", "2026-10-27", DAILY, zone))
        assert days == [dt.date(2026, 10, d) for d in (24, 25, 26)]


def test_periods_between_rejects_bad_bounds() -> None:
    assert_invalid("stop", periods_between, "2026-03-09", "2026-03-08")
    assert_invalid("start", periods_between, utc(2026, 3, 8), "2026-03-09")
    assert_invalid("stop", periods_between, "2026-03-08", None)
    assert_invalid("start", periods_between, "2026-03-08", utc(2026, 3, 9), HOURLY)
    assert_invalid("timezone", periods_between, "2026-03-08", "2026-03-09", DAILY, "Nowhere")
    assert_invalid("period", periods_between, "2026-03-08", "2026-03-09", "fortnightly")


# --- last_closed: the latest period that has ended by an instant --------------------------------


@pytest.mark.parametrize(
    ("until", "zone", "expected"),
    [
        (utc(2026, 3, 9), "UTC", dt.date(2026, 3, 8)),
        (utc(2026, 3, 9) - US, "UTC", dt.date(2026, 3, 7)),
        # New York's 23-hour day ends at 04:00Z, not 05:00Z.
        (utc(2026, 3, 9, 4), "America/New_York", dt.date(2026, 3, 8)),
        (utc(2026, 3, 9, 4) - US, "America/New_York", dt.date(2026, 3, 7)),
        # ... and its 25-hour day at 05:00Z the next day.
        (utc(2026, 11, 2, 5), "America/New_York", dt.date(2026, 11, 1)),
        (utc(2026, 11, 2, 5) - US, "America/New_York", dt.date(2026, 10, 31)),
        (utc(2026, 3, 29, 23), "Europe/London", dt.date(2026, 3, 29)),
        (utc(2026, 3, 29, 23) - US, "Europe/London", dt.date(2026, 3, 28)),
        (utc(2026, 10, 26), "Europe/London", dt.date(2026, 10, 25)),
        (utc(2026, 10, 26) - US, "Europe/London", dt.date(2026, 10, 24)),
        (utc(2028, 3, 1), "UTC", dt.date(2028, 2, 29)),
        (utc(2011, 12, 30, 10), "Pacific/Apia", dt.date(2011, 12, 30)),  # the empty day
        (utc(9999, 12, 31, 12), "UTC", dt.date(9999, 12, 30)),
        (utc(1, 1, 1, 12), "UTC", None),
    ],
)
def test_last_closed_daily_boundaries(
    until: dt.datetime, zone: str, expected: dt.date | None
) -> None:
    assert last_closed(until, DAILY, zone) == expected


def test_last_closed_hourly_boundaries() -> None:
    assert last_closed(utc(2026, 3, 8, 7), HOURLY) == utc(2026, 3, 8, 6)
    assert last_closed(utc(2026, 3, 8, 7) - US, HOURLY) == utc(2026, 3, 8, 5)
    assert last_closed(dt.datetime(2026, 3, 8, 3, tzinfo=NY), HOURLY, NY) == utc(2026, 3, 8, 6)
    assert_invalid("until", last_closed, dt.datetime(2026, 3, 8), HOURLY)


@given(
    until=st.datetimes(
        min_value=dt.datetime(1990, 1, 1), max_value=dt.datetime(2040, 1, 1), timezones=st.just(UTC)
    ),
    zone=st.sampled_from(ZONES),
    period=st.sampled_from([DAILY, HOURLY]),
)
def test_last_closed_is_the_latest_period_ended_by_until(
    until: dt.datetime, zone: str, period: str
) -> None:
    latest = last_closed(until, period, zone)
    assert latest is not None
    following = period_at(period_ordinal(latest, period) + 1, period)
    assert interval(latest, period, zone).end <= until
    assert interval(following, period, zone).end > until


# --- the Period kinds: one object per kind, each rule one method ------------------------------

#: One period of each kind, as a label, and the length of one step along its line.
STEP = {DAILY: DAY, HOURLY: HOUR}


def labels(kind: Period) -> st.SearchStrategy[dt.date]:
    """Labels of ``kind``: dates, or aware UTC hour starts, away from the calendar's ends."""
    moments = st.datetimes(min_value=dt.datetime(1, 1, 3), max_value=dt.datetime(9999, 12, 29))
    if kind is DAILY:
        return moments.map(lambda m: m.date())
    return moments.map(lambda m: m.replace(minute=0, second=0, microsecond=0, tzinfo=UTC))


both = pytest.mark.parametrize("kind", PERIODS[:2], ids=lambda k: k.name)  # coarse: test_coarse


def test_period_kinds_are_found_by_name_and_read_as_their_name() -> None:
    assert [k.name for k in PERIODS] == ["daily", "hourly", "weekly", "monthly", "quarterly"]
    assert parse_period("daily") is DAILY and parse_period("hourly") is HOURLY
    assert parse_period(HOURLY) is HOURLY
    assert DAILY == "daily" and f"{HOURLY}" == "hourly" and type(DAILY.name) is str
    assert json.dumps({"period": DAILY}) == '{"period": "daily"}'
    assert {DAILY: 1}["daily"] == 1  # hashes as its name
    assert pickle.loads(pickle.dumps(HOURLY)) is HOURLY


@pytest.mark.parametrize("value", ["fortnightly", "Daily", "", None, 1, ["daily"]])
def test_parse_period_refuses_unknown_kinds_naming_field_and_value(value: Any) -> None:
    err = assert_invalid("of.period", parse_period, value, "of.period")
    assert err.value == value
    assert str(err).endswith(
        "unknown period; expected one of daily, hourly, weekly, monthly, quarterly"
    )


@both
@given(data=st.data())
def test_period_key_and_label_round_trip(kind: Period, data: st.DataObject) -> None:
    label = data.draw(labels(kind))
    key = kind.key(label)
    assert kind.label(key) == label
    assert kind.key(kind.label(key)) == key
    assert kind.owns_key(key) and kind_of_key(key) is kind
    assert not any(other.owns_key(key) for other in PERIODS if other is not kind)
    assert kind.parse(key) == label  # a key is valid user input too


@both
@given(data=st.data())
def test_period_at_inverts_ordinal_and_steps_are_consecutive(
    kind: Period, data: st.DataObject
) -> None:
    label = data.draw(labels(kind))
    n = kind.ordinal(label)
    assert kind.at(n) == label
    assert kind.ordinal(kind.at(n)) == n
    assert kind.ordinal(label + STEP[kind]) == n + 1
    assert kind.at(n + 1) == label + STEP[kind]
    assert kind.ordinals([label, kind.key(label)]) == {n}


@both
@given(data=st.data(), zone=st.sampled_from(ZONES))
def test_period_intervals_are_contiguous_and_close_at_their_end(
    kind: Period, data: st.DataObject, zone: str
) -> None:
    label = data.draw(labels(kind))
    span, after = kind.interval(label, zone), kind.interval(kind.at(kind.ordinal(label) + 1), zone)
    assert span.start < span.end == after.start
    assert kind.closes_at(label, zone) == span.end
    assert kind.last_closed(span.end, zone) == label
    assert kind.last_closed(span.end - US, zone) == kind.at(kind.ordinal(label) - 1)


@both
@given(data=st.data(), count=st.integers(0, 60))
def test_period_between_walks_the_ordinals(kind: Period, data: st.DataObject, count: int) -> None:
    first = data.draw(labels(kind))
    n = kind.ordinal(first)
    stop = kind.at(n + count)
    assert list(kind.between(first, stop)) == [kind.at(i) for i in range(n, n + count)]
    assert list(kind.between(kind.key(first), kind.key(stop))) == list(kind.between(first, stop))


@both
@given(data=st.data())
def test_period_luigi_parameter_value_round_trips(kind: Period, data: st.DataObject) -> None:
    label = data.draw(labels(kind))
    value = kind.to_param(label)
    assert kind.from_param(value) == label
    if kind is HOURLY:  # Luigi's DateHourParameter holds the naive UTC hour
        assert isinstance(value, dt.datetime) and value.tzinfo is None
        assert value.replace(tzinfo=UTC) == label
        assert kind.from_param(value.isoformat(timespec="hours")) == label  # Luigi's form
    else:  # a DateParameter holds the date; a datetime given for it is its date
        assert type(value) is dt.date and value == label
        assert kind.from_param(dt.datetime.combine(label, dt.time(13))) == label


def test_period_hourly_parameter_value_of_an_aware_hour_in_another_zone() -> None:
    paris = ZoneInfo("Europe/Paris")
    assert HOURLY.to_param(dt.datetime(2026, 10, 25, 3, tzinfo=paris)) == dt.datetime(
        2026, 10, 25, 2
    )
    assert HOURLY.from_param(dt.datetime(2026, 10, 25, 5)) == utc(2026, 10, 25, 5)


@pytest.mark.parametrize(
    ("kind", "key"),
    [
        (DAILY, "2026-10-25T05:00Z"),
        (DAILY, "2026-02-30"),
        (HOURLY, "2026-10-25"),
        (HOURLY, "2026-10-25T05:30Z"),
        (HOURLY, "2026-02-30T05:00Z"),
        (DAILY, dt.date(2026, 10, 25)),
        (HOURLY, None),
    ],
)
def test_period_label_refuses_keys_of_the_other_kind_and_malformed_keys(
    kind: Period, key: Any
) -> None:
    assert_invalid("business_hour", kind.label, key, "business_hour")


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (DAILY, utc(2026, 10, 25)),
        (DAILY, "2026-10-25T05"),
        (HOURLY, dt.date(2026, 10, 25)),
        (HOURLY, utc(2026, 10, 25, 5, 30)),
        (HOURLY, dt.datetime(2026, 10, 25, 5)),  # naive: only a Luigi parameter value is
    ],
)
def test_period_parse_refuses_labels_of_the_other_kind(kind: Period, value: Any) -> None:
    assert_invalid("start", kind.parse, value, "start")
    assert_invalid("start", kind.key, value, "start")


def test_period_at_refuses_positions_outside_the_calendar_naming_the_kind() -> None:
    err = assert_invalid("ordinal", HOURLY.at, 10**9)
    assert str(err).endswith("no hourly period at this position")
    assert_invalid("ordinal", DAILY.at, 0)


def test_period_kind_of_key_defaults_to_daily_for_what_no_kind_owns() -> None:
    assert kind_of_key("2026-10-25T05:00Z") is HOURLY
    assert kind_of_key("2026-10-25") is DAILY
    assert kind_of_key("2026-10-25T05:30Z") is DAILY and kind_of_key(None) is DAILY
    assert_invalid("business_date", period_from_key, "2026-10-25T05:30Z")


@both
def test_range_plan_holds_the_kind_and_writes_its_name(kind: Period) -> None:
    start = kind.at(kind.ordinal(kind.parse("2026-10-23" if kind is DAILY else "2026-10-23T00")))
    plan = plan_range((), start=start, now=utc(2026, 10, 24, 2), period=kind.name, task_limit=3)
    assert plan.period is kind
    assert type(plan.to_json()["period"]) is str and plan.to_json()["period"] == kind.name
    assert plan.to_json()["gaps"][0] == kind.key(start)
