"""Every period of a window in one state: what ``gatekeeper status`` and the report show (pure).

``period_states(plan, facts)`` judges each period of a RangePlan's window from what the
ledger holds of it (``WindowFacts``: the latest attempt of each period and, for a publishing
job, its newest publication and whether it is stale; what blocks the missing ones). The
clock is the plan's ``now``; nothing is read or written there. ``window_states(ledger, job,
...)`` is the one fetch-plan-judge step over a ledger (reads only), shared by ``gatekeeper
status`` and the HTML report. The periods of a window are ``core/window.py``'s
(``plan_window``, ``with_non_business``: ``gatekeeper plan`` shows the same ones).

States, in the order a period moves through them:

- ``not_due``: its interval end + lateness is after ``now``;
- ``skipped``: due, missing, and left out by the catch-up policy;
- ``blocked``: due, no attempt recorded, and a required upstream (the job's recorded profile,
  ``core/causes.py``) is failed, abandoned, missing or held by another run's live lease for
  it (for a week, month or quarter, any of the days it requires): ``cause`` names which;
- ``missing``: due and no attempt recorded (and nothing known blocks it);
- ``running``: the latest attempt is running with a live lease;
- ``abandoned``: the latest attempt was abandoned, or is still recorded running but its lease
  expired (the next attempt will record it abandoned);
- ``failed`` / ``succeeded``: the latest attempt's terminal state;
- ``non_business``: not a business period of the job's calendar (a Saturday of a weekday
  job, a holiday): shown in its place, never due, never missing, never counted as due.

Stale is not a state but a mark: a period whose newest publication's evidence names an
upstream attempt a newer succeeded attempt superseded carries the Staleness entries
(``stale``: which upstream pair changed, ``report/stale.py``), whatever its state.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from gatekeeper.core.causes import Cause
from gatekeeper.core.periods import Label
from gatekeeper.core.planning import RangePlan, plan_from_ledger
from gatekeeper.core.records import Attempt, Publication, RunState, Staleness
from gatekeeper.core.validation import check_name
from gatekeeper.core.window import base_bounds as base_bounds
from gatekeeper.core.window import plan_window, with_non_business
from gatekeeper.core.window import window_bounds as window_bounds
from gatekeeper.ledger.profiles import blocked_periods
from gatekeeper.report.stale import stale_periods
from gatekeeper.report.windows import JobWindow

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads


class PeriodState(str, enum.Enum):
    """The one state a period of a window is in (see the module docstring)."""

    SUCCEEDED = "succeeded"
    FAILED = "failed"
    RUNNING = "running"
    ABANDONED = "abandoned"
    BLOCKED = "blocked"
    MISSING = "missing"
    NOT_DUE = "not_due"
    SKIPPED = "skipped"
    NON_BUSINESS = "non_business"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True, slots=True)
class PeriodStatus:
    """One period of a window: its state and what the ledger holds about it."""

    period: str
    state: PeriodState
    attempt: int | None = None
    run_id: str | None = None
    error: str | None = None
    lease_expires_at: dt.datetime | None = None
    revision: int | None = None
    evidence: Mapping[str, str] | None = None
    cause: Cause | None = None  # what blocks it (state ``blocked``)
    stale: tuple[Staleness, ...] = ()  # what superseded its publication's evidence

    def to_json(self) -> dict[str, Any]:
        """The period as ``status --json`` gives it; ``stale`` (each upstream pair that
        changed) only when its publication is stale."""
        found: dict[str, Any] = {
            "period": self.period,
            "state": self.state.value,
            "attempt": self.attempt,
            "run_id": self.run_id,
            "error": self.error,
            "lease_expires_at": (
                None if self.lease_expires_at is None else self.lease_expires_at.isoformat()
            ),
            "revision": self.revision,
            "blocked_by": None if self.cause is None else self.cause.to_json(),
        }
        if self.stale:
            found["stale"] = [entry.upstream_json() for entry in self.stale]
        return found


@dataclass(frozen=True, slots=True)
class WindowFacts:
    """What the ledger holds of a job's window, each by period key: the latest attempt of
    the job for it (``latest``), for a publishing job its newest publication
    (``publications``: its revision and evidence are reported) and what superseded the
    evidence of a stale one (``stale``), and what blocks a period (``causes``: a missing
    period there is ``blocked``). What ``period_states`` and ``segments.window_segments``
    judge a window from."""

    latest: Mapping[str, Attempt]
    publications: Mapping[str, Publication] = field(default_factory=dict)
    causes: Mapping[str, Cause] = field(default_factory=dict)
    stale: Mapping[str, tuple[Staleness, ...]] = field(default_factory=dict)


def period_states(
    plan: RangePlan, facts: WindowFacts, through: str | None = None
) -> tuple[PeriodStatus, ...]:
    """The state of every period of ``plan``'s window (``plan_window(plan, through)``), oldest
    first, from ``facts`` (pure). Leases are judged at ``plan.now``."""
    labels = with_non_business(plan, plan_window(plan, through))
    return judge(plan, labels, facts)


def judge(plan: RangePlan, labels: Iterable[Label], facts: WindowFacts) -> tuple[PeriodStatus, ...]:
    """The state of each of ``labels`` (periods of ``plan``'s window, of its base kind), as
    ``period_states`` judges them: the one rule of a period's state, given what the ledger
    holds of it (``facts``). A business period is due when its ordinal is among the plan's
    due ones (``plan.due`` is a run of consecutive business periods). Pure."""
    kind = plan.period
    lo = kind.ordinal(plan.due[0]) if plan.due else 0
    hi = lo + len(plan.due)
    skipped = {plan.key(p) for p in plan.skipped_by_policy}
    latest, found, blocked, marked = facts.latest, facts.publications, facts.causes, facts.stale
    out = []
    for label in labels:
        key = plan.key(label)
        attempt = latest.get(key)
        if not kind.is_business(label):
            state = PeriodState.NON_BUSINESS
        elif attempt is not None:
            state = attempt_state(attempt, plan.now)
        elif not lo <= kind.ordinal(label) < hi:
            state = PeriodState.NOT_DUE
        else:
            state = PeriodState.SKIPPED if key in skipped else PeriodState.MISSING
        cause = blocked.get(key) if state is PeriodState.MISSING else None
        if cause is not None:
            state = PeriodState.BLOCKED
        published = found.get(key)
        out.append(
            PeriodStatus(
                key,
                state,
                attempt=None if attempt is None else attempt.attempt,
                run_id=None if attempt is None else attempt.run_id,
                error=_error(attempt, plan.now),
                lease_expires_at=None if attempt is None else attempt.lease_expires_at,
                revision=None if published is None else published.revision,
                evidence=None if published is None else dict(published.evidence),
                cause=cause,
                stale=marked.get(key, ()),
            )
        )
    return tuple(out)


def attempt_state(attempt: Attempt, now: dt.datetime) -> PeriodState:
    """The state of a period whose latest attempt is ``attempt``, leases judged at ``now``."""
    if attempt.state is RunState.RUNNING:
        return PeriodState.RUNNING if attempt.lease_live(now) else PeriodState.ABANDONED
    return PeriodState(attempt.state.value)


def _error(attempt: Attempt | None, now: dt.datetime) -> str | None:
    if attempt is None:
        return None
    if attempt.state is RunState.RUNNING and not attempt.lease_live(now):
        expired = attempt.lease_expires_at
        when = "never set" if expired is None else f"expired at {expired.isoformat()}"
        return f"running, but its lease {when}"
    return attempt.error


def collapse(states: tuple[PeriodStatus, ...]) -> list[tuple[str, str, PeriodState, int]]:
    """Runs of consecutive periods in one state: (first, last, state, count), for tables."""
    runs: list[tuple[str, str, PeriodState, int]] = []
    for status in states:
        if runs and runs[-1][2] is status.state:
            first, _, state, count = runs[-1]
            runs[-1] = (first, status.period, state, count + 1)
        else:
            runs.append((status.period, status.period, status.state, 1))
    return runs


def counts(states: Iterable[PeriodStatus]) -> dict[PeriodState, int]:
    """How many periods are in each state, in enum order: every state (0 when none), but
    ``non_business`` only when a period is in it (a job on a business calendar)."""
    return tally(Counter(s.state for s in states))


def tally(found: Mapping[PeriodState, int]) -> dict[PeriodState, int]:
    """``found`` as ``counts`` gives it: every state in enum order (0 when none), but
    ``non_business`` only when a period is in it."""
    return {
        state: found.get(state, 0)
        for state in PeriodState
        if state is not PeriodState.NON_BUSINESS or found.get(state, 0)
    }


def window_states(
    ledger: LedgerReads,
    job: str,
    *,
    now: Any,
    window: JobWindow,
    task_limit: int | None = 50,
) -> tuple[RangePlan, tuple[PeriodStatus, ...]]:
    """The one fetch-plan-judge step: ``job``'s RangePlan at ``now`` (``plan_from_ledger``
    over ``window``'s Schedule) and the state of every period of its window (on through
    ``window.through``, the job's last recorded period, when the window is open).

    Completeness is the latest attempt's (as ``gatekeeper status`` always planned it); for a
    job that publishes (has publications as a consumer) each period carries its newest
    revision; a missing period that one of ``requires`` blocks is ``blocked``, with its
    cause. A few queries (one more per required job) whatever the window; reads only. Raises
    InvalidInput for a bad request and LedgerError when the database fails.
    """
    requires, through = window.requires, window.through
    job = check_name(job, "job")
    plan = plan_from_ledger(ledger, job, schedule=window.schedule, now=now, task_limit=task_limit)
    labels = plan_window(plan, through)
    if not labels:
        return plan, ()
    first, last = plan.key(labels[0]), plan.key(labels[-1])
    latest = ledger.latest_between(job, first, last)
    due = {plan.key(p) for p in plan.due} - {plan.key(p) for p in plan.skipped_by_policy}
    unattempted = [k for k in map(plan.key, labels) if k in due and k not in latest]
    causes = blocked_periods(ledger, plan.period, unattempted, requires, plan.now, held=True)
    published = ledger.newest_publications(job, first, last)
    stale = stale_periods(ledger, {job: (first, last)}).get(job, {}) if published else {}
    return plan, period_states(plan, WindowFacts(latest, published, causes, stale), through)
