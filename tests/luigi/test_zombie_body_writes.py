"""A zombie's own writes never land after its takeover, and a worker killed after its
publication committed is recorded succeeded (issue 36), with real `luigi` processes.

- **zombie body**: a ``BusinessDateTask`` writing its rows through
  ``self.ledger().run_in_transaction`` (the README's ``DimCustomer``) is SIGSTOPped past its
  lease; a second worker takes over and succeeds; resumed, the zombie's write raises LeaseLost
  and writes nothing: the table holds the successor's rows only.
- **killed after the commit**: a ``GatedTask``'s worker is SIGKILLed once its publication
  committed, before its success was recorded; once its lease expired the next worker finds the
  publication naming it, records it ``succeeded`` (not ``abandoned``) and runs nothing;
  ``gatekeeper evidence`` names a succeeded producer.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.luigi_support import live_config, luigi_env, run_luigi, write_config
from tests.luigi.test_ownership_faults import (
    TASK_FAILED,
    db_now,
    finish,
    is_postgres,
    output_of,
    start_worker,
    stop_outside_transaction,
    wait_for_file,
)

pytestmark = [pytest.mark.luigi, pytest.mark.slow]

UTC = dt.timezone.utc
D = dt.date(2026, 10, 23)
DATE = D.isoformat()
LEASE = 2.0


def named(ledger_url: str) -> tuple[str, str | None]:
    """The workers' URL and, on PostgreSQL, the name of their sessions."""
    if not is_postgres(ledger_url):
        return ledger_url, None
    name = f"gk_z36_{uuid.uuid4().hex[:8]}"
    return f"{ledger_url}&application_name={name}", name


def wait_expired(ledger_url: str, job: str, run_id: str, date: dt.date = D) -> None:
    """Until ``run_id``'s lease (an attempt of ``job`` for ``date``) expired by the
    database's clock."""
    with gk.open_ledger(ledger_url) as ledger:
        deadline = time.monotonic() + 10 * LEASE
        while True:
            mine = next(a for a in ledger.attempts(job, date) if a.run_id == run_id)
            assert mine.state is gk.RunState.RUNNING and mine.lease_expires_at is not None
            if db_now(ledger, ledger_url) > mine.lease_expires_at + dt.timedelta(seconds=0.3):
                return
            assert time.monotonic() < deadline, "the frozen worker's lease never expired"
            time.sleep(0.1)


def evidence_of(cfg: Path, ledger_url: str, job: str, cwd: Path) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "gatekeeper.cli", "--ledger", ledger_url, "evidence", job, DATE],
        cwd=cwd,
        env=luigi_env(cfg),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_zombie_body_writes_do_not_land_after_a_takeover(ledger_url: str, tmp_path: Path) -> None:
    url, session = named(ledger_url)
    cfg = write_config(tmp_path, url, lease_seconds=LEASE)
    with gk.open_ledger(ledger_url) as ledger, ledger.transaction():
        ledger.execute("CREATE TABLE zombie_dim (business_date TEXT, id INTEGER, run_id TEXT)")
    (tmp_path / "hang").touch()
    args = ("--module", "tests.helpers.fault_tasks", "ZombieDim", "--business-date", DATE)
    args += ("--control", str(tmp_path))
    log1 = tmp_path / "worker1.log"
    worker1: subprocess.Popen[Any] | None = None
    try:
        worker1 = start_worker(cfg, args, tmp_path, log1)
        wait_for_file(tmp_path / "started", worker1, log1)
        _, _, zombie = (tmp_path / "started").read_text().split()
        stop_outside_transaction(worker1, ledger_url, session)
        wait_expired(ledger_url, "ZombieDim", zombie)

        worker2 = run_luigi(live_config(cfg), *args, "--no-lock", cwd=tmp_path, timeout=90)
        assert worker2.returncode == 0, worker2.stdout + worker2.stderr
        with gk.open_ledger(ledger_url) as ledger:
            first, second = ledger.attempts("ZombieDim", D)
            assert (first.run_id, first.state) == (zombie, gk.RunState.ABANDONED)
            assert second.state is gk.RunState.SUCCEEDED

        os.killpg(worker1.pid, signal.SIGCONT)
        (tmp_path / "release").touch()  # the zombie's body goes on to write its rows
        worker1.wait(timeout=60)
        out1 = output_of(log1)
        assert worker1.returncode == TASK_FAILED, out1
        assert "LeaseLost" in out1, out1

        with gk.open_ledger(ledger_url) as ledger:
            rows = ledger.read("SELECT business_date, id, run_id FROM zombie_dim ORDER BY id")
            assert [tuple(r) for r in rows] == [(DATE, 1, second.run_id), (DATE, 2, second.run_id)]
            states = [(a.run_id, a.state) for a in ledger.attempts("ZombieDim", D)]
            assert states == [
                (zombie, gk.RunState.ABANDONED),
                (second.run_id, gk.RunState.SUCCEEDED),
            ]
    finally:
        finish(worker1)


def test_worker_killed_after_its_publication_committed_is_recorded_succeeded(
    ledger_url: str, tmp_path: Path
) -> None:
    url, _ = named(ledger_url)
    cfg = write_config(tmp_path, url, lease_seconds=LEASE)
    with gk.open_ledger(ledger_url) as ledger:
        upstream = {
            job: f"{job}-{uuid.uuid4().hex[:8]}" for job in ("PauseUpstreamA", "PauseUpstreamB")
        }
        for job, run_id in upstream.items():
            ledger.record(job, D, 1, run_id, "succeeded", dt.datetime.now(UTC))
    (tmp_path / "pause").touch()
    args = ("--module", "tests.helpers.fault_tasks", "PublishThenPause", "--business-date", DATE)
    args += ("--control", str(tmp_path))
    log1 = tmp_path / "worker1.log"
    worker1: subprocess.Popen[Any] | None = None
    try:
        worker1 = start_worker(cfg, args, tmp_path, log1)
        wait_for_file(tmp_path / "published", worker1, log1)
        _, _, killed = (tmp_path / "published").read_text().split()
        os.killpg(worker1.pid, signal.SIGKILL)  # after the publication's COMMIT, before success
        worker1.wait(timeout=30)
        with gk.open_ledger(ledger_url) as ledger:
            (only,) = ledger.attempts("PublishThenPause", D)
            assert (only.run_id, only.state) == (killed, gk.RunState.RUNNING)
        wait_expired(ledger_url, "PublishThenPause", killed)

        worker2 = run_luigi(live_config(cfg), *args, "--no-lock", cwd=tmp_path, timeout=90)
        assert worker2.returncode == 0, worker2.stdout + worker2.stderr
        with gk.open_ledger(ledger_url) as ledger:
            states = [
                (a.attempt, a.run_id, a.state) for a in ledger.attempts("PublishThenPause", D)
            ]
            assert states == [(1, killed, gk.RunState.SUCCEEDED)]  # not abandoned, not run again
            (published,) = ledger.publications("PublishThenPause", D)
            assert (published.run_id, published.attempt) == (killed, 1)
            assert published.evidence == upstream
        shown = evidence_of(cfg, ledger_url, "PublishThenPause", tmp_path)
        assert killed in shown, shown
    finally:
        finish(worker1)
