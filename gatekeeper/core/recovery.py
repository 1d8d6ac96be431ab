"""Fail-closed restart planner and stage event log reader (pure, read-only).

A multi-stage run (stage 1 feeds stage 2, ...) that stopped part way is restarted by hand. The
planner proposes where to restart and which stages to skip, and refuses (``RecoveryNotSafe``)
whenever the evidence is missing, ambiguous, malformed or contradictory. Only a contiguous prefix
of succeeded stages whose outputs an operator verified is ever skipped.

The planner reads a *summary*::

    {"expected_stages": 2,
     "runs": [{"run_id": "r1", "stages": [{"stage": 1, "status": "succeeded"},
                                          {"stage": 2, "status": "failed"}]}]}

which ``summarize_events`` builds from a JSONL stage event log, and which a ledger adapter can
build from attempts (statuses ``succeeded``, ``failed``, ``not_started``, ``running``,
``stalled``). Nothing here writes anywhere.
"""

from __future__ import annotations

import datetime as dt
import enum
import json
import os
from collections.abc import Iterable, Mapping
from typing import NoReturn, TypedDict, TypeGuard

from gatekeeper.core.errors import InvalidInput, RecoveryNotSafe

SUCCEEDED = "succeeded"
FAILED = "failed"
NOT_STARTED = "not_started"
RUNNING = "running"
STALLED = "stalled"

#: Stage statuses a summary may carry; only the first three can be planned over.
STAGE_STATUSES: tuple[str, ...] = (SUCCEEDED, FAILED, NOT_STARTED, RUNNING, STALLED)
#: Statuses after which a restart can be planned (nothing is in flight).
SETTLED_STATUSES: tuple[str, ...] = (SUCCEEDED, FAILED, NOT_STARTED)
#: Statuses that mean work may still be in flight: always a refusal.
ACTIVE_STATUSES: tuple[str, ...] = (RUNNING, STALLED)

ACTION_NONE = "none"
ACTION_MANUAL_RESTART = "manual_restart"

STARTED = "started"
#: Events of the JSONL stage event log, and the terminal ones among them.
STAGE_EVENTS: tuple[str, ...] = (STARTED, SUCCEEDED, FAILED)
TERMINAL_EVENTS: tuple[str, ...] = (SUCCEEDED, FAILED)
#: Exactly the keys of one event line.
EVENT_FIELDS: tuple[str, ...] = ("ts", "run_id", "stage", "event")

_SUMMARY_KEYS = frozenset({"expected_stages", "runs"})
_RUN_KEYS = frozenset({"run_id", "stages"})
_STAGE_KEYS = frozenset({"stage", "status"})


# --------------------------------------------------------------------------- planner


class RecoveryPlan(TypedDict):
    """What ``plan_recovery`` proposes: an action, the stage to restart at (None when every
    stage succeeded) and the stages skipped before it."""

    action: str
    restart_at_stage: int | None
    skipped_stages: list[int]


def plan_recovery(
    summary: Mapping[str, object], run_id: str, verified_stage_outputs: Iterable[int]
) -> RecoveryPlan:
    """Propose how to restart run ``run_id`` of ``summary``.

    ``verified_stage_outputs`` lists the stages whose outputs an operator checked; it must be
    exactly the stages the plan skips (none when stage 1 did not succeed, or when every stage
    succeeded). Reads its arguments only.

    Returns ``{"action": "none", "restart_at_stage": None, "skipped_stages": []}`` when every
    stage succeeded, else ``{"action": "manual_restart", "restart_at_stage": K,
    "skipped_stages": [1, ..., K-1]}`` where K is the first stage that did not succeed.

    Raises RecoveryNotSafe, naming the run and stage, when the summary is malformed; the run is
    unknown or listed twice; its stages are missing or not exactly 1..N; a stage is running,
    stalled or has an unknown status; a stage after the first unsucceeded one is not
    ``not_started``; or the verified stages are not exactly the skipped prefix.
    """
    expected = _expected_stages(summary)
    stages = _target_stages(summary, run_id)
    statuses = _stage_statuses(stages, expected, run_id)
    restart_at = _restart_stage(statuses, run_id)
    skipped = list(range(1, restart_at)) if restart_at is not None else []
    _check_verified(verified_stage_outputs, skipped, run_id)
    if restart_at is None:
        return {"action": ACTION_NONE, "restart_at_stage": None, "skipped_stages": []}
    return {
        "action": ACTION_MANUAL_RESTART,
        "restart_at_stage": restart_at,
        "skipped_stages": skipped,
    }


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_list(value: object) -> TypeGuard[list[object] | tuple[object, ...]]:
    return isinstance(value, (list, tuple))


