"""Runs of a Databricks job into the ledger as attempts (``gatekeeper collect databricks``).

Fetch, plan, act. ``fetch_runs`` pages a job's runs through the SDK within bounds (raw JSON,
with each run's repair history); ``observe`` (pure, ``databricks_runs``) turns each run, and
each entry of its repair history, into an observation dated by the run's business-date
parameter, never by its start time, and reports each malformed one; ``plan_attempts`` (pure)
decides which observations become which attempts, given what the ledger already holds;
``collect`` writes them through ``Ledger.record``. A run state is interpreted only through
``STATE_MAP``; anything else is reported with its raw value.

databricks-sdk (extra ``databricks``) is imported only when a client is built or called.
"""

from __future__ import annotations

import datetime as dt
import itertools
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gatekeeper.core.errors import InvalidInput, StateConflict
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.validation import check_job_id, check_name, check_timestamp, printable_text
from gatekeeper.integrations.collectors.databricks_api import (
    DEFAULT_MAX_PAGES,
    DEFAULT_TIME_BUDGET,
    Bounds,
    CollectError,
    ListingIncomplete,
    fetch_runs,
    workspace_client,
)
from gatekeeper.integrations.collectors.databricks_runs import (
    RUN_ID_PREFIX,
    Observation,
    Skip,
    SkipKind,
    business_date_of,
    executions,
    observe,
)
from gatekeeper.integrations.collectors.databricks_states import (
    NOT_EXECUTED,
    STATE_MAP,
    map_state,
    resolve_state,
)

if TYPE_CHECKING:
    from gatekeeper.ledger import Ledger

__all__ = [
    "NOT_EXECUTED",
    "RUN_ID_PREFIX",
    "STATE_MAP",
    "Bounds",
    "CollectError",
    "CollectReport",
    "ListingIncomplete",
    "Observation",
    "Skip",
    "SkipKind",
    "business_date_of",
    "collect",
    "executions",
    "fetch_runs",
    "map_state",
    "observe",
    "plan_attempts",
    "resolve_state",
    "workspace_client",
]

RUNNING, FAILED, ABANDONED = RunState.RUNNING, RunState.FAILED, RunState.ABANDONED


@dataclass(frozen=True, slots=True)
class Action:
    """One ``Ledger.record`` call: a new attempt, or a running one reaching its end."""

    job: str
    business_date: str
    attempt: int
    run_id: str
    state: RunState
    started_at: dt.datetime
    error: str | None = None


@dataclass(frozen=True, slots=True)
class Plan:
    actions: tuple[Action, ...]
    unchanged: int
    skipped: tuple[Skip, ...]


@dataclass(frozen=True, slots=True)
class CollectReport:
    """What a collection did: attempts ``recorded`` (new or moved to a terminal state),
    observations the ledger already held (``unchanged``) and the ``skipped`` runs."""

    recorded: int
    unchanged: int
    skipped: tuple[Skip, ...]

    @property
    def unknown_states(self) -> tuple[Skip, ...]:
        return tuple(s for s in self.skipped if s.kind is SkipKind.UNKNOWN_STATE)

    @property
    def malformed(self) -> tuple[Skip, ...]:
        return tuple(s for s in self.skipped if s.kind is SkipKind.MALFORMED)

    @property
    def conflicts(self) -> tuple[Skip, ...]:
        return tuple(s for s in self.skipped if s.kind is SkipKind.CONFLICT)

    def to_json(self) -> dict[str, Any]:
        return {
            "recorded": self.recorded,
            "unchanged": self.unchanged,
            "skipped": [s.to_json() for s in self.skipped],
        }


