"""Many jobs' windows and counts at once, in a few set-based reads whatever their number.

- ``job_windows(ledger, jobs, ...)``: each job's window as ``job_window`` resolves it, with
  the profiles and spans of every job read in one statement per batch (``ledger.fleet``),
  resolved once for the jobs whose ranges recorded the same profile over the same span;
- ``window_summary(ledger, job, now=..., window=...)``: one job's, the fetch-plan-count
  step as ``window_states`` is the fetch-plan-judge one;
- ``summaries(ledger, windows, now)``: each job's RangePlan (``planning.plans``: which
  periods are due found once per distinct schedule) and its counts per state
  (``summary.window_counts``), reading the runs of every job's complete periods in one
  statement per batch, then the latest attempts of every job's incomplete periods (and of
  its periods recorded before they are due) likewise; what blocks a job's unattempted due
  periods is read per job, for the jobs that have such a period and requirements.

What ``/metrics``, ``/api/jobs`` and serve's summaries cost in proportion to the jobs and to
what is not complete, not to the cells of their windows.
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Hashable, Iterable, Mapping
from dataclasses import fields
from typing import TYPE_CHECKING, Any, cast

from gatekeeper.core.causes import Cause, JobProfile
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.planning import RangePlan, plans
from gatekeeper.core.records import Attempt
from gatekeeper.core.schedule import ScheduleInput, per_schedule
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.profiles import blocked_periods
from gatekeeper.report.states import window_bounds
from gatekeeper.report.summary import Counts, window_counts
from gatekeeper.report.windows import NOTHING, JobWindow, job_window

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads

#: past this many periods recorded after a job's due ones, they are read as a range
TAIL_PAIRS = 64


class _Known:
    """A ledger's reads with every job's profile and span read beforehand (``job_window``
    asks each once)."""

    def __init__(self, ledger: LedgerReads, jobs: list[str]):
        self._ledger = ledger
        self._profiles = ledger.fleet.profiles(jobs)
        self._spans = ledger.fleet.spans(jobs)

    def job_profile(self, job: str) -> JobProfile | None:
        return self._profiles.get(job)

    def period_span(self, job: str) -> tuple[str, str] | None:
        return self._spans.get(job)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._ledger, name)


def job_windows(
    ledger: LedgerReads,
    jobs: Iterable[str],
    given: ScheduleInput = NOTHING,
    settings: ScheduleInput = NOTHING,
) -> dict[str, JobWindow | InvalidInput]:
    """Job -> its window (``job_window(ledger, job, given, settings)``), or the InvalidInput
    that says why it has none; the profiles and spans of all read at once, and one window
    resolved for the jobs of one profile (``_profile_key``). Reads only."""
    names = list(jobs)
    known = _Known(ledger, names)
    reads = cast("LedgerReads", known)
    shared: dict[Hashable, JobWindow] = {}
    found: dict[str, JobWindow | InvalidInput] = {}
    for job in names:
        profile = _profile_key(known.job_profile(job), known.period_span(job))
        if profile in shared:
            found[job] = shared[profile]
            continue
        try:
            window = job_window(reads, job, given, settings)
        except InvalidInput as exc:
            found[job] = exc
            continue
        found[job] = window
        if profile is not None:
            shared[profile] = window
    return found


def _profile_key(own: JobProfile | None, span: tuple[str, str] | None) -> Hashable | None:
    """A key two jobs share exactly when ``job_window`` gives them the same window (with the
    same ``given`` and ``settings``): a profile a range of its own planned (its window and
    requirements its own, nothing read of other jobs), the same but for the job's name, its
    period kind the same object (a Period equals its name whatever its calendar), and the
    same recorded span. None for a job whose window is its own to resolve."""
    if own is None or own.start is None:
        return None
    return id(own.period), span, *(getattr(own, name) for name in _SHARED_FIELDS)


#: the fields of a profile two jobs may share (all but the job's name)
_SHARED_FIELDS = tuple(f.name for f in fields(JobProfile) if f.name != "job")


def window_summary(
    ledger: LedgerReads, job: str, *, now: dt.datetime, window: JobWindow
) -> tuple[RangePlan, Counts]:
    """``job``'s RangePlan at ``now`` over ``window`` and how many periods of its window are
    in each state (``window_counts``): the counts of ``window_states``, reading the runs of
    its complete periods and the attempts of the others only (``summaries`` of one job). A
    few queries; reads only."""
    job = check_name(job, "job")
    return summaries(ledger, {job: window}, now)[job]


def summaries(
    ledger: LedgerReads, windows: Mapping[str, JobWindow], now: dt.datetime
) -> dict[str, tuple[RangePlan, Counts]]:
    """Job -> its RangePlan at ``now`` over its window (every gap scheduled) and how many
    periods of the window are in each state (``window_counts``): see the module. Reads only;
    raises InvalidInput for a bad window and LedgerError when the database fails."""
    made = fleet_plans(ledger, windows, now)
    pairs: list[tuple[str, str]] = []
    ranged: dict[str, dict[str, Attempt]] = {}
    for job, found in made.items():
        pairs.extend((job, found.key(label)) for label in _incomplete(found))
        tail = _tail(found, windows[job].through)
        if tail is not None and tail[1] - tail[0] > TAIL_PAIRS:
            kind = found.period
            first, last = found.key(kind.at(tail[0])), found.key(kind.at(tail[1] - 1))
            ranged[job] = ledger.latest_between(job, first, last)
        elif tail is not None:
            pairs.extend((job, found.key(found.period.at(n))) for n in range(*tail))
    latest: dict[str, dict[str, Attempt]] = defaultdict(dict)
    for (job, key), attempt in ledger.fleet.latest(pairs).items():
        latest[job][key] = attempt
    out = {}
    for job, found in made.items():
        seen = {**latest.get(job, {}), **ranged.get(job, {})}
        window = windows[job]
        causes = blocking(ledger, found, seen, window)
        out[job] = (found, window_counts(found, seen, causes, window.through))
    return out


def fleet_plans(
    ledger: LedgerReads,
    windows: Mapping[str, JobWindow],
    now: dt.datetime,
    task_limit: int | None = None,
) -> dict[str, RangePlan]:
    """Job -> its RangePlan at ``now`` over its window (the first ``task_limit`` gaps
    scheduled; None: every gap), planned from the runs of every job's complete periods, read
    in one statement per batch. Reads only."""
    schedules = {job: w.schedule for job, w in windows.items()}
    spans = per_schedule(schedules, lambda schedule: schedule.due_span(now))
    runs = ledger.fleet.complete_runs(
        [(job, *span, schedules[job].period) for job, span in spans.items() if span]
    )
    return plans(runs, schedules, now=now, task_limit=task_limit)


def blocking(
    ledger: LedgerReads, found: RangePlan, seen: Mapping[str, Attempt], window: JobWindow
) -> dict[str, Cause]:
    """Key -> what blocks it, for ``found``'s gaps (not those its policy skips) that have no
    attempt in ``seen``: a read per required job, none when there is no such gap. Reads only."""
    skipped = set(found.skipped_by_policy)
    unattempted = [found.key(g) for g in found.gaps if g not in skipped]
    unattempted = [k for k in unattempted if k not in seen]
    return blocked_periods(ledger, found.period, unattempted, window.requires, found.now, held=True)


def _incomplete(found: RangePlan) -> tuple[Any, ...]:
    """The due periods of ``found`` that are not complete: its gaps and those its catch-up
    policy skips."""
    return (*found.gaps, *found.skipped_by_policy)


def _tail(found: RangePlan, through: str | None) -> tuple[int, int] | None:
    """The ordinals ``[lo, hi)`` of the window's periods after the due ones, through the
    job's last recorded period ``through`` when known (the only ones that can hold an
    attempt), or None when there are none."""
    kind = found.period
    first, end = window_bounds(found, through)
    lo = kind.ordinal(found.due[-1]) + 1 if found.due else first
    hi = end
    if through is not None and kind.owns_key(through):
        hi = min(end, kind.rank(through) + kind.is_business(through))
    return (lo, hi) if hi > lo else None
