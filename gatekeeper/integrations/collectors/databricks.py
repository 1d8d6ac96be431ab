"""Runs of a Databricks job into the ledger as attempts (``gatekeeper collect databricks``).

Fetch, plan, act. ``fetch_runs`` pages a job's runs through the SDK (raw JSON, with each run's
repair history); ``observe`` (pure) turns each run, and each entry of its repair history, into
an observation dated by the run's business-date parameter, never by its start time;
``plan_attempts`` (pure) decides which observations become which attempts, given what the
ledger already holds; ``collect`` writes them through ``Ledger.record``. A run state is
interpreted only through ``STATE_MAP``; anything else is reported with its raw value.

databricks-sdk (extra ``databricks``) is imported only when a client is built or called.
"""

from __future__ import annotations

import datetime as dt
import enum
import itertools
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gatekeeper.core.errors import InvalidInput, StateConflict
from gatekeeper.core.periods import period_key
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.validation import check_job_id, check_name, check_timestamp, printable_text
from gatekeeper.integrations.collectors.databricks_api import (
    CollectError,
    fetch_runs,
    workspace_client,
)
from gatekeeper.integrations.collectors.databricks_states import (
    STATE_MAP,
    map_state,
    resolve_state,
)

if TYPE_CHECKING:
    from gatekeeper.ledger import Ledger

__all__ = [
    "STATE_MAP",
    "CollectError",
    "CollectReport",
    "Skip",
    "SkipKind",
    "collect",
    "fetch_runs",
    "map_state",
    "observe",
    "plan_attempts",
    "workspace_client",
]

RUN_ID_PREFIX = "databricks:"
RUNNING, FAILED = RunState.RUNNING, RunState.FAILED


class SkipKind(str, enum.Enum):
    """Why a run (or one repair of it) was not recorded."""

    UNKNOWN_STATE = "unknown_state"  # not in STATE_MAP, or state and status disagree
    NO_DATE = "no_date"
    BAD_DATE = "bad_date"
    NO_START_TIME = "no_start_time"
    OUT_OF_ORDER = "out_of_order"
    CONFLICT = "conflict"  # the ledger refused it


@dataclass(frozen=True, slots=True)
class Skip:
    """A run not recorded: its ledger run ID and the reason (``kind`` classifies it)."""

    run_id: str
    reason: str
    kind: SkipKind

    def to_json(self) -> dict[str, str]:
        return {"run_id": self.run_id, "reason": self.reason, "kind": self.kind.value}


@dataclass(frozen=True, slots=True)
class Observation:
    """One execution (a run, or one entry of its repair history) with a mapped state."""

    run_id: str
    business_date: str
    started_at: dt.datetime
    state: RunState
    raw_state: str
    order: tuple[int, ...]  # breaks ties of started_at: original run, attempt, run, repair


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
    def conflicts(self) -> tuple[Skip, ...]:
        return tuple(s for s in self.skipped if s.kind is SkipKind.CONFLICT)

    def to_json(self) -> dict[str, Any]:
        return {
            "recorded": self.recorded,
            "unchanged": self.unchanged,
            "skipped": [s.to_json() for s in self.skipped],
        }


# -- pure: runs -> observations ------------------------------------------------------------------
def business_date_of(
    run: Mapping[str, Any], date_param: str
) -> tuple[str | None, SkipKind | None, str]:
    """(period key, None, "") from the run's job parameters, then its overriding parameters;
    else (None, NO_DATE or BAD_DATE, why). Sources that disagree are refused (pure)."""
    values: list[tuple[str, Any]] = []
    for param in run.get("job_parameters") or []:
        if isinstance(param, Mapping) and param.get("name") == date_param:
            value = param.get("value", param.get("default"))
            values.append((f"job_parameters.{date_param}", value))
    overriding = run.get("overriding_parameters")
    if isinstance(overriding, Mapping):
        for group in ("job_parameters", "notebook_params", "python_named_params", "sql_params"):
            named = overriding.get(group)
            if isinstance(named, Mapping) and date_param in named:
                values.append((f"overriding_parameters.{group}.{date_param}", named[date_param]))
    if not values:
        return (
            None,
            SkipKind.NO_DATE,
            (f"no {date_param} parameter (a run is never dated by its start time)"),
        )
    keys = set()
    for source, value in values:
        try:
            keys.add(period_key(value, source))
        except InvalidInput as exc:
            return None, SkipKind.BAD_DATE, str(exc)
    if len(keys) > 1:
        shown = ", ".join(f"{s}={json.dumps(v)}" for s, v in values)
        return None, SkipKind.BAD_DATE, f"its {date_param} parameters disagree: {shown}"
    return keys.pop(), None, ""


