"""What ``gatekeeper serve`` shows, computed from the ledger (reads only, no web framework).

A job's window is the one ``gatekeeper status`` judges (``report/windows.py`` job_window: its
range's profile, else its recorded periods, then ``[gatekeeper]``), started no earlier than
the first period that ends after ``now - window`` (``--window``, default 90 days): the grid
and ``/metrics`` cost the window, not the ledger's ten years.

- ``job_views(ledger, window, now)``: every job of the ledger (``ledger/names.py``), each
  with its plan, the state of every period of its window and its running attempts;
- ``job_periods(ledger, job, ...)``: ``gatekeeper status JOB --json`` for one job;
(``detail.py``: ``period_detail``, serve's period panel.)
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gatekeeper.core.display import printable
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.freshness import Freshness
from gatekeeper.core.names import describe_unknown, suggest
from gatekeeper.core.periods import Label, Period
from gatekeeper.core.periods.intervals import Interval, parse_lateness
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.schedule import Schedule, ScheduleInput, per_schedule
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.luigi import config
from gatekeeper.luigi.freshness import Rules, freshness_rules
from gatekeeper.report.fleet import job_windows, summaries
from gatekeeper.report.freshness import freshnesses
from gatekeeper.report.segments import window_span
from gatekeeper.report.stale import stale_count, stale_periods
from gatekeeper.report.states import PeriodState, base_bounds, window_bounds, window_states
from gatekeeper.report.windows import JobWindow, job_window


class UnknownJob(InvalidInput):
    """A job the ledger has never seen (HTTP 404)."""


@dataclass(frozen=True, slots=True)
class JobView:
    """One job of the grid: its plan over its served ``window``, how many periods of the
    window are in each state (``report/summary.py``: no object per period), and its running
    attempts over the whole ledger (``running``: live lease; ``expired``: lease expired or
    never set). Its strip of cells is judged when asked for (``job_cells``)."""

    job: str
    plan: RangePlan
    counts: Mapping[PeriodState, int]
    window: JobWindow
    running: int = 0
    expired: int = 0
    freshness: Freshness | None = None  # its deadlines over the window, if it has any
    stale: int | None = None  # its stale periods over the window (None: it never published)

    @property
    def cell_count(self) -> int:
        """How many periods its strip shows (non-business ones included)."""
        return sum(self.counts.values())

    @property
    def last_period(self) -> str | None:
        """The key of the last period of its strip (of the kind's base on a business
        calendar, whose other days the strip shows too); None for an empty window."""
        plan = self.plan
        kind, base = plan.period, plan.period.base
        first, end = window_bounds(plan, self.window.through)
        last = kind.at(end - 1) if end > first else None
        if base is kind:
            return None if last is None else plan.key(last)
        base_first, base_end = base_bounds(plan, last)
        return base.key(base.at(base_end - 1)) if base_end > base_first else None

    @property
    def through_end(self) -> dt.datetime:
        """The instant through which the job is complete: the end of its contiguous-through
        period, else (nothing contiguous) the start of its window's first period."""
        plan = self.plan
        if plan.contiguous_through is None:
            return plan.period.interval(plan.start, plan.timezone).start
        return _interval(plan.period.base, plan.contiguous_through, plan.timezone).end

    @property
    def lag_seconds(self) -> float:
        """``now`` minus the due time (the end of its interval plus the lateness) of the first
        due business period of the window not filled (a gap: missing, failed, running, ...
        and inside the catch-up policy); 0 when none is. A day off the job's calendar, a
        period not yet due or skipped by policy never lags."""
        plan = self.plan
        if not plan.gaps:
            return 0.0
        first = min(plan.gaps, key=plan.period.rank)
        due = _interval(plan.period.base, first, plan.timezone).end + plan.schedule.lateness
        return max(0.0, (plan.now - due).total_seconds())

    def summary(self) -> dict[str, Any]:
        """The ``/api/jobs`` entry: kind, calendar, window, counts per state,
        contiguous-through, lag, running attempts and expired leases."""
        plan = self.plan
        through = plan.contiguous_through
        return {
            "job": self.job,
            "period": plan.period.name,
            "calendar": plan.schedule.calendar,
            "timezone": plan.timezone,
            "start": plan.key(plan.start),
            "stop": None if plan.stop is None else plan.key(plan.stop),
            "now": plan.now.isoformat(),
            "counts": {state.value: n for state, n in self.counts.items()},
            "contiguous_through": None if through is None else plan.key(through),
            "complete_through": self.through_end.isoformat(),
            "lag_seconds": self.lag_seconds,
            "running_attempts": self.running,
            "expired_leases": self.expired,
            "stale_publications": self.stale,
            "next_due_at": None if plan.next_due_at is None else plan.next_due_at.isoformat(),
            "freshness": None
            if self.freshness is None
            else {**self.freshness.to_json(), "summary": self.freshness.describe()},
        }


