"""bench/soak.py end to end: a short run with kill and stop faults on SQLite (issue 48, item 1),
the same with database restarts on a PostgreSQL cluster of the test's own (item 2), and the
soak's check of the pipeline's own tables.

The process is the subject of the first two: the script starts luigid and the ``luigi``
processes, hurts them, runs the clean run and ``gatekeeper verify``, and its exit code is the
verdict.
"""

from __future__ import annotations

import collections
import datetime as dt
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.own_postgres import OwnPostgres, missing

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.luigi


@pytest.fixture
def own_pg() -> Iterator[OwnPostgres]:
    reason = missing()
    if reason is not None:
        if os.environ.get("CI") == "true" or os.environ.get("GATEKEEPER_REQUIRE_PG") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    server = OwnPostgres()
    server.start()
    try:
        yield server
    finally:
        server.remove()


def run_soak(tmp_path: Path, *args: str) -> list[dict[str, Any]]:
    """Run bench/soak.py with ``args`` over one month with two processes; assert it passed;
    return its log's records."""
    log = tmp_path / "soak.jsonl"
    env = {k: v for k, v in os.environ.items() if k not in ("GATEKEEPER_LEDGER_URL",)}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    common = ["--processes", "2", "--months", "1", "--log", str(log)]
    common += ["--keep", str(tmp_path / "run")]
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "soak.py"), *args, *common],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=140,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "soak: passed" in done.stdout, done.stdout
    return [json.loads(line) for line in log.read_text().splitlines()]


def assert_clean_verdict(records: list[dict[str, Any]]) -> None:
    """Every exit logged with its code and due gaps, the clean run filled the window, verify
    found nothing, and no exit 0 left a due gap."""
    events = collections.Counter(r["event"] for r in records)
    faults = [r for r in records if r["event"] == "fault"]
    exits = [r for r in records if r["event"] == "exit"]
    assert len(exits) >= 2 and all("code" in r and "due_gaps" in r for r in exits), exits
    assert events["start"] >= 2 and events["clean_run"] == 1, events
    (clean,) = (r for r in records if r["event"] == "clean_run")
    assert (clean["code"], clean["due_gaps"]) == (0, 0), clean
    (verify,) = (r for r in records if r["event"] == "verify")
    assert (verify["code"], verify["violations"]) == (0, []), verify
    (summary,) = (r for r in records if r["event"] == "summary")
    assert summary["problems"] == [] and summary["exit_0_with_due_gaps"] == 0, summary
    # a month of days, each with an upstream and a publication, and the month itself
    assert summary["attempts_by_state"]["succeeded"] == 31 * 2 + 1, summary
    assert sum(summary["faults"].values()) == len(faults)
    assert not [r for r in exits if r["code"] == 0 and r["due_gaps"]], exits


@pytest.mark.slow
@pytest.mark.timeout(150)  # ~20 s of faults, the leases' 12 s, a clean run of one month
def test_soak_on_sqlite_passes_with_faults_logged(tmp_path: Path) -> None:
    records = run_soak(tmp_path, "--minutes", "0.3", "--faults", "kill,stop", "--seed", "7")
    faults = [r for r in records if r["event"] == "fault"]
    assert faults and {r["kind"] for r in faults} <= {"kill", "stop"}, faults
    assert_clean_verdict(records)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(150)  # 15 s of faults, the leases' 12 s, a clean run of one month
def test_soak_on_postgresql_passes_with_database_restarts(
    tmp_path: Path, own_pg: OwnPostgres
) -> None:
    """Kill, stop and db faults on a cluster of the test's own, restarted by its pg_ctl. Seed
    1389's schedule (a function of the seed alone): stop, kill, db, stop, db in the first
    ~13 s, so each kind happens and the test cannot pass without a database restart."""
    ledger = f"{own_pg.url}?schema=gk_soak"
    args = ["--ledger", ledger, "--minutes", "0.25", "--faults", "kill,stop,db"]
    args += ["--db-restart-cmd", own_pg.restart_command(), "--seed", "1389"]
    records = run_soak(tmp_path, *args)
    faults = collections.Counter(r["kind"] for r in records if r["event"] == "fault")
    assert set(faults) == {"kill", "stop", "db"}, faults
    restarts = [r for r in records if r["event"] == "fault" and r["kind"] == "db"]
    assert all(r["code"] == 0 for r in restarts), restarts
    hurt = [r for r in records if r["event"] == "fault" and r["kind"] in ("kill", "stop")]
    assert all(r["target"] is not None for r in hurt), hurt
    assert_clean_verdict(records)


def test_soak_table_check_names_a_row_its_owner_did_not_write(tmp_path: Path) -> None:
    """The soak's own check of its tables finds what it looks for: a day's rows written by an
    attempt that is not the day's succeeded latest one (a zombie's write that got through),
    and a total no publication produced."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from soak_checks import table_violations
        from soak_pipeline import TABLES
    finally:
        sys.path.remove(str(ROOT / "bench"))
    now = dt.datetime(2026, 10, 23, 7, 0, tzinfo=dt.timezone.utc)
    with gk.open_ledger(f"sqlite:///{tmp_path / 'soak.db'}") as ledger:
        with ledger.transaction():
            for statement in TABLES:
                ledger.execute(statement)
        ledger.record("SoakUpstream", "2026-01-01", 1, "zombie", "abandoned", now)
        ledger.record("SoakUpstream", "2026-01-01", 2, "owner", "succeeded", now)
        assert table_violations(ledger) == []
        with ledger.transaction():
            ledger.execute("INSERT INTO soak_rows VALUES ('2026-01-01', 1, 'owner')")
        assert table_violations(ledger) == []
        with ledger.transaction():
            ledger.execute("INSERT INTO soak_rows VALUES ('2026-01-01', 2, 'zombie')")
            ledger.execute("INSERT INTO soak_totals VALUES ('2026-01-01', 3, 'nobody')")
        found = table_violations(ledger)
    assert len(found) == 2, found
    assert found[0].startswith("soak_rows 2026-01-01: written by zombie"), found
    assert found[1].startswith("soak_totals 2026-01-01: written by nobody"), found


@pytest.mark.parametrize(
    ("start", "months", "latest"),
    [
        ("2026-01", 11, None),
        ("2024-12", 24, None),
        ("2026-01", 12, "2025-12"),
        ("2026-12", 1, "2026-11"),
    ],
)
def test_soak_window_past_today_is_refused(start: str, months: int, latest: str | None) -> None:
    """A window reaching past today would count its periods not yet due as gaps (a range run
    rightly leaves them): the soak refuses it, naming the latest start that fits."""
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from soak import window_past_today
    finally:
        sys.path.remove(str(ROOT / "bench"))
    why = window_past_today(start, months, dt.date(2026, 12, 6))
    if latest is None:
        assert why is None, why
    else:
        assert why is not None and why.endswith(f"start at {latest} or earlier"), why
