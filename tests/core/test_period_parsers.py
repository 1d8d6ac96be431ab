"""The period parsers, read as the operator reads them.

- the planner's fast paths for ledger keys (``period_ordinals``) give exactly what the full
  parser (``period_ordinal``) gives, item by item, and refuse exactly what it refuses;
- every refusal of the period and plan parsers, whole: the message, the field and the value;
- Luigi's hour form and the other hour forms, accepted or refused naming the field;
- ``last_closed`` across the days whose local midnight is off.
"""

from __future__ import annotations

import datetime as dt
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import (
    DAILY,
    HOURLY,
    hour_key,
    interval,
    last_closed,
    parse_aware_datetime,
    parse_business_date,
    parse_hour,
    parse_label,
    parse_lateness,
    parse_period_key,
    period_at,
    period_key,
    period_ordinal,
    period_ordinals,
    periods_between,
)
from gatekeeper.core.periods.labels import hour_ordinal
from gatekeeper.core.planning import plan_range
from tests.helpers.ledgers import T0

UTC = dt.timezone.utc


# -- the planner's fast paths agree with the full parser ----------------------------------------
# Hour fields that look almost like two ASCII digits: the full parser refuses all of them.
ODD_HOURS = ["24", "99", " 5", "5 ", "+5", "-1", "٠٥", "0²", "0a", "1_"]


DAYS = st.dates(min_value=dt.date(1, 1, 2), max_value=dt.date(9999, 12, 30))


def outcome(compute: Any, *args: Any) -> tuple[Any, ...]:
    """("ok", result) or ("invalid", field, value): a refusal must be InvalidInput."""
    try:
        return ("ok", compute(*args))
    except InvalidInput as exc:
        return ("invalid", exc.field, exc.value)


def single(value: Any, period: str) -> tuple[Any, ...]:
    """What the full parser says about one item, in ``period_ordinals``' terms."""
    result = outcome(period_ordinal, value, period, "complete")
    return ("ok", {result[1]}) if result[0] == "ok" else result


@st.composite
def hour_keys(draw: Any) -> str:
    """A ledger key ``YYYY-MM-DDTHH:00Z``, sometimes with one part bent out of shape."""
    day = draw(DAYS).isoformat()
    hour = draw(st.one_of(st.integers(0, 23).map(lambda h: f"{h:02d}"), st.sampled_from(ODD_HOURS)))
    sep = draw(st.sampled_from(["T", "T", "T", " ", "t"]))
    tail = draw(st.sampled_from([":00Z", ":00Z", ":00Z", ":30Z", ":00z", ":00+"]))
    bad_day = draw(st.sampled_from([None, "2026-02-30", "2026-13-01", "2026/10/25"]))
    return f"{bad_day or day}{sep}{hour}{tail}"


HOUR_VALUES = st.one_of(
    hour_keys(),
    st.builds(
        lambda d, h, m: dt.datetime.combine(d, dt.time(h, m), tzinfo=UTC),
        DAYS,
        st.integers(0, 23),
        st.sampled_from([0, 0, 30]),
    ),
    st.builds(
        lambda d, h: dt.datetime.combine(d, dt.time(h), tzinfo=ZoneInfo("Europe/Berlin")),
        DAYS,
        st.integers(0, 23),
    ),
    DAYS.map(lambda d: f"{d.isoformat()}T05"),  # Luigi's DateHourParameter form
    DAYS,
)


@given(HOUR_VALUES)
@example("2026-10-25T 5:00Z")
@example("2026-10-25T٠٥:00Z")
@example("2026-10-25T0²:00Z")
@example("2026-10-25T24:00Z")
@example("2026-10-25T23:00Z")
@example("2026-02-30T05:00Z")
@example("2026-10-25X05:00Z")
@example("2026-10-25T05:30Z")  # a whole ledger key's shape but for the minutes
@example("2026-W43-7T15:00Z")  # an ISO week date: both parsers read it (the second fast path)
@example("2026-10-25t05:00Z")
@example(dt.datetime(2026, 10, 25, 5, 0, 30, tzinfo=UTC))  # on the minute, not the hour
@example(dt.datetime(2026, 10, 25, 5, 0, 0, 1, tzinfo=UTC))
def test_period_ordinals_hourly_agrees_with_period_ordinal(value: Any) -> None:
    assert outcome(period_ordinals, [value], HOURLY, "complete") == single(value, HOURLY)


