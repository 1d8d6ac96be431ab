"""Ownership under faults (docs/ownership.md), with real `luigi` processes.

The faults:

- **zombie**: a worker is frozen with SIGSTOP inside a GatedTask's ``build()`` until its lease
  has expired; a second worker takes over (attempt 1 abandoned) and publishes. When the first
  wakes it must be fenced: ``LeaseLost``, exit ``task_failed``, none of its rows written and
  the publication still naming attempt 2 as its producer.
- **held transaction** (PostgreSQL): ``run()`` holds ``self.ledger().transaction()`` for
  several leases; the heartbeat renews on its own connection, so a second process gets
  ``LeaseHeld`` instead of taking over.
- **fast clock** (PostgreSQL, ``faketime``): a worker whose host clock is ten minutes fast
  must judge the lease by the database's clock and get ``LeaseHeld``.
- **two concurrent forward ranges**: two `luigi` processes fill the same 30 dates of a gated
  pipeline at once; every (job, date) ends with exactly one attempt and every date with one
  publication revision: a race loser records nothing, and a task that finds its period
  already succeeded runs nothing.

Every wait is bounded and every process started here is killed (by its process group) in a
``finally`` block.
"""

from __future__ import annotations

import datetime as dt
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import PG_DSN
from tests.helpers.luigi_support import (
    live_config,
    luigi_command,
    luigi_env,
    run_luigi,
    write_config,
)

# the Luigi adapter (run on every supported Luigi); its waits end on events (a file, a lease
# expired by the database's clock), so it shares the
# machine with other tests under xdist, but for the two tests marked serial (they say why)
pytestmark = pytest.mark.luigi

UTC = dt.timezone.utc
D = dt.date(2026, 10, 23)
DATE = D.isoformat()
TASK_FAILED = 30


# -- helpers ---------------------------------------------------------------------------------
def is_postgres(url: str) -> bool:
    return url.startswith("postgresql://")


def output_of(path: Path) -> str:
    return path.read_text(errors="replace") if path.exists() else "<no output>"


def wait_for_file(path: Path, proc: subprocess.Popen[Any], log: Path, timeout: float = 60) -> None:
    """Wait for ``path``; fail at once (with the process's output) if ``proc`` exits first."""
    deadline = time.monotonic() + timeout
    while not path.exists():
        if proc.poll() is not None:
            raise AssertionError(
                f"worker exited ({proc.returncode}) before {path.name}:\n{output_of(log)}"
            )
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout}s:\n{output_of(log)}")
        time.sleep(0.05)


def start_worker(
    cfg: Path, args: Sequence[str], cwd: Path, log: Path, prefix: Sequence[str] = ()
) -> subprocess.Popen[Any]:
    """A `luigi` process in its own session (so its whole group can be stopped or killed);
    output goes to a file, never a pipe that a stopped reader could fill."""
    with log.open("w") as sink:
        return subprocess.Popen(
            [*prefix, *luigi_command(*args, "--local-scheduler", "--no-lock")],
            cwd=cwd,
            env=luigi_env(cfg),
            stdout=sink,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def finish(proc: subprocess.Popen[Any] | None) -> None:
    """Cleanup: continue and kill ``proc``'s process group if it is still running."""
    if proc is None or proc.poll() is not None:
        return
    for sig in (signal.SIGCONT, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
    proc.wait(timeout=30)


def db_now(ledger: gk.Ledger, url: str) -> dt.datetime:
    """The clock leases are judged by: PostgreSQL's clock_timestamp(), SQLite's host clock."""
    if is_postgres(url):
        value = ledger.read("SELECT clock_timestamp()")[0][0]
        return value.astimezone(UTC)
    return dt.datetime.now(UTC)


def ledger_writable(url: str, application_name: str | None) -> bool:
    """False while a process of ours has a ledger transaction open (it would block others).

    PostgreSQL: no session named ``application_name`` is active or idle in a transaction.
    SQLite: the write lock can be taken without waiting.
    """
    if is_postgres(url):
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*), count(*) FILTER (WHERE state IS DISTINCT FROM 'idle') "
                "FROM pg_stat_activity WHERE application_name = %s",
                (application_name,),
            ).fetchone()
        assert row is not None and row[0] > 0, (
            f"no session named {application_name}: the ledger URL's application_name was "
            "not passed to libpq, so this check would see nothing"
        )
        return bool(row[1] == 0)
    lite = sqlite3.connect(url.removeprefix("sqlite:///"), timeout=0, isolation_level=None)
    try:
        lite.execute("BEGIN IMMEDIATE")
        lite.execute("ROLLBACK")
        return True
    except sqlite3.OperationalError:
        return False
    finally:
        lite.close()


