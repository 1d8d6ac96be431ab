"""Business periods: labels, canonical ledger keys, half-open intervals, closing time (pure).

A daily period is labelled by a ``datetime.date``; its ledger key is the ISO string
``YYYY-MM-DD`` and its interval is ``[local midnight, next local midnight)`` in the business
time zone, so it lasts 23 or 25 hours on DST days. An hourly period is labelled by the tz-aware
start of an hour on the UTC grid (a real elapsed hour, whatever the local clock does); its key is
``YYYY-MM-DDTHH:00Z`` and its interval ``[h, h + 1h)``. Intervals are held in UTC.

Nothing here looks at the wall clock: what needs "now" takes it as a parameter.
"""

from __future__ import annotations

import datetime as dt
import itertools
import operator
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from gatekeeper.core.errors import InvalidInput

DAILY = "daily"
HOURLY = "hourly"
PERIODS = (DAILY, HOURLY)

#: A period label: a ``date`` (daily) or an aware UTC ``datetime`` hour start (hourly).
Label = dt.date

_ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_HOUR_KEY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:00Z$")
#: Luigi's DateHourParameter form, ``2026-10-25T05``: naive, read as UTC as Luigi does.
_LUIGI_HOUR = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}$")
_DURATION = re.compile(r"^(?:([0-9]+)d)?(?:([0-9]+)h)?(?:([0-9]+)m)?(?:([0-9]+)s)?$")
_UTC = dt.timezone.utc
HOUR_EXAMPLES = (
    "2026-10-25T05 (UTC, as Luigi writes it), 2026-10-25T05:00Z or 2026-10-25T06:00+01:00"
)
_ONE_DAY = dt.timedelta(days=1)
_ONE_HOUR = dt.timedelta(hours=1)


def parse_business_date(value: Any, field: str = "business_date") -> dt.date:
    """Return ``value`` as a ``date``; raises InvalidInput naming ``field`` otherwise.

    Accepts a ``datetime.date`` (not a ``datetime``) or an ISO ``YYYY-MM-DD`` string of a real
    calendar day. Rejects datetimes, booleans, numbers and impossible days such as 2026-02-30.
    """
    if isinstance(value, dt.datetime):
        raise InvalidInput(field, value, "a datetime is not a business date; pass a date")
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        if not _ISO_DATE.match(value):
            raise InvalidInput(field, value, "expected an ISO date YYYY-MM-DD")
        try:
            return dt.date.fromisoformat(value)
        except ValueError as exc:
            raise InvalidInput(field, value, f"not a calendar date ({exc})") from None
    raise InvalidInput(
        field, value, f"expected a date or YYYY-MM-DD string, got {type(value).__name__}"
    )


def period_key(value: Any, field: str = "business_date") -> str:
    """Return the canonical ledger key of a business period; raises InvalidInput.

    A daily period is a ``date`` or ``YYYY-MM-DD``; an hourly one is given by its key
    ``YYYY-MM-DDTHH:00Z``, Luigi's ``YYYY-MM-DDTHH`` (UTC) or an ISO string with an offset
    (see ``parse_hour``); a datetime object is refused: it is too easily a date by mistake.
    """
    if isinstance(value, str) and "T" in value:
        return hour_key(value, field)
    return parse_business_date(value, field).isoformat()


def parse_aware_datetime(value: Any, field: str) -> dt.datetime:
    """Return ``value`` converted to UTC; raises InvalidInput for naive or non-datetime values.

    Accepts a tz-aware ``datetime`` or an ISO 8601 string with an offset.
    """
    given = value
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise InvalidInput(
                field, value, "expected an ISO 8601 timestamp with an offset"
            ) from None
    if not isinstance(value, dt.datetime):
        raise InvalidInput(
            field, value, f"expected a tz-aware datetime, got {type(value).__name__}"
        )
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(field, given, "no time zone; add an offset such as Z or +01:00")
    return value.astimezone(_UTC)


@dataclass(frozen=True, slots=True)
class Interval:
    """The half-open interval ``[start, end)`` between two instants, both held in UTC.

    Raises InvalidInput for a naive bound or an end before the start.
    """

    start: dt.datetime
    end: dt.datetime

    def __post_init__(self) -> None:
        object.__setattr__(self, "start", parse_aware_datetime(self.start, "start"))
        object.__setattr__(self, "end", parse_aware_datetime(self.end, "end"))
        if self.end < self.start:
            raise InvalidInput("end", self.end, f"before start {self.start.isoformat()}")

    def __contains__(self, when: object) -> bool:
        """True when the aware datetime ``when`` lies in ``[start, end)``."""
        return isinstance(when, dt.datetime) and self.start <= when < self.end

    @property
    def duration(self) -> dt.timedelta:
        """Real elapsed time from start to end (23 or 25 hours on a DST day)."""
        return self.end - self.start