@given(st.lists(hour_keys(), max_size=30))
@example(["2026-10-25T04:00Z", "2026-10-25T05:30Z", "2026-10-25T06:00Z"])
@example(["2026-10-25T04:00Z", "2026-10-25 05:00Z", "2026-10-25T24:00Z"])
@example(["2026-10-25T04:00Z", "2026-10-25t05:00Z"])
def test_period_ordinals_hourly_of_many_keys_is_the_union_or_the_first_refusal(
    values: list[str],
) -> None:
    """Keys of one day share one date parse: the shared parse must not leak between keys.
    A refusal is the first refused key's, as if each were parsed in turn."""
    each = [single(v, HOURLY) for v in values]
    refused = [r for r in each if r[0] == "invalid"]
    got = outcome(period_ordinals, values, HOURLY, "complete")
    if refused:
        assert got == refused[0]
    else:
        assert got == ("ok", set().union(*(r[1] for r in each)))


DAY_VALUES = st.one_of(
    DAYS,
    DAYS.map(dt.date.isoformat),
    st.sampled_from(
        [
            "2026-02-30",
            "2026-13-01",
            "2026-1-025",
            "20261025",
            "2026-W43-1",
            "2026/10/25",
            "２０２６-10-25",
            "2026-10-25T00",
            "",
        ]
    ),
    st.builds(lambda d: dt.datetime.combine(d, dt.time(), tzinfo=UTC), DAYS),
)


@given(st.lists(DAY_VALUES, max_size=20))
def test_period_ordinals_daily_agrees_with_period_ordinal(values: list[Any]) -> None:
    each = [single(v, DAILY) for v in values]
    refused = [r for r in each if r[0] == "invalid"]
    got = outcome(period_ordinals, values, DAILY, "complete")
    if refused:
        assert got[0] == "invalid" and got in refused
    else:
        assert got == ("ok", set().union(*(r[1] for r in each)))


def test_intervals_are_held_on_the_one_utc_timezone_object() -> None:
    """The hourly fast path recognises UTC by identity (``tzinfo is timezone.utc``)."""
    for label, period, zone in [
        ("2026-10-25", DAILY, "Europe/Berlin"),
        ("2026-10-25T05:00Z", HOURLY, "UTC"),
    ]:
        span = interval(label, period, zone)
        assert span.start.tzinfo is UTC and span.end.tzinfo is UTC


