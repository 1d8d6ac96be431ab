"""The hourly kind, ``HOURLY`` (pure).

An hourly period is labelled by the tz-aware start of an hour on the UTC grid; its key is
``YYYY-MM-DDTHH:00Z`` and its interval ``[h, h + 1h)``. Hours follow every day: no calendar
binds them (``business.on_calendar`` refuses one).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Iterator
from typing import Final, cast
from zoneinfo import ZoneInfo

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.base import Period
from gatekeeper.core.periods.business import BaseKind
from gatekeeper.core.periods.intervals import UTC
from gatekeeper.core.periods.labels import (
    HOUR_KEY,
    Label,
    hour_key,
    hour_ordinal,
    hour_ordinals,
    parse_hour,
)

__all__ = ["HOURLY", "Hourly"]

_ONE_HOUR = dt.timedelta(hours=1)


class Hourly(BaseKind):
    """A UTC hour ``[h, h + 1h)``; key ``YYYY-MM-DDTHH:00Z``; its Luigi parameter (a
    DateHourParameter) holds the naive UTC hour; ordinal ``24 * date.toordinal() + hour``."""

    __slots__ = ()
    _key_shape = HOUR_KEY

    def parse(self, value: object, field: str = "business_date") -> dt.datetime:
        return parse_hour(value, field)

    def key(self, value: object, field: str = "business_date") -> str:
        return hour_key(value, field)

    def from_param(self, value: object, field: str = "business_date") -> dt.datetime:
        if isinstance(value, dt.datetime) and value.tzinfo is None:
            value = value.replace(tzinfo=UTC)  # as Luigi's DateHourParameter reads it
        return parse_hour(value, field)

    def to_param(self, label: object, field: str = "business_date") -> dt.datetime:
        return parse_hour(label, field).replace(tzinfo=None)

    def ordinal(self, value: object, field: str = "business_date") -> int:
        return hour_ordinal(value, field)

    def ordinals(self, values: Iterable[object], field: str = "complete") -> set[int]:
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

    def _span(self, label: Label, zone: ZoneInfo) -> tuple[dt.datetime, dt.datetime]:
        start = cast(dt.datetime, label)  # pragma: no mutate  (a label is its aware start)
        return start, start + _ONE_HOUR

    def _closed_by(self, instant: dt.datetime, zone: ZoneInfo) -> dt.datetime:
        return instant.replace(minute=0, second=0, microsecond=0) - _ONE_HOUR

    def _run(self, first: Label, count: int) -> Iterator[dt.datetime]:
        start = cast(dt.datetime, first)  # pragma: no mutate  (cast: its value at run time)
        return (start + n * _ONE_HOUR for n in range(count))


HOURLY: Final[Period] = Hourly("hourly")
