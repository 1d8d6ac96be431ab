"""The schedule of a job: which periods it runs on and when each is due, as one typed value.

A ``Schedule`` is what a range plans with and what ``status``, ``report``, ``check``,
``serve`` and freshness judge a job's window by: the period kind (bound to its business
calendar), the business time zone, the lateness, the catch-up policy, the strategy and the
window ``[start, stop)``. It is validated once, when it is made (every field is checked
here, naming the field), and frozen.

``resolve_schedule(*sources)`` makes one from what several sources say, the first that says
a field winning: the caller passes them in precedence order (a flag or Luigi parameter, the
job's recorded profile, the ``[gatekeeper]`` settings, which are the environment over
luigi.cfg), each a ``ScheduleInput`` whose None fields say nothing; the rest are the
defaults. Nothing here reads a ledger, a configuration or a command line: that is the
caller's (``report/windows.py`` for a job in a ledger, ``luigi/range.py`` for a range).
Pure.
"""

from __future__ import annotations

import datetime as dt
import enum
import re
from dataclasses import dataclass, fields
from typing import Any
from zoneinfo import ZoneInfo

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.intervals import UTC, parse_lateness, parse_timezone
from gatekeeper.core.labels import Label
from gatekeeper.core.periods import DAILY, Period, parse_period

_LAST_N = re.compile(r"^last:([0-9]+)$")


class Strategy(str, enum.Enum):
    """The order a range fills its gaps in: ``contiguous`` and ``forward`` oldest first
    (contiguous one at a time, stopping at a failure), ``reverse`` newest first. A member is
    its name as a string (``Strategy.REVERSE == "reverse"``)."""

    CONTIGUOUS = "contiguous"
    FORWARD = "forward"
    REVERSE = "reverse"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: Any, field: str = "strategy") -> Strategy:
        """The strategy ``value`` names (a member or its name); InvalidInput otherwise."""
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(member.value for member in cls)
            raise InvalidInput(field, value, f"unknown strategy; expected {names}") from None


#: the strategies' names, in the order the docs give them
STRATEGIES = tuple(member.value for member in Strategy)


def parse_catchup(value: Any, field: str = "catchup") -> tuple[str, int | None]:
    """The canonical catch-up policy ``value`` names and its window (how many of the latest
    due periods it fills; None for all): ``all``, ``none`` (the latest only) or ``last:N``
    (N >= 1); raises InvalidInput naming ``field``."""
    if value == "all":
        return "all", None
    if value == "none":
        return "none", 1
    match = _LAST_N.match(value) if isinstance(value, str) else None
    if match is not None and int(match.group(1)) >= 1:
        n = int(match.group(1))
        return f"last:{n}", n
    if isinstance(value, str) and value.startswith("last:"):
        raise InvalidInput(field, value, "last:N needs a whole number N >= 1")
    raise InvalidInput(field, value, "unknown catch-up policy; expected all, none or last:N")


