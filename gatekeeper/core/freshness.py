"""Freshness deadlines: when each period must be done by, and which deadlines are breached (pure).

A job with a **freshness** of ``6h`` promises that period P has succeeded (and, for a job
that publishes, is published) by its **deadline**: the end of P's interval in the job's
business zone plus 6 hours of elapsed time (as lateness is added: a DST day's end is its
local midnight, 23 or 25 hours after its start). A deadline is **in force** once it is at or
before ``now``; an in-force deadline whose period is not done is a **breach**, whatever the
range's lateness says (the deadline is the contract, lateness only the schedule).

``judge`` holds the rule (which periods in force breach, and how a breach shows its state);
``assess`` applies it to every period of a window from their states, and ``in_force_end``
counts a window's periods in force on ordinals, so a reader that knows which periods in
force are met (``report/freshness.py``, from the ledger's runs) judges only the others.
Nothing here reads a clock, the ledger or a configuration: ``report/freshness.py`` fetches,
``luigi/freshness.py`` reads ``[gatekeeper.freshness]``.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from gatekeeper.core.periods import Label, Period
from gatekeeper.core.periods.intervals import (
    UTC,
    duration_text,
    parse_aware_datetime,
    parse_lateness,
    parse_timezone,
)

#: The period state that meets a deadline (``report/states.py`` PeriodState.SUCCEEDED).
MET_STATE = "succeeded"
#: The state a breach reports for a period with no attempt that the range's lateness does
#: not yet call due (``not_due`` would read as "nothing to do" next to a passed deadline).
NO_ATTEMPT = "missing"


def parse_freshness(value: object, field: str = "freshness") -> dt.timedelta:
    """A freshness duration (``6h``, ``1d``, ``90m``, ``0``: the syntax of lateness);
    raises InvalidInput naming ``field`` and the value."""
    return parse_lateness(value, field)


def deadline(kind: Period, key: object, timezone: object, within: dt.timedelta) -> dt.datetime:
    """Period ``key``'s deadline: the end of its interval in ``timezone`` plus ``within``,
    in that zone (an aware datetime). Raises InvalidInput for a bad key or zone."""
    zone = parse_timezone(timezone)
    return (kind.closes_at(key, zone) + within).astimezone(zone)


def last_in_force(
    kind: Period, timezone: object, within: dt.timedelta, now: dt.datetime
) -> Label | None:
    """The latest period whose deadline is at or before ``now`` (None when none is)."""
    return kind.last_closed(parse_aware_datetime(now, "now") - within, timezone)


@dataclass(frozen=True, slots=True)
class Breach:
    """Period ``period`` of ``job`` missed its deadline ``due_at`` (in the job's zone) and is
    ``overdue`` at the check; ``state`` is its period state (``missing`` when nothing is
    recorded), ``published`` whether a publishing job published it (None: not a publisher)."""

    job: str
    period: str
    due_at: dt.datetime
    overdue: dt.timedelta
    state: str
    published: bool | None = None

    def describe_state(self) -> str:
        """``failed``, ``missing``, ``succeeded, not published``."""
        unpublished = self.state == MET_STATE and self.published is False
        return f"{self.state}, not published" if unpublished else self.state

    def describe(self) -> str:
        """``DailySalesLoad 2026-11-18 due 2026-11-19T06:00:00-05:00, overdue by 3h: failed``."""
        return (
            f"{self.job} {self.period} due {self.due_at.isoformat()}, overdue by "
            f"{duration_text(self.overdue)}: {self.describe_state()}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "job": self.job,
            "period": self.period,
            "due_at": self.due_at.isoformat(),
            "overdue_seconds": int(self.overdue.total_seconds()),
            "overdue": duration_text(self.overdue),
            "state": self.state,
            "published": self.published,
        }


@dataclass(frozen=True, slots=True)
class Freshness:
    """A job's freshness at ``now``: its deadline rule (``within``, and where it was set:
    ``source``), how many deadlines of the window are in force, and the breaches among them,
    oldest first."""

    job: str
    within: dt.timedelta
    source: str
    now: dt.datetime
    in_force: int
    breaches: tuple[Breach, ...]

    @property
    def met(self) -> bool:
        return not self.breaches

    def describe(self) -> str:
        """``freshness 6h: met`` or ``freshness 6h: breached: 2 periods, oldest 2026-11-17
        overdue by 1d6h``."""
        head = f"freshness {duration_text(self.within)}"
        if self.met:
            plural = "" if self.in_force == 1 else "s"
            return f"{head}: met ({self.in_force} deadline{plural} in force)"
        oldest = self.breaches[0]
        count = len(self.breaches)
        return (
            f"{head}: breached: {count} period{'s' if count != 1 else ''}, oldest "
            f"{oldest.period} overdue by {duration_text(oldest.overdue)}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "job": self.job,
            "within": duration_text(self.within),
            "source": self.source,
            "now": self.now.isoformat(),
            "met": self.met,
            "in_force": self.in_force,
            "breached": len(self.breaches),
            "breaches": [b.to_json() for b in self.breaches],
        }


def assess(
    job: str,
    kind: Period,
    timezone: object,
    within: dt.timedelta,
    states: Sequence[tuple[str, str]],
    now: dt.datetime,
    published: Collection[str] | None = None,
    source: str = "",
) -> Freshness:
    """Judge the deadlines of ``states`` (``(key, period state)`` of a window, oldest first)
    at ``now``: those at or before ``now`` are in force, and each is judged by ``judge``
    (``published``: a publishing job's published keys, None for a job that does not
    publish). Pure; raises InvalidInput for a bad key or zone."""
    zone = parse_timezone(timezone)
    at = parse_aware_datetime(now, "now")
    in_force = [
        (key, state, None if published is None else key in published)
        for key, state in states
        if in_force_at(kind, key, zone, within, at)
    ]
    return judge(job, kind, zone, within, len(in_force), in_force, now, source)


def judge(
    job: str,
    kind: Period,
    timezone: object,
    within: dt.timedelta,
    in_force: int,
    periods: Sequence[tuple[str, str, bool | None]],
    now: dt.datetime,
    source: str = "",
) -> Freshness:
    """The Freshness at ``now`` of a job with ``in_force`` deadlines in force, judging
    ``periods`` (``(key, period state, published)`` of periods in force, oldest first: every
    one that may breach; the others are met): one is met when its state is ``succeeded`` and
    it is published or its job does not publish (``published`` None); a breach shows
    ``not_due`` (no attempt) as ``missing``. Pure; raises InvalidInput for a bad key or zone."""
    zone = parse_timezone(timezone)
    at = parse_aware_datetime(now, "now")  # in UTC: aware arithmetic in one zone is wall time
    breaches = []
    for key, state, out in periods:
        if state == MET_STATE and out is not False:
            continue
        due = deadline(kind, key, zone, within)
        shown = NO_ATTEMPT if state == "not_due" else state
        breaches.append(Breach(job, key, due, at - due.astimezone(UTC), shown, out))
    return Freshness(job, within, source, now, in_force, tuple(breaches))


def in_force_at(
    kind: Period, value: object, timezone: object, within: dt.timedelta, now: dt.datetime
) -> bool:
    """True when period ``value``'s deadline is at or before ``now`` (an aware UTC datetime,
    as ``parse_aware_datetime`` gives it). Raises InvalidInput for a bad key or zone."""
    return deadline(kind, value, timezone, within).astimezone(UTC) <= now


def in_force_end(
    kind: Period,
    timezone: object,
    within: dt.timedelta,
    now: dt.datetime,
    first: int,
    end: int | None = None,
) -> int:
    """The ordinal just past the last period of ``[first, end)`` (``end`` None: open) whose
    deadline is in force at ``now`` (``first`` when none is): deadlines rise with the
    periods, so those in force are the first ones, through ``last_in_force``. Pure;
    arithmetic on ordinals whatever the window."""
    last = last_in_force(kind, timezone, within, now)
    n = first if last is None else max(first, kind.ordinal(last) + 1)
    return n if end is None else min(n, end)


def choose_within(
    job: str, configured: Mapping[str, dt.timedelta], recorded: str | None
) -> tuple[dt.timedelta, str] | None:
    """A job's freshness and where it was set, or None: ``[gatekeeper.freshness]`` by the
    exact job name, else by its task family (the name before ``(``: ``RegionLoad`` for
    ``RegionLoad(region=eu)``), else the task class's ``freshness`` its range recorded in the
    job's profile (``recorded``). luigi.cfg wins: it is the operator's override of the code."""
    family = job.split("(", 1)[0]
    for name in dict.fromkeys((job, family)):
        if name in configured:
            return configured[name], f"[gatekeeper.freshness] {name}"
    if recorded is None:
        return None
    return parse_freshness(recorded, f"{job}.freshness"), "task class"
