"""Weekly, monthly and quarterly periods (pure).

Each is labelled by the ``date`` its interval starts on, and covers whole local days of the
business zone, ``[local midnight of the first day, local midnight of the first day of the
next)``; it closes at the end of that interval (a month at local midnight of the next 1st),
whatever its calendar (a month on ``weekdays`` still closes at midnight of the 1st):

- ``WEEKLY``: an ISO week, labelled by its Monday; key ``YYYY-Www`` (``2026-W41``);
- ``MONTHLY``: labelled by its 1st (Luigi's MonthParameter value); key ``YYYY-MM``;
- ``QUARTERLY``: labelled by its first day (1 Jan, Apr, Jul, Oct); key ``YYYY-Qn``.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any, Final
from zoneinfo import ZoneInfo

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.base import Period, day_start, last_closed_day
from gatekeeper.core.periods.labels import ISO_DATE

__all__ = ["MONTHLY", "QUARTERLY", "WEEKLY", "last_day"]

WEEK_KEY = re.compile(r"^([0-9]{4})-W([0-9]{2})$")
MONTH_KEY = re.compile(r"^([0-9]{4})-([0-9]{2})$")
QUARTER_KEY = re.compile(r"^([0-9]{4})-Q([1-4])$")
_ONE_DAY = dt.timedelta(days=1)


class CoarsePeriod(Period):
    """A period of whole local days starting on ``_first_day`` labels; subclasses give the
    label rule, the key and the ordinal line."""

    __slots__ = ()
    _example: str = ""

    def parse(self, value: Any, field: str = "business_date") -> dt.date:
        if isinstance(value, str) and self._key_shape.match(value):
            return self._from_key(value, field)
        if isinstance(value, str) and ISO_DATE.match(value):
            try:
                value = dt.date.fromisoformat(value)
            except ValueError as exc:
                raise InvalidInput(field, value, f"not a calendar date ({exc})") from None
        if isinstance(value, dt.datetime) or not isinstance(value, dt.date):
            raise InvalidInput(
                field, value, f"expected a {self.name} period such as {self._example}"
            )
        if value != self._first_of(value):
            raise InvalidInput(
                field,
                value,
                f"not the first day of a {self.name} period (that is {self._first_of(value)})",
            )
        return value

    def from_param(self, value: Any, field: str = "business_date") -> dt.date:
        return self.parse(value.date() if isinstance(value, dt.datetime) else value, field)

    def to_param(self, label: Any, field: str = "business_date") -> dt.date:
        return self.parse(label, field)

    def _span(self, label: Any, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
        return day_start(label, zone), day_start(self._next_first(label), zone)

    def containing(self, day: dt.date) -> dt.date:
        """The label of the period that holds the calendar date ``day``."""
        return self._first_of(day)

    def _closed_by(self, instant: dt.datetime, zone: ZoneInfo) -> dt.date:
        day = last_closed_day(instant, zone)  # the period holding it closed if it is its last
        first = self._first_of(day)
        return first if last_day(self, first) == day else self._first_of(first - _ONE_DAY)

    def _from_key(self, key: str, field: str) -> dt.date:
        match = self._key_shape.match(key) if isinstance(key, str) else None
        if match is None:
            raise InvalidInput(field, key, f"expected a {self.name} key such as {self._example}")
        try:
            return self._from_parts(int(match.group(1)), int(match.group(2)))
        except ValueError as exc:
            raise InvalidInput(field, key, f"no such {self.name} period ({exc})") from None

    # -- each kind's rule ----------------------------------------------------------------------
    def _first_of(self, day: dt.date) -> dt.date:
        raise NotImplementedError

    def _next_first(self, first: dt.date) -> dt.date:
        return self.at(self.ordinal(first) + 1)

    def _from_parts(self, year: int, number: int) -> dt.date:
        raise NotImplementedError


class Weekly(CoarsePeriod):
    """An ISO week ``[Monday, next Monday)``; key ``YYYY-Www``; ordinal: weeks since 0001-01-01."""

    __slots__ = ()
    _key_shape = WEEK_KEY
    _example = "2026-W41 or its Monday 2026-10-05"

    def key(self, value: Any, field: str = "business_date") -> str:
        year, week, _ = self.parse(value, field).isocalendar()
        return f"{year:04d}-W{week:02d}"

    def ordinal(self, value: Any, field: str = "business_date") -> int:
        return (self.parse(value, field).toordinal() - 1) // 7  # 0001-01-01 is a Monday

    def _at(self, ordinal: int) -> dt.date:
        return dt.date.fromordinal(ordinal * 7 + 1)

    def _first_of(self, day: dt.date) -> dt.date:
        return day - dt.timedelta(days=day.weekday())

    def _from_parts(self, year: int, number: int) -> dt.date:
        return dt.date.fromisocalendar(year, number, 1)


class Monthly(CoarsePeriod):
    """A calendar month ``[1st, next 1st)``; key ``YYYY-MM``; ordinal ``12 * year + month - 1``."""

    __slots__ = ()
    _key_shape = MONTH_KEY
    _example = "2025-01"

    def key(self, value: Any, field: str = "business_date") -> str:
        return self.parse(value, field).strftime("%Y-%m")

    def ordinal(self, value: Any, field: str = "business_date") -> int:
        label = self.parse(value, field)
        return label.year * 12 + label.month - 1

    def _at(self, ordinal: int) -> dt.date:
        year, month = divmod(ordinal, 12)
        return dt.date(year, month + 1, 1)

    def _first_of(self, day: dt.date) -> dt.date:
        return day.replace(day=1)

    def _from_parts(self, year: int, number: int) -> dt.date:
        return dt.date(year, number, 1)


class Quarterly(CoarsePeriod):
    """A calendar quarter; key ``YYYY-Qn``; ordinal ``4 * year + quarter - 1``."""

    __slots__ = ()
    _key_shape = QUARTER_KEY
    _example = "2025-Q1"

    def key(self, value: Any, field: str = "business_date") -> str:
        label = self.parse(value, field)
        return f"{label.year:04d}-Q{(label.month - 1) // 3 + 1}"

    def ordinal(self, value: Any, field: str = "business_date") -> int:
        label = self.parse(value, field)
        return label.year * 4 + (label.month - 1) // 3

    def _at(self, ordinal: int) -> dt.date:
        year, quarter = divmod(ordinal, 4)
        return dt.date(year, quarter * 3 + 1, 1)

    def _first_of(self, day: dt.date) -> dt.date:
        return day.replace(month=(day.month - 1) // 3 * 3 + 1, day=1)

    def _from_parts(self, year: int, number: int) -> dt.date:
        return dt.date(year, number * 3 - 2, 1)


def last_day(kind: Period, first: dt.date) -> dt.date:
    """The last day of the coarse period starting on ``first`` (itself for a day)."""
    if not isinstance(kind.base, CoarsePeriod):
        return first
    return kind.base._next_first(first) - _ONE_DAY


WEEKLY: Final[Period] = Weekly("weekly")
MONTHLY: Final[Period] = Monthly("monthly")
QUARTERLY: Final[Period] = Quarterly("quarterly")