@pytest.mark.parametrize(
    ("value", "period", "field"),
    [
        ("2026-13-01", DAILY, "stop"),
        ("2026-10-25T05:30Z", HOURLY, "start"),
    ],
)
def test_parse_period_key_names_the_given_field(value: str, period: str, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_period_key(value, period, field)
    assert (caught.value.field, caught.value.value) == (field, value)


def test_periods_between_refuses_a_stop_before_the_start_naming_both() -> None:
    with pytest.raises(InvalidInput) as caught:
        periods_between("2026-10-02", "2026-10-01")
    assert (caught.value.field, caught.value.value, caught.value.reason) == (
        "stop",
        "2026-10-01",
        "before start 2026-10-02",
    )


# -- every refusal of the period and plan parsers, whole: field, value and reason ---------------
class _NoOffset(dt.tzinfo):
    """A time zone that knows no offset: its datetimes are as naive as those without one."""

    def utcoffset(self, when: dt.datetime | None) -> None:
        return None


NO_OFFSET_TIME = dt.datetime(2026, 10, 25, 5, tzinfo=_NoOffset())


NEG = "negative; a period cannot be due before it ends"


DURATION = "expected a duration such as 2h, 30m, 1d, 90s or 1h30m"


REFUSALS = [  # (call, the whole message the operator reads, field, value)
    (
        lambda: parse_lateness(dt.timedelta(seconds=-1), "late"),
        f"invalid late=-1 day, 23:59:59: {NEG}",
        "late",
        dt.timedelta(seconds=-1),
    ),
    (
        lambda: parse_lateness(7200),
        "invalid lateness=7200: expected a timedelta or a string like 2h, got int",
        "lateness",
        7200,
    ),
    (lambda: parse_lateness(" - 2H", "late"), f"invalid late=' - 2H': {NEG}", "late", " - 2H"),
    (
        lambda: parse_lateness("2 hours", "late"),
        f"invalid late='2 hours': {DURATION}",
        "late",
        "2 hours",
    ),
    (lambda: parse_lateness(" "), f"invalid lateness=' ': {DURATION}", "lateness", " "),
    (
        lambda: parse_lateness("999999999999D", "late"),
        "invalid late='999999999999D': too large",
        "late",
        "999999999999D",
    ),
    (
        lambda: plan_range([], start="2026-10-01", now=T0, strategy="Reverse"),
        "invalid strategy='Reverse': unknown strategy; expected contiguous, forward, reverse",
        "strategy",
        "Reverse",
    ),
    (
        lambda: plan_range([], start="2026-10-01", now=T0, strategy=None),
        "invalid strategy: unknown strategy; expected contiguous, forward, reverse",
        "strategy",
        None,
    ),
    (
        lambda: period_at(10**9, HOURLY),
        "invalid ordinal=1000000000: no hourly period at this position",
        "ordinal",
        10**9,
    ),
    (
        lambda: period_at("1"),
        "invalid ordinal='1': no daily period at this position",
        "ordinal",
        "1",
    ),
    (
        lambda: parse_business_date(dt.datetime(2026, 1, 1), "day"),
        "invalid day=2026-01-01T00:00:00: a datetime is not a business date; pass a date",
        "day",
        dt.datetime(2026, 1, 1),
    ),
    (
        lambda: parse_business_date("2026-02-30", "day"),
        "invalid day='2026-02-30': not a calendar date (day is out of range for month)",
        "day",
        "2026-02-30",
    ),
    (
        lambda: parse_business_date(5, "day"),
        "invalid day=5: expected a date or YYYY-MM-DD string, got int",
        "day",
        5,
    ),
    (
        lambda: periods_between("2026-01-01", "2026-01-02", timezone="Mars/X"),
        "invalid timezone='Mars/X': unknown time zone; expected an IANA name such as Europe/London",
        "timezone",
        "Mars/X",
    ),
    (
        lambda: periods_between("2026-01-01", "2026-01-02", "fortnightly"),
        "invalid period='fortnightly': unknown period; expected one of daily, hourly, weekly, "
        "monthly, quarterly",
        "period",
        "fortnightly",
    ),
    (
        lambda: interval("2026-01-01T05:30Z", HOURLY, field="hour"),
        "invalid hour='2026-01-01T05:30Z': not on an hour boundary",
        "hour",
        "2026-01-01T05:30Z",
    ),
    (
        lambda: interval("2026-02-30T05", HOURLY, field="hour"),
        "invalid hour='2026-02-30T05': not a calendar hour",
        "hour",
        "2026-02-30T05",
    ),
    (
        lambda: interval(dt.date(2026, 1, 1), HOURLY, field="hour"),
        "invalid hour=2026-01-01: a date is not an hour; pass a tz-aware datetime",
        "hour",
        dt.date(2026, 1, 1),
    ),
    (
        lambda: interval("2026-01-01", HOURLY, field="hour"),
        "invalid hour='2026-01-01': expected an hour such as 2026-10-25T05 (UTC, as Luigi writes "
        "it), 2026-10-25T05:00Z or 2026-10-25T06:00+01:00",
        "hour",
        "2026-01-01",
    ),
    (
        lambda: periods_between("2026-01-01", "2026-01-02", timezone=5),
        "invalid timezone=5: expected an IANA time zone name, got int",
        "timezone",
        5,
    ),
    (
        lambda: plan_range([], start="2026-10-02", stop="2026-10-01", now=T0),
        "invalid stop='2026-10-01': before start 2026-10-02",
        "stop",
        "2026-10-01",
    ),
    (
        lambda: period_key("2026-10-25T05:30Z", "day"),
        "invalid day='2026-10-25T05:30Z': not on an hour boundary",
        "day",
        "2026-10-25T05:30Z",
    ),
    (
        lambda: parse_aware_datetime("2026-01-01T00:00", "now"),
        "invalid now='2026-01-01T00:00': no time zone; add an offset such as Z or +01:00",
        "now",
        "2026-01-01T00:00",
    ),
    (
        lambda: parse_aware_datetime("2026-10-25T05:00:00z", "now"),  # only a capital Z is UTC
        "invalid now='2026-10-25T05:00:00z': expected an ISO 8601 timestamp with an offset",
        "now",
        "2026-10-25T05:00:00z",
    ),
    (
        lambda: parse_aware_datetime(5, "now"),
        "invalid now=5: expected a tz-aware datetime, got int",
        "now",
        5,
    ),
    # each parser's default field name
    (
        lambda: parse_business_date("2026-1-1"),
        "invalid business_date='2026-1-1': expected an ISO date YYYY-MM-DD",
        "business_date",
        "2026-1-1",
    ),
    (
        lambda: parse_aware_datetime(NO_OFFSET_TIME, "now"),
        "invalid now=2026-10-25T05:00:00: no time zone; add an offset such as Z or +01:00",
        "now",
        NO_OFFSET_TIME,
    ),
    (
        lambda: parse_hour("2026-01-01T05:30Z"),
        "invalid business_date='2026-01-01T05:30Z': not on an hour boundary",
        "business_date",
        "2026-01-01T05:30Z",
    ),
    (
        lambda: period_ordinal("2026-1-1"),
        "invalid business_date='2026-1-1': expected an ISO date YYYY-MM-DD",
        "business_date",
        "2026-1-1",
    ),
    (
        lambda: parse_label("2026-1-1", DAILY),
        "invalid business_date='2026-1-1': expected an ISO date YYYY-MM-DD",
        "business_date",
        "2026-1-1",
    ),
    (
        lambda: hour_ordinal("2026-10-25T05:30Z"),
        "invalid business_date='2026-10-25T05:30Z': not on an hour boundary",
        "business_date",
        "2026-10-25T05:30Z",
    ),
    (
        lambda: parse_label("2026-1-1", DAILY, "day"),
        "invalid day='2026-1-1': expected an ISO date YYYY-MM-DD",
        "day",
        "2026-1-1",
    ),
    (
        lambda: period_ordinals(["2026-10-01", "2026-1-1"], DAILY, "done"),
        "invalid done='2026-1-1': expected an ISO date YYYY-MM-DD",
        "done",
        "2026-1-1",
    ),
]


@pytest.mark.parametrize(("call", "message", "field", "value"), REFUSALS)
def test_period_and_plan_refusals_read_as_written(
    call: Any, message: str, field: str, value: Any
) -> None:
    with pytest.raises(InvalidInput) as caught:
        call()
    assert (str(caught.value), caught.value.field, caught.value.value) == (message, field, value)


@pytest.mark.parametrize(("value", "hour"), [("2026-10-25T05", 5), ("2026-10-25T15", 15)])
def test_luigi_hour_form_is_the_utc_hour(value: str, hour: int) -> None:
    label = parse_hour(value)
    assert label == dt.datetime(2026, 10, 25, hour, tzinfo=UTC) and label.tzinfo is UTC


@pytest.mark.parametrize(
    ("text", "hour"),
    [
        ("2026-10-25T05", dt.datetime(2026, 10, 25, 5, tzinfo=UTC)),  # Luigi's DateHourParameter
        ("2026-10-25T00", dt.datetime(2026, 10, 25, 0, tzinfo=UTC)),
        ("2026-10-25T23", dt.datetime(2026, 10, 25, 23, tzinfo=UTC)),
        ("2028-02-29T12", dt.datetime(2028, 2, 29, 12, tzinfo=UTC)),
        ("2026-10-25T05:00Z", dt.datetime(2026, 10, 25, 5, tzinfo=UTC)),
        ("2026-10-25T05:00:00+00:00", dt.datetime(2026, 10, 25, 5, tzinfo=UTC)),
        ("2026-10-25T06:00+01:00", dt.datetime(2026, 10, 25, 5, tzinfo=UTC)),
    ],
)
def test_hour_forms_are_accepted_everywhere_an_hour_is(text: str, hour: dt.datetime) -> None:
    assert parse_hour(text) == hour and parse_hour(text).tzinfo is UTC
    assert parse_label(text, HOURLY) == hour
    key = hour.strftime("%Y-%m-%dT%H:00Z")
    assert hour_key(text) == key and period_key(text) == key


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("2026-10-25T24", "not a calendar hour"),
        ("2026-02-30T01", "not a calendar hour"),
        ("2026-10-25T5", "expected an ISO 8601 timestamp"),
        ("2026-10-25T05:00", "no time zone"),  # naive, and not Luigi's form: ambiguous
        ("2026-10-25", "expected an hour such as 2026-10-25T05"),
        ("2026-10-25T05:30Z", "not on an hour boundary"),
    ],
)
def test_hour_forms_refused_name_the_field_and_the_text(text: str, reason: str) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        parse_hour(text, "start")
    assert caught.value.field == "start" and caught.value.value == text
    assert reason in str(caught.value) and f"'{text}'" in str(caught.value)