def _check_keys(value: object, keys: frozenset[str], what: str) -> Mapping[str, object]:
    """``value``, a mapping with exactly ``keys``; raises RecoveryNotSafe otherwise."""
    if not isinstance(value, Mapping):
        raise RecoveryNotSafe(f"{what}: expected an object, got {type(value).__name__}")
    if set(value) != keys:
        missing = sorted(keys - set(value))  # names of ours: strings
        extra = sorted(set(value) - keys, key=str)
        raise RecoveryNotSafe(f"{what}: malformed, missing keys {missing}, unexpected keys {extra}")
    return value


def _expected_stages(summary: object) -> int:
    """Return the summary's ``expected_stages``; raises RecoveryNotSafe unless a positive int."""
    expected = _check_keys(summary, _SUMMARY_KEYS, "summary")["expected_stages"]
    if not _is_int(expected) or expected < 1:
        raise RecoveryNotSafe(f"summary: expected_stages={expected!r} is not a positive integer")
    return int(expected)


def _target_stages(summary: Mapping[str, object], run_id: object) -> list[object]:
    """Return the stage list of the one run named ``run_id``.

    Raises RecoveryNotSafe when ``runs`` is malformed, any run ID is listed twice, or
    ``run_id`` is not listed exactly once.
    """
    if not isinstance(run_id, str) or not run_id.strip():
        raise RecoveryNotSafe(f"run {run_id!r}: run ID must be a non-empty string")
    runs = summary["runs"]
    if not _is_list(runs):
        raise RecoveryNotSafe(f"run {run_id!r}: summary runs must be a list")
    seen: set[str] = set()
    found: list[object] = []
    for index, run in enumerate(runs):
        checked = _check_keys(run, _RUN_KEYS, f"summary runs[{index}]")
        rid = checked["run_id"]
        if not isinstance(rid, str) or not rid.strip():
            raise RecoveryNotSafe(f"summary runs[{index}]: run_id={rid!r} is not a non-empty str")
        if rid in seen:
            raise RecoveryNotSafe(f"run {rid!r}: listed more than once in the summary")
        seen.add(rid)
        if rid == run_id:
            found.append(checked["stages"])
    if not found:
        raise RecoveryNotSafe(f"run {run_id!r}: unknown run ID, not in the summary")
    stages = found[0]
    if not _is_list(stages):
        raise RecoveryNotSafe(f"run {run_id!r}: stages must be a list")
    if not stages:
        raise RecoveryNotSafe(f"run {run_id!r}: no stages recorded")
    return list(stages)


def _stage_statuses(stages: list[object], expected: int, run_id: str) -> list[str]:
    """Return the statuses of stages 1..``expected`` in order.

    Raises RecoveryNotSafe when an entry is malformed, a stage number is not an int (or is a
    bool), repeated, or outside 1..``expected``, or a stage is missing.
    """
    by_stage: dict[int, str] = {}
    for index, entry in enumerate(stages):
        checked = _check_keys(entry, _STAGE_KEYS, f"run {run_id!r}: stages[{index}]")
        number, status = checked["stage"], checked["status"]
        if not _is_int(number):
            raise RecoveryNotSafe(f"run {run_id!r}: stage number {number!r} is not an integer")
        if not 1 <= number <= expected:
            raise RecoveryNotSafe(f"run {run_id!r}: stage {number} is outside 1..{expected}")
        if number in by_stage:
            raise RecoveryNotSafe(f"run {run_id!r}: stage {number} is listed more than once")
        if isinstance(status, enum.Enum):
            status = status.value
        if not isinstance(status, str):
            raise RecoveryNotSafe(f"run {run_id!r}: stage {number} has status {status!r}")
        by_stage[number] = str(status)
    missing = [n for n in range(1, expected + 1) if n not in by_stage]
    if missing:
        raise RecoveryNotSafe(
            f"run {run_id!r}: stage {missing[0]} is missing; inventory is not exactly 1..{expected}"
        )
    return [by_stage[n] for n in range(1, expected + 1)]


