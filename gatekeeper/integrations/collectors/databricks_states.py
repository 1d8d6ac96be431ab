"""The Databricks state map: a run's raw (lifecycle, outcome) readings -> what the run was.

One table, ``STATE_MAP``; a value not in it is never interpreted (``map_state`` returns None
and the collector reports the raw values). A run Databricks never executed (skipped, disabled,
refused by a queue or concurrency limit) maps to ``NOT_EXECUTED``: it processed nothing, so it
is reported and never becomes an attempt. Pure.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from gatekeeper.core.records import RunState


class NotExecuted(str, enum.Enum):
    """What a run that Databricks never executed maps to: not a ledger state."""

    NOT_EXECUTED = "not_executed"


RUNNING, SUCCEEDED, FAILED = RunState.RUNNING, RunState.SUCCEEDED, RunState.FAILED
NOT_EXECUTED = NotExecuted.NOT_EXECUTED
ANY = "*"  # in STATE_MAP: whatever the outcome field holds, or none

#: What one reading maps to: a ledger state, or NOT_EXECUTED (reported, never an attempt).
Mapped = RunState | NotExecuted

#: The one state table: (field, lifecycle state, outcome) -> what the run was. ``state`` rows
#: read ``state.life_cycle_state`` and ``state.result_state`` (databricks-sdk's
#: RunLifeCycleState and RunResultState); ``status`` rows read the newer ``status.state`` and
#: ``status.termination_details.code`` (RunLifecycleStateV2State and TerminationCodeCode). An
#: exact outcome row wins over an ``ANY`` row. A value not in the table is never interpreted
#: (see ``map_state``). The rule for NOT_EXECUTED: Databricks says the run was skipped or never
#: started, as a whole; a code that a multi-task run can reach after some of its tasks ran
#: (an error, a cluster or workspace limit met by a later task) is FAILED (fail closed).
STATE_MAP: Mapping[tuple[str, str, str], Mapped] = MappingProxyType(
    {
        # -- state.life_cycle_state (RunLifeCycleState) -----------------------------------------
        ("state", "QUEUED", ANY): RUNNING,  # triggered, waiting in the job's queue: blocks the gate
        ("state", "PENDING", ANY): RUNNING,  # its cluster and context are being prepared
        ("state", "RUNNING", ANY): RUNNING,  # executing
        ("state", "TERMINATING", ANY): RUNNING,  # done, cleaning up: the outcome is not final
        ("state", "BLOCKED", ANY): RUNNING,  # waiting on an upstream dependency
        ("state", "WAITING_FOR_RETRY", ANY): RUNNING,  # failed, its retry policy will rerun it
        ("state", "SKIPPED", ANY): NOT_EXECUTED,  # aborted: a previous run of the job was active
        ("state", "INTERNAL_ERROR", ANY): FAILED,  # the Jobs service failed; may have run part
        # -- state.result_state once TERMINATED (RunResultState) --------------------------------
        ("state", "TERMINATED", "SUCCESS"): SUCCEEDED,  # completed successfully
        ("state", "TERMINATED", "FAILED"): FAILED,  # completed with an error
        ("state", "TERMINATED", "TIMEDOUT"): FAILED,  # stopped at its timeout, part done
        ("state", "TERMINATED", "CANCELED"): FAILED,  # canceled at user request, part done
        ("state", "TERMINATED", "SUCCESS_WITH_FAILURES"): FAILED,  # some tasks failed
        ("state", "TERMINATED", "UPSTREAM_FAILED"): FAILED,  # its own earlier tasks ran, failed
        ("state", "TERMINATED", "UPSTREAM_CANCELED"): FAILED,  # its earlier tasks ran, canceled
        ("state", "TERMINATED", "MAXIMUM_CONCURRENT_RUNS_REACHED"): NOT_EXECUTED,  # skipped: limit
        ("state", "TERMINATED", "EXCLUDED"): NOT_EXECUTED,  # skipped: its condition was not met
        ("state", "TERMINATED", "DISABLED"): NOT_EXECUTED,  # skipped: disabled by a user
        # -- status.state (RunLifecycleStateV2State) --------------------------------------------
        ("status", "QUEUED", ANY): RUNNING,  # waiting in the job's queue
        ("status", "PENDING", ANY): RUNNING,  # its cluster and context are being prepared
        ("status", "RUNNING", ANY): RUNNING,  # executing
        ("status", "TERMINATING", ANY): RUNNING,  # cleaning up: the outcome is not final
        ("status", "BLOCKED", ANY): RUNNING,  # waiting on an upstream dependency
        ("status", "WAITING", ANY): RUNNING,  # status's name for WAITING_FOR_RETRY
        # -- status.termination_details.code once TERMINATED (TerminationCodeCode) --------------
        ("status", "TERMINATED", "SUCCESS"): SUCCEEDED,  # completed successfully
        ("status", "TERMINATED", "SUCCESS_WITH_FAILURES"): FAILED,  # some child runs failed
        ("status", "TERMINATED", "RUN_EXECUTION_ERROR"): FAILED,  # completed with task failures
        ("status", "TERMINATED", "USER_CANCELED"): FAILED,  # canceled during execution by a user
        ("status", "TERMINATED", "CANCELED"): FAILED,  # canceled by Databricks (max duration)
        ("status", "TERMINATED", "INTERNAL_ERROR"): FAILED,  # an unexpected error
        ("status", "TERMINATED", "DRIVER_ERROR"): FAILED,  # lost its Spark driver
        ("status", "TERMINATED", "CLUSTER_ERROR"): FAILED,  # its cluster failed
        ("status", "TERMINATED", "CLOUD_FAILURE"): FAILED,  # the cloud provider failed
        ("status", "TERMINATED", "STORAGE_ACCESS_ERROR"): FAILED,  # blob storage failed
        ("status", "TERMINATED", "UNAUTHORIZED_ERROR"): FAILED,  # a permission was missing
        ("status", "TERMINATED", "RESOURCE_NOT_FOUND"): FAILED,  # a resource it needs is gone
        ("status", "TERMINATED", "FEATURE_DISABLED"): FAILED,  # used a feature not available
        ("status", "TERMINATED", "BREAKING_CHANGE"): FAILED,  # a Spark change broke it (retried)
        ("status", "TERMINATED", "INVALID_CLUSTER_REQUEST"): FAILED,  # a task's cluster refused
        ("status", "TERMINATED", "INVALID_RUN_CONFIGURATION"): FAILED,  # a configuration error
        ("status", "TERMINATED", "LIBRARY_INSTALLATION_ERROR"): FAILED,  # a library failed
        ("status", "TERMINATED", "REPOSITORY_CHECKOUT_FAILED"): FAILED,  # a git checkout failed
        ("status", "TERMINATED", "CLUSTER_TERMINATED_BY_USER"): FAILED,  # its cluster was stopped
        # a limit a later task of the run can meet after earlier tasks ran (fail closed):
        ("status", "TERMINATED", "CLUSTER_REQUEST_LIMIT_EXCEEDED"): FAILED,  # cluster rate limit
        ("status", "TERMINATED", "MAX_SPARK_CONTEXTS_EXCEEDED"): FAILED,  # cluster's contexts full
        ("status", "TERMINATED", "WORKSPACE_RUN_LIMIT_EXCEEDED"): FAILED,  # workspace's task quota
        ("status", "TERMINATED", "BUDGET_POLICY_LIMIT_EXCEEDED"): FAILED,  # its budget policy
        ("status", "TERMINATED", "MAX_CONCURRENT_RUNS_EXCEEDED"): NOT_EXECUTED,  # job's limit
        ("status", "TERMINATED", "MAX_JOB_QUEUE_SIZE_EXCEEDED"): NOT_EXECUTED,  # queue was full
        ("status", "TERMINATED", "SKIPPED"): NOT_EXECUTED,  # never executed (condition, none)
        ("status", "TERMINATED", "DISABLED"): NOT_EXECUTED,  # never executed: disabled by a user
    }
)


def map_state(field: str, lifecycle: Any, outcome: Any) -> Mapped | None:
    """What one raw (lifecycle, outcome) reading of ``field`` maps to, or None when
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


def resolve_state(item: Mapping[str, Any]) -> tuple[Mapped | None, str]:
    """(what the run or repair entry was, the raw values read); None when a reading is not in
    STATE_MAP, the two readings disagree (the raw text then says so), or there is none
    (pure)."""
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