# Instants where the local day's guess is off: Goose Bay repeats 23:00-00:01 on 2001-10-28 (the
# first correction loop runs); Toronto skipped 23:30-00:30 on 1919-03-31, so the local day
# started before its midnight's instant (the second loop runs).
@pytest.mark.parametrize(
    ("zone", "instant"),
    [
        ("America/Goose_Bay", dt.datetime(2001, 10, 28, 3, 1, tzinfo=UTC)),
        ("America/Goose_Bay", dt.datetime(2001, 10, 28, 3, 46, tzinfo=UTC)),
        ("America/Toronto", dt.datetime(1919, 3, 31, 4, 30, tzinfo=UTC)),
        ("America/Toronto", dt.datetime(1919, 3, 31, 4, 45, tzinfo=UTC)),
        ("Europe/Berlin", dt.datetime(2026, 10, 24, 22, 0, tzinfo=UTC)),
        # east of UTC, 2010-03-05 00:00 local came twice (+11 back to +8): the first loop must
        # judge day ends in the business zone, not in UTC
        ("Antarctica/Casey", dt.datetime(2010, 3, 4, 15, 0, tzinfo=UTC)),
    ],
)
def test_last_closed_is_the_latest_day_whose_interval_has_ended(
    zone: str, instant: dt.datetime
) -> None:
    days = [instant.date() + dt.timedelta(days=n) for n in range(-3, 3)]
    ended = [d for d in days if interval(d, DAILY, zone).end <= instant]
    assert last_closed(instant, DAILY, zone) == max(ended)


