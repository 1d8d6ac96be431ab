"""What the weekly, monthly and quarterly kinds share: ``CoarsePeriod`` (pure).

Each is labelled by the ``date`` its interval starts on, and covers whole local days of the
business zone, ``[local midnight of the first day, local midnight of the first day of the
next)``; it closes at the end of that interval (a month at local midnight of the next 1st),
whatever its calendar (a month on ``weekdays`` still closes at midnight of the 1st):

- ``WEEKLY`` (``weekly.py``): an ISO week, labelled by its Monday; key ``YYYY-Www``
  (``2026-W41``);
- ``MONTHLY`` (``monthly.py``): labelled by its 1st (Luigi's MonthParameter value); key
  ``YYYY-MM``;
- ``QUARTERLY`` (``quarterly.py``): labelled by its first day (1 Jan, Apr, Jul, Oct); key
  ``YYYY-Qn``.
"""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.base import Period, day_start, last_closed_day
from gatekeeper.core.periods.labels import ISO_DATE, Label

__all__ = ["CoarsePeriod", "last_day"]

_ONE_DAY = dt.timedelta(days=1)


class CoarsePeriod(Period):
    """A period of whole local days starting on ``_first_day`` labels; subclasses give the
    label rule, the key and the ordinal line."""

    __slots__ = ()
    _example: str = ""

    def parse(self, value: object, field: str = "business_date") -> dt.date:
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

    def from_param(self, value: object, field: str = "business_date") -> dt.date:
        return self.parse(value.date() if isinstance(value, dt.datetime) else value, field)

    def to_param(self, label: object, field: str = "business_date") -> dt.date:
        return self.parse(label, field)

    def _span(self, label: Label, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
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


def last_day(kind: Period, first: dt.date) -> dt.date:
    """The last day of the coarse period starting on ``first`` (itself for a day)."""
    if not isinstance(kind.base, CoarsePeriod):
        return first
    return kind.base._next_first(first) - _ONE_DAY
