"""Example: two dimension loads gate a daily sales total, all on the gatekeeper ledger.

    luigi --module example_pipelines.sales DailySalesLoad --business-date 2026-10-23 \\
          --local-scheduler

DimCustomer and DimProduct generate deterministic synthetic rows for their date into tables of
the ledger database; DailySalesLoad publishes the day's total in integer cents to
``sales_totals`` in the same transaction as its evidence; MonthlySales publishes a month's
total once every day of it is published (a repaired day reaches it with ``--reprocess stale``
on its range: docs/ranges.md).
"""

from __future__ import annotations

import datetime as dt
import hashlib
from typing import Any

import gatekeeper as gk

CUSTOMERS = 5
PRODUCTS = 4


def _number(*parts: object) -> int:
    """A deterministic pseudo-random number from its parts."""
    return int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:8], 16)


class _DimensionLoad(gk.BusinessDateTask):
    """Replaces the dimension's rows for the business date (idempotent per date)."""

    table = ""

    def rows(self) -> list[tuple[Any, ...]]:
        raise NotImplementedError

    def run(self) -> None:
        # run_in_transaction: one transaction, run again if the database aborts it in a race
        # (two workers creating the table at once on PostgreSQL)
        self.ledger().run_in_transaction(self._replace_rows)

    def _replace_rows(self) -> None:
        ledger, date = self.ledger(), self.business_date.isoformat()
        ledger.execute(
            f"CREATE TABLE IF NOT EXISTS {self.table} "
            "(business_date TEXT NOT NULL, id INTEGER NOT NULL, value INTEGER NOT "
            "NULL, PRIMARY KEY (business_date, id))"
        )
        ledger.execute(f"DELETE FROM {self.table} WHERE business_date = ?", (date,))
        ledger.executemany(
            f"INSERT INTO {self.table} VALUES (?, ?, ?)", [(date, *row) for row in self.rows()]
        )


class DimCustomer(_DimensionLoad):
    """Customers active on the date, with a loyalty tier (0-2)."""

    table = "dim_customer"

    def rows(self) -> list[tuple[Any, ...]]:
        return [(c, _number("tier", self.business_date, c) % 3) for c in range(CUSTOMERS)]


class DimProduct(_DimensionLoad):
    """Products on sale on the date, with a price in integer cents."""

    table = "dim_product"

    def rows(self) -> list[tuple[Any, ...]]:
        return [(p, 250 + _number("price", self.business_date, p) % 1000) for p in range(PRODUCTS)]


class DailySalesLoad(gk.GatedTask):
    """The day's sales total in integer cents, published once both dimensions are ready."""

    def requires(self) -> list[gk.BusinessDateTask]:
        return [
            DimCustomer(business_date=self.business_date),
            DimProduct(business_date=self.business_date),
        ]

    def build(self) -> dict[str, int]:
        date = self.business_date.isoformat()
        ledger = self.ledger()
        tiers = dict(
            ledger.read("SELECT id, value FROM dim_customer WHERE business_date = ?", (date,))
        )
        prices = dict(
            ledger.read("SELECT id, value FROM dim_product WHERE business_date = ?", (date,))
        )
        cents = sum(
            prices[p] * (1 + tiers[c])
            for c in sorted(tiers)
            for p in sorted(prices)
            if _number("sale", date, c, p) % 2 == 0
        )
        return {"cents": cents}

    def write(self, tx: Any, payload: dict[str, int]) -> None:
        """Runs inside the publication transaction: ``tx`` can add statements, not end it."""
        tx.execute(
            "CREATE TABLE IF NOT EXISTS sales_totals "
            "(business_date TEXT PRIMARY KEY, cents INTEGER NOT NULL)"
        )
        date = self.business_date.isoformat()  # a republish replaces the day's total
        tx.execute("DELETE FROM sales_totals WHERE business_date = ?", (date,))
        tx.execute(
            "INSERT INTO sales_totals (business_date, cents) VALUES (?, ?)",
            (date, payload["cents"]),
        )


class MonthlySales(gk.GatedMonthTask):
    """The month's sales in integer cents, published once every day's total is: its evidence
    names each day's publishing run, so a day republished makes the month stale."""

    def requires(self) -> list[DailySalesLoad]:
        days = DailySalesLoad.period_kind
        first = self.business_month
        stop = self.period_kind.shift(first, 1)  # the 1st of the next month
        return [DailySalesLoad(business_date=day) for day in days.between(first, stop)]

    def build(self) -> dict[str, int]:
        first = self.business_month
        stop = self.period_kind.shift(first, 1)
        rows = self.ledger().read(
            "SELECT COALESCE(SUM(cents), 0) FROM sales_totals "
            "WHERE business_date >= ? AND business_date < ?",
            (first.isoformat(), stop.isoformat()),
        )
        return {"cents": int(rows[0][0])}


def sales_total(ledger: gk.Ledger, business_date: dt.date) -> int | None:
    """The published total for a date, or None."""
    rows = ledger.read(
        "SELECT cents FROM sales_totals WHERE business_date = ?", (business_date.isoformat(),)
    )
    return int(rows[0][0]) if rows else None
