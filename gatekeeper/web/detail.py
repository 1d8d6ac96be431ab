"""Serve's period panel: one period of a job, every attempt and every publication revision,
with the state ``gatekeeper status`` judges it in, why it waits and whether its publication
is stale (reads only)."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Sequence
from typing import Any

from gatekeeper.core.periods import parse_period_key
from gatekeeper.core.records import Attempt, Publication, RunState, Staleness
from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.report.states import PeriodState, window_states
from gatekeeper.report.windows import JobWindow
from gatekeeper.web.views import check_job, window_of


def period_detail(ledger: LedgerReads, job: str, period: str, now: dt.datetime) -> dict[str, Any]:
    """Every attempt of ``job`` for ``period`` and every revision of its publication (with
    each upstream of its evidence). Reads only; raises InvalidInput / UnknownJob."""
    job = check_job(ledger, job)
    found = window_of(ledger, job)
    kind = found.schedule.period
    key = parse_period_key(period, kind, "period")
    return {
        "job": job,
        "period": key,
        "kind": kind.name,
        **period_cause(ledger, job, key, found, now),
        "attempts": [attempt_json(a, now) for a in ledger.attempts(job, key)],
        "publications": [publication_json(p) for p in ledger.publications(job, key)],
    }


def period_cause(
    ledger: LedgerReads, job: str, key: str, found: JobWindow, now: dt.datetime
) -> dict[str, Any]:
    """The state of ``job``'s period ``key`` as ``gatekeeper status`` judges it, and why it
    waits: ``blocked_by`` (the upstream's cause, state ``blocked``), ``held_by`` (its own
    attempt running on a live lease: run ID, attempt, until) and ``cause``, one line saying
    either (None otherwise); and whether its publication is stale (``stale_json``). A few
    queries; reads only."""
    kind = found.schedule.period
    label = kind.parse(key, "start")
    one = dataclasses.replace(found.schedule, start=label, stop=kind.at(kind.rank(label) + 1))
    _, states = window_states(
        ledger, job, now=now, task_limit=None, window=dataclasses.replace(found, schedule=one)
    )
    status = next((s for s in states if s.period == key), None)
    if status is None:
        return {"state": None, "blocked_by": None, "held_by": None, "cause": None, **stale_json(())}
    blocked = status.cause if status.state is PeriodState.BLOCKED else None
    held = None
    if status.state is PeriodState.RUNNING and status.lease_expires_at is not None:
        until = status.lease_expires_at.isoformat()
        held = {"run_id": status.run_id, "attempt": status.attempt, "until": until}
    cause = None
    if blocked is not None:
        cause = f"blocked: {blocked.describe()}"
    elif held is not None:
        cause = f"held by run {held['run_id']} (attempt {held['attempt']}) until {until}"
    return {
        "state": status.state.value,
        "blocked_by": None if blocked is None else blocked.to_json(),
        "held_by": held,
        "cause": cause,
        **stale_json(status.stale),
    }


def stale_json(stale: Sequence[Staleness]) -> dict[str, Any]:
    """``stale`` (each upstream pair that changed since the period's publication: job,
    period, old and new attempt; empty when it is not stale) and ``stale_reason``, the line
    the panel shows (``stale: upstream Orders 2026-10-22 attempt 1 → 2``; None)."""
    reason = "; ".join(entry.change for entry in stale)
    return {
        "stale": [entry.upstream_json() for entry in stale],
        "stale_reason": f"stale: {reason}" if reason else None,
    }


def attempt_json(attempt: Attempt, now: dt.datetime) -> dict[str, Any]:
    """One attempt: state (a running one past its lease is ``abandoned``), run ID, start,
    finish, duration (to ``now`` while running), lease, error and the reason it was asked
    for (``--rerun``)."""
    running = attempt.state is RunState.RUNNING
    finished = None if running else attempt.updated_at
    state = attempt.state.value
    if running and not attempt.lease_live(now):
        state = "abandoned"
    lease = attempt.lease_expires_at
    return {
        "attempt": attempt.attempt,
        "state": state,
        "recorded_state": attempt.state.value,
        "run_id": attempt.run_id,
        "started_at": attempt.started_at.isoformat(),
        "finished_at": None if finished is None else finished.isoformat(),
        "duration_seconds": ((finished or now) - attempt.started_at).total_seconds(),
        "lease_expires_at": None if lease is None else lease.isoformat(),
        "lease_live": attempt.lease_live(now),
        "error": attempt.error,
        "reason": attempt.reason,
    }


def publication_json(pub: Publication) -> dict[str, Any]:
    """One publication revision: reason, fingerprint, producer and each upstream run of its
    evidence (job, period, run ID, attempt, watermark)."""
    return {
        "revision": pub.revision,  # newest first (ledger.publications)
        "published_at": pub.published_at.isoformat(),
        "reason": pub.reason,
        "fingerprint": pub.fingerprint,
        "location": pub.location,
        "producer": {"run_id": pub.run_id, "attempt": pub.attempt},
        "required_jobs": list(pub.required_jobs),
        "evidence": [
            {
                "job": item.job,
                "period": item.business_date,
                "run_id": item.run_id,
                "attempt": item.attempt,
                "watermark": None if item.watermark is None else item.watermark.isoformat(),
            }
            for item in pub.items
        ],
    }
