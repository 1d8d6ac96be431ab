"""Task classes the Delta tests run, in-process and through the real `luigi` command.

``[delta_test]`` in luigi.cfg says where the table is and what the rows hold; files in its
``control`` folder change behaviour between runs (``die-after-commit``: the worker kills
itself with SIGKILL right after the Delta commit, before the ledger records it).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

import luigi
import pyarrow as pa

import gatekeeper as gk
from gatekeeper.delta.history import DeltaEvidence
from gatekeeper.ledger.reservations import Reservation


class delta_test(luigi.Config):  # noqa: N801 - the class name is the luigi.cfg section
    table = luigi.Parameter(description="The Delta table the tests publish to")
    control = luigi.Parameter(default="", description="Folder of control files")
    factor = luigi.IntParameter(default=1, description="Multiplies every amount")
    stray = luigi.Parameter(default="", description="Add one row for this other date")


class DeltaSource(gk.BusinessDateTask):
    def run(self) -> None:
        pass


def rows_for(date: str, factor: int = 1, stray: str = "") -> pa.Table:
    """The rows DeltaSales publishes for ``date``: three items, amounts times ``factor``."""
    dates = [date, date, date] + ([stray] if stray else [])
    return pa.table(
        {
            "business_date": dates,
            "item": ["a", "b", "c", "x"][: len(dates)],
            "cents": [100 * factor, 250 * factor, 5 * factor, 1][: len(dates)],
        }
    )


class DeltaSales(gk.GatedDeltaTask):
    """Publishes ``rows_for`` its date into ``[delta_test] table``."""

    def requires(self) -> DeltaSource:
        return DeltaSource(business_date=self.business_date)

    def table_uri(self) -> str:
        return str(delta_test().table)

    def build(self) -> Any:
        settings = delta_test()
        table = rows_for(self.period_key, settings.factor, settings.stray)
        order = list(reversed(range(table.num_rows)))  # row and column order are irrelevant
        return table.select(["cents", "item", "business_date"]).take(order)

    def delta_commit(self, reserved: Reservation, data: Any) -> DeltaEvidence:
        commit = super().delta_commit(reserved, data)
        control = delta_test().control
        if control and (Path(control) / "die-after-commit").exists():
            (Path(control) / f"died-{os.getpid()}").write_text(str(commit.table_version))
            os.kill(os.getpid(), signal.SIGKILL)
        return commit


def raise_in_helper(kind: str) -> None:
    """Raises ``kind`` (run in the Delta helper process: its error must arrive as its type)."""
    import deltalake

    if kind == "InvalidInput":
        raise gk.InvalidInput("partition_column", "day; DROP", "not a column name")
    if kind == "OutputMismatch":
        raise gk.OutputMismatch(f"raised in process {os.getpid()}")
    raise deltalake.exceptions.CommitFailedError(f"conflict in process {os.getpid()}")
