"""The weekly kind, ``WEEKLY``: an ISO week labelled by its Monday; key ``YYYY-Www``
(``2026-W41``) (pure).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

from gatekeeper.core.periods.base import Period
from gatekeeper.core.periods.business import BaseKind
from gatekeeper.core.periods.coarse import CoarsePeriod

__all__ = ["WEEKLY", "Weekly"]

WEEK_KEY = re.compile(r"^([0-9]{4})-W([0-9]{2})$")


class Weekly(BaseKind, CoarsePeriod):
    """An ISO week ``[Monday, next Monday)``; key ``YYYY-Www``; ordinal: weeks since 0001-01-01."""

    __slots__ = ()
    _key_shape = WEEK_KEY
    _example = "2026-W41 or its Monday 2026-10-05"

    def key(self, value: object, field: str = "business_date") -> str:
        year, week, _ = self.parse(value, field).isocalendar()
        return f"{year:04d}-W{week:02d}"

    def ordinal(self, value: object, field: str = "business_date") -> int:
        return (self.parse(value, field).toordinal() - 1) // 7  # 0001-01-01 is a Monday

    def _at(self, ordinal: int) -> dt.date:
        return dt.date.fromordinal(ordinal * 7 + 1)

    def _first_of(self, day: dt.date) -> dt.date:
        return day - dt.timedelta(days=day.weekday())

    def _from_parts(self, year: int, number: int) -> dt.date:
        return dt.date.fromisocalendar(year, number, 1)


WEEKLY: Final[Period] = Weekly("weekly")
