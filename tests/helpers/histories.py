"""A period's attempts written as a short history, for the property tests that compare a
reader in proportion to what is wrong with the per-period judgement it replaced
(tests/report/test_summary.py, tests/report/test_freshness_fleet.py)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

import gatekeeper as gk
from gatekeeper.core.causes import Requirement
from gatekeeper.core.periods import Period
from gatekeeper.core.schedule import Schedule
from gatekeeper.report.windows import JobWindow

#: how long before ``now`` an attempt began (a lease of 60 s has run out by ``now``)
BEGAN = dt.timedelta(seconds=120)


def write_history(
    ledger: gk.Ledger,
    job: str,
    keys: list[str],
    held: list[tuple[str, ...]],
    now: dt.datetime,
) -> None:
    """Each of ``keys`` given the attempts of ``held`` (by position), oldest first:
    ``running`` (a live lease at ``now``), ``expired`` (a lease that ran out), ``unleased``
    (recorded running with no lease), ``published`` (an attempt that published its period,
    its upstream ``Src<job>`` succeeded, then succeeded), else that terminal state."""
    for key, attempts in zip(keys, held, strict=False):
        for n, outcome in enumerate(attempts, start=1):
            run_id = f"{job}-{key}-{n}"
            began = now - BEGAN
            if outcome in ("running", "expired"):
                lease = 3600 if outcome == "running" else 60
                ledger.begin_attempt(job, key, run_id, lease_seconds=lease, attempt=n, now=began)
            elif outcome == "published":
                ledger.begin_attempt(job, key, run_id, lease_seconds=3600, attempt=n, now=began)
                ledger.record(f"Src{job}", key, 1, f"Src{job}-{key}", "succeeded", began, now=began)
                ledger.publish(job, key, [f"Src{job}"], "fp", producer=run_id, now=began)
                ledger.record(job, key, n, run_id, "succeeded", began, now=began)
            else:
                state = "running" if outcome == "unleased" else outcome
                ledger.record(job, key, n, run_id, state, now - dt.timedelta(hours=1))


@dataclass(frozen=True, slots=True)
class History:
    """A job's attempts (``held``) and its one upstream's (``upstream``) over the first
    periods of ``kind`` from ``first``, and the window a test reads them over: ``stop``
    periods after the first (None: open), its catch-up and lateness, and whether it runs on
    through the job's last recorded period (``through``)."""

    kind: Period
    first: str
    held: list[tuple[str, ...]]
    upstream: list[tuple[str, ...]]
    stop: int | None
    catchup: str
    lateness: str
    through: bool
    zone: str = "UTC"


def write_window(
    ledger: gk.Ledger, history: History, now: dt.datetime, size: int = 14
) -> tuple[str, JobWindow]:
    """Write ``history`` over its first ``size`` periods for a new job and its upstream, as
    seen at ``now``; return the job and its window (requiring the upstream)."""
    kind = history.kind
    start = kind.rank(history.first)
    keys = [kind.key(kind.at(start + i)) for i in range(size)]
    job, up = f"Job{uuid.uuid4().hex[:8]}", f"Up{uuid.uuid4().hex[:8]}"
    write_history(ledger, job, keys, history.held, now)
    write_history(ledger, up, keys, history.upstream, now)
    stop = history.stop
    schedule = Schedule.parse(
        start=keys[0],
        stop=None if stop is None else kind.key(kind.at(start + stop)),
        period=kind,
        calendar=kind.calendar.name,
        timezone=history.zone,
        lateness=history.lateness,
        catchup=history.catchup,
    )
    recorded = [k for k, h in zip(keys, history.held, strict=False) if h]
    last = recorded[-1] if recorded and history.through else None
    return job, JobWindow(schedule, (Requirement(up),), last)
