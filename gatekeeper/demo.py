"""The backfill-is-not-today scenario, on a temporary SQLite ledger (``gatekeeper demo``)."""

from __future__ import annotations

import datetime as dt
import tempfile
import uuid
from pathlib import Path
from typing import Any

from gatekeeper.ledger import open_ledger
from gatekeeper.records import fingerprint

DIMENSIONS = ("DimCustomer", "DimProduct")


def run_demo() -> list[str]:
    """Run the scenario and return its four report lines; writes only to a temporary ledger."""
    with tempfile.TemporaryDirectory(prefix="gatekeeper-demo-") as tmp:
        with open_ledger(f"sqlite:///{Path(tmp) / 'demo.db'}") as ledger:
            ran_at = dt.datetime(2026, 10, 23, 7, 0, tzinfo=dt.timezone.utc)
            for job in DIMENSIONS:  # a backfill of the 16th that ran on the 23rd
                ledger.record(job, "2026-10-16", 1, uuid.uuid4().hex, "succeeded", ran_at)
            backfill_counts = bool(ledger.readiness(DIMENSIONS, "2026-10-23"))
            for job in DIMENSIONS:
                ledger.record(job, "2026-10-23", 1, uuid.uuid4().hex, "succeeded", ran_at)
            ready = bool(ledger.readiness(DIMENSIONS, "2026-10-23"))
            payload = {"cents": 17500}

            def write(conn: Any) -> None:
                conn.execute("CREATE TABLE IF NOT EXISTS sales_totals "
                             "(business_date TEXT PRIMARY KEY, cents INTEGER NOT NULL)")
                conn.execute("INSERT INTO sales_totals VALUES (?, ?)",
                             ("2026-10-23", payload["cents"]))

            first = ledger.publish("DailySalesLoad", "2026-10-23", DIMENSIONS,
                                   fingerprint(payload), write)
            again = ledger.publish("DailySalesLoad", "2026-10-23", DIMENSIONS,
                                   fingerprint(payload), write)
    return [
        f"Backfill completed today: {backfill_counts}",
        f"Required business date ready: {ready}",
        f"First publication: {first}",
        f"Same publication retried: {again}",
    ]
