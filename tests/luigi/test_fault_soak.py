"""A small combined fault run (issue 36, until bench/soak.py exists), on PostgreSQL with real
`luigi` processes, one fault per date:

1. a publisher SIGKILLed inside ``write()``, between its publication's statements and its
   COMMIT (nothing committed: the next worker abandons it and publishes);
2. a publisher SIGKILLed after its publication's COMMIT, before its success was recorded
   (the next worker records it succeeded);
3. the answer to a publication's COMMIT dropped by the proxy, as a database restart would
   (read back: the attempt succeeds);
4. an upstream body SIGSTOPped past its lease, taken over, then resumed (its write refused).

Then two invariants over the whole ledger: every publication's producer attempt succeeded,
and no row was written by an attempt after it was taken over.
"""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import PG_DSN
from tests.helpers.luigi_support import live_config, run_luigi, write_config
from tests.helpers.pg_proxy import has, pg_proxy
from tests.luigi.test_ownership_faults import (
    finish,
    output_of,
    start_worker,
    stop_outside_transaction,
    wait_for_file,
)
from tests.luigi.test_zombie_body_writes import LEASE, named, wait_expired

pytestmark = [pytest.mark.luigi, pytest.mark.slow, pytest.mark.postgres]

UTC = dt.timezone.utc
DAYS = [dt.date(2026, 10, d) for d in (20, 21, 22, 23)]
PUB = "PublishThenPause"


def publisher(date: dt.date, control: Path) -> tuple[str, ...]:
    return ("--module", "tests.helpers.fault_tasks", PUB, "--business-date", date.isoformat(),
            "--control", str(control))  # fmt: skip


def killed_at(marker: str, url: str, date: dt.date, folder: Path) -> str:
    """Run the publisher for ``date`` until it writes ``marker``, SIGKILL it, let its lease
    expire and run it again; returns the killed run ID."""
    cfg = write_config(folder, url, lease_seconds=LEASE)
    log = folder / "killed.log"
    worker: subprocess.Popen[Any] | None = None
    try:
        worker = start_worker(cfg, publisher(date, folder), folder, log)
        wait_for_file(folder / marker, worker, log)
        run_id = (folder / marker).read_text().split()[2]
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    finally:
        finish(worker)
    wait_expired(url, PUB, run_id, date)
    live = live_config(cfg)  # the rerun's lease never runs out, however loaded the machine
    again = run_luigi(live, *publisher(date, folder), "--no-lock", cwd=folder, timeout=90)
    assert again.returncode == 0, again.stdout + again.stderr + output_of(log)
    return run_id


def violations(ledger: gk.Ledger) -> list[tuple[Any, ...]]:
    """Publications whose producer attempt did not succeed, and rows written by an attempt
    that is not its date's succeeded latest one."""
    unproduced = ledger.read(
        "SELECT p.consumer, p.period, p.producer_run_id, a.state FROM gk_publications p "
        "LEFT JOIN gk_attempts a ON a.run_id = p.producer_run_id "
        "WHERE p.producer_run_id IS NOT NULL AND (a.state IS NULL OR a.state <> 'succeeded')"
    )
    late = ledger.read(
        "SELECT z.business_date, z.run_id, a.state FROM zombie_dim z "
        "LEFT JOIN gk_attempts a ON a.run_id = z.run_id "
        "WHERE a.state IS NULL OR a.state <> 'succeeded'"
    )
    return [tuple(r) for r in [*unproduced, *late]]


@pytest.mark.timeout(180)
def test_combined_faults_leave_no_violation(pg_ledger_url: str, tmp_path: Path) -> None:
    with gk.open_ledger(pg_ledger_url) as ledger:
        for day in DAYS:
            for job in ("PauseUpstreamA", "PauseUpstreamB"):
                run_id = f"{job}-{uuid.uuid4().hex[:8]}"
                ledger.record(job, day, 1, run_id, "succeeded", dt.datetime.now(UTC))
        with ledger.transaction():
            ledger.execute("CREATE TABLE zombie_dim (business_date TEXT, id INT, run_id TEXT)")

    # 1. killed between the publication's statements and its COMMIT
    one = tmp_path / "one"
    one.mkdir()
    (one / "hold-write").touch()
    never = killed_at("in-write", pg_ledger_url, DAYS[0], one)
    # 2. killed after the publication's COMMIT, before the success was recorded
    two = tmp_path / "two"
    two.mkdir()
    (two / "pause").touch()
    committed = killed_at("published", pg_ledger_url, DAYS[1], two)
    # 3. the COMMIT's answer lost (the proxy drops it and closes the connection)
    three = tmp_path / "three"
    three.mkdir()
    with pg_proxy(PG_DSN) as proxy:
        url = f"{proxy.url(pg_ledger_url)}&reconnect_window=10"
        cfg = write_config(three, url, lease_seconds=30)
        proxy.arm("answer", has("INSERT INTO gk_publications"))
        lost = run_luigi(cfg, *publisher(DAYS[2], three), "--no-lock", cwd=three, timeout=90)
        assert lost.returncode == 0, lost.stdout + lost.stderr
        assert proxy.cuts == ["answer"]
    # 4. an upstream body frozen past its lease, taken over, then resumed
    four = tmp_path / "four"
    four.mkdir()
    (four / "hang").touch()
    url, session = named(pg_ledger_url)  # its sessions named, to stop it outside a transaction
    cfg = write_config(four, url, lease_seconds=LEASE)
    args = ("--module", "tests.helpers.fault_tasks", "ZombieDim", "--business-date")
    args += (DAYS[3].isoformat(), "--control", str(four))
    log = four / "zombie.log"
    zombie: subprocess.Popen[Any] | None = None
    try:
        zombie = start_worker(cfg, args, four, log)
        wait_for_file(four / "started", zombie, log)
        stop_outside_transaction(zombie, pg_ledger_url, session)
        frozen = (four / "started").read_text().split()[2]
        wait_expired(pg_ledger_url, "ZombieDim", frozen, DAYS[3])
        successor = run_luigi(live_config(cfg), *args, "--no-lock", cwd=four, timeout=90)
        assert successor.returncode == 0, successor.stdout + successor.stderr
        os.killpg(zombie.pid, signal.SIGCONT)
        (four / "release").touch()
        zombie.wait(timeout=60)
        assert "LeaseLost" in output_of(log), output_of(log)
    finally:
        finish(zombie)

    with gk.open_ledger(pg_ledger_url) as ledger:
        assert violations(ledger) == []
        assert ledger.verify() == []  # and every invariant gatekeeper verify checks
        states = {
            day: [(a.run_id, a.state.value) for a in ledger.attempts(PUB, day)] for day in DAYS[:3]
        }
        assert states[DAYS[0]][0] == (never, "abandoned"), states
        assert states[DAYS[1]] == [(committed, "succeeded")], states
        assert [s for _, s in states[DAYS[2]]] == ["succeeded"], states
        for day in DAYS[:3]:
            (published,) = ledger.publications(PUB, day)
            assert published.run_id == ledger.latest(PUB, day).run_id  # type: ignore[union-attr]
        assert len(ledger.read("SELECT * FROM zombie_dim")) == 2