def stop_outside_transaction(
    proc: subprocess.Popen[Any], url: str, application_name: str | None, timeout: float = 20
) -> None:
    """SIGSTOP ``proc``'s group at a moment none of its threads (the heartbeat) is inside a
    ledger transaction, so the frozen worker holds no lock another worker would wait on."""
    deadline = time.monotonic() + timeout
    while True:
        os.killpg(proc.pid, signal.SIGSTOP)
        if ledger_writable(url, application_name):
            return
        os.killpg(proc.pid, signal.SIGCONT)
        if time.monotonic() > deadline:
            raise AssertionError("could not stop the worker outside a ledger transaction")
        time.sleep(0.1)


def problems(output: str) -> str:
    """The error lines of a luigi process's output (a short assertion message)."""
    wanted = (
        "Error",
        "Exception",
        "Conflict",
        "LeaseHeld",
        "LeaseLost",
        "NotReady",
        "Unfulfilled",
        "failed",
    )
    lines = [line for line in output.splitlines() if any(w in line for w in wanted)]
    return "\n".join(lines[:60]) or output[-3000:]


def require_faketime() -> str:
    found = shutil.which("faketime")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("needs faketime (Debian package faketime); CI is set, so not skipped")
        pytest.skip("needs faketime (Debian package faketime)")
    return found


# -- 1. zombie -------------------------------------------------------------------------------
def prepare_zombie(ledger_url: str, folder: Path) -> dict[str, str]:
    """The upstream attempts ZombieGated is gated on (succeeded for D) and its output table;
    ``folder``'s ``hang`` file makes the first worker to claim it wait inside ``build()``.
    Returns the upstream jobs' run IDs."""
    with gk.open_ledger(ledger_url) as ledger:
        upstream = {
            job: f"{job}-{uuid.uuid4().hex[:8]}" for job in ("ZombieUpstreamA", "ZombieUpstreamB")
        }
        for job, run_id in upstream.items():
            ledger.record(job, D, 1, run_id, "succeeded", dt.datetime.now(UTC))
        with ledger.transaction():
            ledger.execute(
                "CREATE TABLE zombie_out (business_date TEXT NOT NULL, "
                "run_id TEXT NOT NULL, attempt INTEGER NOT NULL)"
            )
    (folder / "hang").touch()
    return upstream


