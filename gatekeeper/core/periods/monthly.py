"""The monthly kind, ``MONTHLY``: a calendar month labelled by its 1st (Luigi's MonthParameter
value); key ``YYYY-MM`` (pure).
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Final

from gatekeeper.core.periods.base import Period
from gatekeeper.core.periods.business import BaseKind
from gatekeeper.core.periods.coarse import CoarsePeriod

__all__ = ["MONTHLY", "Monthly"]

MONTH_KEY = re.compile(r"^([0-9]{4})-([0-9]{2})$")


class Monthly(BaseKind, CoarsePeriod):
    """A calendar month ``[1st, next 1st)``; key ``YYYY-MM``; ordinal ``12 * year + month - 1``."""

    __slots__ = ()
    _key_shape = MONTH_KEY
    _example = "2025-01"

    def key(self, value: object, field: str = "business_date") -> str:
        label = self.parse(value, field)  # strftime("%Y") writes 999, not 0999: no key
        return f"{label.year:04d}-{label.month:02d}"

    def ordinal(self, value: object, field: str = "business_date") -> int:
        label = self.parse(value, field)
        return label.year * 12 + label.month - 1

    def _at(self, ordinal: int) -> dt.date:
        year, month = divmod(ordinal, 12)
        return dt.date(year, month + 1, 1)

    def _first_of(self, day: dt.date) -> dt.date:
        return day.replace(day=1)

    def _from_parts(self, year: int, number: int) -> dt.date:
        return dt.date(year, number, 1)


MONTHLY: Final[Period] = Monthly("monthly")
