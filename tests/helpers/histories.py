"""A period's attempts written as a short history, for the property tests that compare a
reader in proportion to what is wrong with the per-period judgement it replaced
(tests/report/test_summary.py, tests/report/test_freshness_fleet.py)."""

from __future__ import annotations

import datetime as dt

import gatekeeper as gk

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