def _restart_stage(statuses: list[str], run_id: str) -> int | None:
    """Return the first stage that did not succeed, or None when all succeeded.

    Raises RecoveryNotSafe when a stage is running, stalled or has an unknown status, or when a
    stage after the first unsucceeded one is anything but ``not_started``.
    """
    for number, status in enumerate(statuses, start=1):
        if status in ACTIVE_STATUSES:
            raise RecoveryNotSafe(f"run {run_id!r}: stage {number} is {status}; wait or resolve it")
        if status not in SETTLED_STATUSES:
            raise RecoveryNotSafe(
                f"run {run_id!r}: stage {number} has unknown status {status!r}; "
                f"expected one of {', '.join(STAGE_STATUSES)}"
            )
    restart_at = next((n for n, s in enumerate(statuses, 1) if s != SUCCEEDED), None)
    if restart_at is None:
        return None
    for number in range(restart_at + 1, len(statuses) + 1):
        if statuses[number - 1] != NOT_STARTED:
            raise RecoveryNotSafe(
                f"run {run_id!r}: stage {number} is {statuses[number - 1]} although stage "
                f"{restart_at} is {statuses[restart_at - 1]}; downstream activity"
            )
    return restart_at


def _check_verified(verified: object, skipped: list[int], run_id: str) -> None:
    """Raise RecoveryNotSafe unless ``verified`` lists exactly the ``skipped`` stages once each."""
    if isinstance(verified, (str, bytes, Mapping)) or not isinstance(verified, Iterable):
        raise RecoveryNotSafe(f"run {run_id!r}: verified stages {verified!r} are not a list")
    seen: set[int] = set()
    for value in list(verified):
        if not _is_int(value):
            raise RecoveryNotSafe(f"run {run_id!r}: verified stage {value!r} is not an integer")
        if value in seen:
            raise RecoveryNotSafe(f"run {run_id!r}: stage {value} is verified more than once")
        if value not in skipped:
            raise RecoveryNotSafe(
                f"run {run_id!r}: stage {value} is verified but would not be skipped "
                f"(skippable: {skipped or 'none'})"
            )
        seen.add(value)
    unverified = [n for n in skipped if n not in seen]
    if unverified:
        raise RecoveryNotSafe(
            f"run {run_id!r}: stage {unverified[0]} succeeded but its output is not verified"
        )


# --------------------------------------------------------------------------- event log


def summarize_events(path: str | os.PathLike[str], expected_stages: int) -> dict[str, object]:
    """Read the JSONL stage event log at ``path`` and summarize it (see ``summarize_event_lines``).

    Returns the summary dict ``plan_recovery`` takes. Raises InvalidInput for malformed input
    (``field`` names the line, e.g. ``"line 3: ts"``); OSError when the file cannot be read.
    Writes nothing.
    """
    with open(path, encoding="utf-8") as handle:
        return summarize_event_lines(handle, expected_stages)


def summarize_event_lines(lines: Iterable[str], expected_stages: int) -> dict[str, object]:
    """Validate JSONL stage events and summarize each run's stages.

    Each non-blank line is an object with exactly ``ts`` (ISO 8601 with an offset), ``run_id``
    (non-empty string), ``stage`` (int in 1..``expected_stages``) and ``event`` (``started``,
    ``succeeded`` or ``failed``). Per run, timestamps never decrease; per stage, events follow
    ``started`` then at most one terminal event.

    Returns ``{"expected_stages": N, "runs": [{"run_id": ..., "stages": [{"stage": 1,
    "status": ...}, ...]}]}`` with runs in order of first appearance and every stage 1..N listed:
    ``not_started`` (no event), ``running`` (started only), ``succeeded`` or ``failed``.
    Raises InvalidInput naming the line number and field for the first malformed line, or
    ``expected_stages`` when it is not a positive int.
    """
    if not _is_int(expected_stages) or expected_stages < 1:
        raise InvalidInput("expected_stages", expected_stages, "must be a positive integer")
    states: dict[str, dict[int, str]] = {}
    last_seen: dict[str, tuple[dt.datetime, int]] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        ts, run_id, stage, event = _parse_event(raw, number, expected_stages)
        previous = last_seen.get(run_id)
        if previous is not None and ts < previous[0]:
            raise InvalidInput(
                f"line {number}: ts",
                ts.isoformat(),
                f"earlier than line {previous[1]} of run {run_id!r} ({previous[0].isoformat()})",
            )
        last_seen[run_id] = (ts, number)
        run_states = states.setdefault(run_id, {})
        run_states[stage] = _next_stage_state(run_states.get(stage), event, number, stage)
    return _summary(states, expected_stages)