def parse_period(value: Any, field: str = "period") -> str:
    """Return ``daily`` or ``hourly``; raises InvalidInput for anything else."""
    if isinstance(value, str) and value in PERIODS:
        return value
    raise InvalidInput(field, value, f"unknown period; expected one of {', '.join(PERIODS)}")


def parse_timezone(name: Any, field: str = "timezone") -> ZoneInfo:
    """Return the ZoneInfo of an IANA name such as ``Europe/London``; raises InvalidInput.

    A ZoneInfo is returned as it is. Unknown, malformed or empty names are refused.
    """
    if isinstance(name, ZoneInfo):
        return name
    if not isinstance(name, str):
        raise InvalidInput(
            field, name, f"expected an IANA time zone name, got {type(name).__name__}"
        )
    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError, OSError):
        raise InvalidInput(
            field, name, "unknown time zone; expected an IANA name such as Europe/London"
        ) from None


def parse_lateness(value: Any, field: str = "lateness") -> dt.timedelta:
    """Return ``value`` as a non-negative timedelta; raises InvalidInput naming ``field``.

    Accepts a ``timedelta`` or a string of day/hour/minute/second parts in that order, such as
    ``2h``, ``30m``, ``1d``, ``90s``, ``1h30m`` (spaces and case ignored) or ``0``.
    """
    if isinstance(value, dt.timedelta):
        if value < dt.timedelta(0):
            raise InvalidInput(field, value, "negative; a period cannot be due before it ends")
        return value
    if not isinstance(value, str):
        raise InvalidInput(
            field, value, f"expected a timedelta or a string like 2h, got {type(value).__name__}"
        )
    text = "".join(value.split()).lower()
    if text.startswith("-"):
        raise InvalidInput(field, value, "negative; a period cannot be due before it ends")
    if text == "0":
        return dt.timedelta(0)
    match = _DURATION.match(text)
    if not text or match is None:
        raise InvalidInput(field, value, "expected a duration such as 2h, 30m, 1d, 90s or 1h30m")
    days, hours, minutes, seconds = (int(part or 0) for part in match.groups())
    try:
        return dt.timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    except OverflowError:
        raise InvalidInput(field, value, "too large") from None


def parse_hour(value: Any, field: str = "business_date") -> dt.datetime:
    """Return the hourly period label ``value`` names, as an aware UTC datetime.

    Accepts a tz-aware datetime, an ISO 8601 string with an offset, exactly on a UTC hour
    boundary, or Luigi's DateHourParameter form ``2026-10-25T05`` (UTC, as Luigi reads it).
    Raises InvalidInput naming ``field`` for dates, naive datetimes (and naive strings other than
    Luigi's form) or non-aligned values.
    """
    if isinstance(value, dt.date) and not isinstance(value, dt.datetime):
        raise InvalidInput(field, value, "a date is not an hour; pass a tz-aware datetime")
    if isinstance(value, str) and _LUIGI_HOUR.match(value):
        try:
            day = dt.date.fromisoformat(value[:10])
            return dt.datetime.combine(day, dt.time(int(value[11:13])), tzinfo=_UTC)
        except ValueError:
            raise InvalidInput(field, value, "not a calendar hour") from None
    if isinstance(value, str) and "T" not in value:
        raise InvalidInput(field, value, f"expected an hour such as {HOUR_EXAMPLES}")
    hour = parse_aware_datetime(value, field)
    if hour.minute or hour.second or hour.microsecond:
        raise InvalidInput(field, value, "not on an hour boundary")
    return hour


def hour_key(value: Any, field: str = "business_date") -> str:
    """Return the ledger key ``YYYY-MM-DDTHH:00Z`` of an hour start; raises InvalidInput."""
    return parse_hour(value, field).replace(tzinfo=None).isoformat(timespec="minutes") + "Z"


def parse_label(value: Any, period: str, field: str = "business_date") -> Label:
    """Return the label of a period: a date, or an aware UTC hour start; raises InvalidInput."""
    if parse_period(period) == HOURLY:
        return parse_hour(value, field)
    return parse_business_date(value, field)


