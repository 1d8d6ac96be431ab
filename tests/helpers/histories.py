"""A period's attempts written as a short history, for the property tests that compare a
reader in proportion to what is wrong with the per-period judgement it replaced
(tests/report/test_summary.py, tests/report/test_freshness_fleet.py)."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.causes import Requirement
from gatekeeper.core.periods import DAILY, HOURLY, MONTHLY, Period
from gatekeeper.core.schedule import Schedule
from gatekeeper.report.windows import JobWindow

#: how long before ``now`` an attempt began (a lease of 60 s has run out by ``now``)
BEGAN = dt.timedelta(seconds=120)
HOURS_3 = dt.timedelta(hours=3)  # ``now`` is this far into its step
#: kind, the first period of the cases, and the step of ``now`` past it
KINDS: dict[str, tuple[Period, str, dt.timedelta]] = {
    "daily": (DAILY, "2026-10-01", dt.timedelta(days=1)),
    "weekdays": (DAILY.on("weekdays"), "2026-10-01", dt.timedelta(days=1)),
    "hourly": (HOURLY, "2026-10-01T00", dt.timedelta(hours=1)),
    "monthly": (MONTHLY, "2026-01", dt.timedelta(days=31)),
}
#: what a period holds: its attempts, oldest first ("running": a live lease at ``now``,
#: "expired": a lease that ran out, "unleased": recorded running with no lease)
OUTCOMES = (
    (),
    ("succeeded",),
    ("failed",),
    ("failed", "succeeded"),
    ("succeeded", "failed"),
    ("abandoned",),
    ("running",),
    ("expired",),
    ("unleased",),
)


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
    its upstream ``Src<job>`` succeeded, then succeeded), ``stale`` (``published``, then
    ``Src<job>`` repaired: a second attempt succeeded, so the publication is stale), else
    that terminal state."""
    for key, attempts in zip(keys, held, strict=False):
        for n, outcome in enumerate(attempts, start=1):
            run_id = f"{job}-{key}-{n}"
            began = now - BEGAN
            if outcome in ("running", "expired"):
                lease = 3600 if outcome == "running" else 60
                ledger.begin_attempt(job, key, run_id, lease_seconds=lease, attempt=n, now=began)
            elif outcome in ("published", "stale"):
                ledger.begin_attempt(job, key, run_id, lease_seconds=3600, attempt=n, now=began)
                ledger.record(f"Src{job}", key, 1, f"Src{job}-{key}", "succeeded", began, now=began)
                ledger.publish(job, key, [f"Src{job}"], "fp", producer=run_id, now=began)
                ledger.record(job, key, n, run_id, "succeeded", began, now=began)
                if outcome == "stale":
                    src = f"Src{job}-{key}-2"
                    ledger.record(f"Src{job}", key, 2, src, "succeeded", began, now=began)
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


@st.composite
def histories(
    draw: st.DrawFn, held: st.SearchStrategy[list[tuple[str, ...]]], most: int = 16
) -> tuple[History, dt.datetime]:
    """A History of one of KINDS whose job's and upstream's periods hold what ``held``
    draws, its window stopping within ``most`` periods (or open), and the ``now`` it is seen
    at (up to ``most`` steps past its first period)."""
    kind, first, step = KINDS[draw(st.sampled_from(sorted(KINDS)))]
    now = kind.interval(kind.at(kind.rank(first)), "UTC").start
    now += draw(st.integers(0, most)) * step + HOURS_3
    history = History(
        kind,
        first,
        draw(held),
        draw(held),
        draw(st.none() | st.integers(0, most)),
        draw(st.sampled_from(["all", "none", "last:3"])),
        draw(st.sampled_from(["0s", "2h"])),
        draw(st.booleans()),
    )
    return history, now
