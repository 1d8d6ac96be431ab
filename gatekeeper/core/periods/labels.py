"""Period labels and their ledger keys: a ``date`` for a day, an aware UTC hour start for an
hour, parsed from what users and Luigi write (pure). The kinds (``daily.py``, ``hourly.py``,
...) are built on these.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.intervals import UTC, parse_aware_datetime

#: A period label: a ``date`` (daily) or an aware UTC ``datetime`` hour start (hourly).
Label = dt.date

ISO_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
HOUR_KEY = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:00Z$")
#: Luigi's DateHourParameter form, ``2026-10-25T05``: naive, read as UTC as Luigi does.
_LUIGI_HOUR = re.compile(r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}$")
HOUR_EXAMPLES = (
    "2026-10-25T05 (UTC, as Luigi writes it), 2026-10-25T05:00Z or 2026-10-25T06:00+01:00"
)


def parse_business_date(value: object, field: str = "business_date") -> dt.date:
    """Return ``value`` as a ``date``; raises InvalidInput naming ``field`` otherwise.

    Accepts a ``datetime.date`` (not a ``datetime``) or an ISO ``YYYY-MM-DD`` string of a real
    calendar day. Rejects datetimes, booleans, numbers and impossible days such as 2026-02-30.
    """
    if isinstance(value, dt.datetime):
        raise InvalidInput(field, value, "a datetime is not a business date; pass a date")
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        if not ISO_DATE.match(value):
            raise InvalidInput(field, value, "expected an ISO date YYYY-MM-DD")
        try:
            return dt.date.fromisoformat(value)
        except ValueError as exc:
            raise InvalidInput(field, value, f"not a calendar date ({exc})") from None
    raise InvalidInput(
        field, value, f"expected a date or YYYY-MM-DD string, got {type(value).__name__}"
    )


def parse_hour(value: object, field: str = "business_date") -> dt.datetime:
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
            return dt.datetime.combine(day, dt.time(int(value[11:])), tzinfo=UTC)
        except ValueError:
            raise InvalidInput(field, value, "not a calendar hour") from None
    if isinstance(value, str) and "T" not in value:
        raise InvalidInput(field, value, f"expected an hour such as {HOUR_EXAMPLES}")
    hour = parse_aware_datetime(value, field)
    if hour.minute or hour.second or hour.microsecond:
        raise InvalidInput(field, value, "not on an hour boundary")
    return hour


def hour_key(value: object, field: str = "business_date") -> str:
    """Return the ledger key ``YYYY-MM-DDTHH:00Z`` of an hour start; raises InvalidInput."""
    return parse_hour(value, field).replace(tzinfo=None).isoformat(timespec="minutes") + "Z"


def day_ordinal(value: object, field: str) -> int:
    """A date's ordinal, fast for dates and ``YYYY-MM-DD`` ledger keys."""
    if type(value) is dt.date:  # pragma: no mutate
        return value.toordinal()
    if (
        type(value) is str  # pragma: no mutate
        and len(value) == 10  # pragma: no mutate
        and value[4] == value[7] == "-"  # pragma: no mutate
    ):
        try:
            return dt.date.fromisoformat(value).toordinal()
        except ValueError:
            pass  # the slow path names the field
    return parse_business_date(value, field).toordinal()


def hour_ordinal(value: object, field: str = "business_date") -> int:
    """``24 * date.toordinal() + hour`` of the UTC hour ``value`` names; raises InvalidInput."""
    hour = parse_hour(value, field)
    return hour.toordinal() * 24 + hour.hour


def hour_ordinals(values: Iterable[object], field: str) -> set[int]:
    """The ordinals of many hours (labels or keys); ledger keys of one day share one date parse."""
    days: dict[str, int] = {}
    found: set[int] = set()
    for value in values:
        if (
            type(value) is str  # pragma: no mutate
            and len(value) == 17  # pragma: no mutate
            and value[10] == "T"  # pragma: no mutate
            and value[13:] == ":00Z"  # pragma: no mutate
        ):
            day = days.get(value[:10])  # pragma: no mutate
            if day is None:  # pragma: no mutate
                try:
                    day = days[value[:10]] = day_ordinal(value[:10], field)  # pragma: no mutate
                except InvalidInput:
                    pass  # the slow path names the whole value
            hour = value[11:13]  # pragma: no mutate  (another slice is refused: the slow path)
            if day is not None and hour.isascii() and hour.isdigit() and int(hour) < 24:
                found.add(day * 24 + int(hour))
                continue
        found.add(_fast_hour_ordinal(value, field))
    return found


def _fast_hour_ordinal(value: object, field: str) -> int:
    """``hour_ordinal``, fast for UTC hour starts and ``...THH:00Z`` keys."""
    if (
        type(value) is dt.datetime  # pragma: no mutate
        and value.tzinfo is UTC  # pragma: no mutate
        and not (value.minute or value.second or value.microsecond)  # pragma: no mutate
    ):
        return value.toordinal() * 24 + value.hour
    if (
        type(value) is str  # pragma: no mutate
        and len(value) == 17  # pragma: no mutate
        and value[10] == "T"  # pragma: no mutate
        and value[13:] == ":00Z"  # pragma: no mutate
        and value[11:13].isascii()  # pragma: no mutate
        and value[11:13].isdigit()  # pragma: no mutate
    ):
        try:  # another slice of the hour or the date fails, or is refused, below: the slow path
            hour = int(value[11:13])  # pragma: no mutate
            if hour < 24:  # two ASCII digits
                day = dt.date.fromisoformat(value[:10])  # pragma: no mutate
                return day.toordinal() * 24 + hour
        except ValueError:
            pass  # the slow path names the field
    return hour_ordinal(value, field)
