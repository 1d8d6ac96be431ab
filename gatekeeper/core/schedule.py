"""The schedule of a job: which periods it runs on and when each is due, as one typed value.

A ``Schedule`` is what a range plans with and what ``status``, ``report``, ``check``,
``serve`` and freshness judge a job's window by: the period kind (bound to its business
calendar), the business time zone, the lateness, the catch-up policy, the strategy and the
window ``[start, stop)``, each stored as a typed value (a Period, a ZoneInfo, a timedelta,
a Catchup, a Strategy, labels), frozen. Text is parsed once, by ``Schedule.parse``, which
checks every field and names the bad one; everything downstream passes the Schedule.

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
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, fields
from typing import Literal, TypeVar
from zoneinfo import ZoneInfo

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, Period, parse_period
from gatekeeper.core.periods.intervals import UTC, parse_lateness, parse_timezone
from gatekeeper.core.periods.labels import Label

_LAST_N = re.compile(r"^last:([0-9]+)$")
T = TypeVar("T")


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
    def parse(cls, value: object, field: str = "strategy") -> Strategy:
        """The strategy ``value`` names (a member or its name); InvalidInput otherwise."""
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(member.value for member in cls)
            raise InvalidInput(field, value, f"unknown strategy; expected {names}") from None


#: the strategies' names, in the order the docs give them
STRATEGIES = tuple(member.value for member in Strategy)


def parse_catchup(value: object, field: str = "catchup") -> tuple[str, int | None]:
    """The canonical catch-up policy ``value`` names and its window (``Catchup.parse``, as
    text and window); raises InvalidInput naming ``field``."""
    found = Catchup.parse(value, field)
    return str(found), found.window


@dataclass(frozen=True, slots=True)
class Catchup:
    """A catch-up policy: which of the due missing periods a range fills. ``all`` (window
    None: every one), ``none`` (window 1: the latest only) or ``last`` (window N: the N
    latest). Its text is ``all``, ``none`` or ``last:N`` (``str``); ``Catchup.parse`` reads it."""

    policy: Literal["all", "none", "last"]
    window: int | None = None

    def __post_init__(self) -> None:
        window = self.window
        last = self.policy == "last" and window is not None and window >= 1
        if not (last or (self.policy, window) in (("all", None), ("none", 1))):
            raise InvalidInput("catchup", self, "window does not fit the policy")

    def __str__(self) -> str:
        return f"last:{self.window}" if self.policy == "last" else self.policy

    @classmethod
    def parse(cls, value: object, field: str = "catchup") -> Catchup:
        """The policy ``value`` names (a Catchup, or ``all``, ``none`` or ``last:N`` with N
        >= 1); raises InvalidInput naming ``field``."""
        if isinstance(value, Catchup):
            return value
        if value == "all":
            return CATCHUP_ALL
        if value == "none":
            return cls("none", 1)
        match = _LAST_N.match(value) if isinstance(value, str) else None
        if match is not None and int(match.group(1)) >= 1:
            return cls("last", int(match.group(1)))
        if isinstance(value, str) and value.startswith("last:"):
            raise InvalidInput(field, value, "last:N needs a whole number N >= 1")
        raise InvalidInput(field, value, "unknown catch-up policy; expected all, none or last:N")


#: every due missing period (the default)
CATCHUP_ALL = Catchup("all")


@dataclass(frozen=True, slots=True)
class Schedule:
    """Which periods a job runs on and when each is due (see the module docstring).

    Its fields are typed values: ``start`` and ``stop`` labels of ``period`` (``stop``
    exclusive, None for no end; neither need be a business period), ``period`` a Period kind
    bound to its business calendar, ``timezone`` a ZoneInfo, ``lateness`` a non-negative
    timedelta, ``catchup`` a Catchup and ``strategy`` a Strategy. ``Schedule.parse`` makes
    one from text (flags, profiles, Luigi parameters), checking each field and naming it.
    Raises InvalidInput for a ``stop`` before ``start``.
    """

    start: Label
    stop: Label | None = None
    period: Period = DAILY
    timezone: ZoneInfo = ZoneInfo("UTC")
    lateness: dt.timedelta = dt.timedelta(0)
    catchup: Catchup = CATCHUP_ALL
    strategy: Strategy = Strategy.CONTIGUOUS

    def __post_init__(self) -> None:
        base = self.period.base
        if self.stop is not None and base.ordinal(self.stop) < base.ordinal(self.start):
            raise InvalidInput("stop", self.stop, f"before start {self.start}")

    @classmethod
    def parse(
        cls,
        *,
        start: object,
        stop: object = None,
        period: object = DAILY,
        calendar: object = None,
        timezone: object = "UTC",
        lateness: object = dt.timedelta(0),
        catchup: object = "all",
        strategy: object = Strategy.CONTIGUOUS,
    ) -> Schedule:
        """The Schedule each value or its text names: ``period`` a kind or its name
        (``daily`` unless given), bound to ``calendar`` (a name or a Calendar; a kind already
        bound to one keeps it when ``calendar`` is None), ``timezone`` an IANA name or a
        ZoneInfo, ``lateness`` a timedelta or text such as ``2h``, ``catchup`` ``all``,
        ``none`` or ``last:N``, ``strategy`` a name, ``start``/``stop`` labels or their ISO
        text. Pure; raises InvalidInput naming the first bad field."""
        kind = parse_period(period)
        if calendar is not None:
            kind = kind.base.on(calendar)
        zone = parse_timezone(timezone)
        late = parse_lateness(lateness)
        first = kind.parse(start, "start")
        last = None if stop is None else kind.parse(stop, "stop")
        if last is not None and kind.base.ordinal(last) < kind.base.ordinal(first):
            raise InvalidInput("stop", stop, f"before start {start}")
        chosen = Strategy.parse(strategy)
        return cls(first, last, kind, zone, late, Catchup.parse(catchup), chosen)

    # -- what it says ---------------------------------------------------------------------------
    @property
    def calendar(self) -> str:
        """The name of the business calendar the period kind counts."""
        return self.period.calendar.name

    def key(self, label: Label) -> str:
        """The ledger key of one of the schedule's periods."""
        return self.period.key(label)

    # -- when periods are due -------------------------------------------------------------------
    def latest_due(self, now: dt.datetime) -> Label | None:
        """The latest period due at ``now`` (its end + lateness <= ``now``), or None."""
        try:
            until = now - self.lateness
        except OverflowError:
            return None
        return self.period.last_closed(until, self.timezone)

    def due_ordinals(self, now: dt.datetime) -> tuple[int, int]:
        """The kind's ordinals ``[lo, hi)`` of the due periods of ``[start, stop)`` at ``now``."""
        kind = self.period
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
        return self.key(self.period.at(lo)), self.key(self.period.at(hi - 1))

    def due_at(self, ordinal: int) -> dt.datetime | None:
        """When the period at ``ordinal`` becomes due, or None when it lies at or after
        ``stop`` or beyond the datetime range."""
        kind = self.period
        if self.stop is not None and ordinal >= kind.rank(self.stop):
            return None
        try:
            due: dt.datetime = kind.closes_at(kind.at(ordinal), self.timezone) + self.lateness
        except (InvalidInput, OverflowError):
            return None
        return due

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: periods as ledger keys, lateness in seconds."""
        return {
            "start": self.key(self.start),
            "stop": None if self.stop is None else self.key(self.stop),
            "period": self.period.name,
            "calendar": self.calendar,
            "timezone": self.timezone.key,
            "lateness_seconds": self.lateness.total_seconds(),
            "catchup": str(self.catchup),
            "strategy": self.strategy.value,
        }


@dataclass(frozen=True, slots=True)
class ScheduleInput:
    """What one source says of a schedule (see ``resolve_schedule``); None says nothing.

    Values are as the source gives them (a flag's text, a profile's stored text, a Luigi
    parameter's value); the resolved Schedule checks them, naming the field.
    """

    start: object = None
    stop: object = None
    period: object = None
    calendar: object = None
    timezone: object = None
    lateness: object = None
    catchup: object = None
    strategy: object = None


def resolve_schedule(*sources: ScheduleInput) -> Schedule:
    """The Schedule the ``sources`` say, in precedence order: each field is the first value
    a source gives, else the Schedule's default (``start`` has none: InvalidInput naming
    ``start`` when no source gives it). Raises InvalidInput naming a bad field."""
    values: dict[str, object] = {}
    for source in sources:
        for f in fields(source):
            value = getattr(source, f.name)
            if value is not None and value != "" and f.name not in values:
                values[f.name] = value
    if "start" not in values:
        raise InvalidInput("start", None, "no start given")
    return Schedule.parse(**values)


def schedule_key(schedule: Schedule) -> Hashable:
    """A key equal for two Schedules exactly when they are the same schedule: every field
    equal and the period kind the same object (a Period equals its name whatever calendar it
    counts; ``on_calendar`` makes one object per kind and calendar), so it holds only while
    the schedule lives: a memo of one call's schedules. Pure."""
    s = schedule
    return (id(s.period), s.period, s.start, s.stop, s.timezone, s.lateness, s.catchup, s.strategy)


def per_schedule(schedules: Mapping[str, Schedule], fn: Callable[[Schedule], T]) -> dict[str, T]:
    """Job -> ``fn`` of its Schedule, ``fn`` called once per distinct schedule
    (``schedule_key``): many jobs of a fleet share one. ``fn`` must be pure. Any exception
    ``fn`` raises propagates."""
    found: dict[Hashable, T] = {}
    out = {}
    for job, schedule in schedules.items():
        key = schedule_key(schedule)
        if key not in found:
            found[key] = fn(schedule)
        out[job] = found[key]
    return out


__all__ = [
    "CATCHUP_ALL",
    "STRATEGIES",
    "UTC",
    "Catchup",
    "Schedule",
    "ScheduleInput",
    "Strategy",
    "parse_catchup",
    "per_schedule",
    "resolve_schedule",
    "schedule_key",
]
