"""A period kind bound to a business calendar: only its business periods count (pure).

The binding is here and explicit: a kind of its own subclasses ``BaseKind``, whose ``on``
calls ``on_calendar``; a bound kind is a ``BusinessPeriod``. A calendar given by name is
found by ``calendars.parse_calendar`` (built-in names, import paths, and the names the
``calendars.DEFINED`` registry holds).

``DAILY.on("weekdays")`` is the daily kind whose ordinals number the weekdays alone: Friday
and the Monday after are consecutive, so spans, runs of complete periods, planning and gaps
never see a weekend. Labels, keys, Luigi values and intervals are the base kind's (a business
day is still ``[local midnight, next local midnight)``); a weekly, monthly or quarterly period
is a business period when it holds at least one business day.

Ordinals are ranks on the base kind's line: ``rank(n)`` is the number of business periods in
``[EPOCH, n)`` (negative before it), computed a block at a time, once per process.
"""

from __future__ import annotations

import bisect
import datetime as dt
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Protocol, cast
from zoneinfo import ZoneInfo

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.base import Period
from gatekeeper.core.periods.calendars import ALL, WEEKDAYS, Calendar, parse_calendar
from gatekeeper.core.periods.coarse import CoarsePeriod, last_day
from gatekeeper.core.periods.labels import Label

__all__ = ["BaseKind", "BusinessPeriod", "on_calendar"]

#: the base ordinal business ranks count from: 2000-01-03 (a Monday) as a day
_EPOCH_DAY = dt.date(2000, 1, 3).toordinal()
_BLOCK = 256
_MAX_BLOCKS = 4096  # how far a search walks before the calendar is said to have no period
_kinds: dict[tuple[str, Calendar], BusinessPeriod] = {}
_kinds_lock = threading.Lock()


