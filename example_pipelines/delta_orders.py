"""Example: a daily orders load gates a Delta table, one business date per Delta commit.

    luigi --module example_pipelines.delta_orders DailyOrdersDelta --business-date 2026-10-23 \\
          --local-scheduler

Needs the ``delta`` extra (deltalake, pyarrow). OrdersLoad stands for an upstream job;
DailyOrdersDelta publishes the date's order lines to the Delta table ``delta/orders`` (relative
to the working directory; ``--table`` elsewhere, e.g. ``s3://bucket/orders`` with
``[gatekeeper] delta_storage_options``), with the authorizing run IDs in the commit metadata.
"""

from __future__ import annotations

import hashlib
from typing import Any

import luigi

import gatekeeper as gk


def _cents(*parts: object) -> int:
    """A deterministic amount from its parts."""
    return 100 + int(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()[:6], 16) % 9900


class OrdersLoad(gk.BusinessDateTask):
    """The upstream: its succeeded attempt is what authorizes the date's publication."""

    def run(self) -> None:
        pass


class DailyOrdersDelta(gk.GatedDeltaTask):
    """The date's order lines in a Delta table partitioned by ``business_date``."""

    table = luigi.Parameter(
        default="delta/orders",
        significant=False,
        description="Delta table URI (a path or an object-store URI)",
    )

    def requires(self) -> OrdersLoad:
        return OrdersLoad(business_date=self.business_date)

    def table_uri(self) -> str:
        return str(self.table)

    def build(self) -> Any:
        import pyarrow as pa

        day = self.business_date.isoformat()
        lines = range(1, 4)
        return pa.table(
            {
                "business_date": [day] * len(lines),
                "order_id": [f"{day}-{n}" for n in lines],
                "cents": [_cents(day, n) for n in lines],
            }
        )
