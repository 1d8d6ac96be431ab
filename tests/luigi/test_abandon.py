"""`gatekeeper abandon` on a real worker: a `luigi` process killed (SIGKILL) or frozen
(SIGSTOP) inside a GatedTask's ``build()`` with a long lease; the operator abandons its
attempt and a new run fills the period as attempt 2 at once, without waiting for the lease. A
frozen worker resumed afterwards is fenced: ``LeaseLost``, exit ``task_failed``, nothing it
writes lands. Both backends; every process started here is killed in a ``finally`` block.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import count_rows
from tests.helpers.luigi_support import run_luigi, write_config
from tests.luigi.test_ownership_faults import (
    TASK_FAILED,
    finish,
    is_postgres,
    output_of,
    prepare_zombie,
    start_worker,
    stop_outside_transaction,
    wait_for_file,
)

pytestmark = pytest.mark.luigi  # stops and kills workers; nothing waits on a lease

UTC = dt.timezone.utc
D = dt.date(2026, 10, 23)
DATE = D.isoformat()
LEASE = 3600.0  # far longer than the test: nothing here waits for a lease to expire
REASON = "worker host lost; operator ticket OPS-42"


@pytest.mark.parametrize("fault", ["SIGKILL", "SIGSTOP"])
@pytest.mark.process
def test_abandon_lets_a_new_run_fill_the_period_without_waiting_for_the_lease(
    ledger_url: str, tmp_path: Path, fault: str
) -> None:
    application_name = None
    url = ledger_url
    if is_postgres(url):  # name the workers' sessions, to stop them outside a transaction
        application_name = f"gk_abandon_{uuid.uuid4().hex[:8]}"
        url = f"{url}&application_name={application_name}"
    cfg = write_config(tmp_path, url, lease_seconds=LEASE)
    upstream = prepare_zombie(ledger_url, tmp_path)
    args = ("--module", "tests.helpers.luigi_tasks", "ZombieGated", "--business-date", DATE)
    args += ("--control", str(tmp_path))
    log1 = tmp_path / "worker1.log"
    worker1: subprocess.Popen[Any] | None = None
    try:
        worker1 = start_worker(cfg, args, tmp_path, log1)
        wait_for_file(tmp_path / "started", worker1, log1)
        _, ordinal, old_run = (tmp_path / "started").read_text().split()
        assert ordinal == "1"
        if fault == "SIGKILL":
            os.killpg(worker1.pid, signal.SIGKILL)
            worker1.wait(timeout=30)
        else:
            stop_outside_transaction(worker1, ledger_url, application_name)

        held = run_luigi(cfg, *args, "--no-lock", cwd=tmp_path, timeout=90)
        assert held.returncode == TASK_FAILED and "LeaseHeld" in held.stderr, held.stderr

        done = gatekeeper(
            "--ledger", ledger_url, "--json", "abandon", "ZombieGated", DATE, "--reason", REASON
        )
        assert done.returncode == 0, done.stderr
        abandoned = json.loads(done.stdout)["abandoned"]
        assert (abandoned["attempt"], abandoned["run_id"]) == (1, old_run)
        assert (abandoned["state"], abandoned["error"]) == ("abandoned", REASON)

        refill = run_luigi(cfg, *args, "--no-lock", cwd=tmp_path, timeout=90)
        assert refill.returncode == 0, refill.stdout + refill.stderr
        with gk.open_ledger(ledger_url) as ledger:
            first, second = ledger.attempts("ZombieGated", D)
            assert (first.attempt, first.run_id, first.state, first.error) == (
                1,
                old_run,
                gk.RunState.ABANDONED,
                REASON,
            )
            assert (second.attempt, second.state) == (2, gk.RunState.SUCCEEDED)
            published = ledger.publication("ZombieGated", D)
            assert published is not None and published.evidence == upstream
            assert (published.run_id, published.attempt) == (second.run_id, 2)
            assert gk.check_ready(ledger, ["ZombieGated"], D)

        if fault == "SIGSTOP":  # the frozen worker wakes, finishes build() and tries to publish
            os.killpg(worker1.pid, signal.SIGCONT)
            (tmp_path / "release").touch()
            worker1.wait(timeout=60)
            out1 = output_of(log1)
            assert worker1.returncode == TASK_FAILED, out1
            assert "LeaseLost" in out1, out1
        with gk.open_ledger(ledger_url) as ledger:
            rows = ledger.read("SELECT run_id, attempt FROM zombie_out")
            assert [(r[0], r[1]) for r in rows] == [(second.run_id, 2)]  # none of attempt 1's
            assert count_rows(ledger, "gk_publications") == 1
            assert [a.state for a in ledger.attempts("ZombieGated", D)] == [
                gk.RunState.ABANDONED,
                gk.RunState.SUCCEEDED,
            ]
    finally:
        finish(worker1)
