"""A GatedTask whose ``requires()`` returns an upstream for another period (the previous
business day) gates on exactly that (job, period), with no second declaration: through real
Luigi (local scheduler) on a real ledger, both backends (issue 47, item 4)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import luigi
import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import build

pytestmark = pytest.mark.luigi

MONDAY = dt.date(2026, 10, 26)
FRIDAY = dt.date(2026, 10, 23)  # Monday's previous business day on weekdays


class PrevDayPrices(gk.BusinessDateTask):
    """Fails while ``<control>/fail`` exists."""

    calendar = "weekdays"
    control = luigi.Parameter(default="", significant=False)

    def run(self) -> None:
        if self.control and (Path(self.control) / "fail").exists():
            raise RuntimeError(f"no prices for {self.business_date}")


class PrevDaySpread(gk.GatedTask):
    """Gated on the previous business day's prices, declared in ``requires()`` only."""

    calendar = "weekdays"
    control = luigi.Parameter(default="", significant=False)

    def requires(self) -> PrevDayPrices:
        before = self.previous_period().business_date
        return PrevDayPrices(business_date=before, control=self.control)

    def build(self) -> dict[str, str]:
        return {"on": str(self.business_date)}


def test_gated_task_requires_previous_period_gates_on_that_job_and_period(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    task = PrevDaySpread(business_date=MONDAY, control=str(tmp_path))
    assert task.required_jobs() == [("PrevDayPrices", "2026-10-23")]
    rows = snapshot(ledger_cfg)
    with pytest.raises(gk.NotReady, match=r"PrevDayPrices@2026-10-23 \(missing\)"):
        task.run()  # the gate itself, the previous day's prices never run
    assert snapshot(ledger_cfg) == rows

    (tmp_path / "fail").touch()
    assert not build(task).scheduling_succeeded  # the upstream fails: Luigi stops there
    rows = snapshot(ledger_cfg)
    failed = r"2026-10-26: not ready, blocked by PrevDayPrices@2026-10-23 \(attempt 1 failed\)"
    with pytest.raises(gk.NotReady, match=failed):
        PrevDaySpread(business_date=MONDAY, control=str(tmp_path)).run()
    assert snapshot(ledger_cfg) == rows
    assert ledger_cfg.publication("PrevDaySpread", MONDAY) is None

    (tmp_path / "fail").unlink()
    assert build(PrevDaySpread(business_date=MONDAY, control=str(tmp_path))).scheduling_succeeded
    upstream = ledger_cfg.latest("PrevDayPrices", FRIDAY)
    assert upstream is not None and upstream.attempt == 2
    pub = ledger_cfg.publication("PrevDaySpread", MONDAY)
    assert pub is not None and pub.evidence == {"PrevDayPrices@2026-10-23": upstream.run_id}
    assert [(i.job, i.business_date, i.attempt) for i in pub.items] == [
        ("PrevDayPrices", "2026-10-23", 2)
    ]


def test_gated_task_requires_previous_period_evidence_command_names_it(
    ledger_cfg: gk.Ledger, ledger_url: str
) -> None:
    assert build(PrevDaySpread(business_date=MONDAY)).scheduling_succeeded
    upstream = ledger_cfg.latest("PrevDayPrices", FRIDAY)
    assert upstream is not None
    shown = gatekeeper("--ledger", ledger_url, "evidence", "PrevDaySpread", "2026-10-26")
    assert shown.returncode == 0, shown.stderr
    row = next(line.split() for line in shown.stdout.splitlines() if "PrevDayPrices" in line)
    assert row == ["PrevDayPrices", "2026-10-23", "1", upstream.run_id]
    data: Any = json.loads(
        gatekeeper(
            "--ledger", ledger_url, "--json", "evidence", "PrevDaySpread", "2026-10-26"
        ).stdout
    )
    assert data["revisions"][0]["evidence"] == {"PrevDayPrices@2026-10-23": upstream.run_id}
