"""Business periods: the daily and hourly ``Period`` kinds (``DAILY``, ``HOURLY``) and the
functions over every kind (``WEEKLY``, ``MONTHLY``, ``QUARTERLY`` from ``coarse.py``; a kind
bound to a calendar from ``business.py``): labels, ledger keys, Luigi parameter values,
ordinals, half-open intervals and closing time (pure).

A daily period is labelled by a ``datetime.date``; its key is ``YYYY-MM-DD`` and its interval
``[local midnight, next local midnight)`` in the business time zone (23 or 25 hours on DST
days). An hourly period is labelled by the tz-aware start of an hour on the UTC grid; its key
is ``YYYY-MM-DDTHH:00Z`` and its interval ``[h, h + 1h)``. Intervals are held in UTC.
Nothing here looks at the wall clock: what needs "now" takes it as a parameter.
"""

from __future__ import annotations

import datetime as dt
import itertools
import operator
from collections.abc import Iterable, Iterator
from typing import Any, Final
from zoneinfo import ZoneInfo

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import business  # noqa: F401  (binds Period.on to calendars)
from gatekeeper.core.periods.base import Period, day_start, last_closed_day, register
from gatekeeper.core.periods.coarse import MONTHLY, QUARTERLY, WEEKLY
from gatekeeper.core.periods.intervals import (
    UTC,
    Interval,
    parse_aware_datetime,
    parse_lateness,
    parse_timezone,
)
from gatekeeper.core.periods.labels import (
    HOUR_EXAMPLES,
    HOUR_KEY,
    ISO_DATE,
    Label,
    day_ordinal,
    hour_key,
    hour_ordinal,
    hour_ordinals,
    parse_business_date,
    parse_hour,
)

__all__ = [
    "DAILY",
    "HOURLY",
    "MONTHLY",
    "QUARTERLY",
    "WEEKLY",
    "HOUR_EXAMPLES",
    "PERIODS",
    "Interval",
    "Label",
    "Period",
    "hour_key",
    "interval",
    "kind_of_key",
    "last_closed",
    "parse_aware_datetime",
    "parse_business_date",
    "parse_hour",
    "parse_label",
    "parse_lateness",
    "parse_period",
    "parse_period_key",
    "parse_timezone",
    "period_at",
    "period_from_key",
    "period_key",
    "period_ordinal",
    "period_ordinals",
    "periods_between",
]

_ONE_DAY = dt.timedelta(days=1)
_ONE_HOUR = dt.timedelta(hours=1)


