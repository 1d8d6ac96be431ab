"""The ``gatekeeper`` command: exit codes, tables and JSON, in process; every exit code and
the ledger found through luigi.cfg are also checked as the shell sees them, in a real process
(``process=True``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import T0, snapshot

DEMO = """Scenario: DailySalesLoad publishes the sales total of business date 2026-10-23 only once
DimCustomer and DimProduct have succeeded for that same date. It runs on a temporary
SQLite ledger, deleted at the end. Each step shows its result, then what was expected.

1. On 2026-10-23 at 07:00 UTC both dimensions finish a backfill of 2026-10-16.
   Backfill completed today: False
   -> expected False: a run that finished today is evidence for 2026-10-16, not for 2026-10-23.
2. Both dimensions succeed for 2026-10-23 itself.
   Required business date ready: True
   -> expected True: every required job's latest attempt for 2026-10-23 succeeded.
3. DailySalesLoad publishes 2026-10-23: 17500 cents into table sales_totals, with the
   dimensions' run IDs as its evidence.
   First publication: True
   -> expected True: the output row and its evidence were written in one transaction.
4. The same publication is retried (same output, same evidence).
   Same publication retried: False
   -> expected False: a retry is a no-op, nothing is written twice.
"""


def test_cli_demo_prints_the_scenario_explained() -> None:
    done = gatekeeper("demo")
    assert done.returncode == 0, done.stderr
    assert done.stdout == DEMO


def test_cli_record_ready_history(sqlite_url: str) -> None:
    for job in ("DimCustomer", "DimProduct"):
        done = gatekeeper(
            "--ledger",
            sqlite_url,
            "record",
            job,
            "2026-10-23",
            "1",
            f"r-{job}",
            "succeeded",
            "--started-at",
            "2026-10-23T07:00:00Z",
        )
        assert done.returncode == 0, done.stderr
    again = gatekeeper(
        "--ledger",
        sqlite_url,
        "record",
        "DimProduct",
        "2026-10-23",
        "1",
        "r-DimProduct",
        "succeeded",
        "--started-at",
        "2026-10-23T07:00:00Z",
        "--json",
    )
    assert again.returncode == 0 and json.loads(again.stdout)["changed"] is False
    ready = gatekeeper(
        "--ledger", sqlite_url, "ready", "2026-10-23", "DimCustomer", "DimProduct", "--json"
    )
    assert ready.returncode == 0
    assert json.loads(ready.stdout)["evidence"] == {
        "DimCustomer": "r-DimCustomer",
        "DimProduct": "r-DimProduct",
    }
    history = gatekeeper("--ledger", sqlite_url, "history", "DimCustomer")
    assert history.returncode == 0 and "r-DimCustomer" in history.stdout
    assert "succeeded" in history.stdout


def test_cli_ready_not_ready_exits_1_and_names_blocker(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:  # a known job, never run for 2026-10-23
        ledger.record("DimCustomer", "2026-10-22", 1, "r-1022", "succeeded", T0)
    done = gatekeeper("--ledger", sqlite_url, "ready", "2026-10-23", "DimCustomer", process=True)
    assert done.returncode == 1
    assert "NOT READY" in done.stdout and "missing" in done.stdout


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["record", "A", "2026-02-30", "1", "r1", "running"], "business_date"),
        (["record", "A", "2026-10-23", "one", "r1", "running"], "attempt"),
        (["record", "A", "2026-10-23", "0", "r1", "running"], "attempt"),
        (["record", "A", "2026-10-23", "1", "r1", "done"], "state"),
        (
            ["record", "A", "2026-10-23", "1", "r1", "running", "--started-at", "2026-10-23T07:00"],
            "started_at",
        ),
        (["ready", "23/10/2026", "A"], "business_date"),
    ],
)
def test_cli_bad_input_exits_2_names_field_and_writes_nothing(
    sqlite_url: str, args: list[str], field: str
) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
    # the first case as the shell sees it, the others in process
    done = gatekeeper("--ledger", sqlite_url, *args, process=args[1] == "2026-02-30")
    assert done.returncode == 2, done.stdout + done.stderr
    assert field in done.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


def test_cli_conflict_exits_3(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("A", "2026-10-23", 1, "r1", "succeeded", T0)
    done = gatekeeper(
        "--ledger",
        sqlite_url,
        "record",
        "A",
        "2026-10-23",
        "1",
        "r1",
        "failed",
        "--json",
        process=True,
    )
    assert done.returncode == 3
    assert json.loads(done.stdout)["error"] == "StateConflict"


def test_cli_unavailable_ledger_exits_4() -> None:
    done = gatekeeper(
        "--ledger",
        "sqlite:////nonexistent-dir/x/ledger.db",
        "record",
        "A",
        "2026-10-23",
        "1",
        "r1",
        "running",
        process=True,
    )
    assert done.returncode == 4 and "LedgerError" in done.stderr


def test_cli_evidence_shows_run_ids(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("A", "2026-10-23", 1, "run-a", "succeeded", T0)
        ledger.publish("Sales", "2026-10-23", ["A"], "fp-1")
    done = gatekeeper("--ledger", sqlite_url, "evidence", "Sales", "2026-10-23", "--json")
    assert done.returncode == 0, done.stderr
    revisions: list[dict[str, Any]] = json.loads(done.stdout)["revisions"]
    assert [(r["revision"], r["evidence"]) for r in revisions] == [(1, {"A": "run-a"})]
    text = gatekeeper("--ledger", sqlite_url, "evidence", "Sales", "2026-10-23")
    assert "run-a" in text.stdout and "revision 1" in text.stdout
    missing = gatekeeper("--ledger", sqlite_url, "evidence", "Sales", "2026-10-24")
    assert missing.returncode == 1 and "not published" in missing.stdout


def test_cli_ledger_url_from_luigi_cfg_then_env(tmp_path: Path) -> None:
    (tmp_path / "luigi.cfg").write_text("[gatekeeper]\nledger_url = sqlite:///from-cfg.db\n")
    done = gatekeeper(
        "record",
        "A",
        "2026-10-23",
        "1",
        "r1",
        "succeeded",
        cwd=tmp_path,
        env={"LUIGI_CONFIG_PATH": str(tmp_path / "luigi.cfg")},
        process=True,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "from-cfg.db").exists()
    env_url = f"sqlite:///{tmp_path / 'from-env.db'}"
    done = gatekeeper(
        "ready",
        "2026-10-23",
        "A",
        cwd=tmp_path,
        env={"LUIGI_CONFIG_PATH": str(tmp_path / "luigi.cfg"), "GATEKEEPER_LEDGER_URL": env_url},
        process=True,
    )
    assert done.returncode == 2  # the env's ledger wins, and a read-only command creates none
    assert "$GATEKEEPER_LEDGER_URL" in done.stderr and "from-env.db" in done.stderr
    assert not (tmp_path / "from-env.db").exists()


def test_cli_status_reports_the_range_plan(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        for day in ("2026-10-01", "2026-10-02", "2026-10-04"):
            ledger.record("Sales", day, 1, f"r-{day}", "succeeded", T0)
    args = (
        "--ledger",
        sqlite_url,
        "status",
        "Sales",
        "--start",
        "2026-10-01",
        "--stop",
        "2026-10-08",
        "--now",
        "2026-10-07T02:00:00+00:00",
        "--lateness",
        "2h",
    )
    done = gatekeeper(*args, "--json")
    assert done.returncode == 1, done.stderr  # gaps remain
    plan = json.loads(done.stdout)
    assert plan["due"] == [
        "2026-10-01",
        "2026-10-02",
        "2026-10-03",
        "2026-10-04",
        "2026-10-05",
        "2026-10-06",
    ]
    assert plan["gaps"] == ["2026-10-03", "2026-10-05", "2026-10-06"]
    assert plan["contiguous_through"] == "2026-10-02"
    assert plan["next_due_at"] == "2026-10-08T02:00:00+00:00"
    text = gatekeeper(*args, "--catchup", "last:2")
    assert "filled 3/6, contiguous through 2026-10-02" in text.stdout
    assert "1 skipped by policy" in text.stdout
    assert "2026-10-03                skipped    1" in text.stdout  # never tried, left out
    complete = gatekeeper(
        "--ledger",
        sqlite_url,
        "status",
        "Sales",
        "--start",
        "2026-10-01",
        "--stop",
        "2026-10-03",
        "--now",
        "2026-10-07T00:00:00+00:00",
    )
    assert complete.returncode == 0 and "filled 2/2" in complete.stdout
    bad = gatekeeper(
        "--ledger",
        sqlite_url,
        "status",
        "Sales",
        "--start",
        "2026-10-01",
        "--now",
        "2026-10-07T00:00:00",
    )
    assert bad.returncode == 2 and "now" in bad.stderr
