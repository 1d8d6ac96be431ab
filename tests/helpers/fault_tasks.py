"""Task classes for the unknown-outcome and zombie-write tests (issue 36), steered through
files in a control directory (``luigi_tasks.claim``: exactly one racing process takes a file).

- ``ZombieDim``: a BusinessDateTask that writes its rows as the README's ``DimCustomer`` does
  (``self.ledger().run_in_transaction``), tagged with its run ID; the process that claims
  ``hang`` writes ``started`` and waits for ``release`` before it writes.
- ``PublishThenPause``: a GatedTask; the process that claims ``pause`` writes ``published``
  once its publication committed and waits there (for a SIGKILL), before its success is
  recorded; the one that claims ``hold-write`` waits inside ``write()``, before the COMMIT.
  ``FaultTotal``: a GatedTask on ``ZombieDim``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import luigi

import gatekeeper as gk
from tests.helpers.luigi_tasks import claim, signal_file, wait_for_release


class ZombieDim(gk.BusinessDateTask):
    """Replaces its date's rows in ``zombie_dim`` (two rows, tagged with its run ID)."""

    control = luigi.Parameter(default="", significant=False)

    def run(self) -> None:
        folder = Path(self.control) if self.control else None
        if folder is not None and claim(folder, "hang") is not None:
            signal_file(folder / "started", f"{os.getpid()} {self.attempt_ordinal} {self.run_id}")
            wait_for_release(folder)
        self.ledger().run_in_transaction(self._replace_rows)

    def _replace_rows(self) -> None:
        ledger, date = self.ledger(), self.business_date.isoformat()
        ledger.execute("DELETE FROM zombie_dim WHERE business_date = ?", (date,))
        ledger.executemany(
            "INSERT INTO zombie_dim VALUES (?, ?, ?)", [(date, i, self.run_id) for i in (1, 2)]
        )


class FaultTotal(gk.GatedTask):
    """Gated on ``ZombieDim``; publishes the date's row count (0 when its run sees none)."""

    control = luigi.Parameter(default="", significant=False)

    def requires(self) -> ZombieDim:
        return ZombieDim(business_date=self.business_date, control=self.control)

    def build(self) -> dict[str, str]:
        return {"date": str(self.business_date)}


class PublishThenPause(gk.GatedTask):
    """Gated on two upstream jobs recorded directly in the ledger."""

    control = luigi.Parameter(significant=False)

    def required_jobs(self) -> list[Any]:
        return ["PauseUpstreamA", "PauseUpstreamB"]

    def build(self) -> dict[str, int]:
        return {"cents": 11}

    def write(self, tx: Any, payload: dict[str, int]) -> None:
        """Inside the publication transaction: the process that claims ``hold-write`` writes
        ``in-write`` and waits there (for a SIGKILL before the COMMIT)."""
        folder = Path(self.control)
        if claim(folder, "hold-write") is not None:
            signal_file(folder / "in-write", f"{os.getpid()} {self.attempt_ordinal} {self.run_id}")
            wait_for_release(folder)

    def run(self) -> None:
        self.publish_payload(self.build())
        folder = Path(self.control)
        if claim(folder, "pause") is not None:
            signal_file(folder / "published", f"{os.getpid()} {self.attempt_ordinal} {self.run_id}")
            wait_for_release(folder)