def _summary(states: Mapping[str, Mapping[int, str]], expected: int) -> dict[str, object]:
    """Return the summary of per-run stage statuses, listing every stage 1..``expected``."""
    return {
        "expected_stages": expected,
        "runs": [
            {
                "run_id": run_id,
                "stages": [
                    {"stage": n, "status": run_states.get(n, NOT_STARTED)}
                    for n in range(1, expected + 1)
                ],
            }
            for run_id, run_states in states.items()
        ],
    }


def _next_stage_state(current: str | None, event: str, number: int, stage: int) -> str:
    """Return a stage's status after ``event``; raises InvalidInput for an illegal order."""
    field = f"line {number}: event"
    if current in TERMINAL_EVENTS:
        raise InvalidInput(field, event, f"stage {stage} already {current}; nothing may follow")
    if event == STARTED:
        if current == RUNNING:
            raise InvalidInput(field, event, f"stage {stage} already started")
        return RUNNING
    if current != RUNNING:
        raise InvalidInput(field, event, f"stage {stage} {event} without being started")
    return event


def _parse_event(raw: str, number: int, expected: int) -> tuple[dt.datetime, str, int, str]:
    """Return ``(ts, run_id, stage, event)`` of one line; raises InvalidInput naming the field."""
    where = f"line {number}"
    obj = _load_object(raw, where)
    for key in EVENT_FIELDS:
        if key not in obj:
            raise InvalidInput(f"{where}: {key}", None, "missing field")
    extra = sorted(set(obj) - set(EVENT_FIELDS))
    if extra:
        raise InvalidInput(f"{where}: {extra[0]}", obj[extra[0]], "unexpected field")
    run_id, stage, event = obj["run_id"], obj["stage"], obj["event"]
    if not isinstance(run_id, str) or not run_id.strip():
        raise InvalidInput(f"{where}: run_id", run_id, "must be a non-empty string")
    if not _is_int(stage):
        raise InvalidInput(f"{where}: stage", stage, "must be an integer")
    if not 1 <= stage <= expected:
        raise InvalidInput(f"{where}: stage", stage, f"outside 1..{expected}")
    if not isinstance(event, str) or event not in STAGE_EVENTS:
        raise InvalidInput(f"{where}: event", event, f"expected one of {', '.join(STAGE_EVENTS)}")
    return _parse_ts(obj["ts"], f"{where}: ts"), run_id, stage, event


def _load_object(raw: str, where: str) -> dict[str, object]:
    """Decode one line as a JSON object; raises InvalidInput for bad JSON or another type."""

    def no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in pairs]
        for key in keys:
            if keys.count(key) > 1:
                raise InvalidInput(f"{where}: {key}", raw.strip(), "duplicate key")
        return dict(pairs)

    def no_constants(name: str) -> NoReturn:
        raise InvalidInput(where, raw.strip(), f"{name} is not valid JSON")

    try:
        obj = json.loads(raw, object_pairs_hook=no_duplicates, parse_constant=no_constants)
    except json.JSONDecodeError as exc:
        raise InvalidInput(where, raw.strip(), f"not valid JSON: {exc.msg}") from exc
    if not isinstance(obj, dict):
        raise InvalidInput(where, obj, "expected a JSON object")
    return obj


def _parse_ts(value: object, field: str) -> dt.datetime:
    """Return ``value`` as a tz-aware datetime; raises InvalidInput otherwise."""
    if not isinstance(value, str):
        raise InvalidInput(field, value, "must be an ISO 8601 string")
    try:
        ts = dt.datetime.fromisoformat(value)
    except ValueError as exc:
        raise InvalidInput(field, value, "not an ISO 8601 timestamp") from exc
    if ts.tzinfo is None:  # fromisoformat gives a fixed offset or none
        raise InvalidInput(field, value, "has no UTC offset")
    return ts