# -- a duration as the operator writes it (the report's, serve's and the range's lines) ----
@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (0, "0s"),
        (1, "1s"),
        (59, "59s"),
        (60, "1m"),
        (61, "1m1s"),
        (3600, "1h"),
        (5400, "1h30m"),
        (86400, "1d"),
        (90061, "1d1h1m1s"),
        (86400 * 400 + 7, "400d7s"),
    ],
)
def test_duration_text_names_each_unit_it_holds(seconds: int, text: str) -> None:
    from gatekeeper.core.periods.intervals import duration_text

    assert duration_text(dt.timedelta(seconds=seconds)) == text


@given(st.integers(min_value=0, max_value=10**8))
def test_duration_text_reads_back_as_the_same_lateness(seconds: int) -> None:
    from gatekeeper.core.periods.intervals import duration_text

    span = dt.timedelta(seconds=seconds)
    assert parse_lateness(duration_text(span)) == span


# -- the hourly kind's own doors: Luigi's parameter, the ledger key, a run of hours ------------
UTC_ = dt.timezone.utc
H = dt.datetime(2026, 10, 23, 7, tzinfo=UTC_)


def test_hourly_luigi_parameter_is_the_naive_utc_hour_both_ways() -> None:
    assert HOURLY.to_param(H) == dt.datetime(2026, 10, 23, 7)
    assert HOURLY.to_param(H).tzinfo is None
    assert HOURLY.from_param(dt.datetime(2026, 10, 23, 7)) == H  # naive: read as UTC
    paris = H.astimezone(ZoneInfo("Europe/Paris"))
    assert HOURLY.from_param(paris) == H and HOURLY.from_param(paris).tzinfo is not None
    assert HOURLY.to_param(paris) == dt.datetime(2026, 10, 23, 7)


