"""The quarterly kind, ``QUARTERLY``: a calendar quarter labelled by its first day (1 Jan, Apr,
Jul, Oct); key ``YYYY-Qn`` (pure).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

from gatekeeper.core.periods.base import Period
from gatekeeper.core.periods.business import BaseKind
from gatekeeper.core.periods.coarse import CoarsePeriod

__all__ = ["QUARTERLY", "Quarterly"]

QUARTER_KEY = re.compile(r"^([0-9]{4})-Q([1-4])$")


class Quarterly(BaseKind, CoarsePeriod):
    """A calendar quarter; key ``YYYY-Qn``; ordinal ``4 * year + quarter - 1``."""

    __slots__ = ()
    _key_shape = QUARTER_KEY
    _example = "2025-Q1"

    def key(self, value: object, field: str = "business_date") -> str:
        label = self.parse(value, field)
        return f"{label.year:04d}-Q{(label.month - 1) // 3 + 1}"

    def ordinal(self, value: object, field: str = "business_date") -> int:
        label = self.parse(value, field)
        return label.year * 4 + (label.month - 1) // 3

    def _at(self, ordinal: int) -> dt.date:
        year, quarter = divmod(ordinal, 4)
        return dt.date(year, quarter * 3 + 1, 1)

    def _first_of(self, day: dt.date) -> dt.date:
        return day.replace(month=(day.month - 1) // 3 * 3 + 1, day=1)

    def _from_parts(self, year: int, number: int) -> dt.date:
        return dt.date(year, number * 3 - 2, 1)


QUARTERLY: Final[Period] = Quarterly("quarterly")
