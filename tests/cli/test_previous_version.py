"""A ledger made by the previous version (schema 8: no calendar on a job's profile, no line on
its runs) opens,
migrates, plans and reports as it did: ``status`` and ``report`` show the same thing before
and after the migration that brought calendars, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import gatekeeper as gk
from gatekeeper.core.causes import Requirement, profile
from gatekeeper.core.periods import DAILY
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import succeed

NOW = "2026-10-10T00:00:00+00:00"
WINDOW = ("--now", NOW)


def _shown(url: str, tmp_path: Path, name: str) -> tuple[dict[str, object], str]:
    status = gatekeeper("--ledger", url, "status", "Sales", "Orders", "--json", *WINDOW)
    assert status.returncode in (0, 1), status.stderr
    out = tmp_path / f"{name}.html"
    report = gatekeeper("--ledger", url, "report", "Sales", "-o", str(out), *WINDOW)
    assert report.returncode == 0, report.stderr
    return json.loads(status.stdout), report.stdout.split("\n", 1)[1]


def test_a_schema_8_ledger_migrates_and_reports_as_before(ledger_url: str, tmp_path: Path) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        for day in ("2026-10-01", "2026-10-02", "2026-10-04"):
            succeed(ledger, "Orders", day)
            succeed(ledger, "Sales", day)
        ledger.record_profile(
            profile(
                "Sales",
                DAILY,
                "UTC",
                [Requirement("Orders")],
                lateness="2h",
                catchup="all",
                strategy="contiguous",
                start="2026-10-01",
            )  # fmt: skip
        )
    before = _shown(ledger_url, tmp_path, "before")
    with gk.open_ledger(ledger_url) as ledger:  # as the previous version left it
        with ledger.transaction():
            ledger.execute("ALTER TABLE gk_jobs DROP COLUMN calendar")
            ledger.execute("ALTER TABLE gk_complete_runs DROP COLUMN calendar")
            ledger.execute("UPDATE gk_schema SET version = 8")
    with gk.open_ledger(ledger_url) as ledger:  # a writer opens it: migrated
        assert ledger.schema_version() > 8
        found = ledger.job_profile("Sales")
        assert found is not None and found.calendar == "all"
    assert _shown(ledger_url, tmp_path, "after") == before