@pytest.mark.parametrize("kind", [DAILY, HOURLY], ids=str)
@pytest.mark.parametrize(
    ("door", "default"),
    [
        ("parse", "business_date"),
        ("key", "business_date"),
        ("ordinal", "business_date"),
        ("to_param", "business_date"),
        ("from_param", "business_date"),
        ("ordinals", "complete"),  # of many ledger keys (or labels)
    ],
)
def test_a_kinds_refusal_names_the_field_given_or_its_default(
    kind: Any, door: str, default: str
) -> None:
    value: Any = ["not a period"] if door == "ordinals" else "not a period"
    with pytest.raises(InvalidInput) as caught:
        getattr(kind, door)(value, "param_field")
    assert (caught.value.field, caught.value.value) == ("param_field", "not a period")
    with pytest.raises(InvalidInput) as unnamed:
        getattr(kind, door)(value)
    assert unnamed.value.field == default


def test_hourly_label_of_a_key_and_its_refusals() -> None:
    assert HOURLY.label("2026-10-23T07:00Z") == H
    assert HOURLY.label("2026-10-23T07:00Z").utcoffset() == dt.timedelta(0)
    with pytest.raises(InvalidInput) as shape:
        HOURLY.label("2026-10-23T07:30Z", "key_field")
    assert (shape.value.field, shape.value.value) == ("key_field", "2026-10-23T07:30Z")
    assert shape.value.reason == "expected an hour key YYYY-MM-DDTHH:00Z"
    with pytest.raises(InvalidInput) as day:
        HOURLY.label("2026-02-30T07:00Z", "key_field")
    assert day.value.field == "key_field" and "not a calendar hour" in str(day.value)


def test_hourly_between_runs_hour_by_hour_across_midnight() -> None:
    start = dt.datetime(2026, 10, 23, 22, tzinfo=UTC_)
    hours = list(HOURLY.between(start, start + dt.timedelta(hours=4)))
    assert hours == [start + dt.timedelta(hours=n) for n in range(4)]
    assert all(h.tzinfo is not None and h.utcoffset() == dt.timedelta(0) for h in hours)
    assert list(HOURLY.between(start, start)) == []


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("0" * 31 + "1s", "0" * 31 + "1s"),  # 33 characters, shown whole
        ("0" * 38 + "1s", "0" * 38 + "1s"),  # 40
        ("0" * 39 + "1s", "0" * 39 + "1..."),  # 41: the first 40 and "..."
        ("9" * 5000 + "s", "9" * 40 + "..."),  # int() of thousands of digits is never made
    ],
)
def test_a_duration_longer_than_32_characters_is_refused_showing_its_first_40(
    value: str, shown: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_lateness(value, "window")
    assert (caught.value.field, caught.value.value, caught.value.reason) == (
        "window",
        shown,
        "longer than 32 characters",
    )


def test_a_duration_of_32_characters_is_read_and_spaces_do_not_count() -> None:
    assert parse_lateness("0" * 30 + "1s") == dt.timedelta(seconds=1)  # 32 characters
    assert parse_lateness(" 0" * 30 + " 1 s ") == dt.timedelta(seconds=1)


def test_period_key_keeps_each_kinds_key_and_refuses_a_bad_date_as_a_date() -> None:
    """``period_key`` of a coarse kind's key is that key (not a date the week or month names);
    a string no kind owns and without a ``T`` is refused as a date, naming the field."""
    assert [period_key(k) for k in ("2026-W41", "2025-01", "2025-Q1")] == [
        "2026-W41",
        "2025-01",
        "2025-Q1",
    ]
    with pytest.raises(InvalidInput) as caught:
        period_key("2026-10-5", "since")
    assert str(caught.value) == "invalid since='2026-10-5': expected an ISO date YYYY-MM-DD"
    with pytest.raises(InvalidInput) as caught:  # not a string: a date's refusal, the field too
        period_key(dt.datetime(2026, 10, 5, tzinfo=dt.timezone.utc), "since")
    assert caught.value.field == "since"
