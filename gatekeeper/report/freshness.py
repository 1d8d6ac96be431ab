"""Jobs' freshness over a ledger: the one fetch-then-judge step ``gatekeeper check``,
``status``, the report and the web view share (reads only), in proportion to the jobs and
to the periods that breach, not to the periods of their windows.

``freshnesses(ledger, windows, rules, now)`` judges the deadlines of each job's window
(``report/windows.py job_window`` resolves it from the job's profile; ``report/fleet.py
job_windows`` many at once); the window is extended, when it is open-ended, through the
latest period whose deadline is in force, so a period past its deadline that the range's
lateness does not yet call due is judged too. The periods in force are the window's first
ones, counted on ordinals (``core/freshness.py in_force_end``); the ones met are read as the
runs the ledger keeps (complete periods, or complete and published ones for a job that has
ever published), in one statement per batch of jobs; only the others are looked at one by
one (their latest attempts, whether they are published, what blocks them), and
``core/freshness.py judge`` judges them. ``job_freshness`` is one job's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gatekeeper.core.causes import Requirement
from gatekeeper.core.freshness import Breach, Freshness, in_force_end, judge, last_in_force
from gatekeeper.core.periods import Label
from gatekeeper.core.periods.intervals import parse_aware_datetime
from gatekeeper.core.planning import RangePlan, plans
from gatekeeper.core.spans import PeriodRuns
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.profiles import blocked_periods
from gatekeeper.report.states import PeriodState, attempt_state, window_bounds
from gatekeeper.report.windows import JobWindow

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads

#: a job's deadline: how long after each period's end, and where it was set
Rule = tuple[dt.timedelta, str]


def job_freshness(
    ledger: LedgerReads,
    job: str,
    *,
    within: dt.timedelta,
    now: dt.datetime,
    window: JobWindow,
    source: str = "",
) -> Freshness:
    """``job``'s Freshness at ``now`` for a deadline of ``within`` after each period's end
    (``source``: where it was set), over ``window`` (``report/windows.py job_window``, or a
    JobWindow of a Schedule, as ``window_states`` takes it). A job that has ever published
    must have each period published as well. A few queries (``freshnesses`` of one job);
    reads only; raises InvalidInput for a bad window and LedgerError when the database fails.
    """
    job = check_name(job, "job")
    return freshnesses(ledger, {job: window}, {job: (within, source)}, now)[job]


def freshness_breaches(
    ledger: LedgerReads, job: str, *, within: dt.timedelta, now: dt.datetime, window: JobWindow
) -> list[Breach]:
    """The breached deadlines of ``job`` at ``now`` over ``window``, oldest first
    (``job_freshness``)."""
    return list(job_freshness(ledger, job, within=within, now=now, window=window).breaches)


@dataclass(frozen=True, slots=True)
class _Deadlines:
    """A job's deadlines in force: the ordinals ``[first, end)`` of its window's periods in
    force, its plan at the check, and its complete periods (``done``) through its last due
    or in-force period."""

    plan: RangePlan
    done: PeriodRuns
    first: int
    end: int
    requires: tuple[Requirement, ...] = ()
    skipped: frozenset[Label] = frozenset()

    def key(self, n: int) -> str:
        kind = self.plan.period
        return kind.key(kind.at(n))


def freshnesses(
    ledger: LedgerReads,
    windows: Mapping[str, JobWindow],
    rules: Mapping[str, Rule],
    now: dt.datetime,
) -> dict[str, Freshness]:
    """Job -> its Freshness at ``now`` under its rule (``rules``; a job of ``windows``
    without one is left out) over its window (see the module). A few statements per batch
    of jobs, and one per required job of each job with an unattempted period in breach;
    reads only; raises InvalidInput for a bad window and LedgerError when the database
    fails."""
    at = parse_aware_datetime(now, "now")
    chosen = {job: window for job, window in windows.items() if job in rules}
    found = _deadlines(ledger, chosen, rules, at)
    judged = {job: d for job, d in found.items() if d.end > d.first}
    publishers = ledger.fleet.publishers(judged)
    periods = _periods(ledger, judged, _unmet(ledger, judged, publishers), publishers, at)
    out = {}
    for job, d in found.items():
        within, source = rules[job]
        zone = d.plan.schedule.timezone.key
        shown = periods.get(job, [])
        out[job] = judge(job, d.plan.period, zone, within, d.end - d.first, shown, now, source)
    return out


def _deadlines(
    ledger: LedgerReads,
    windows: Mapping[str, JobWindow],
    rules: Mapping[str, Rule],
    at: dt.datetime,
) -> dict[str, _Deadlines]:
    """Each job's deadlines in force, its plan and its complete periods, read for all jobs
    at once through the later of its last due period and its last period in force."""
    bounds = {}
    for job, window in windows.items():
        schedule = window.schedule
        kind = schedule.period
        first = kind.rank(schedule.start)
        stop = None if schedule.stop is None else kind.rank(schedule.stop)
        end = in_force_end(kind, schedule.timezone, rules[job][0], at, first, stop)
        bounds[job] = (first, end, max(schedule.due_ordinals(at)[1], end))
    asked = []
    for job, (first, _, upto) in bounds.items():
        kind = windows[job].schedule.period
        if upto > first:
            asked.append((job, kind.key(kind.at(first)), kind.key(kind.at(upto - 1)), kind))
    runs = ledger.fleet.complete_runs(asked)
    planned = plans(runs, {job: w.schedule for job, w in windows.items()}, now=at, task_limit=None)
    found = {}
    for job, (first, end, _) in bounds.items():
        window = windows[job]
        done = runs.get(job, PeriodRuns(window.schedule.period, ()))
        made = planned[job]
        last = window_bounds(made, _through(window, rules[job][0], at))[1]
        skipped = frozenset(made.skipped_by_policy)
        found[job] = _Deadlines(made, done, first, min(end, last), window.requires, skipped)
    return found


def _through(window: JobWindow, within: dt.timedelta, at: dt.datetime) -> str | None:
    """The last period an open window runs on through: the job's last recorded one, or the
    latest one whose deadline is in force when that is later."""
    schedule = window.schedule
    kind, through = schedule.period, window.through
    last = last_in_force(kind, schedule.timezone.key, within, at)
    if schedule.stop is None and last is not None:
        if through is None or kind.rank(through) < kind.rank(last):
            through = kind.key(last)
    return through


def _unmet(
    ledger: LedgerReads, found: Mapping[str, _Deadlines], publishers: set[str]
) -> dict[str, list[int]]:
    """Job -> the ordinals of its periods in force that are not complete (for a job that
    has published, not complete and published), ascending."""
    met: dict[str, PeriodRuns] = {job: d.done for job, d in found.items()}
    met.update(
        ledger.fleet.complete_runs(
            [
                (job, d.key(d.first), d.key(d.end - 1), d.plan.period)
                for job, d in found.items()
                if job in publishers
            ],
            published=True,
        )
    )
    return {job: list(met[job].missing(d.first, d.end)) for job, d in found.items()}


def _periods(
    ledger: LedgerReads,
    found: Mapping[str, _Deadlines],
    unmet: Mapping[str, list[int]],
    publishers: set[str],
    at: dt.datetime,
) -> dict[str, list[tuple[str, str, bool | None]]]:
    """Job -> ``(key, period state, published)`` of each of its ``unmet`` periods, oldest
    first, as ``report/states.py period_states`` judges them (published: None for a job
    that does not publish): the latest attempts of those that are not complete, and
    whether they are published, read for all jobs at once."""
    asked = [
        (job, d.key(n))
        for job, d in found.items()
        for n in unmet[job]
        if job not in publishers or d.plan.period.at(n) not in d.done
    ]
    latest = ledger.fleet.latest(asked)
    published = ledger.fleet.published(pair for pair in asked if pair[0] in publishers)
    out = {}
    for job, d in found.items():
        publishes = job in publishers
        states: dict[str, tuple[PeriodState, bool | None]] = {}
        for n in unmet[job]:
            key = d.key(n)
            attempt = latest.get((job, key))
            if publishes and d.plan.period.at(n) in d.done:
                states[key] = (PeriodState.SUCCEEDED, False)  # complete, not published
                continue
            state = _unattempted(d, n) if attempt is None else attempt_state(attempt, at)
            states[key] = (state, (job, key) in published if publishes else None)
        missing = [key for key, (state, _) in states.items() if state is PeriodState.MISSING]
        causes = blocked_periods(ledger, d.plan.period, missing, d.requires, at, held=True)
        out[job] = [
            (key, PeriodState.BLOCKED.value if key in causes else state.value, out_)
            for key, (state, out_) in states.items()
        ]
    return out


def _unattempted(d: _Deadlines, n: int) -> PeriodState:
    """The state of period ``n`` of ``d``'s window with no attempt (``period_states``):
    ``not_due`` after the due ones, ``skipped`` when the catch-up policy leaves it out,
    else ``missing`` (``blocked`` when a requirement blocks it: ``_periods`` asks)."""
    plan_of = d.plan
    due = plan_of.due
    lo = plan_of.period.ordinal(due[0]) if due else d.first
    if not lo <= n < lo + len(due):
        return PeriodState.NOT_DUE
    if plan_of.period.at(n) in d.skipped:
        return PeriodState.SKIPPED
    return PeriodState.MISSING