def parse_period_key(value: Any, period: str, field: str = "business_date") -> str:
    """Return the canonical ledger key of a daily or hourly period; raises InvalidInput."""
    if parse_period(period) == HOURLY:
        return hour_key(value, field)
    return period_key(value, field)


def period_from_key(key: Any, field: str = "business_date") -> Label:
    """Return the label a ledger key names: a date for ``YYYY-MM-DD``, an aware UTC datetime for
    ``YYYY-MM-DDTHH:00Z``. Inverse of ``parse_period_key``; raises InvalidInput otherwise."""
    if not isinstance(key, str):
        raise InvalidInput(field, key, f"expected a period key string, got {type(key).__name__}")
    if _HOUR_KEY.match(key):
        try:
            return dt.datetime.fromisoformat(key[:-1]).replace(tzinfo=_UTC)
        except ValueError as exc:
            raise InvalidInput(field, key, f"not a calendar hour ({exc})") from None
    return parse_business_date(key, field)


def interval(
    period_value: Any, period: str = DAILY, timezone: Any = "UTC", *, field: str = "business_date"
) -> Interval:
    """Return the half-open interval a period covers, in UTC.

    Daily: ``[local midnight, next local midnight)`` in ``timezone`` (23 or 25 hours on DST
    days; where midnight does not exist the day starts at the transition). Hourly: ``[h, h+1h)``.
    Raises InvalidInput for a bad label, period or time zone, or an interval beyond the range
    of ``datetime``.
    """
    zone = parse_timezone(timezone)
    label = parse_label(period_value, period, field)
    try:
        if isinstance(label, dt.datetime):
            return Interval(label, label + _ONE_HOUR)
        return Interval(_day_start(label, zone), _day_start(label + _ONE_DAY, zone))
    except OverflowError:
        raise InvalidInput(field, period_value, "interval beyond the datetime range") from None


def last_closed(until: Any, period: str = DAILY, timezone: Any = "UTC") -> Label | None:
    """Return the latest period whose interval ends at or before the instant ``until``.

    A period is due at ``end + lateness``, so the latest due period at ``now`` is
    ``last_closed(now - lateness)``. Returns None when no representable period ends by then.
    Costs at most a few time-zone conversions, whatever the date. Raises InvalidInput.
    """
    kind = parse_period(period)
    zone = parse_timezone(timezone)
    instant = parse_aware_datetime(until, "until")
    try:
        if kind == HOURLY:
            return instant.replace(minute=0, second=0, microsecond=0) - _ONE_HOUR
        # Usually the local day before ``until``'s; the loops correct the guess where local
        # midnight is missing or repeated.
        day = instant.astimezone(zone).date() - _ONE_DAY
        while _ends_by(day + _ONE_DAY, instant, zone):
            day += _ONE_DAY
        while not _ends_by(day, instant, zone):
            day -= _ONE_DAY
        return day
    except OverflowError:
        return None


def period_ordinal(value: Any, period: str = DAILY, field: str = "business_date") -> int:
    """Return the position of a period on its line; consecutive periods differ by one.

    Daily: ``date.toordinal()``. Hourly: ``24 * date.toordinal() + hour`` of the UTC hour start.
    Raises InvalidInput for a value that is not a label (or its ISO string) of ``period``.
    """
    label = parse_label(value, period, field)
    if isinstance(label, dt.datetime):
        return label.toordinal() * 24 + label.hour
    return label.toordinal()


def period_at(ordinal: int, period: str = DAILY) -> Label:
    """Return the label at ``ordinal``: inverse of ``period_ordinal``; raises InvalidInput."""
    kind = parse_period(period)
    try:
        if kind == HOURLY:
            day, hour = divmod(ordinal, 24)
            return dt.datetime.combine(dt.date.fromordinal(day), dt.time(hour), tzinfo=_UTC)
        return dt.date.fromordinal(ordinal)
    except (TypeError, ValueError, OverflowError):
        raise InvalidInput("ordinal", ordinal, f"no {kind} period at this position") from None


def period_ordinals(
    values: Iterable[Any], period: str = DAILY, field: str = "complete"
) -> set[int]:
    """Return the ordinals of many labels (or ISO strings) at once; raises InvalidInput.

    Dates and aware UTC hour starts take a fast path without a call per item; anything else goes
    through ``period_ordinal``, so a datetime among dates or a non-aligned hour is refused.
    """
    if parse_period(period) == HOURLY:
        return _hour_ordinals(values, field)
    return {_day_ordinal(v, field) for v in values}


