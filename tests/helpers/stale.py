"""A ledger with one repaired upstream: ``Report`` publishes each day on ``Orders`` and
``Other`` on ``Customers`` (both as succeeded attempts of their own), then ``Orders``
2026-10-22 is repaired (attempt 2), so ``Report``'s 2026-10-22 is stale and nothing of
``Other`` is. What status, the report, serve and /metrics show of a stale period."""

from __future__ import annotations

import datetime as dt

import gatekeeper as gk
from tests.helpers.ledgers import succeed

DAYS = [f"2026-10-{day}" for day in range(18, 25)]
STALE_DAY = "2026-10-22"
CHANGE = f"upstream Orders {STALE_DAY} attempt 1 → 2"


def repaired_upstream(ledger: gk.Ledger) -> None:
    """Write the scenario of the module."""
    for day in DAYS:
        for upstream, consumer in (("Orders", "Report"), ("Customers", "Other")):
            succeed(ledger, upstream, day, run_id=f"{upstream}-{day}-1")
            succeed(ledger, consumer, day, run_id=f"{consumer}-{day}-1")
            ledger.publish(consumer, day, [upstream], f"fp-{consumer}-{day}")
    succeed(ledger, "Orders", STALE_DAY, attempt=2, run_id=f"Orders-{STALE_DAY}-2")


def long_repaired_upstream(ledger: gk.Ledger, days: int = 80, repaired: int = 40) -> list[str]:
    """``Report`` published every day of ``days`` days from 2026-01-01 on ``Orders``, then
    ``Orders``' day number ``repaired`` repaired: one stale period inside a long run of
    complete ones. Returns the days' keys."""
    keys = [f"{d:%Y-%m-%d}" for d in (dt.date(2026, 1, 1) + dt.timedelta(n) for n in range(days))]
    for day in keys:
        succeed(ledger, "Orders", day, run_id=f"Orders-{day}-1")
        succeed(ledger, "Report", day, run_id=f"Report-{day}-1")
        ledger.publish("Report", day, ["Orders"], f"fp-Report-{day}")
    succeed(ledger, "Orders", keys[repaired], attempt=2, run_id=f"Orders-{keys[repaired]}-2")
    return keys