@functools.lru_cache(maxsize=4096)
def _interval(base: Period, label: Label, zone: str) -> Interval:
    """``base.interval(label, zone)``, remembered: the views of a fleet ask it of the same
    few periods (the end of each one's contiguous-through period and of its first gap) for
    thousands of jobs, and a period's interval is its base kind's, whatever the calendar.
    Pure; raises InvalidInput as ``interval`` (not remembered)."""
    return base.interval(label, zone)


def window_of(
    ledger: LedgerReads, job: str, start: str | None = None, stop: str | None = None
) -> JobWindow:
    """``job``'s window as ``gatekeeper status`` resolves it (``start``/``stop`` as its
    flags; ``report/windows.py job_window``); reads the ledger."""
    given = ScheduleInput(start=start, stop=stop)
    return job_window(ledger, job, given, config.schedule_settings())


#: The longest window served: ten years (a longer one is refused, not rendered).
MAX_WINDOW = dt.timedelta(days=3660)


def parse_window(value: Any) -> dt.timedelta:
    """``--window`` or ``?window=``: a positive duration such as ``90d``, at most
    MAX_WINDOW; raises InvalidInput naming ``window``."""
    if isinstance(value, str) and value.strip().startswith("-"):
        raise InvalidInput("window", value, "negative; expected a positive duration such as 90d")
    window = parse_lateness(value, "window")
    if window <= dt.timedelta(0):
        raise InvalidInput("window", value, "expected a positive duration such as 90d")
    if window > MAX_WINDOW:
        raise InvalidInput("window", value, f"longer than {MAX_WINDOW.days}d")
    return window


def served(found: JobWindow, window: dt.timedelta, now: dt.datetime) -> JobWindow:
    """``found`` started at the later of its own start and the first period ending after
    ``now - window``, but not after its stop (a range that ended before the window: no
    period shown)."""
    return _on(found, served_schedule(found.schedule, window, now))


def _on(found: JobWindow, schedule: Schedule) -> JobWindow:
    """``found`` on ``schedule`` (itself when that is its own)."""
    return found if schedule is found.schedule else dataclasses.replace(found, schedule=schedule)


def served_schedule(schedule: Schedule, window: dt.timedelta, now: dt.datetime) -> Schedule:
    """``schedule`` started as ``served`` starts a job's window (``schedule`` itself when
    its own start is kept). Pure."""
    kind = schedule.period
    closed = kind.last_closed(now - window, schedule.timezone)
    if closed is None:
        return schedule
    later = kind.ordinal(closed) + 1
    if later <= kind.rank(schedule.start):
        return schedule  # its own start is later (and need not be a business period)
    if schedule.stop is not None and later >= kind.rank(schedule.stop):
        start = schedule.stop
    else:
        start = kind.at(later)
    return dataclasses.replace(schedule, start=start)


def job_views(
    ledger: LedgerReads, window: dt.timedelta, now: dt.datetime
) -> tuple[list[JobView], list[dict[str, str]]]:
    """Every job of the ledger, sorted by name, and the jobs whose window cannot be judged
    (``{"job", "error"}``: a consumer with a reservation only): their windows and counts
    read for all at once (``report/fleet.py``), and the freshness of each job with a
    deadline over its served window. Reads only."""
    running = ledger.running_attempts(now)
    names = sorted(ledger.known_names())
    rules: Rules = freshness_rules(ledger, names)  # named jobs: a stray luigi.cfg key is check's
    found: dict[str, JobWindow] = {}
    skipped = []
    for job, each in job_windows(ledger, names, settings=config.schedule_settings()).items():
        if isinstance(each, InvalidInput):
            skipped.append({"job": job, "error": each.reason})
        else:
            found[job] = each
    schedules = {job: each.schedule for job, each in found.items()}
    starts = per_schedule(schedules, lambda schedule: served_schedule(schedule, window, now))
    shown = {job: _on(each, starts[job]) for job, each in found.items()}
    fresh = freshnesses(ledger, shown, rules, now)  # over the served windows, not ten years
    made = summaries(ledger, shown, now)
    stale = stale_periods(
        ledger, {j: window_span(p, shown[j].through) for j, (p, _) in made.items()}
    )
    views = []
    for job, (plan, counted) in made.items():
        live, expired = running.get(job, (0, 0))
        views.append(
            JobView(
                job,
                plan,
                counted,
                shown[job],
                live,
                expired,
                fresh.get(job),
                stale_count(stale, job),
            )
        )
    return views, skipped