# -- pure: observations -> attempts ----------------------------------------------------------------
def plan_attempts(
    job: str, observations: Iterable[Observation], recorded: Mapping[str, Sequence[Attempt]]
) -> Plan:
    """What to record for ``job``, given the attempts the ledger holds per period key (pure).

    Per business date, observations in start-time order: one the ledger holds is unchanged,
    or moves its running attempt to its terminal state; a new one becomes the next attempt if
    it started after every recorded attempt of the date, else it is skipped as out of order
    (ordinals never shift). A terminal state the ledger contradicts is skipped as a conflict.
    A run Databricks never executed is not an attempt (it processed nothing): it is skipped
    as NOT_EXECUTED, or, held as running (seen while queued), it ends as failed.
    """
    actions: list[Action] = []
    skipped: list[Skip] = []
    unchanged = 0
    ordered = sorted(observations, key=lambda o: (o.business_date, o.started_at, o.order))
    for date, group in itertools.groupby(ordered, key=lambda o: o.business_date):
        held = list(recorded.get(date, ()))
        by_run = {a.run_id: a for a in held}
        top = max((a.attempt for a in held), default=0)
        latest = max(held, key=lambda a: (a.started_at, a.attempt), default=None)
        for obs in group:
            known = by_run.get(obs.run_id)
            if known is not None:
                found = _held(job, obs, known)
                if isinstance(found, Action):
                    actions.append(found)
                elif isinstance(found, Skip):
                    skipped.append(found)
                else:
                    unchanged += 1
            elif obs.state is NOT_EXECUTED:
                why = f"never executed ({obs.raw_state}): not an attempt, it processed nothing"
                skipped.append(Skip(obs.run_id, why, SkipKind.NOT_EXECUTED))
            elif latest is not None and obs.started_at <= latest.started_at:
                skipped.append(
                    Skip(
                        obs.run_id,
                        f"out of order: started {obs.started_at.isoformat()}, not after {job} "
                        f"{date} attempt {latest.attempt} (run {latest.run_id}, started "
                        f"{latest.started_at.isoformat()}); ordinals never shift",
                        SkipKind.OUT_OF_ORDER,
                    )
                )
            else:
                top += 1
                state = RunState(obs.state)
                error = f"Databricks: {obs.raw_state}" if state is FAILED else None
                actions.append(Action(job, date, top, obs.run_id, state, obs.started_at, error))
    return Plan(tuple(actions), unchanged, tuple(skipped))


def _held(job: str, obs: Observation, known: Attempt) -> Action | Skip | None:
    """An observation of an attempt the ledger holds: the action that ends it, a conflict, or
    None (unchanged: the same state again, a late "running", a never-executed run already
    failed)."""
    never = obs.state is NOT_EXECUTED
    final = FAILED if never else RunState(obs.state)
    if known.state is final or obs.state is RUNNING or (never and known.state is ABANDONED):
        return None
    if known.state is RUNNING:
        error = None
        if final is FAILED:
            error = f"Databricks: {'never executed: ' if never else ''}{obs.raw_state}"
        return Action(
            job, known.business_date, known.attempt, obs.run_id, final, known.started_at, error
        )
    return Skip(
        obs.run_id,
        f"{job} {known.business_date} attempt {known.attempt} is {known.state.value} in the "
        f"ledger; Databricks says {obs.raw_state}",
        SkipKind.CONFLICT,
    )


# -- effects: the ledger -------------------------------------------------------------------------
def collect(
    ledger: Ledger,
    client: Any,
    *,
    job_id: Any,
    job: str,
    date_param: str = "business_date",
    since: Any = None,
    max_pages: Any = DEFAULT_MAX_PAGES,
    time_budget: Any = DEFAULT_TIME_BUDGET,
    clock: Callable[[], float] = time.monotonic,
) -> CollectReport:
    """Record the runs of Databricks job ``job_id`` as attempts of ``job``; writes.

    ``since`` (a tz-aware datetime or ISO 8601 with offset) maps to ``start_time_from``. The
    listing reads at most ``max_pages`` pages of runs/list and starts no request after
    ``time_budget`` seconds (measured by ``clock``). Returns a CollectReport. Raises
    InvalidInput (nothing fetched or written) for a bad argument, ListingIncomplete (nothing
    written) past a bound or when the server repeats a page token, and CollectError (nothing
    written) when Databricks cannot be read.
    """
    job_id = check_job_id(job_id)
    job = check_name(job, "job")
    date_param = check_name(date_param, "date_param")
    start_from = None if since is None else check_timestamp(since, "since")
    bounds = Bounds(max_pages, time_budget)
    listed = fetch_runs(client, job_id, start_from, bounds=bounds, clock=clock)
    observations, skipped = observe(listed, date_param)
    dates = sorted({o.business_date for o in observations})
    plan = plan_attempts(job, observations, {d: ledger.attempts(job, d) for d in dates})
    recorded, refused = apply(ledger, plan.actions)
    return CollectReport(recorded, plan.unchanged, (*skipped, *plan.skipped, *refused))


def apply(ledger: Ledger, actions: Sequence[Action]) -> tuple[int, list[Skip]]:
    """Record each action; writes. Returns (attempts changed, actions the ledger refused).
    After a refusal, the later actions of that date are not written (no gap in ordinals)."""
    changed, refused = 0, []
    stopped: set[str] = set()
    for act in actions:
        if act.business_date in stopped:
            refused.append(
                Skip(
                    act.run_id,
                    f"not recorded: an earlier run of {act.job} {act.business_date} was refused",
                    SkipKind.CONFLICT,
                )
            )
            continue
        try:
            changed += ledger.record(
                act.job,
                act.business_date,
                act.attempt,
                act.run_id,
                act.state,
                act.started_at,
                error=None if act.error is None else printable_text(act.error),
            )
        except (StateConflict, InvalidInput) as exc:
            stopped.add(act.business_date)
            refused.append(Skip(act.run_id, str(exc), SkipKind.CONFLICT))
    return changed, refused
