"""A ledger with one repaired upstream: ``Report`` publishes each day on ``Orders`` and
``Other`` on ``Customers`` (both as succeeded attempts of their own), then ``Orders``
2026-10-22 is repaired (attempt 2), so ``Report``'s 2026-10-22 is stale and nothing of
``Other`` is. What status, the report, serve and /metrics show of a stale period."""

from __future__ import annotations

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
