"""The ``Period`` kind: what every kind of business period answers (labels, ledger keys, Luigi
parameter values, ordinals, half-open intervals in a zone, closing time). The kinds are one
module each (``daily.py``, ``hourly.py``, ``weekly.py``, ``monthly.py``, ``quarterly.py``);
``business.py`` binds a kind to a business calendar (``Period.on``), and each kind gets that
binding by subclassing its ``BaseKind``. Pure.
"""

from __future__ import annotations

import datetime as dt
import re
from abc import ABCMeta, abstractmethod
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, ClassVar
from zoneinfo import ZoneInfo

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.intervals import UTC, Interval, parse_aware_datetime, parse_timezone
from gatekeeper.core.periods.labels import Label

if TYPE_CHECKING:
    from gatekeeper.core.periods.calendars import Calendar


class Period(str, metaclass=ABCMeta):
    """A kind of business period: ``DAILY``, ``HOURLY``, ``WEEKLY``, ``MONTHLY`` or ``QUARTERLY``,
    perhaps bound to a business calendar with ``on`` (find one with ``parse_period``).

    It is its ``name`` as a string (``DAILY == "daily"``), so what users see (the CLI, JSON,
    messages, the ledger) reads as before. Each rule of a kind is one method; ``field`` names
    the user's field in an InvalidInput.
    """

    __slots__ = ()
    _key_shape: ClassVar[re.Pattern[str]]

    @property
    def name(self) -> str:
        """``daily``, ``hourly``, ``weekly``, ``monthly`` or ``quarterly`` (a kind bound to a
        calendar keeps its base kind's name): what the CLI, the ledger and
        ``RangePlan.to_json`` show."""
        return str.__str__(self)

    def __reduce__(self) -> str | tuple[object, ...]:
        # unpickled as the one instance of its kind: its module's constant (``DAILY``)
        return self.name.upper()

    # -- the business calendar (``business.py``: ``BaseKind``, ``BusinessPeriod``) ------------
    @property
    @abstractmethod
    def calendar(self) -> Calendar:
        """The business calendar whose periods this kind counts (``all``: every period)."""

    @property
    @abstractmethod
    def base(self) -> Period:
        """The kind without a calendar (itself for a kind without one)."""

    @abstractmethod
    def on(self, calendar: object) -> Period:
        """This kind counting only the business periods of ``calendar`` (a name or a
        Calendar); the base kind itself for ``all``. Raises InvalidInput for an unknown
        calendar, or one a kind cannot follow (hours follow every day only)."""

    def is_business(self, value: object, field: str = "business_date") -> bool:
        """True when the period ``value`` names is one of this kind's business periods."""
        self.parse(value, field)
        return True

    def rank(self, value: object, field: str = "business_date") -> int:
        """The ordinal of the first business period at or after ``value`` (which need not be
        a business period itself): how a window's ``start`` and exclusive ``stop`` count."""
        return self.ordinal(value, field)

    def shift(self, value: object, n: int, field: str = "business_date") -> Label:
        """The period ``n`` business periods after ``value`` (before it for n < 0); raises
        InvalidInput for a label that is not a business period, or beyond the calendar."""
        if isinstance(n, bool) or not isinstance(n, int):
            raise InvalidInput("n", n, "expected a whole number of periods")
        return self.at(self.ordinal(value, field) + n)

    def key_ordinal(self, key: str) -> int:
        """The ordinal of a ledger key the ledger itself wrote (bulk reads; a kind may skip
        the checks ``ordinal`` makes of a user's value)."""
        return self.ordinal(key)

    # -- the rules of each kind ----------------------------------------------------------------
    @abstractmethod
    def parse(self, value: object, field: str = "business_date") -> Label:
        """The label ``value`` names (a label or its ISO string); raises InvalidInput."""

    @abstractmethod
    def key(self, value: object, field: str = "business_date") -> str:
        """The ledger key of the label ``value`` names; raises InvalidInput."""

    @abstractmethod
    def from_param(self, value: object, field: str = "business_date") -> Label:
        """The label of a value of the Luigi period parameter; raises InvalidInput."""

    @abstractmethod
    def to_param(self, label: object, field: str = "business_date") -> Label:
        """The Luigi period parameter's value for a label; raises InvalidInput."""

    @abstractmethod
    def ordinal(self, value: object, field: str = "business_date") -> int:
        """The position of a label on this kind's line; consecutive periods differ by one."""

    @abstractmethod
    def _at(self, ordinal: int) -> Label: ...

    @abstractmethod
    def _from_key(self, key: str, field: str) -> Label: ...

    @abstractmethod
    def _span(self, label: Label, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]: ...

    @abstractmethod
    def _closed_by(self, instant: dt.datetime, zone: ZoneInfo) -> Label: ...

    def _run(self, first: Label, count: int) -> Iterator[Label]:
        """``count`` labels from ``first`` on (a kind may do it cheaper than ``at``)."""
        start = self.ordinal(first)
        return map(self.at, range(start, start + count))

    # -- rules shared by every kind ------------------------------------------------------------
    def owns_key(self, key: object) -> bool:
        """True when ``key`` has the shape of this kind's ledger keys."""
        return isinstance(key, str) and self._key_shape.match(key) is not None

    def label(self, key: object, field: str = "business_date") -> Label:
        """The label a ledger key of this kind names (inverse of ``key``); raises InvalidInput."""
        if not isinstance(key, str):
            raise InvalidInput(
                field, key, f"expected a period key string, got {type(key).__name__}"
            )
        return self._from_key(key, field)

    def at(self, ordinal: int) -> Label:
        """The label at ``ordinal``: inverse of ``ordinal``; raises InvalidInput."""
        try:
            return self._at(ordinal)
        except (TypeError, ValueError, OverflowError):
            raise InvalidInput("ordinal", ordinal, f"no {self} period at this position") from None

    def ordinals(self, values: Iterable[object], field: str = "complete") -> set[int]:
        """The ordinals of many labels (or their ISO strings) at once; raises InvalidInput."""
        return {self.ordinal(value, field) for value in values}

    def interval(
        self, value: object, timezone: object = "UTC", *, field: str = "business_date"
    ) -> Interval:
        """The half-open interval the period covers, in UTC; raises InvalidInput for a bad
        label or time zone, or an interval beyond the range of ``datetime``."""
        zone = parse_timezone(timezone)
        label = self.parse(value, field)
        try:
            return Interval(*self._span(label, zone))
        except OverflowError:
            raise InvalidInput(field, value, "interval beyond the datetime range") from None

    def closes_at(
        self, value: object, timezone: object = "UTC", *, field: str = "business_date"
    ) -> dt.datetime:
        """When the period closes: the end of its interval (it is due at that + lateness)."""
        return self.interval(value, timezone, field=field).end

    def last_closed(self, until: object, timezone: object = "UTC") -> Label | None:
        """The latest period whose interval ends at or before the instant ``until``, or None
        when no representable period ends by then. The latest due period at ``now`` is
        ``last_closed(now - lateness)``. Raises InvalidInput."""
        zone = parse_timezone(timezone)
        instant = parse_aware_datetime(until, "until")
        try:
            return self._closed_by(instant, zone)
        except OverflowError:
            return None

    def between(self, start: object, stop: object, timezone: object = "UTC") -> Iterator[Label]:
        """The labels from ``start`` (inclusive) to ``stop`` (exclusive), lazily.

        Labels do not depend on the time zone (a day is a calendar date; hours are on the UTC
        grid); it is validated for symmetry with ``interval``. Raises InvalidInput for bad
        bounds (``start``, ``stop``), a stop before the start, or a bad time zone.
        """
        parse_timezone(timezone)
        first = self.parse(start, "start")
        count = self.ordinal(stop, "stop") - self.ordinal(first)
        if count < 0:
            raise InvalidInput("stop", stop, f"before start {start}")
        return self._run(first, count)


_ONE_DAY = dt.timedelta(days=1)


def last_closed_day(instant: dt.datetime, zone: ZoneInfo) -> dt.date:
    """The latest local day of ``zone`` that ends (its next local midnight) at or before
    ``instant``; raises OverflowError beyond the datetime range."""
    # Usually the local day before ``instant``'s; the loops correct the guess where local
    # midnight is missing or repeated.
    day = instant.astimezone(zone).date() - _ONE_DAY
    while _ends_by(day + _ONE_DAY, instant, zone):
        day += _ONE_DAY
    while not _ends_by(day, instant, zone):
        day -= _ONE_DAY
    return day


def _ends_by(day: dt.date, instant: dt.datetime, zone: ZoneInfo) -> bool:
    """True when ``day`` ends (its next local midnight) at or before ``instant``."""
    try:
        return day_start(day + _ONE_DAY, zone) <= instant
    except OverflowError:
        return False


def day_start(day: dt.date, zone: ZoneInfo) -> dt.datetime:
    """The UTC instant of local midnight starting ``day`` (fold=0: the earlier one if repeated;
    where midnight is skipped, the pre-transition offset yields the transition instant)."""
    return dt.datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC)
