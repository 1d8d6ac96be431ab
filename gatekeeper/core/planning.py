"""Range coverage planning: which periods are due, complete or missing, and what to fill next.

Pure: completeness and the clock are parameters; nothing is read or written. The Luigi range
wrappers (``range.py``) fetch completeness from the ledger, call ``plan_range`` and act on it.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, Label, Period
from gatekeeper.core.periods.intervals import parse_aware_datetime
from gatekeeper.core.schedule import STRATEGIES, Schedule, Strategy, per_schedule
from gatekeeper.core.spans import PeriodRuns, PeriodSpan


class CompletedPeriods(Protocol):
    """What planning reads from a ledger (``gatekeeper.Ledger`` is one): the core names the
    read it needs instead of importing the ledger."""

    def complete_runs(
        self, job: str, first: str, last: str, consumer: str | None = None, *, period: object = None
    ) -> PeriodRuns: ...


@dataclass(frozen=True, slots=True)
class RangePlan:
    """What a range of business periods looks like at ``now``, and what to fill next.

    Periods are labels (dates, or aware UTC hour starts), ascending unless said otherwise:

    - ``due``: periods in ``[start, stop)`` whose interval end + lateness <= ``now``;
    - ``gaps``: due, missing and inside the catch-up policy, in the order they will be filled;
    - ``scheduled``: the first ``task_limit`` gaps (all of them when ``task_limit`` is None);
    - ``skipped_by_policy``: due and missing but outside the catch-up policy;
    - ``contiguous_through``: the last due period P such that every period from ``start`` to P
      is complete, or None;
    - ``next_due_at``: when the earliest not-yet-due period in ``[start, stop)`` becomes due
      (UTC), or None if there is none.

    ``schedule`` is the Schedule planned (its fields read here as ``start``, ``stop`` (None
    means open-ended), ``period``, ``lateness``, ``strategy``, ``catchup`` and ``timezone``,
    the zone's name).
    """

    schedule: Schedule
    now: dt.datetime
    task_limit: int | None
    due: Sequence[Label]
    gaps: tuple[Label, ...]
    scheduled: tuple[Label, ...]
    skipped_by_policy: tuple[Label, ...]
    contiguous_through: Label | None
    next_due_at: dt.datetime | None

    @property
    def start(self) -> Label:
        return self.schedule.start

    @property
    def stop(self) -> Label | None:
        return self.schedule.stop

    @property
    def period(self) -> Period:
        return self.schedule.period

    @property
    def lateness(self) -> dt.timedelta:
        return self.schedule.lateness

    @property
    def timezone(self) -> str:
        return self.schedule.timezone.key

    @property
    def strategy(self) -> Strategy:
        return self.schedule.strategy

    @property
    def catchup(self) -> str:
        """The catch-up policy's text: ``all``, ``none`` or ``last:N``."""
        return str(self.schedule.catchup)

    @property
    def total(self) -> int:
        """Number of due periods."""
        return len(self.due)

    @property
    def complete_count(self) -> int:
        """Number of due periods that are complete."""
        return len(self.due) - len(self.gaps) - len(self.skipped_by_policy)

    def key(self, label: Label) -> str:
        """Ledger key of one of this plan's periods."""
        return self.period.key(label)

    def describe(self) -> str:
        """One line: ``filled X/Y, contiguous through P, next due at T, N skipped by policy``."""
        through = (
            "nothing" if self.contiguous_through is None else self.key(self.contiguous_through)
        )
        due_at = "never" if self.next_due_at is None else self.next_due_at.isoformat()
        return (
            f"filled {self.complete_count}/{self.total}, contiguous through {through}, "
            f"next due at {due_at}, {len(self.skipped_by_policy)} skipped by policy"
        )

    def to_json(self) -> dict[str, object]:
        """A JSON-ready dict: periods as ledger keys, instants in ISO 8601, lateness in seconds."""
        return {
            "start": self.key(self.start),
            "stop": None if self.stop is None else self.key(self.stop),
            "now": self.now.isoformat(),
            "lateness_seconds": self.lateness.total_seconds(),
            "period": self.period.name,
            "timezone": self.timezone,
            "strategy": self.strategy.value,
            "catchup": self.catchup,
            "task_limit": self.task_limit,
            "total": self.total,
            "complete_count": self.complete_count,
            "due": [self.key(p) for p in self.due],
            "gaps": [self.key(p) for p in self.gaps],
            "scheduled": [self.key(p) for p in self.scheduled],
            "skipped_by_policy": [self.key(p) for p in self.skipped_by_policy],
            "contiguous_through": (
                None if self.contiguous_through is None else self.key(self.contiguous_through)
            ),
            "next_due_at": None if self.next_due_at is None else self.next_due_at.isoformat(),
            "description": self.describe(),
        }


def plan_range(
    complete: Iterable[object],
    *,
    start: object,
    stop: object = None,
    now: object,
    lateness: object = dt.timedelta(0),
    timezone: object = "UTC",
    period: object = DAILY,
    strategy: object = "contiguous",
    catchup: str = "all",
    task_limit: int | None = 50,
    calendar: object = None,
) -> RangePlan:
    """Plan the filling of ``[start, stop)`` at ``now``; pure, writes nothing.

    ``complete`` is a ``PeriodRuns`` of the period's kind, or any collection of completed
    period labels (dates for daily; aware datetimes for hourly, matched by their UTC instant)
    or their ledger keys; periods outside the range are ignored. ``start``/``stop`` are
    labels or ISO strings; ``stop`` None means no end. A period is due exactly at its
    interval end + ``lateness`` (a timedelta or a string such as ``2h``). ``catchup`` is
    ``all`` (every due period since start), ``none`` (only the latest due period) or
    ``last:N`` (the N latest). ``strategy`` only orders the gaps: ``contiguous`` and
    ``forward`` oldest first, ``reverse`` newest first; running ``contiguous`` one period at a
    time, in order, stopping at the first failure, is the Luigi wrapper's job. ``calendar``
    (a name or a Calendar) counts only its business periods. The window is one ``Schedule``
    (``plan`` takes one made already).

    Returns a RangePlan. Raises InvalidInput naming the field for a bad period, calendar,
    time zone, ``now`` (naive), lateness (negative), start/stop (wrong type for the period;
    stop before start), strategy, catchup (unknown, ``last:0``), task_limit (negative) or
    complete item.
    """
    when = parse_aware_datetime(now, "now")
    schedule = Schedule.parse(
        start=start,
        stop=stop,
        period=period,
        calendar=calendar,
        timezone=timezone,
        lateness=lateness,
        catchup=catchup,
        strategy=strategy,
    )
    return plan(complete, schedule, now=when, task_limit=task_limit)


def plan(
    complete: Iterable[object], schedule: Schedule, *, now: object, task_limit: int | None = 50
) -> RangePlan:
    """``plan_range`` of a Schedule: the plan of its window at ``now``; pure."""
    when = parse_aware_datetime(now, "now")
    limit = _parse_task_limit(task_limit)
    return _planned(complete, schedule, when, limit, _due(schedule, when))


def plans(
    complete: Mapping[str, Iterable[object]],
    schedules: Mapping[str, Schedule],
    *,
    now: object,
    task_limit: int | None = 50,
) -> dict[str, RangePlan]:
    """Job -> ``plan`` of its Schedule at ``now``, ``complete`` holding its complete periods
    (none when it has no entry): which periods are due and when the next one is, found once
    per distinct schedule (``per_schedule``), since a fleet's jobs share a few. Pure; raises
    InvalidInput as ``plan``."""
    when = parse_aware_datetime(now, "now")
    limit = _parse_task_limit(task_limit)
    due = per_schedule(schedules, functools.partial(_due, now=when))
    return {
        job: _planned(complete.get(job, ()), schedule, when, limit, due[job])
        for job, schedule in schedules.items()
    }


#: a Schedule's due periods at an instant: the ordinals ``[lo, hi)``, and when ``hi`` is due
_Due = tuple[int, int, dt.datetime | None]


def _due(schedule: Schedule, now: dt.datetime) -> _Due:
    lo, hi = schedule.due_ordinals(now)
    return lo, hi, schedule.due_at(hi)


def _planned(
    complete: Iterable[object], schedule: Schedule, when: dt.datetime, limit: int | None, at: _Due
) -> RangePlan:
    """The plan of ``schedule`` at ``when`` whose due periods are ``at``."""
    kind = schedule.period
    lo, hi, next_due_at = at
    due = PeriodSpan(kind, lo, hi)
    missing = [n - lo for n in _missing(complete, kind, lo, hi)]  # positions in ``due``
    gaps, skipped = _split_by_policy(due, missing, schedule.catchup.window, schedule.strategy)
    return RangePlan(
        schedule=schedule,
        now=when,
        task_limit=limit,
        due=due,
        gaps=gaps,
        scheduled=gaps[:limit],  # None: every gap
        skipped_by_policy=skipped,
        contiguous_through=_contiguous_through(due, missing[0] if missing else None),
        next_due_at=next_due_at,
    )


#: What a completeness callable gets and returns: the first and last ledger keys of the due
#: window (inclusive) -> the complete periods among them (``PeriodRuns``, or keys or labels,
#: as ``plan_range`` takes them).
Completeness = Callable[[str, str], Iterable[object]]


def plan_from_ledger(
    ledger: CompletedPeriods,
    job: str,
    *,
    now: object,
    schedule: Schedule,
    consumer: str | None = None,
    complete: Completeness | None = None,
    task_limit: int | None = 50,
) -> RangePlan:
    """The one fetch-then-plan step: which due periods of ``job``'s ``schedule`` are complete
    at ``now``, then ``plan`` (``Schedule.parse`` makes the Schedule from text).

    Completeness is ``complete(first_key, last_key)`` over the due window when given (a range
    passes its task class's ``bulk_complete``), else the ledger's: latest attempt succeeded
    and, with ``consumer``, published by it (one query over the runs the ledger keeps).
    Nothing is fetched when no period is due. Reads only; raises InvalidInput and LedgerError.
    """
    when = parse_aware_datetime(now, "now")
    span = schedule.due_span(when)
    fetch = complete or functools.partial(
        _ledger_completeness,
        ledger,
        job,
        consumer,
        schedule.period,  # pragma: no mutate  (runs of the base kind: the same plan, slower)
    )
    done = () if span is None else fetch(*span)
    return plan(done, schedule, now=when, task_limit=task_limit)


def _ledger_completeness(
    ledger: CompletedPeriods, job: str, consumer: str | None, kind: Period, first: str, last: str
) -> PeriodRuns:
    # runs of the schedule's kind read at once; runs of its base kind would give the same
    # plan (``_missing`` counts them on the calendar), slower: its mutants are equivalent
    return ledger.complete_runs(job, first, last, consumer, period=kind)  # pragma: no mutate


def due_span(
    start: object,
    stop: object = None,
    *,
    now: object,
    lateness: object = dt.timedelta(0),
    timezone: object = "UTC",
    period: object = DAILY,
    calendar: object = None,
) -> tuple[str, str] | None:
    """The ledger keys of the first and last due periods of ``[start, stop)`` at ``now``
    (inclusive), or None when none is due (``Schedule.due_span``). Pure; raises InvalidInput
    as ``plan_range``."""
    when = parse_aware_datetime(now, "now")
    schedule = Schedule.parse(
        start=start,
        stop=stop,
        period=period,
        calendar=calendar,
        timezone=timezone,
        lateness=lateness,
    )
    return schedule.due_span(when)


def _missing(complete: Iterable[object], kind: Period, lo: int, hi: int) -> Iterable[int]:
    """The ordinals of ``[lo, hi)`` that ``complete`` (PeriodRuns, or labels or keys) lacks."""
    if isinstance(complete, PeriodRuns):
        runs: PeriodRuns = complete
        if runs.period is kind.base:
            runs = runs.on(kind)  # the ledger keeps runs of every period
        if runs.period is not kind:
            raise InvalidInput("complete", runs, f"runs of {runs.period} periods")
        return runs.missing(lo, hi)
    done = kind.ordinals(complete)  # InvalidInput naming "complete", its default field
    return (n for n in range(lo, hi) if n not in done)


def _parse_task_limit(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput("task_limit", value, "expected a whole number or None")
    if value < 0:
        raise InvalidInput("task_limit", value, "negative")
    return value


def _split_by_policy(
    due: Sequence[Label], missing: list[int], window: int | None, order: Strategy
) -> tuple[tuple[Label, ...], tuple[Label, ...]]:
    """Split the missing due periods (ascending positions in ``due``) into the gaps, in fill
    order, and those the catch-up window (the latest ``window`` due periods) skips."""
    cut = 0 if window is None else max(0, len(due) - window)
    skipped = tuple(due[i] for i in missing if i < cut)
    eligible = [due[i] for i in missing[len(skipped) :]]
    return (tuple(reversed(eligible)) if order is Strategy.REVERSE else tuple(eligible)), skipped


def _contiguous_through(due: Sequence[Label], first_missing: int | None) -> Label | None:
    """The due period just before the first missing one (the last due one if none is missing)."""
    if first_missing is None:
        return due[-1] if due else None
    return due[first_missing - 1] if first_missing else None


__all__ = [
    "STRATEGIES",
    "CompletedPeriods",
    "Completeness",
    "RangePlan",
    "due_span",
    "plan",
    "plan_from_ledger",
    "plan_range",
    "plans",
]
