"""Fail-closed restart planning over the ledger: one pipeline's stages are jobs (reads only).

A pipeline is an ordered list of job IDs (stage 1 feeds stage 2, ...). For one business date,
each stage's status is the latest attempt of its job for that date:

=====================================  ===============
latest attempt                         stage status
=====================================  ===============
none                                   ``not_started``
``succeeded``                          ``succeeded``
``failed`` or ``abandoned``            ``failed``
``running``, lease expired (<= now)    ``stalled``
``running``, live lease or no lease    ``running``
=====================================  ===============

``plan_recovery_from_ledger`` builds the summary ``gatekeeper.core.recovery.plan_recovery`` reads,
lets it plan, and names the jobs in the result. Refusals name the date, job, attempt and run ID.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import InvalidInput, RecoveryNotSafe
from gatekeeper.core.periods import period_key
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.recovery import (
    FAILED,
    NOT_STARTED,
    RUNNING,
    STALLED,
    SUCCEEDED,
    plan_recovery,
)

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads

_STATUS_OF_STATE = {
    RunState.SUCCEEDED: SUCCEEDED,
    RunState.FAILED: FAILED,
    RunState.ABANDONED: FAILED,
}


def plan_recovery_from_ledger(
    ledger: LedgerReads,
    stages: Any,
    business_date: Any,
    verified_stage_outputs: Iterable[int],
    *,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """Propose how to restart the pipeline ``stages`` for ``business_date``; reads only.

    ``stages`` is the ordered list of job IDs; ``verified_stage_outputs`` the stage numbers
    (1-based) whose outputs an operator checked, which must be exactly the skipped prefix.
    ``now`` (tz-aware, default the current time) decides whether a running lease expired.

    Returns ``plan_recovery``'s dict (``action``, ``restart_at_stage``, ``skipped_stages``,
    unchanged) plus ``restart_at_job`` (a job ID or None), ``skipped_jobs``, ``business_date``
    and ``stages`` (per stage: number, job, status, and the latest attempt's ordinal, state,
    run ID and lease expiry, or None).

    Raises InvalidInput (naming ``stages``, ``business_date`` or ``now``) for bad arguments;
    RecoveryNotSafe when a stage is running or stalled, or ``plan_recovery`` refuses;
    LedgerError when the ledger cannot be read.
    """
    jobs = check_stages(stages)
    period = period_key(business_date)
    at = utc_now(now)
    views = [
        stage_view(number, job, ledger.latest(job, period), at)
        for number, job in enumerate(jobs, start=1)
    ]
    _refuse_active(views, period)
    summary = {
        "expected_stages": len(views),
        "runs": [
            {
                "run_id": period,
                "stages": [{"stage": v["stage"], "status": v["status"]} for v in views],
            }
        ],
    }
    try:
        plan = plan_recovery(summary, period, verified_stage_outputs)
    except RecoveryNotSafe as exc:
        raise RecoveryNotSafe(f"{exc}; {describe_stages(views)}") from exc
    restart_at = plan["restart_at_stage"]
    return {
        **plan,
        "restart_at_job": None if restart_at is None else jobs[restart_at - 1],
        "skipped_jobs": [jobs[n - 1] for n in plan["skipped_stages"]],
        "business_date": period,
        "stages": views,
    }


def check_stages(stages: Any) -> list[str]:
    """Return ``stages`` as a list of job IDs; raises InvalidInput naming ``stages``.

    Accepts a non-empty list or tuple (ordered: sets are refused) of unique, non-empty strings
    without surrounding blanks.
    """
    if not isinstance(stages, (list, tuple)):
        raise InvalidInput("stages", stages, "expected an ordered list of job IDs")
    if not stages:
        raise InvalidInput("stages", stages, "at least one stage is needed")
    seen: set[str] = set()
    for index, job in enumerate(stages):
        if not isinstance(job, str) or not job.strip() or job != job.strip():
            raise InvalidInput(
                "stages", stages, f"stage {index + 1} ({job!r}) is not a non-empty job ID"
            )
        if job in seen:
            raise InvalidInput("stages", stages, f"job {job!r} is listed more than once")
        seen.add(job)
    return list(stages)


def stage_status(attempt: Attempt | None, now: dt.datetime) -> str:
    """Return the stage status of a job whose latest attempt is ``attempt`` (pure)."""
    if attempt is None:
        return NOT_STARTED
    if attempt.state is RunState.RUNNING:
        expired = attempt.lease_expires_at is not None and not attempt.lease_live(now)
        return STALLED if expired else RUNNING
    return _STATUS_OF_STATE[attempt.state]


def stage_view(number: int, job: str, attempt: Attempt | None, now: dt.datetime) -> dict[str, Any]:
    """Return one stage of the result: its number, job, status and latest attempt (pure)."""
    lease = attempt.lease_expires_at if attempt else None
    return {
        "stage": number,
        "job": job,
        "status": stage_status(attempt, now),
        "attempt": attempt.attempt if attempt else None,
        "state": attempt.state.value if attempt else None,
        "run_id": attempt.run_id if attempt else None,
        "lease_expires_at": lease.isoformat() if lease else None,
    }


def describe_stage(view: dict[str, Any]) -> str:
    """``stage 2 GoldCampaignDaily: attempt 1 failed (run ID r-2)`` or ``...: not started``.

    A stalled stage also gives its lease expiry.
    """
    head = f"stage {view['stage']} {view['job']}"
    if view["attempt"] is None:
        return f"{head}: not started"
    text = f"{head}: attempt {view['attempt']} {view['state']} (run ID {view['run_id']})"
    return text + (
        f", lease expired at {view['lease_expires_at']}" if view["status"] == STALLED else ""
    )


def describe_stages(views: Iterable[dict[str, Any]]) -> str:
    """Every stage described, separated by semicolons."""
    return "; ".join(describe_stage(v) for v in views)


def _refuse_active(views: list[dict[str, Any]], period: str) -> None:
    """Raise RecoveryNotSafe naming the first running or stalled stage, if any."""
    for view in views:
        status, lease = view["status"], view["lease_expires_at"]
        if status == STALLED:
            why = (
                f"its lease expired at {lease} but it is still recorded running (a dead "
                "worker?); starting the next attempt records it abandoned"
            )
        elif status == RUNNING and lease is None:
            why = "it is running without a lease; record its outcome, then plan again"
        elif status == RUNNING:
            why = f"it holds a live lease until {lease}; wait for it to finish"
        else:
            continue
        raise RecoveryNotSafe(
            f"{period}: stage {view['stage']} {view['job']} attempt {view['attempt']} "
            f"(run ID {view['run_id']}) is {status}: {why}; no restart can be planned"
        )