@pytest.mark.slow
def test_zombie_worker_is_fenced_after_its_lease_is_taken_over(
    ledger_url: str, tmp_path: Path
) -> None:
    lease = 3.0
    application_name = None
    url = ledger_url
    if is_postgres(url):  # name the workers' sessions, to stop them outside a transaction
        application_name = f"gk_zombie_{uuid.uuid4().hex[:8]}"
        url = f"{url}&application_name={application_name}"
    cfg = write_config(tmp_path, url, lease_seconds=lease)
    upstream = prepare_zombie(ledger_url, tmp_path)
    args = (
        "--module",
        "tests.helpers.luigi_tasks",
        "ZombieGated",
        "--business-date",
        DATE,
        "--control",
        str(tmp_path),
    )
    log1 = tmp_path / "worker1.log"
    worker1: subprocess.Popen[Any] | None = None
    try:
        worker1 = start_worker(cfg, args, tmp_path, log1)
        wait_for_file(tmp_path / "started", worker1, log1)
        _, ordinal, zombie_run = (tmp_path / "started").read_text().split()
        assert ordinal == "1"
        stop_outside_transaction(worker1, ledger_url, application_name)

        with gk.open_ledger(ledger_url) as ledger:
            deadline = time.monotonic() + 5 * lease
            while True:  # until attempt 1's lease expired by the database's clock
                (frozen,) = ledger.attempts("ZombieGated", D)
                assert frozen.run_id == zombie_run and frozen.state is gk.RunState.RUNNING
                assert frozen.lease_expires_at is not None
                if db_now(ledger, ledger_url) > frozen.lease_expires_at + dt.timedelta(seconds=0.5):
                    break
                assert time.monotonic() < deadline, "the frozen worker's lease never expired"
                time.sleep(0.2)

        worker2 = run_luigi(live_config(cfg), *args, "--no-lock", cwd=tmp_path, timeout=90)
        assert worker2.returncode == 0, worker2.stdout + worker2.stderr

        with gk.open_ledger(ledger_url) as ledger:
            first, second = ledger.attempts("ZombieGated", D)
            assert (first.attempt, first.run_id, first.state) == (
                1,
                zombie_run,
                gk.RunState.ABANDONED,
            )
            assert (second.attempt, second.state) == (2, gk.RunState.SUCCEEDED)
            published = ledger.publication("ZombieGated", D)
            assert published is not None
            assert (published.run_id, published.attempt) == (second.run_id, 2)
            assert published.evidence == upstream

        os.killpg(worker1.pid, signal.SIGCONT)
        (tmp_path / "release").touch()  # the zombie's build() returns and it tries to publish
        worker1.wait(timeout=60)
        out1 = output_of(log1)
        assert worker1.returncode == TASK_FAILED, out1
        assert "LeaseLost" in out1, out1
        assert second.run_id in out1 or "attempt 2" in out1, (
            "LeaseLost should name the attempt that took over\n" + out1
        )

        with gk.open_ledger(ledger_url) as ledger:
            assert [(a.attempt, a.run_id, a.state) for a in ledger.attempts("ZombieGated", D)] == [
                (1, zombie_run, gk.RunState.ABANDONED),
                (2, second.run_id, gk.RunState.SUCCEEDED),
            ]
            (only,) = ledger.publications("ZombieGated", D)
            assert (only.revision, only.run_id, only.attempt) == (1, second.run_id, 2)
            assert only.evidence == upstream
            rows = ledger.read("SELECT business_date, run_id, attempt FROM zombie_out")
            assert [tuple(r) for r in rows] == [(DATE, second.run_id, 2)]
        evidence = subprocess.run(
            [
                sys.executable,
                "-m",
                "gatekeeper.cli",
                "--ledger",
                ledger_url,
                "evidence",
                "ZombieGated",
                DATE,
            ],
            cwd=tmp_path,
            env=luigi_env(cfg),
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert evidence.returncode == 0, evidence.stdout + evidence.stderr
        assert second.run_id in evidence.stdout, evidence.stdout  # the producer is shown
        assert zombie_run not in evidence.stdout, evidence.stdout
    finally:
        finish(worker1)


# -- 2. held transaction ---------------------------------------------------------------------
@pytest.mark.slow
# serial: the heartbeat must renew a 2 s lease on time for 10 s; a machine loaded by other tests
# can delay its thread past the lease, which is the load this test is not about
@pytest.mark.serial
def test_heartbeat_renews_while_run_holds_a_transaction(pg_ledger_url: str, tmp_path: Path) -> None:
    lease = 2.0
    hold = 5 * lease  # far longer than a lease: only the heartbeat keeps it alive
    cfg = write_config(tmp_path, pg_ledger_url, lease_seconds=lease)
    (tmp_path / "hold").write_text(str(hold))
    args = (
        "--module",
        "tests.helpers.luigi_tasks",
        "HeldTransaction",
        "--business-date",
        DATE,
        "--control",
        str(tmp_path),
    )
    log1 = tmp_path / "worker1.log"
    worker1: subprocess.Popen[Any] | None = None
    try:
        worker1 = start_worker(cfg, args, tmp_path, log1)
        wait_for_file(tmp_path / "started", worker1, log1)
        _, _, holder = (tmp_path / "started").read_text().split()
        time.sleep(lease * 1.5)  # without renewals the lease would have expired by now
        second = run_luigi(cfg, *args, "--no-lock", cwd=tmp_path, timeout=60)
        assert not (tmp_path / "held-done").exists(), (
            "inconclusive: the transaction ended before the second worker started; raise `hold`"
        )
        out2 = second.stdout + second.stderr
        assert second.returncode == TASK_FAILED, out2
        assert "LeaseHeld" in out2, out2

        worker1.wait(timeout=60)
        assert worker1.returncode == 0, output_of(log1)
        assert (tmp_path / "held-done").exists()
        with gk.open_ledger(pg_ledger_url) as ledger:
            assert [
                (a.attempt, a.run_id, a.state) for a in ledger.attempts("HeldTransaction", D)
            ] == [(1, holder, gk.RunState.SUCCEEDED)]
    finally:
        finish(worker1)


# -- 3. a worker whose clock is ten minutes fast ---------------------------------------------
@pytest.mark.slow
def test_fast_clock_worker_gets_lease_held(pg_ledger_url: str, tmp_path: Path) -> None:
    faketime = require_faketime()
    cfg = write_config(tmp_path, pg_ledger_url, lease_seconds=60)
    (tmp_path / "hang").touch()
    args = (
        "--module",
        "tests.helpers.luigi_tasks",
        "Hanging",
        "--business-date",
        DATE,
        "--control",
        str(tmp_path),
    )
    log1 = tmp_path / "worker1.log"
    worker1: subprocess.Popen[Any] | None = None
    try:
        worker1 = start_worker(cfg, args, tmp_path, log1)
        wait_for_file(tmp_path / "started", worker1, log1)
        _, _, holder = (tmp_path / "started").read_text().split()
        fast = subprocess.run(
            [faketime, "-f", "+10m", *luigi_command(*args, "--local-scheduler", "--no-lock")],
            cwd=tmp_path,
            env=luigi_env(cfg),
            capture_output=True,
            text=True,
            timeout=90,
        )
        out2 = fast.stdout + fast.stderr
        assert fast.returncode == TASK_FAILED, out2
        assert "LeaseHeld" in out2, out2
        with gk.open_ledger(pg_ledger_url) as ledger:
            (only,) = ledger.attempts("Hanging", D)
            assert (only.attempt, only.run_id, only.state) == (1, holder, gk.RunState.RUNNING)
        assert worker1.poll() is None, output_of(log1)
    finally:
        finish(worker1)


# -- 4. two concurrent forward ranges --------------------------------------------------------
RACE_JOBS = ("RaceUpstreamA", "RaceUpstreamB", "RaceGated")
RACE_DATES = [dt.date(2026, 9, 1) + dt.timedelta(days=n) for n in range(30)]


@pytest.mark.slow
@pytest.mark.timeout(600)  # two racing ranges, then maybe a rerun: each waited up to 240 s
# serial: the race is only a race while both ranges run at once; beside xdist one often
# finishes before the other starts (the machine to itself)
@pytest.mark.serial
def test_two_forward_ranges_attempt_every_period_once(ledger_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, ledger_url)
    command = luigi_command(
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        "--of",
        "RaceGated",
        "--start",
        "2026-09-01",
        "--stop",
        "2026-10-01",
        "--strategy",
        "forward",
        "--workers",
        "2",
        "--local-scheduler",
        "--no-lock",
    )
    procs: list[subprocess.Popen[str]] = []
    try:
        for _ in range(2):
            procs.append(
                subprocess.Popen(
                    command,
                    cwd=tmp_path,
                    env=luigi_env(cfg),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                )
            )
        outputs = [p.communicate(timeout=240)[0] for p in procs]
    finally:
        for proc in procs:
            finish(proc)
    codes = [p.returncode for p in procs]
    for number, (code, out) in enumerate(zip(codes, outputs, strict=True), 1):
        (tmp_path / f"range-{number}.log").write_text(out)  # kept for a post-mortem
        assert code in (0, TASK_FAILED), (code, problems(out))
        # Unfulfilled dependency: a dependency complete at scheduling time became incomplete,
        # i.e. someone started a new attempt after it had succeeded (duplicate work)
        assert "Unfulfilled dependency" not in out, problems(out)
        if code == TASK_FAILED:  # a race loser: it failed a period with LeaseHeld
            assert "LeaseHeld" in out, problems(out)
    if TASK_FAILED in codes:  # finish what the losers left, once, sequentially
        rerun = subprocess.run(
            command, cwd=tmp_path, env=luigi_env(cfg), capture_output=True, text=True, timeout=240
        )
        assert rerun.returncode == 0, problems(rerun.stdout + rerun.stderr)

    with gk.open_ledger(ledger_url) as ledger:
        for job in RACE_JOBS:
            by_date: dict[str, list[tuple[int, str]]] = {}
            for attempt in ledger.history(job):
                by_date.setdefault(attempt.business_date, []).append(
                    (attempt.attempt, attempt.state.value)
                )
            assert by_date == {d.isoformat(): [(1, "succeeded")] for d in RACE_DATES}, (
                job,
                by_date,
            )
        for day in RACE_DATES:
            (only,) = ledger.publications("RaceGated", day)
            producer = ledger.latest("RaceGated", day)
            assert producer is not None
            assert (only.revision, only.run_id, only.attempt) == (1, producer.run_id, 1)
            assert only.evidence == {
                job: ledger.attempts(job, day)[0].run_id for job in RACE_JOBS[:2]
            }
    stale = subprocess.run(
        [sys.executable, "-m", "gatekeeper.cli", "--ledger", ledger_url, "stale", "RaceGated"],
        cwd=tmp_path,
        env=luigi_env(cfg),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert stale.returncode == 0, stale.stdout + stale.stderr
    assert "no stale publications" in stale.stdout, stale.stdout
