"""The daily kind, ``DAILY`` (pure).

A daily period is labelled by a ``datetime.date``; its key is ``YYYY-MM-DD`` and its interval
``[local midnight, next local midnight)`` in the business time zone (23 or 25 hours on DST
days), held in UTC.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from typing import Final
from zoneinfo import ZoneInfo

from gatekeeper.core.periods.base import Period, day_start, last_closed_day
from gatekeeper.core.periods.business import BaseKind
from gatekeeper.core.periods.labels import ISO_DATE, Label, day_ordinal, parse_business_date

__all__ = ["DAILY", "Daily"]

_ONE_DAY = dt.timedelta(days=1)


class Daily(BaseKind):
    """A business date: ``[local midnight, next local midnight)``; key ``YYYY-MM-DD``; its Luigi
    parameter (a DateParameter) holds the date; ordinal ``date.toordinal()``."""

    __slots__ = ()
    _key_shape = ISO_DATE

    def parse(self, value: object, field: str = "business_date") -> dt.date:
        return parse_business_date(value, field)

    def key(self, value: object, field: str = "business_date") -> str:
        return parse_business_date(value, field).isoformat()

    def from_param(self, value: object, field: str = "business_date") -> dt.date:
        return parse_business_date(value.date() if isinstance(value, dt.datetime) else value, field)

    def to_param(self, label: object, field: str = "business_date") -> dt.date:
        return parse_business_date(label, field)

    def ordinal(self, value: object, field: str = "business_date") -> int:
        return parse_business_date(value, field).toordinal()

    def ordinals(self, values: Iterable[object], field: str = "complete") -> set[int]:
        return {day_ordinal(value, field) for value in values}

    def key_ordinal(self, key: str) -> int:
        return dt.date.fromisoformat(key).toordinal()

    def _at(self, ordinal: int) -> dt.date:
        return dt.date.fromordinal(ordinal)

    def _from_key(self, key: str, field: str) -> dt.date:
        return parse_business_date(key, field)

    def _span(self, label: Label, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
        return day_start(label, zone), day_start(label + _ONE_DAY, zone)

    def _closed_by(self, instant: dt.datetime, zone: ZoneInfo) -> dt.date:
        # Usually the local day before ``instant``'s; the loops correct the guess where local
        # midnight is missing or repeated.
        return last_closed_day(instant, zone)

    def _run(self, first: Label, count: int) -> Iterator[dt.date]:
        start = first.toordinal()
        return map(dt.date.fromordinal, range(start, start + count))


DAILY: Final[Period] = Daily("daily")