def executions(run: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], Any, int]]:
    """(ledger run ID, the item holding its state, start time, index) of each execution: the
    run itself, or each entry of its repair history (the original, then every repair)."""
    base = f"{RUN_ID_PREFIX}{run.get('run_id')}"
    history = [h for h in run.get("repair_history") or [] if isinstance(h, Mapping)]
    if not history:
        return [(base, run, run.get("start_time"), 0)]
    found = []
    for index, entry in enumerate(history):
        original = entry.get("type") == "ORIGINAL"
        run_id = base if original else f"{base}:repair:{entry.get('id')}"
        start = entry.get("start_time") or (run.get("start_time") if original else None)
        found.append((run_id, entry, start, index))
    return found


def observe(
    runs: Iterable[Mapping[str, Any]], date_param: str
) -> tuple[list[Observation], list[Skip]]:
    """Observations of every execution of ``runs`` and the executions skipped (pure)."""
    observations: list[Observation] = []
    skipped: list[Skip] = []
    for run in runs:
        key, date_skip, why = business_date_of(run, date_param)
        order = (
            _int(run.get("original_attempt_run_id")) or _int(run.get("run_id")),
            _int(run.get("attempt_number")),
            _int(run.get("run_id")),
        )
        for run_id, holder, start, index in executions(run):
            state, raw = resolve_state(holder)
            if state is None:
                skipped.append(Skip(run_id, raw, SkipKind.UNKNOWN_STATE))
            elif key is None:
                skipped.append(Skip(run_id, why, date_skip or SkipKind.NO_DATE))
            elif not _int(start) > 0:
                skipped.append(
                    Skip(run_id, f"no start_time (got {json.dumps(start)})", SkipKind.NO_START_TIME)
                )
            else:
                started = dt.datetime.fromtimestamp(_int(start) / 1000, dt.timezone.utc)
                observations.append(Observation(run_id, key, started, state, raw, (*order, index)))
    return observations, skipped


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


# -- pure: observations -> attempts ----------------------------------------------------------------
def plan_attempts(
    job: str, observations: Iterable[Observation], recorded: Mapping[str, Sequence[Attempt]]
) -> Plan:
    """What to record for ``job``, given the attempts the ledger holds per period key (pure).

    Per business date, observations in start-time order: one the ledger holds is unchanged,
    or moves its running attempt to its terminal state; a new one becomes the next attempt if
    it started after every recorded attempt of the date, else it is skipped as out of order
    (ordinals never shift). A terminal state the ledger contradicts is skipped as a conflict.
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
            error = f"Databricks: {obs.raw_state}" if obs.state is FAILED else None
            if known is not None:
                if known.state is obs.state or obs.state is RUNNING:
                    unchanged += 1
                elif known.state is RUNNING:
                    actions.append(
                        Action(
                            job, date, known.attempt, obs.run_id, obs.state, known.started_at, error
                        )
                    )
                else:
                    skipped.append(
                        Skip(
                            obs.run_id,
                            f"{job} {date} attempt {known.attempt} is "
                            f"{known.state.value} in the ledger; Databricks says "
                            f"{obs.raw_state}",
                            SkipKind.CONFLICT,
                        )
                    )
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
                actions.append(Action(job, date, top, obs.run_id, obs.state, obs.started_at, error))
    return Plan(tuple(actions), unchanged, tuple(skipped))


# -- effects: the ledger -------------------------------------------------------------------------
def collect(
    ledger: Ledger,
    client: Any,
    *,
    job_id: Any,
    job: str,
    date_param: str = "business_date",
    since: Any = None,
) -> CollectReport:
    """Record the runs of Databricks job ``job_id`` as attempts of ``job``; writes.

    ``since`` (a tz-aware datetime or ISO 8601 with offset) maps to ``start_time_from``.
    Returns a CollectReport. Raises InvalidInput (nothing fetched or written) for a bad
    argument and CollectError (nothing written) when Databricks cannot be read.
    """
    job_id = check_job_id(job_id)
    job = check_name(job, "job")
    date_param = check_name(date_param, "date_param")
    start_from = None if since is None else check_timestamp(since, "since")
    observations, skipped = observe(fetch_runs(client, job_id, start_from), date_param)
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