def _hour_ordinals(values: Iterable[Any], field: str) -> set[int]:
    """Ordinals of hourly values; ledger keys of one day share one date parse."""
    days: dict[str, int] = {}
    found: set[int] = set()
    for value in values:
        if (
            type(value) is str
            and len(value) == 17  # pragma: no mutate
            and value[10] == "T"
            and value[13:] == ":00Z"  # pragma: no mutate
        ):
            day = days.get(value[:10])  # pragma: no mutate
            if day is None:  # pragma: no mutate
                try:
                    day = days[value[:10]] = _day_ordinal(value[:10], field)  # pragma: no mutate
                except InvalidInput:
                    pass  # the slow path names the whole value
            hour = value[11:13]
            if day is not None and hour.isascii() and hour.isdigit() and int(hour) < 24:
                found.add(day * 24 + int(hour))
                continue
        found.add(_hour_ordinal(value, field))
    return found


def _day_ordinal(value: Any, field: str) -> int:
    """``period_ordinal`` for daily values, fast for dates and ``YYYY-MM-DD`` ledger keys."""
    if type(value) is dt.date:  # pragma: no mutate
        return value.toordinal()
    if (
        type(value) is str
        and len(value) == 10  # pragma: no mutate
        and value[4] == value[7] == "-"  # pragma: no mutate
    ):
        try:
            return dt.date.fromisoformat(value).toordinal()
        except ValueError:
            pass  # the slow path names the field
    return period_ordinal(value, DAILY, field)


def _hour_ordinal(value: Any, field: str) -> int:
    """``period_ordinal`` for hourly values, fast for UTC hour starts and ``...THH:00Z`` keys."""
    if (
        type(value) is dt.datetime
        and value.tzinfo is _UTC  # pragma: no mutate
        and not (value.minute or value.second or value.microsecond)  # pragma: no mutate
    ):
        return value.toordinal() * 24 + value.hour
    if (
        type(value) is str
        and len(value) == 17
        and value[10] == "T"  # pragma: no mutate
        and value[13:] == ":00Z"  # pragma: no mutate
        and value[11:13].isascii()
        and value[11:13].isdigit()  # pragma: no mutate
    ):
        try:
            hour = int(value[11:13])
            if 0 <= hour < 24:
                return dt.date.fromisoformat(value[:10]).toordinal() * 24 + hour
        except ValueError:
            pass  # the slow path names the field
    return period_ordinal(value, HOURLY, field)


def periods_between(
    start: Any, stop: Any, period: str = DAILY, timezone: Any = "UTC"
) -> Iterator[Label]:
    """Return an iterator over the labels from ``start`` (inclusive) to ``stop`` (exclusive).

    Dates for daily, aware UTC hour starts for hourly. Labels do not depend on the time zone (a
    day is a calendar date; hours are on the UTC grid); it is validated for symmetry with
    ``interval``. Lazy and cheap per item: no time-zone conversion per label. Raises
    InvalidInput for bad bounds (``start``, ``stop``), a stop before the start, or a bad
    period or time zone.
    """
    kind = parse_period(period)
    parse_timezone(timezone)
    first = parse_label(start, kind, "start")
    count = period_ordinal(stop, kind, "stop") - period_ordinal(first, kind)
    if count < 0:
        raise InvalidInput("stop", stop, f"before start {start}")
    if isinstance(first, dt.datetime):
        return itertools.islice(
            itertools.accumulate(itertools.repeat(_ONE_HOUR), operator.add, initial=first), count
        )
    start_ordinal = first.toordinal()
    return map(dt.date.fromordinal, range(start_ordinal, start_ordinal + count))


def _ends_by(day: dt.date, instant: dt.datetime, zone: ZoneInfo) -> bool:
    """True when ``day`` ends (its next local midnight) at or before ``instant``."""
    try:
        return _day_start(day + _ONE_DAY, zone) <= instant
    except OverflowError:
        return False


def _day_start(day: dt.date, zone: ZoneInfo) -> dt.datetime:
    """The UTC instant of local midnight starting ``day`` (fold=0: the earlier one if repeated;
    where midnight is skipped, the pre-transition offset yields the transition instant)."""
    return dt.datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(_UTC)