class Daily(Period):
    """A business date: ``[local midnight, next local midnight)``; key ``YYYY-MM-DD``; its Luigi
    parameter (a DateParameter) holds the date; ordinal ``date.toordinal()``."""

    __slots__ = ()
    _key_shape = ISO_DATE

    def parse(self, value: Any, field: str = "business_date") -> dt.date:
        return parse_business_date(value, field)

    def key(self, value: Any, field: str = "business_date") -> str:
        return parse_business_date(value, field).isoformat()

    def from_param(self, value: Any, field: str = "business_date") -> dt.date:
        return parse_business_date(value.date() if isinstance(value, dt.datetime) else value, field)

    def to_param(self, label: Any, field: str = "business_date") -> dt.date:
        return parse_business_date(label, field)

    def ordinal(self, value: Any, field: str = "business_date") -> int:
        return parse_business_date(value, field).toordinal()

    def ordinals(self, values: Iterable[Any], field: str = "complete") -> set[int]:
        return {day_ordinal(value, field) for value in values}

    def key_ordinal(self, key: str) -> int:
        return dt.date.fromisoformat(key).toordinal()

    def _at(self, ordinal: int) -> dt.date:
        return dt.date.fromordinal(ordinal)

    def _from_key(self, key: str, field: str) -> dt.date:
        return parse_business_date(key, field)

    def _span(self, label: Any, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
        return day_start(label, zone), day_start(label + _ONE_DAY, zone)

    def _closed_by(self, instant: dt.datetime, zone: ZoneInfo) -> dt.date:
        # Usually the local day before ``instant``'s; the loops correct the guess where local
        # midnight is missing or repeated.
        return last_closed_day(instant, zone)

    def _run(self, first: Any, count: int) -> Iterator[dt.date]:
        start = first.toordinal()
        return map(dt.date.fromordinal, range(start, start + count))


class Hourly(Period):
    """A UTC hour ``[h, h + 1h)``; key ``YYYY-MM-DDTHH:00Z``; its Luigi parameter (a
    DateHourParameter) holds the naive UTC hour; ordinal ``24 * date.toordinal() + hour``."""

    __slots__ = ()
    _key_shape = HOUR_KEY

    def parse(self, value: Any, field: str = "business_date") -> dt.datetime:
        return parse_hour(value, field)

    def key(self, value: Any, field: str = "business_date") -> str:
        return hour_key(value, field)

    def from_param(self, value: Any, field: str = "business_date") -> dt.datetime:
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)  # as Luigi's DateHourParameter reads it
        return parse_hour(value, field)

    def to_param(self, label: Any, field: str = "business_date") -> dt.datetime:
        return parse_hour(label, field).replace(tzinfo=None)

    def ordinal(self, value: Any, field: str = "business_date") -> int:
        return hour_ordinal(value, field)

    def ordinals(self, values: Iterable[Any], field: str = "complete") -> set[int]:
        return hour_ordinals(values, field)

    def _at(self, ordinal: int) -> dt.datetime:
        day, hour = divmod(ordinal, 24)
        return dt.datetime.combine(dt.date.fromordinal(day), dt.time(hour), tzinfo=UTC)

    def _from_key(self, key: str, field: str) -> dt.datetime:
        if not HOUR_KEY.match(key):
            raise InvalidInput(field, key, "expected an hour key YYYY-MM-DDTHH:00Z")
        try:
            return dt.datetime.fromisoformat(key[:-1]).replace(tzinfo=UTC)
        except ValueError as exc:
            raise InvalidInput(field, key, f"not a calendar hour ({exc})") from None

    def _span(self, label: Any, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
        return label, label + _ONE_HOUR

    def _closed_by(self, instant: dt.datetime, zone: ZoneInfo) -> dt.datetime:
        return instant.replace(minute=0, second=0, microsecond=0) - _ONE_HOUR

    def _run(self, first: Any, count: int) -> Iterator[dt.datetime]:
        steps = itertools.accumulate(itertools.repeat(_ONE_HOUR), operator.add, initial=first)
        return itertools.islice(steps, count)


DAILY: Final[Period] = Daily("daily")
HOURLY: Final[Period] = Hourly("hourly")
PERIODS: Final[tuple[Period, ...]] = (DAILY, HOURLY, WEEKLY, MONTHLY, QUARTERLY)
register(*PERIODS)
_BY_NAME: Final = {kind.name: kind for kind in PERIODS}


def parse_period(value: Any, field: str = "period") -> Period:
    """Return the Period kind named ``value`` (``daily``, ``hourly``, ``weekly``, ``monthly``,
    ``quarterly``, or a Period itself); raises InvalidInput naming ``field`` for anything
    else."""
    if isinstance(value, Period):
        return value  # a kind itself, perhaps bound to a calendar (business.py)
    found = _BY_NAME.get(value) if isinstance(value, str) else None
    if found is None:
        names = ", ".join(kind.name for kind in PERIODS)
        raise InvalidInput(field, value, f"unknown period; expected one of {names}")
    return found


def kind_of_key(key: Any) -> Period:
    """The kind whose ledger keys look like ``key``; ``DAILY`` when none does (whose parse
    then says what is wrong with it)."""
    return next((kind for kind in PERIODS if kind.owns_key(key)), DAILY)


# -- the same rules as functions of a kind's name (each one is the kind's method) --------------
def period_key(value: Any, field: str = "business_date") -> str:
    """Return the ledger key of a period of any kind: a string in a kind's key shape is that
    kind's (``2026-W41``, ``2025-01``, ``2025-Q1``), else an hour for a string with a ``T``
    (see ``parse_hour``), else a date (a datetime object is refused: too easily a date by
    mistake); raises InvalidInput."""
    if isinstance(value, str):
        owner = next((kind for kind in PERIODS if kind.owns_key(value)), None)
        kind = owner or (HOURLY if "T" in value else DAILY)
        return kind.key(value, field)
    return DAILY.key(value, field)


def parse_label(value: Any, period: Any, field: str = "business_date") -> Label:
    """``parse_period(period).parse(value, field)``."""
    return parse_period(period).parse(value, field)


def parse_period_key(value: Any, period: Any, field: str = "business_date") -> str:
    """``parse_period(period).key(value, field)``."""
    return parse_period(period).key(value, field)


def period_from_key(key: Any, field: str = "business_date") -> Label:
    """The label a ledger key of either kind names (``kind_of_key(key).label``)."""
    return kind_of_key(key).label(key, field)


def interval(
    period_value: Any, period: Any = DAILY, timezone: Any = "UTC", *, field: str = "business_date"
) -> Interval:
    """``parse_period(period).interval(period_value, timezone, field=field)``."""
    return parse_period(period).interval(period_value, timezone, field=field)


def last_closed(until: Any, period: Any = DAILY, timezone: Any = "UTC") -> Label | None:
    """``parse_period(period).last_closed(until, timezone)``."""
    return parse_period(period).last_closed(until, timezone)


def period_ordinal(value: Any, period: Any = DAILY, field: str = "business_date") -> int:
    """``parse_period(period).ordinal(value, field)``."""
    return parse_period(period).ordinal(value, field)


def period_at(ordinal: int, period: Any = DAILY) -> Label:
    """``parse_period(period).at(ordinal)``."""
    return parse_period(period).at(ordinal)


def period_ordinals(
    values: Iterable[Any], period: Any = DAILY, field: str = "complete"
) -> set[int]:
    """``parse_period(period).ordinals(values, field)``."""
    return parse_period(period).ordinals(values, field)


def periods_between(
    start: Any, stop: Any, period: Any = DAILY, timezone: Any = "UTC"
) -> Iterator[Label]:
    """``parse_period(period).between(start, stop, timezone)``."""
    return parse_period(period).between(start, stop, timezone)


def shift(label: Any, n: int, *, calendar: Any = "all", period: Any = DAILY) -> Label:
    """The period ``n`` business periods after ``label`` (before it for n < 0), counting only
    the business periods of ``calendar`` (a name or a Calendar): ``shift(monday, -1,
    calendar="weekdays")`` is the Friday before. Raises InvalidInput naming the field for a
    label that is no business period, an unknown calendar or kind, or beyond the calendar."""
    return parse_period(period).on(calendar).shift(label, n, "label")
