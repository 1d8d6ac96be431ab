"""The Databricks state map: a run's raw (lifecycle, outcome) readings -> a ledger state.

One table, ``STATE_MAP``; a value not in it is never interpreted (``map_state`` returns None
and the collector reports the raw values). Pure.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gatekeeper.core.records import RunState

RUNNING, SUCCEEDED, FAILED = RunState.RUNNING, RunState.SUCCEEDED, RunState.FAILED
ANY = "*"  # in STATE_MAP: whatever the outcome field holds, or none

#: The one state table: (field, lifecycle state, outcome) -> ledger state. ``state`` rows read
#: ``state.life_cycle_state`` and ``state.result_state``; ``status`` rows read the newer
#: ``status.state`` and ``status.termination_details.code``. An exact outcome row wins over an
#: ``ANY`` row. A value not in the table is never interpreted (see ``map_state``).
STATE_MAP: Mapping[tuple[str, str, str], RunState] = MappingProxyType(
    {
        ("state", "PENDING", ANY): RUNNING,
        ("state", "QUEUED", ANY): RUNNING,
        ("state", "RUNNING", ANY): RUNNING,
        ("state", "TERMINATING", ANY): RUNNING,
        ("state", "BLOCKED", ANY): RUNNING,
        ("state", "WAITING_FOR_RETRY", ANY): RUNNING,
        ("state", "TERMINATED", "SUCCESS"): SUCCEEDED,
        ("state", "TERMINATED", "FAILED"): FAILED,
        ("state", "TERMINATED", "TIMEDOUT"): FAILED,
        ("state", "TERMINATED", "CANCELED"): FAILED,
        ("state", "TERMINATED", "UPSTREAM_FAILED"): FAILED,
        ("state", "TERMINATED", "UPSTREAM_CANCELED"): FAILED,
        ("state", "TERMINATED", "MAXIMUM_CONCURRENT_RUNS_REACHED"): FAILED,
        ("state", "TERMINATED", "SUCCESS_WITH_FAILURES"): FAILED,
        ("state", "SKIPPED", ANY): FAILED,
        ("state", "INTERNAL_ERROR", ANY): FAILED,
        ("status", "PENDING", ANY): RUNNING,
        ("status", "QUEUED", ANY): RUNNING,
        ("status", "RUNNING", ANY): RUNNING,
        ("status", "TERMINATING", ANY): RUNNING,
        ("status", "BLOCKED", ANY): RUNNING,
        ("status", "WAITING", ANY): RUNNING,  # status's name for WAITING_FOR_RETRY
        ("status", "TERMINATED", "SUCCESS"): SUCCEEDED,
        ("status", "TERMINATED", "RUN_EXECUTION_ERROR"): FAILED,
        ("status", "TERMINATED", "CANCELED"): FAILED,
        ("status", "TERMINATED", "USER_CANCELED"): FAILED,
        ("status", "TERMINATED", "SKIPPED"): FAILED,
        ("status", "TERMINATED", "INTERNAL_ERROR"): FAILED,
        ("status", "TERMINATED", "SUCCESS_WITH_FAILURES"): FAILED,
        ("status", "TERMINATED", "MAX_CONCURRENT_RUNS_EXCEEDED"): FAILED,
        ("status", "TERMINATED", "MAX_JOB_QUEUE_SIZE_EXCEEDED"): FAILED,
        ("status", "TERMINATED", "MAX_SPARK_CONTEXTS_EXCEEDED"): FAILED,
        ("status", "TERMINATED", "WORKSPACE_RUN_LIMIT_EXCEEDED"): FAILED,
        ("status", "TERMINATED", "BUDGET_POLICY_LIMIT_EXCEEDED"): FAILED,
        ("status", "TERMINATED", "DRIVER_ERROR"): FAILED,
        ("status", "TERMINATED", "CLUSTER_ERROR"): FAILED,
        ("status", "TERMINATED", "CLOUD_FAILURE"): FAILED,
        ("status", "TERMINATED", "CLUSTER_REQUEST_LIMIT_EXCEEDED"): FAILED,
        ("status", "TERMINATED", "INVALID_CLUSTER_REQUEST"): FAILED,
        ("status", "TERMINATED", "INVALID_RUN_CONFIGURATION"): FAILED,
        ("status", "TERMINATED", "LIBRARY_INSTALLATION_ERROR"): FAILED,
        ("status", "TERMINATED", "REPOSITORY_CHECKOUT_FAILED"): FAILED,
        ("status", "TERMINATED", "STORAGE_ACCESS_ERROR"): FAILED,
        ("status", "TERMINATED", "UNAUTHORIZED_ERROR"): FAILED,
        ("status", "TERMINATED", "RESOURCE_NOT_FOUND"): FAILED,
        ("status", "TERMINATED", "FEATURE_DISABLED"): FAILED,
        ("status", "TERMINATED", "BREAKING_CHANGE"): FAILED,
    }
)


def map_state(field: str, lifecycle: Any, outcome: Any) -> RunState | None:
    """The ledger state of one raw (lifecycle, outcome) reading of ``field``, or None when
    STATE_MAP has no row for it (pure)."""
    if not isinstance(lifecycle, str):
        return None
    if isinstance(outcome, str) and (field, lifecycle, outcome) in STATE_MAP:
        return STATE_MAP[(field, lifecycle, outcome)]
    return STATE_MAP.get((field, lifecycle, ANY))


def readings(item: Mapping[str, Any]) -> list[tuple[str, Any, Any]]:
    """The raw (field, lifecycle, outcome) readings of a run or repair history entry."""
    found = []
    state = item.get("state")
    if isinstance(state, Mapping):
        found.append(("state", state.get("life_cycle_state"), state.get("result_state")))
    status = item.get("status")
    if isinstance(status, Mapping):
        details = status.get("termination_details")
        code = details.get("code") if isinstance(details, Mapping) else None
        found.append(("status", status.get("state"), code))
    return found


def resolve_state(item: Mapping[str, Any]) -> tuple[RunState | None, str]:
    """(ledger state, the raw values read) of a run or repair entry; the state is None when a
    reading is not in STATE_MAP, the two readings disagree (the raw text then says so), or
    there is none (pure)."""
    found = readings(item)
    names = {
        "state": ("life_cycle_state", "result_state"),
        "status": ("state", "termination_details.code"),
    }
    raw = (
        ", ".join(
            f"{f}.{names[f][0]}={json.dumps(life)} {f}.{names[f][1]}={json.dumps(out)}"
            for f, life, out in found
        )
        or "no state or status"
    )
    mapped = {map_state(*reading) for reading in found}
    if not found or None in mapped:
        return None, f"state not in the map: {raw}"
    if len(mapped) != 1:
        return None, f"state and status disagree: {raw}"
    return mapped.pop(), raw