class _Index:
    """Ranks of the base ordinals for which ``test`` holds, a block of ``_BLOCK`` at a time."""

    def __init__(self, test: Callable[[int], bool], epoch: int):
        self._test = test
        self._home = epoch // _BLOCK
        self._lists: dict[int, list[int]] = {}
        self._prefix: dict[int, int] = {self._home: 0}
        self._hint = self._home
        self._lock = threading.RLock()

    def _list(self, block: int) -> list[int]:
        found = self._lists.get(block)
        if found is None:
            lo = block * _BLOCK
            found = self._lists[block] = [n for n in range(lo, lo + _BLOCK) if self._safe(n)]
        return found

    def _safe(self, n: int) -> bool:
        try:
            return self._test(n)
        except (ValueError, OverflowError):  # beyond the dates (or the calendar's years)
            return False

    def _start(self, block: int) -> int:
        """Business ordinals in ``[EPOCH block, block)`` (negative before it)."""
        if block in self._prefix:
            return self._prefix[block]
        if abs(block - self._home) > _MAX_BLOCKS * 64:
            raise OverflowError(block)
        step = 1 if block > self._home else -1
        at = block - step
        while at not in self._prefix:
            at -= step
        total = self._prefix[at]
        while at != block:
            if step > 0:
                total += len(self._list(at))
                at += 1
            else:
                at -= 1
                total -= len(self._list(at))
            self._prefix[at] = total
        return total

    def rank(self, n: int) -> int:
        with self._lock:
            block = n // _BLOCK
            return self._start(block) + bisect.bisect_left(self._list(block), n)

    def holds(self, n: int) -> bool:
        with self._lock:
            found = self._list(n // _BLOCK)
            i = bisect.bisect_left(found, n)
            return i < len(found) and found[i] == n

    def at(self, k: int) -> int:
        with self._lock:
            block = self._hint
            for _ in range(_MAX_BLOCKS):
                if self._start(block) > k:
                    block -= 1
                elif self._start(block + 1) <= k:
                    block += 1
                else:
                    self._hint = block
                    return self._list(block)[k - self._start(block)]
            raise OverflowError(k)


class _WeekdayIndex:
    """Monday to Friday in closed form: day ordinal 1 (0001-01-01) is a Monday."""

    @staticmethod
    def rank(n: int) -> int:
        weeks, day = divmod(n - 1, 7)
        return weeks * 5 + min(day, 5)

    @staticmethod
    def holds(n: int) -> bool:
        return (n - 1) % 7 < 5

    @staticmethod
    def at(k: int) -> int:
        weeks, day = divmod(k, 5)
        return weeks * 7 + day + 1


class _Ranks(Protocol):
    def rank(self, n: int) -> int: ...

    def holds(self, n: int) -> bool: ...

    def at(self, k: int) -> int: ...


class BaseKind(Period):
    """A kind of its own, on no calendar (it counts every period, ``all``): what the kinds
    subclass (``Daily``, ``Hourly``, ``Weekly``, ...). ``on`` binds it to a calendar."""

    __slots__ = ()

    @property
    def calendar(self) -> Calendar:
        return ALL

    @property
    def base(self) -> Period:
        return self

    def on(self, calendar: object) -> Period:
        return on_calendar(self, calendar)


class BusinessPeriod(Period):
    """A base kind counting only the business periods of ``calendar`` (see the module)."""

    _base: Period
    _calendar: Calendar
    _index: _Ranks

    def __new__(cls, base: Period, calendar: Calendar) -> BusinessPeriod:
        self = super().__new__(cls, base.name)
        self._base = base
        self._calendar = calendar
        self._index = _index(base, calendar)
        return self

    @property
    def base(self) -> Period:
        return self._base

    @property
    def calendar(self) -> Calendar:
        return self._calendar

    def on(self, calendar: object) -> Period:
        return on_calendar(self._base, calendar)

    def __reduce__(self) -> tuple[object, ...]:
        return on_calendar, (self._base, self._calendar)

    def __repr__(self) -> str:
        return f"<{self.name} periods on {self._calendar.name}>"

    # -- what the base kind says alone ---------------------------------------------------------
    def parse(self, value: object, field: str = "business_date") -> Label:
        return self._base.parse(value, field)

    def key(self, value: object, field: str = "business_date") -> str:
        return self._base.key(value, field)

    def from_param(self, value: object, field: str = "business_date") -> Label:
        return self._base.from_param(value, field)

    def to_param(self, label: object, field: str = "business_date") -> Label:
        return self._base.to_param(label, field)

    def owns_key(self, key: object) -> bool:
        return self._base.owns_key(key)

    def _from_key(self, key: str, field: str) -> Label:
        return self._base.label(key, field)

    def _span(self, label: Label, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
        return self._base._span(label, zone)

    # -- business ordinals ---------------------------------------------------------------------
    def is_business(self, value: object, field: str = "business_date") -> bool:
        label = self._base.parse(value, field)
        if self._base.name == "daily":  # the calendar itself: it names years it does not know
            return bool(self._calendar.is_business_day(label))
        return self._index.holds(self._base.ordinal(label))

    def ordinal(self, value: object, field: str = "business_date") -> int:
        label = self._base.parse(value, field)
        if not self.is_business(label, field):
            raise InvalidInput(field, value, self.not_business(label))
        return self._index.rank(self._base.ordinal(label))

    def not_business(self, label: object) -> str:
        """Why ``label`` is no period of this kind: names the business periods around it."""
        n = self._index.rank(self._base.ordinal(label))
        around = []
        for side, k in (("previous", n - 1), ("next", n)):
            try:
                around.append(f"the {side} is {self._base.key(self._at(k))}")
            except (OverflowError, ValueError):
                around.append(f"there is no {side}")
        unit = "day" if self._base.name == "daily" else f"{self._base.name} period"
        return f"not a business {unit} of {self._calendar.name} ({' and '.join(around)})"

    def ordinals(self, values: Iterable[object], field: str = "complete") -> set[int]:
        """The ordinals of the business periods among ``values``; the others are no period of
        this kind and are left out (a Saturday's old attempt on a weekday job)."""
        found = set()
        for value in values:
            n = self._base.ordinal(value, field)
            if self._index.holds(n):
                found.add(self._index.rank(n))
        return found

    def rank_of_ordinal(self, n: int) -> int:
        """``rank`` of the base kind's period at ordinal ``n`` (no label made: bulk reads)."""
        return self._index.rank(n)

    def rank(self, value: object, field: str = "business_date") -> int:
        label = self._base.parse(value, field)
        if self._base.name == "daily":
            self._calendar.is_business_day(label)  # refuses a year the calendar does not know
        return self._index.rank(self._base.ordinal(label))

    def _at(self, ordinal: int) -> Label:
        return self._base.at(self._index.at(ordinal))

    def _closed_by(self, instant: dt.datetime, zone: ZoneInfo) -> Label:
        closed = self._base._closed_by(instant, zone)
        return self._at(self._index.rank(self._base.ordinal(closed) + 1) - 1)

    def _run(self, first: Label, count: int) -> Iterator[Label]:
        start = self.rank(first)
        return map(self.at, range(start, start + count))

    def between(self, start: object, stop: object, timezone: object = "UTC") -> Iterator[Label]:
        lo, hi = self.rank(start, "start"), self.rank(stop, "stop")
        if self._base.ordinal(stop, "stop") < self._base.ordinal(start, "start"):
            raise InvalidInput("stop", stop, f"before start {start}")
        return map(self.at, range(lo, hi))


def _index(base: Period, calendar: Calendar) -> _Ranks:
    if base.name == "daily":
        if calendar is WEEKDAYS:
            return _WeekdayIndex()
        return _Index(lambda n: calendar.is_business_day(dt.date.fromordinal(n)), _EPOCH_DAY)

    def holds_a_business_day(n: int) -> bool:
        first = base.at(n)
        days = (last_day(base, first) - first).days + 1
        return any(calendar.is_business_day(first + dt.timedelta(d)) for d in range(days))

    coarse = cast(CoarsePeriod, base)
    return _Index(holds_a_business_day, base.ordinal(coarse._first_of(dt.date(2000, 1, 3))))


def on_calendar(base: Period, calendar: object) -> Period:
    """``base`` counting only ``calendar``'s business periods (``base`` itself for ``all``),
    one object per (kind, calendar) in a process. Raises InvalidInput for an unknown
    calendar, or a calendar other than ``all`` for hours."""
    found = parse_calendar(calendar)
    base = base.base
    if found is ALL:
        return base
    if base.name == "hourly":
        raise InvalidInput(
            "calendar",
            found.name,
            "hourly periods run on every day; a calendar applies to daily, weekly, monthly "
            "and quarterly periods",
        )
    with _kinds_lock:
        kind = _kinds.get((base.name, found))
        if kind is None:
            kind = _kinds[(base.name, found)] = BusinessPeriod(base, found)
        return kind
