"""The publishing pipeline ``bench/soak.py`` fills under faults (``luigi --module soak_pipeline``).

- ``SoakUpstream``: a day's rows, replaced through its fenced ledger handle
  (``self.ledger().run_in_transaction``) and tagged with its run ID: a zombie's write is refused;
- ``SoakPublish``: gated on the day's ``SoakUpstream``, publishes the day's row count to
  ``soak_totals`` in its publication transaction;
- ``SoakMonthly``: gated on every day's ``SoakPublish`` of its month.

Each body sleeps 50-300 ms, or 3-8 s for a ``slow_rate`` share of runs (half of the publishers'
slow runs sleep inside ``write()``, holding the publication transaction open, so a kill lands
mid-publish), and fails for a ``fail_rate`` share. The draws are seeded by ``[soak] seed`` and
the run ID. The tables are created by ``soak.py`` before any process starts.
"""

from __future__ import annotations

import random
import time
from typing import Any

import luigi

import gatekeeper as gk


class soak(luigi.Config):  # noqa: N801 - Luigi's config section name, [soak]
    seed = luigi.IntParameter(default=0)
    fail_rate = luigi.FloatParameter(default=0.05)
    slow_rate = luigi.FloatParameter(default=0.05)


def draws(run_id: str) -> random.Random:
    """The random draws of one run: seeded by ``[soak] seed`` and the run ID."""
    return random.Random(f"{soak().seed}|{run_id}")


def body(rng: random.Random, where: str, slow: bool | None = None) -> None:
    """Sleep 50-300 ms, or 3-8 s when slow; then fail at ``fail_rate``."""
    slow = rng.random() < soak().slow_rate if slow is None else slow
    time.sleep(rng.uniform(3, 8) if slow else rng.uniform(0.05, 0.3))
    if rng.random() < soak().fail_rate:
        raise RuntimeError(f"injected failure in {where}")


class SoakUpstream(gk.BusinessDateTask):
    """Replaces the day's three rows in ``soak_rows``, tagged with its run ID."""

    def run(self) -> None:
        body(draws(self.run_id), "SoakUpstream")
        self.ledger().run_in_transaction(self._replace_rows)

    def _replace_rows(self) -> None:
        ledger, date = self.ledger(), self.business_date.isoformat()
        ledger.execute("DELETE FROM soak_rows WHERE business_date = ?", (date,))
        ledger.executemany(
            "INSERT INTO soak_rows VALUES (?, ?, ?)", [(date, i, self.run_id) for i in (1, 2, 3)]
        )


class SoakPublish(gk.GatedTask):
    """The day's row count, published once its ``SoakUpstream`` succeeded."""

    def requires(self) -> SoakUpstream:
        return SoakUpstream(business_date=self.business_date)

    def build(self) -> dict[str, int]:
        rng = draws(self.run_id)
        slow = rng.random() < soak().slow_rate
        self._slow_write = slow and rng.random() < 0.5
        body(rng, "SoakPublish", slow and not self._slow_write)
        date = self.business_date.isoformat()
        rows = self.ledger().read("SELECT COUNT(*) FROM soak_rows WHERE business_date = ?", (date,))
        return {"rows": int(rows[0][0])}

    def write(self, tx: Any, payload: dict[str, int]) -> None:
        """Inside the publication transaction (a slow one sleeps here, before the COMMIT)."""
        if getattr(self, "_slow_write", False):
            time.sleep(draws(self.run_id + "|write").uniform(3, 8))
        date = self.business_date.isoformat()
        tx.execute("DELETE FROM soak_totals WHERE business_date = ?", (date,))
        tx.execute("INSERT INTO soak_totals VALUES (?, ?, ?)", (date, payload["rows"], self.run_id))


class SoakMonthly(gk.GatedPeriodTask, gk.BusinessMonthTask):
    """The month's total, published once every day's ``SoakPublish`` succeeded."""

    def requires(self) -> list[SoakPublish]:
        days = SoakPublish.period_kind
        first = self.business_month
        return [
            SoakPublish(business_date=d)
            for d in days.between(first, self.period_kind.shift(first, 1))
        ]

    def build(self) -> dict[str, object]:
        body(draws(self.run_id), "SoakMonthly")
        return {"month": self.period_key, "days": len(self.requires())}


TABLES = (
    "CREATE TABLE IF NOT EXISTS soak_rows (business_date TEXT NOT NULL, id INTEGER NOT NULL, "
    "run_id TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS soak_totals (business_date TEXT PRIMARY KEY, "
    "row_count INTEGER NOT NULL, run_id TEXT NOT NULL)",
)
