"""The backfill-is-not-today scenario, on a temporary SQLite ledger (``gatekeeper demo``)."""

from __future__ import annotations

import datetime as dt
import tempfile
import uuid
from pathlib import Path
from typing import Any

from gatekeeper.core.records import fingerprint
from gatekeeper.ledger import open_ledger

DIMENSIONS = ("DimCustomer", "DimProduct")
CONSUMER = "DailySalesLoad"
TODAY = "2026-10-23"
BACKFILLED = "2026-10-16"
RAN_AT = dt.datetime(2026, 10, 23, 7, 0, tzinfo=dt.timezone.utc)

INTRO = [
    f"Scenario: {CONSUMER} publishes the sales total of business date {TODAY} only once",
    f"{' and '.join(DIMENSIONS)} have succeeded for that same date. It runs on a temporary",
    "SQLite ledger, deleted at the end. Each step shows its result, then what was expected.",
    "",
]


def run_demo() -> list[str]:
    """Run the scenario and return its report: each step, its result and what it shows.

    Writes only to a temporary ledger, removed before returning.
    """
    with tempfile.TemporaryDirectory(prefix="gatekeeper-demo-") as tmp:
        with open_ledger(f"sqlite:///{Path(tmp) / 'demo.db'}") as ledger:
            for job in DIMENSIONS:
                ledger.record(job, BACKFILLED, 1, uuid.uuid4().hex, "succeeded", RAN_AT)
            backfill_counts = bool(ledger.readiness(DIMENSIONS, TODAY))
            for job in DIMENSIONS:
                ledger.record(job, TODAY, 1, uuid.uuid4().hex, "succeeded", RAN_AT)
            ready = bool(ledger.readiness(DIMENSIONS, TODAY))
            payload = {"cents": 17500}

            def write(conn: Any) -> None:
                conn.execute(
                    "CREATE TABLE IF NOT EXISTS sales_totals "
                    "(business_date TEXT PRIMARY KEY, cents INTEGER NOT NULL)"
                )
                conn.execute("INSERT INTO sales_totals VALUES (?, ?)", (TODAY, payload["cents"]))

            first = ledger.publish(CONSUMER, TODAY, DIMENSIONS, fingerprint(payload), write)
            again = ledger.publish(CONSUMER, TODAY, DIMENSIONS, fingerprint(payload), write)
    return INTRO + [
        f"1. On {TODAY} at 07:00 UTC both dimensions finish a backfill of {BACKFILLED}.",
        f"   Backfill completed today: {backfill_counts}",
        f"   -> expected False: a run that finished today is evidence for {BACKFILLED}, not "
        f"for {TODAY}.",
        f"2. Both dimensions succeed for {TODAY} itself.",
        f"   Required business date ready: {ready}",
        f"   -> expected True: every required job's latest attempt for {TODAY} succeeded.",
        f"3. {CONSUMER} publishes {TODAY}: 17500 cents into table sales_totals, with the",
        "   dimensions' run IDs as its evidence.",
        f"   First publication: {first}",
        "   -> expected True: the output row and its evidence were written in one transaction.",
        "4. The same publication is retried (same output, same evidence).",
        f"   Same publication retried: {again}",
        "   -> expected False: a retry is a no-op, nothing is written twice.",
    ]
