"""Listed Databricks runs -> observations, and what is reported instead (pure).

Each run, and each entry of its repair history, is one execution: an observation dated by the
run's business-date parameter (never by its start time), or a ``Skip`` with the raw value and
the reason. A malformed run (no usable ``run_id``, an impossible ``start_time``, copies that
contradict each other across pages, a repair without an ``id``) is skipped alone: it never
stops the runs beside it.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from gatekeeper.core.display import printable
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import period_key
from gatekeeper.core.records import RunState
from gatekeeper.core.validation import MAX_TIMESTAMP, MIN_TIMESTAMP
from gatekeeper.integrations.collectors.databricks_api import Listed, run_id_of, shown
from gatekeeper.integrations.collectors.databricks_states import Mapped, resolve_state

RUN_ID_PREFIX = "databricks:"
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
Execution = tuple[str, Any, Any, int, str | None]  # run ID, state holder, start, index, problem


class SkipKind(str, enum.Enum):
    """Why a run (or one repair of it) was not recorded."""

    UNKNOWN_STATE = "unknown_state"  # not in STATE_MAP, or state and status disagree
    NO_DATE = "no_date"
    BAD_DATE = "bad_date"
    NO_START_TIME = "no_start_time"
    MALFORMED = "malformed"  # no usable run_id or repair id, impossible time, contradictory
    NOT_EXECUTED = "not_executed"  # Databricks never executed it: it processed nothing
    OUT_OF_ORDER = "out_of_order"
    CONFLICT = "conflict"  # the ledger refused it


@dataclass(frozen=True, slots=True)
class Skip:
    """A run not recorded: its ledger run ID (None when it has no usable one), the reason and
    its ``kind``. Both texts are kept printable on one line (``display.printable``)."""

    run_id: str | None
    reason: str
    kind: SkipKind

    def __post_init__(self) -> None:
        object.__setattr__(self, "reason", printable(self.reason))
        if self.run_id is not None:
            object.__setattr__(self, "run_id", printable(self.run_id))

    def to_json(self) -> dict[str, str | None]:
        return {"run_id": self.run_id, "reason": self.reason, "kind": self.kind.value}


@dataclass(frozen=True, slots=True)
class Observation:
    """One execution (a run, or one entry of its repair history) with a mapped state."""

    run_id: str
    business_date: str
    started_at: dt.datetime
    state: Mapped
    raw_state: str
    order: tuple[int, ...]  # breaks ties of started_at: original run, attempt, run, repair


Observed = tuple[list[Observation], list[Skip]]


def date_values(run: Mapping[str, Any], date_param: str) -> list[tuple[str, Any]]:
    """(source, raw value) of ``date_param`` in the run's job parameters, then its overriding
    parameters."""
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
    return values


def business_date_of(
    run: Mapping[str, Any], date_param: str
) -> tuple[str | None, SkipKind | None, str]:
    """(period key, None, "") from the run's parameters (``date_values``); else (None, NO_DATE
    or BAD_DATE, why). Sources that disagree are refused (pure)."""
    values = date_values(run, date_param)
    if not values:
        why = f"no {date_param} parameter (a run is never dated by its start time)"
        return None, SkipKind.NO_DATE, why
    keys = set()
    for source, value in values:
        try:
            keys.add(period_key(value, source))
        except InvalidInput as exc:
            return None, SkipKind.BAD_DATE, str(exc)
    if len(keys) > 1:
        listed = ", ".join(f"{s}={shown(v)}" for s, v in values)
        return None, SkipKind.BAD_DATE, f"its {date_param} parameters disagree: {listed}"
    return keys.pop(), None, ""


def start_time_of(value: Any) -> tuple[dt.datetime | None, SkipKind | None, str]:
    """(UTC datetime, None, "") of a ``start_time`` in epoch milliseconds; (None, kind, why)
    when there is none (absent, null, 0) or it is impossible (not an integer, negative, or
    outside what the ledger stores)."""
    if value is None or value == 0 and not isinstance(value, bool):
        return None, SkipKind.NO_START_TIME, f"no start_time (got {shown(value)})"
    impossible = (
        SkipKind.MALFORMED,
        f"impossible start_time {shown(value)} (expected epoch milliseconds from "
        f"{MIN_TIMESTAMP.date()} to {MAX_TIMESTAMP.date()})",
    )
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None, *impossible
    try:
        at = EPOCH + dt.timedelta(milliseconds=value)
    except OverflowError:
        return None, *impossible
    return (at, None, "") if at < MAX_TIMESTAMP else (None, *impossible)


def executions(run: Mapping[str, Any]) -> list[Execution]:
    """(ledger run ID, the item holding its state, start time, index, what is wrong or None)
    of each execution: the run itself, or each entry of its repair history (the original, then
    every repair). A repair without a usable ``id``, or an entry repeating another's, is
    returned with its problem: it is reported, the others are not held back."""
    base = f"{RUN_ID_PREFIX}{run.get('run_id')}"
    history = run.get("repair_history") or []
    if not isinstance(history, list):
        return [(base, run, None, 0, f"repair_history is not a list: {shown(history)}")]
    if not history:
        return [(base, run, run.get("start_time"), 0, None)]
    found: list[Execution] = []
    seen: set[str] = set()
    for index, entry in enumerate(history):
        if not isinstance(entry, Mapping):
            why = f"repair_history[{index}] is not an object: {shown(entry)}"
            found.append((base, {}, None, index, why))
            continue
        original = entry.get("type") == "ORIGINAL"
        repair = entry.get("id")
        usable = isinstance(repair, int) and not isinstance(repair, bool) and repair > 0
        run_id = base if original else f"{base}:repair:{repair}"
        start = entry.get("start_time") or (run.get("start_time") if original else None)
        problem = None
        if not original and not usable:
            run_id = base
            problem = (
                f"repair_history[{index}] is a repair without a usable id (id {shown(repair)}, "
                f"start_time {shown(start)}); its run's other executions are recorded"
            )
        elif run_id in seen:
            problem = f"repair_history[{index}] repeats {run_id}"
        else:
            seen.add(run_id)
        found.append((run_id, entry, start, index, problem))
    return found


def observe(runs: Iterable[Sequence[Listed]], date_param: str) -> Observed:
    """Observations of every execution of ``runs`` (each run's listed copies, as
    ``fetch_runs`` returns them) and the executions skipped (pure)."""
    observations: list[Observation] = []
    skipped: list[Skip] = []
    for copies in runs:
        seen, skips = reconcile(copies, [observe_one(c, date_param) for c in copies], date_param)
        observations += seen
        skipped += skips
    return observations, skipped


def observe_one(entry: Listed, date_param: str) -> Observed:
    """The observations and skips of one listed copy of a run (pure)."""
    run = entry.raw
    if not isinstance(run, Mapping):
        why = f"{entry.where()} is not a JSON object: {shown(run)}"
        return [], [Skip(None, why, SkipKind.MALFORMED)]
    if run_id_of(run) is None:
        given = f"run_id {shown(run['run_id'])}" if "run_id" in run else "run_id missing"
        dates = shown([v for _, v in date_values(run, date_param)])
        why = (
            f"{entry.where()}: no usable run_id ({given}, expected a positive integer; "
            f"start_time {shown(run.get('start_time'))}, {date_param} {dates}): not recorded"
        )
        return [], [Skip(None, why, SkipKind.MALFORMED)]
    key, date_skip, why = business_date_of(run, date_param)
    order = (
        _int(run.get("original_attempt_run_id")) or _int(run.get("run_id")),
        _int(run.get("attempt_number")),
        _int(run.get("run_id")),
    )
    observations: list[Observation] = []
    skipped: list[Skip] = []
    for run_id, holder, start, index, problem in executions(run):
        state, raw = resolve_state(holder)
        started, time_skip, time_why = start_time_of(start)
        if problem is not None:
            skipped.append(Skip(run_id, problem, SkipKind.MALFORMED))
        elif state is None:
            skipped.append(Skip(run_id, raw, SkipKind.UNKNOWN_STATE))
        elif key is None:
            skipped.append(Skip(run_id, why, date_skip or SkipKind.NO_DATE))
        elif started is None:
            skipped.append(Skip(run_id, time_why, time_skip or SkipKind.NO_START_TIME))
        else:
            observations.append(Observation(run_id, key, started, state, raw, (*order, index)))
    return observations, skipped


def reconcile(copies: Sequence[Listed], found: Sequence[Observed], date_param: str) -> Observed:
    """One run's observations from its listed copies: the only one; the last read when the
    copies differ only by a running execution that has since ended; else the run is reported
    as contradictory and none of its copies is recorded."""
    if len(found) == 1:
        return found[0]
    pairs = zip(found, found[1:], strict=False)
    if all(_progressed(earlier, later) for earlier, later in pairs):
        return found[-1]
    first = copies[0].raw
    listed = "; ".join(f"{c.where()}: {_summary(c.raw, date_param)}" for c in copies)
    why = f"listed {len(copies)} times with different contents ({listed}); none recorded"
    return [], [Skip(f"{RUN_ID_PREFIX}{first.get('run_id')}", why, SkipKind.MALFORMED)]


def _progressed(earlier: Observed, later: Observed) -> bool:
    """The same executions, dates and start times, each state the same or running before."""
    (before, skipped_before), (after, skipped_after) = earlier, later
    if skipped_before != skipped_after or len(before) != len(after):
        return False
    for old, new in zip(before, after, strict=True):
        same = (old.run_id, old.business_date, old.started_at, old.order)
        if same != (new.run_id, new.business_date, new.started_at, new.order):
            return False
        if old.state is not new.state and old.state is not RunState.RUNNING:
            return False
    return True


def _summary(run: Mapping[str, Any], date_param: str) -> str:
    dates = " ".join(f"{s}={shown(v, 60)}" for s, v in date_values(run, date_param))
    state = resolve_state(run)[1]
    return f"{dates or 'no ' + date_param} start_time={shown(run.get('start_time'))} {state}"


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