def job_view(ledger: LedgerReads, job: str, window: dt.timedelta, now: dt.datetime) -> JobView:
    """One job of the grid (``job_views`` of one job, without its running attempts and
    freshness). Raises InvalidInput for a job whose window cannot be judged."""
    shown = served(window_of(ledger, job), window, now)
    plan, counted = summaries(ledger, {job: shown}, now)[job]
    return JobView(job, plan, counted, shown)


def job_cells(ledger: LedgerReads, view: JobView) -> list[list[str]]:
    """``[[period, state], ...]``: ``view``'s strip, oldest first, judged period by period
    at its plan's ``now`` over its window (a few queries)."""
    return job_strip(ledger, view)["cells"]


def job_strip(ledger: LedgerReads, view: JobView) -> dict[str, list[Any]]:
    """``{"cells": [[period, state], ...], "stale_periods": [period, ...]}``: ``view``'s
    strip (``job_cells``) and the periods of it whose publication is stale, oldest first."""
    plan = view.plan
    _, states = window_states(ledger, view.job, now=plan.now, task_limit=None, window=view.window)
    return {
        "cells": [[s.period, s.state.value] for s in states],
        "stale_periods": [s.period for s in states if s.stale],
    }


#: The most jobs one ``/api/jobs?job=...`` names (a page asks for the rows it shows).
MAX_NAMED = 500


def named_views(
    ledger: LedgerReads,
    views: Sequence[JobView],
    skipped: Sequence[dict[str, str]],
    names: Sequence[str],
) -> list[JobView]:
    """The views of ``names`` (each as the API shows it: ``printable``), in ``views``'
    order; a skipped job has none. Raises InvalidInput for more than MAX_NAMED names,
    UnknownJob for a name the ledger does not know."""
    if len(names) > MAX_NAMED:
        raise InvalidInput("job", f"{len(names)} names", f"more than {MAX_NAMED} in one request")
    wanted = set(names)
    chosen = [v for v in views if printable(v.job) in wanted]
    missing = wanted - {printable(v.job) for v in chosen} - {printable(s["job"]) for s in skipped}
    for name in sorted(missing):
        check_job(ledger, name)
    return chosen


def check_job(ledger: LedgerReads, job: str) -> str:
    """``job``, checked: a valid name the ledger knows; raises InvalidInput or UnknownJob."""
    job = check_name(job, "job")
    if ledger.unknown_names([job]):
        near = suggest([job], ledger.known_names())
        raise UnknownJob("job", job, describe_unknown("job", near) + " in the ledger")
    return job


def job_periods(
    ledger: LedgerReads,
    job: str,
    window: dt.timedelta,
    now: dt.datetime,
    start: str | None = None,
    stop: str | None = None,
) -> dict[str, Any]:
    """``gatekeeper status JOB --start START --stop STOP --json`` at ``now``; without
    ``start``, the serve window's. Reads only; raises InvalidInput / UnknownJob."""
    job = check_job(ledger, job)
    shown = window_of(ledger, job, start, stop)
    if start is None:
        shown = served(shown, window, now)
    bounded(shown, now, start, stop)
    plan, states = window_states(ledger, job, now=now, task_limit=50, window=shown)
    return {"job": job, **plan.to_json(), "periods": [s.to_json() for s in states]}


def bounded(found: JobWindow, now: dt.datetime, start: str | None, stop: str | None) -> None:
    """Refuse a range a request names (``start``, ``stop``; the window's own bounds where
    not given) whose periods span more than MAX_WINDOW, from its start to its stop (``now``
    without one): the rule of ``--window``. InvalidInput names ``start`` when it alone
    makes the range too long, else ``stop``."""
    schedule = found.schedule
    kind, zone = schedule.period, schedule.timezone
    first = kind.interval(schedule.start, zone).start
    try:
        end = now if schedule.stop is None else kind.interval(schedule.stop, zone).start
    except InvalidInput:  # beyond the datetime range: too long whatever the start
        end = dt.datetime.max.replace(tzinfo=dt.timezone.utc)
    if end - first <= MAX_WINDOW:
        return
    early = min(end, now) - first > MAX_WINDOW  # too long even if it stopped by now
    field, value = ("start", start) if start and (early or not stop) else ("stop", stop)
    shown = "now" if schedule.stop is None else kind.key(schedule.stop)
    raise InvalidInput(
        field,
        value,
        f"{kind.key(schedule.start)} .. {shown} is longer than {MAX_WINDOW.days}d (the "
        "longest range served)",
    )
