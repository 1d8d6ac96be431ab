"""Every period kind by name: ``PERIODS``, ``parse_period``, ``kind_of_key``, and the rules of
a kind as functions of its name (``interval``, ``last_closed``, ``period_ordinal``, ...,
``shift``) (pure).

Nothing here looks at the wall clock: what needs "now" takes it as a parameter.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Final

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.base import Period
from gatekeeper.core.periods.daily import DAILY
from gatekeeper.core.periods.hourly import HOURLY
from gatekeeper.core.periods.intervals import Interval
from gatekeeper.core.periods.labels import Label
from gatekeeper.core.periods.monthly import MONTHLY
from gatekeeper.core.periods.quarterly import QUARTERLY
from gatekeeper.core.periods.weekly import WEEKLY

__all__ = [
    "PERIODS",
    "interval",
    "kind_of_key",
    "last_closed",
    "parse_label",
    "parse_period",
    "parse_period_key",
    "period_at",
    "period_from_key",
    "period_key",
    "period_ordinal",
    "period_ordinals",
    "periods_between",
    "shift",
]

PERIODS: Final[tuple[Period, ...]] = (DAILY, HOURLY, WEEKLY, MONTHLY, QUARTERLY)
_BY_NAME: Final = {kind.name: kind for kind in PERIODS}


def parse_period(value: object, field: str = "period") -> Period:
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


def kind_of_key(key: object) -> Period:
    """The kind whose ledger keys look like ``key``; ``DAILY`` when none does (whose parse
    then says what is wrong with it)."""
    return next((kind for kind in PERIODS if kind.owns_key(key)), DAILY)


# -- the same rules as functions of a kind's name (each one is the kind's method) --------------
def period_key(value: object, field: str = "business_date") -> str:
    """Return the ledger key of a period of any kind: a string in a kind's key shape is that
    kind's (``2026-W41``, ``2025-01``, ``2025-Q1``), else an hour for a string with a ``T``
    (see ``parse_hour``), else a date (a datetime object is refused: too easily a date by
    mistake); raises InvalidInput."""
    if isinstance(value, str):
        owner = next((kind for kind in PERIODS if kind.owns_key(value)), None)
        kind = owner or (HOURLY if "T" in value else DAILY)
        return kind.key(value, field)
    return DAILY.key(value, field)


def parse_label(value: object, period: object, field: str = "business_date") -> Label:
    """``parse_period(period).parse(value, field)``."""
    return parse_period(period).parse(value, field)


def parse_period_key(value: object, period: object, field: str = "business_date") -> str:
    """``parse_period(period).key(value, field)``."""
    return parse_period(period).key(value, field)


def period_from_key(key: object, field: str = "business_date") -> Label:
    """The label a ledger key of either kind names (``kind_of_key(key).label``)."""
    return kind_of_key(key).label(key, field)


def interval(
    period_value: object,
    period: object = DAILY,
    timezone: object = "UTC",
    *,
    field: str = "business_date",
) -> Interval:
    """``parse_period(period).interval(period_value, timezone, field=field)``."""
    return parse_period(period).interval(period_value, timezone, field=field)


def last_closed(until: object, period: object = DAILY, timezone: object = "UTC") -> Label | None:
    """``parse_period(period).last_closed(until, timezone)``."""
    return parse_period(period).last_closed(until, timezone)


def period_ordinal(value: object, period: object = DAILY, field: str = "business_date") -> int:
    """``parse_period(period).ordinal(value, field)``."""
    return parse_period(period).ordinal(value, field)


def period_at(ordinal: int, period: object = DAILY) -> Label:
    """``parse_period(period).at(ordinal)``."""
    return parse_period(period).at(ordinal)


def period_ordinals(
    values: Iterable[object], period: object = DAILY, field: str = "complete"
) -> set[int]:
    """``parse_period(period).ordinals(values, field)``."""
    return parse_period(period).ordinals(values, field)


def periods_between(
    start: object, stop: object, period: object = DAILY, timezone: object = "UTC"
) -> Iterator[Label]:
    """``parse_period(period).between(start, stop, timezone)``."""
    return parse_period(period).between(start, stop, timezone)


def shift(label: object, n: int, *, calendar: object = "all", period: object = DAILY) -> Label:
    """The period ``n`` business periods after ``label`` (before it for n < 0), counting only
    the business periods of ``calendar`` (a name or a Calendar): ``shift(monday, -1,
    calendar="weekdays")`` is the Friday before. Raises InvalidInput naming the field for a
    label that is no business period, an unknown calendar or kind, or beyond the calendar."""
    return parse_period(period).on(calendar).shift(label, n, "label")