@dataclass(frozen=True, slots=True)
class Schedule:
    """Which periods a job runs on and when each is due (see the module docstring).

    ``Schedule(start="2026-10-01", lateness="2h", calendar="weekdays")`` takes each field as
    a value or its text and keeps it checked and typed: ``period`` a Period kind bound to
    ``calendar`` (``daily`` on ``all`` unless given), ``timezone`` a ZoneInfo, ``lateness`` a
    timedelta, ``catchup`` its canonical text, ``strategy`` a Strategy, ``start`` and
    ``stop`` labels of the kind (``stop`` exclusive, None for no end; neither need be a
    business period). ``calendar`` may be given as a name or a Calendar; a kind already
    bound to one keeps it when ``calendar`` is None. Raises InvalidInput naming the field.
    """

    start: Any
    stop: Any = None
    period: Any = DAILY
    calendar: Any = None
    timezone: Any = "UTC"
    lateness: Any = dt.timedelta(0)
    catchup: Any = "all"
    strategy: Any = Strategy.CONTIGUOUS

    def __post_init__(self) -> None:
        kind = parse_period(self.period)
        if self.calendar is not None:
            kind = kind.base.on(self.calendar)
        zone = parse_timezone(self.timezone)
        late = parse_lateness(self.lateness)
        first = kind.parse(self.start, "start")
        last = None if self.stop is None else kind.parse(self.stop, "stop")
        if last is not None and kind.base.ordinal(last) < kind.base.ordinal(first):
            raise InvalidInput("stop", self.stop, f"before start {self.start}")
        fixed = {
            "period": kind,
            "calendar": kind.calendar.name,
            "timezone": zone,
            "lateness": late,
            "strategy": Strategy.parse(self.strategy),
            "catchup": parse_catchup(self.catchup)[0],
            "start": first,
            "stop": last,
        }
        for name, value in fixed.items():
            object.__setattr__(self, name, value)

    # -- what it says ---------------------------------------------------------------------------
    @property
    def kind(self) -> Period:
        """The period kind, bound to the schedule's calendar."""
        period: Period = self.period
        return period

    @property
    def zone(self) -> ZoneInfo:
        zone: ZoneInfo = self.timezone
        return zone

    @property
    def catchup_window(self) -> int | None:
        """How many of the latest due periods the catch-up policy fills (None: all)."""
        return parse_catchup(self.catchup)[1]

    def key(self, label: Any) -> str:
        """The ledger key of one of the schedule's periods."""
        return self.kind.key(label)

    def with_(self, **changes: Any) -> Schedule:
        """A copy with ``changes`` (checked as the constructor checks them)."""
        values = {f.name: getattr(self, f.name) for f in fields(self)}
        if "period" in changes and "calendar" not in changes:
            values["calendar"] = None  # the new kind's own calendar
        values.update(changes)
        return Schedule(**values)

    # -- when periods are due -------------------------------------------------------------------
    def latest_due(self, now: dt.datetime) -> Label | None:
        """The latest period due at ``now`` (its end + lateness <= ``now``), or None."""
        try:
            until = now - self.lateness
        except OverflowError:
            return None
        return self.kind.last_closed(until, self.zone)

    def due_ordinals(self, now: dt.datetime) -> tuple[int, int]:
        """The kind's ordinals ``[lo, hi)`` of the due periods of ``[start, stop)`` at ``now``."""
        kind = self.kind
        lo = kind.rank(self.start)  # a bound need not be a business period of the calendar
        newest = self.latest_due(now)
        hi = lo if newest is None else max(lo, kind.ordinal(newest) + 1)
        if self.stop is not None:
            hi = min(hi, kind.rank(self.stop))
        return lo, hi

    def due_span(self, now: dt.datetime) -> tuple[str, str] | None:
        """The ledger keys of the first and last due periods at ``now`` (inclusive), or None
        when none is due."""
        lo, hi = self.due_ordinals(now)
        if hi <= lo:
            return None
        return self.key(self.kind.at(lo)), self.key(self.kind.at(hi - 1))

    def due_at(self, ordinal: int) -> dt.datetime | None:
        """When the period at ``ordinal`` becomes due, or None when it lies at or after
        ``stop`` or beyond the datetime range."""
        kind = self.kind
        if self.stop is not None and ordinal >= kind.rank(self.stop):
            return None
        try:
            due: dt.datetime = kind.closes_at(kind.at(ordinal), self.zone) + self.lateness
        except (InvalidInput, OverflowError):
            return None
        return due

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict: periods as ledger keys, lateness in seconds."""
        return {
            "start": self.key(self.start),
            "stop": None if self.stop is None else self.key(self.stop),
            "period": self.kind.name,
            "calendar": self.calendar,
            "timezone": self.zone.key,
            "lateness_seconds": self.lateness.total_seconds(),
            "catchup": self.catchup,
            "strategy": self.strategy.value,
        }


@dataclass(frozen=True, slots=True)
class ScheduleInput:
    """What one source says of a schedule (see ``resolve_schedule``); None says nothing.

    Values are as the source gives them (a flag's text, a profile's stored text, a Luigi
    parameter's value); the resolved Schedule checks them, naming the field.
    """

    start: Any = None
    stop: Any = None
    period: Any = None
    calendar: Any = None
    timezone: Any = None
    lateness: Any = None
    catchup: Any = None
    strategy: Any = None


def resolve_schedule(*sources: ScheduleInput) -> Schedule:
    """The Schedule the ``sources`` say, in precedence order: each field is the first value
    a source gives, else the Schedule's default (``start`` has none: InvalidInput naming
    ``start`` when no source gives it). Raises InvalidInput naming a bad field."""
    values: dict[str, Any] = {}
    for source in sources:
        for f in fields(source):
            value = getattr(source, f.name)
            if value is not None and value != "" and f.name not in values:
                values[f.name] = value
    if "start" not in values:
        raise InvalidInput("start", None, "no start given")
    return Schedule(**values)


__all__ = [
    "STRATEGIES",
    "UTC",
    "Schedule",
    "ScheduleInput",
    "Strategy",
    "parse_catchup",
    "resolve_schedule",
]
