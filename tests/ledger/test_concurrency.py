"""Stress and fault tests on both backends: real worker processes sharing one ledger.

Every worker is a ``spawn`` process that opens its own ledger with ``gk.open_ledger(url)``.
Workers start together behind a barrier; every wait is bounded, and the tests assert what the
ledger holds afterwards, never how long anything took.
"""

from __future__ import annotations

import datetime as dt
import itertools
import json
import multiprocessing as mp
import os
import random
import signal
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from queue import Empty
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import count_rows, succeed, user_table

CTX = mp.get_context("spawn")
WORKERS = 8
WAIT = 60.0  # upper bound of any single wait; a healthy run needs a small fraction of it
UPSTREAM = ("DimCustomer", "DimProduct")
CONSUMER = "DailySalesLoad"
OUT = "sales_totals"
JOB = "RegionLoad(region=eu)"
D = "2026-10-23"
DATES = tuple(str(dt.date(2026, 1, 1) + dt.timedelta(days=i)) for i in range(100))


# -- process plumbing ------------------------------------------------------------------------
def _trap(target: Callable[..., Any], queue: Any, index: int, *args: Any) -> None:
    """Run ``target(*args)`` in a worker and report (index, ok, result or traceback)."""
    try:
        queue.put((index, True, target(*args)))
    except BaseException:  # noqa: B036 - every failure must reach the parent, not a hang
        queue.put((index, False, traceback.format_exc()))


def start(target: Callable[..., Any], queue: Any, index: int, *args: Any) -> Any:
    process = CTX.Process(target=_trap, args=(target, queue, index, *args), daemon=True)
    process.start()
    return process


def collect(queue: Any, processes: dict[int, Any]) -> dict[int, Any]:
    """Each worker's result by index; fails the test on a worker error or a missed deadline.

    A worker that dies without reporting (say it could not even import) fails the test within
    seconds with its exit code; its traceback is in the captured stderr. After a failure the
    remaining workers are killed rather than waited for.
    """
    deadline = time.monotonic() + WAIT
    pending = dict(processes)
    results: dict[int, Any] = {}
    failures: list[str] = []
    dead_since: dict[int, float] = {}
    try:
        while pending and not failures:
            try:
                index, ok, value = queue.get(timeout=0.2)
            except Empty:
                failures.extend(silent_deaths(pending, dead_since))
                if time.monotonic() > deadline:
                    failures.append(f"workers {sorted(pending)} did not report in {WAIT:.0f}s")
                continue
            pending.pop(index)
            if ok:
                results[index] = value
            else:
                failures.append(f"worker {index}:\n{value}")
    finally:
        for process in processes.values():
            if failures and process.is_alive():
                process.kill()
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join(timeout=10)
    assert not failures, "\n".join(failures)
    return results


def silent_deaths(pending: dict[int, Any], dead_since: dict[int, float]) -> list[str]:
    """Workers that exited without a result (allowing a result in flight 2 s to arrive)."""
    now = time.monotonic()
    found = []
    for index, process in pending.items():
        if process.exitcode is None:
            continue
        if now - dead_since.setdefault(index, now) > 2.0:
            found.append(f"worker {index} exited with code {process.exitcode} without reporting")
    return found


def run_all(target: Callable[..., Any], args: Sequence[tuple[Any, ...]]) -> dict[int, Any]:
    """Run ``target(barrier, *a)`` in one process per ``a``, all released together."""
    queue = CTX.Queue()
    barrier = CTX.Barrier(len(args))
    processes = {i: start(target, queue, i, barrier, *a) for i, a in enumerate(args)}
    return collect(queue, processes)


def wait_until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + WAIT
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"gave up after {WAIT:.0f}s waiting for {what}")
        time.sleep(0.02)


def write_marker(path: str, payload: dict[str, Any]) -> None:
    tmp = f"{path}.tmp"
    Path(tmp).write_text(json.dumps(payload))
    os.replace(tmp, path)


def read_marker(path: str) -> dict[str, Any]:
    wait_until(lambda: os.path.exists(path), f"marker {path}")
    return dict(json.loads(Path(path).read_text()))


def ready_then_wait(ledger: gk.Ledger, ready: str, go: str) -> None:
    """In a worker: announce its session, then wait (bounded) for the parent's go file.

    Workers open their ledger before the parent takes a lock: on SQLite opening the ledger
    needs the write lock too (the schema check runs in a write transaction).
    """
    write_marker(ready, {"backend": session_id(ledger)})
    deadline = time.monotonic() + WAIT
    while not os.path.exists(go):
        if time.monotonic() > deadline:
            raise TimeoutError(f"no {go} after {WAIT:.0f}s")
        time.sleep(0.01)


def session_id(ledger: gk.Ledger) -> int:
    """The PostgreSQL backend pid of the ledger's connection (the process pid on SQLite)."""
    if ledger.dialect == "postgresql":
        return int(ledger.read("SELECT pg_backend_pid()")[0][0])
    return os.getpid()


def pg_waiting(ledger: gk.Ledger, backend: int) -> bool:
    """True when the PostgreSQL session ``backend`` waits for a lock it has not been granted."""
    rows = ledger.read("SELECT 1 FROM pg_locks WHERE pid = ? AND NOT granted", (backend,))
    return bool(rows)


def insert_sql(ledger: gk.Ledger) -> str:
    return f"INSERT INTO {OUT} (business_date, cents) VALUES (?, ?)"


def make_ready(ledger: gk.Ledger, dates: Sequence[str]) -> dict[tuple[str, str], str]:
    """Create the output table and record succeeded upstream attempts; returns the run IDs."""
    user_table(ledger, OUT)
    return {(job, date): succeed(ledger, job, date) for date in dates for job in UPSTREAM}


def assert_evidence(ledger: gk.Ledger, date: str, runs: dict[tuple[str, str], str]) -> None:
    found = ledger.publication(CONSUMER, date)
    assert found is not None
    assert {(e.job, e.run_id) for e in found.items} == {(j, runs[(j, date)]) for j in UPSTREAM}


# -- workers (module level so that spawn can import them) ------------------------------------
def publish_all(barrier: Any, url: str, index: int) -> dict[str, str]:
    """Publish every date of DATES; even workers go forward, odd ones backward."""
    outcomes: dict[str, str] = {}
    with gk.open_ledger(url) as ledger:
        sql = insert_sql(ledger)
        barrier.wait(timeout=WAIT)
        for date in DATES if index % 2 == 0 else reversed(DATES):

            def write(conn: Any, date: str = date) -> None:
                conn.execute(sql, (date, index))

            try:
                first = ledger.publish(CONSUMER, date, UPSTREAM, f"fp-{index % 2}", write)
                outcomes[date] = "first" if first else "retry"
            except gk.PublicationConflict:
                outcomes[date] = "conflict"
    return outcomes


def publish_then_hang(url: str, marker: str) -> None:
    """Insert the output row inside the publication, announce it, then wait to be killed."""
    with gk.open_ledger(url) as ledger:
        sql = insert_sql(ledger)
        backend = session_id(ledger)

        def write(conn: Any) -> None:
            conn.execute(sql, (D, 666))
            write_marker(marker, {"backend": backend})
            time.sleep(2 * WAIT)

        ledger.publish(CONSUMER, D, UPSTREAM, "fp-victim", write)


def publish_after(url: str, ready: str, go: str) -> tuple[bool, bool]:
    """On the go file, publish D (blocking behind whoever holds its lock), then retry once."""
    with gk.open_ledger(url) as ledger:
        sql = insert_sql(ledger)
        ready_then_wait(ledger, ready, go)
        first = ledger.publish(CONSUMER, D, UPSTREAM, "fp-next", lambda c: c.execute(sql, (D, 1)))
        again = ledger.publish(CONSUMER, D, UPSTREAM, "fp-next", lambda c: c.execute(sql, (D, 2)))
    return first, again


def take_attempt(barrier: Any, url: str, index: int, crash: bool) -> dict[str, Any]:
    """Loop on begin_attempt until granted; then record the outcome, or "crash" (record none).

    A crashing worker holds a short lease that the next worker must see expire; the others
    hold a long lease and record their outcome at once.
    """
    rng = random.Random(index)
    refusals = 0
    with gk.open_ledger(url) as ledger:
        barrier.wait(timeout=WAIT)
        deadline = time.monotonic() + WAIT
        while True:
            try:
                got = ledger.begin_attempt(
                    JOB, D, f"worker-{index}", lease_seconds=1.0 if crash else 30.0
                )
                break
            except gk.LeaseHeld:
                refusals += 1
                if time.monotonic() > deadline:
                    raise
                time.sleep(rng.uniform(0.005, 0.03))
        if not crash:
            state = "succeeded" if index % 2 == 0 else "failed"
            assert ledger.record(JOB, D, got.attempt, got.run_id, state, got.started_at)
    return {"attempt": got.attempt, "run_id": got.run_id, "refusals": refusals}


def begin_when_free(url: str, ready: str, go: str) -> str:
    """On the go file, begin an attempt (waiting for the key's lock); returns it as JSON."""
    with gk.open_ledger(url) as ledger:
        ready_then_wait(ledger, ready, go)
        got = ledger.begin_attempt(JOB, D, "late-runner", lease_seconds=1.0)
    return json.dumps(
        [
            got.attempt,
            got.started_at.isoformat(),
            got.lease_expires_at.isoformat() if got.lease_expires_at else None,
        ]
    )


# -- tests -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_publish_race_one_publication_per_key(ledger: gk.Ledger, ledger_url: str) -> None:
    runs = make_ready(ledger, DATES)

    results = run_all(publish_all, [(ledger_url, i) for i in range(WORKERS)])

    assert sorted(results) == list(range(WORKERS))
    rows = dict(ledger.read(f"SELECT business_date, cents FROM {OUT}"))
    assert count_rows(ledger, OUT) == len(DATES) == len(rows)
    assert count_rows(ledger, "gk_publications") == len(DATES)
    for date in DATES:
        winners = [i for i, out in results.items() if out[date] == "first"]
        assert len(winners) == 1, (date, winners)
        winner = winners[0]
        assert rows[date] == winner  # the winner's write committed, nobody else's
        found = ledger.publication(CONSUMER, date)
        assert found is not None and found.revision == 1
        assert found.fingerprint == f"fp-{winner % 2}"
        assert_evidence(ledger, date, runs)
        for i, out in results.items():
            if i != winner:  # same fingerprint is a retry; the other one a conflict
                assert out[date] == ("retry" if i % 2 == winner % 2 else "conflict"), (date, i)


@pytest.mark.slow
def test_publisher_killed_in_its_transaction_leaves_nothing(
    ledger: gk.Ledger, ledger_url: str, tmp_path: Path
) -> None:
    runs = make_ready(ledger, [D])
    victim_marker, ready, go = (str(tmp_path / n) for n in ("victim.json", "ready.json", "go"))
    queue = CTX.Queue()
    follower = start(publish_after, queue, 0, ledger_url, ready, go)
    waiter = read_marker(ready)["backend"]
    victim = CTX.Process(target=publish_then_hang, args=(ledger_url, victim_marker), daemon=True)
    victim.start()
    try:
        read_marker(victim_marker)  # the output row is inserted, the transaction still open
        Path(go).touch()
        if ledger.dialect == "postgresql":  # the follower is blocked on the publication's lock
            wait_until(lambda: pg_waiting(ledger, waiter), "the follower to wait for the lock")
        else:
            time.sleep(0.3)  # let the follower reach BEGIN IMMEDIATE (helps, not asserted)
        assert ledger.publication(CONSUMER, D) is None and count_rows(ledger, OUT) == 0

        os.kill(victim.pid, signal.SIGKILL)
        victim.join(timeout=WAIT)
        assert victim.exitcode == -signal.SIGKILL
    finally:
        if victim.is_alive():
            victim.kill()
            victim.join(timeout=10)

    first, again = collect(queue, {0: follower})[0]

    assert (first, again) == (True, False)
    assert ledger.read(f"SELECT business_date, cents FROM {OUT}") == [(D, 1)]
    published = ledger.publications(CONSUMER, D)
    assert [(p.revision, p.fingerprint) for p in published] == [(1, "fp-next")]
    assert count_rows(ledger, "gk_evidence") == len(UPSTREAM)
    assert_evidence(ledger, D, runs)
    if ledger.dialect == "sqlite":
        assert ledger.read("PRAGMA integrity_check") == [("ok",)]


@pytest.mark.slow
def test_begin_attempt_race_gapless_ordinals_one_live_lease(
    ledger: gk.Ledger, ledger_url: str
) -> None:
    crashers = {0, 1}
    args = [(ledger_url, i, i in crashers) for i in range(WORKERS)]

    results = run_all(take_attempt, args)

    by_attempt = {r["attempt"]: (i, r["run_id"]) for i, r in results.items()}
    assert sorted(by_attempt) == list(range(1, WORKERS + 1))  # unique and gap-free
    assert sum(r["refusals"] for r in results.values()) > 0  # leases were contended
    attempts = ledger.attempts(JOB, D)
    assert [(a.attempt, a.run_id) for a in attempts] == [
        (n, by_attempt[n][1]) for n in range(1, WORKERS + 1)
    ]
    for a in attempts:
        worker = by_attempt[a.attempt][0]
        if worker not in crashers:
            assert a.state.value == ("succeeded" if worker % 2 == 0 else "failed")
        elif a is attempts[-1]:
            assert a.state is gk.RunState.RUNNING  # nobody came after it to abandon it
        else:
            assert a.state is gk.RunState.ABANDONED and "lease expired" in (a.error or "")
    for before, after in itertools.pairwise(attempts):
        # ``before`` held its lease until it recorded its outcome or the lease expired;
        # ``after`` must have started no earlier.
        if before.state is gk.RunState.ABANDONED:
            assert before.lease_expires_at is not None
            assert before.lease_expires_at <= after.started_at == before.updated_at
        else:
            assert before.updated_at <= after.started_at, (before, after)


def test_begin_attempt_waiting_for_the_lock_gets_a_full_lease(
    ledger: gk.Ledger, ledger_url: str, tmp_path: Path
) -> None:
    ready, go = str(tmp_path / "ready.json"), str(tmp_path / "go")
    queue = CTX.Queue()
    runner = start(begin_when_free, queue, 0, ledger_url, ready, go)
    backend = read_marker(ready)["backend"]
    with ledger.transaction():  # hold the key's lock while the runner asks for an attempt
        ledger.record(JOB, D, 1, "first-runner", "succeeded", dt.datetime.now(dt.timezone.utc))
        Path(go).touch()
        if ledger.dialect == "postgresql":
            wait_until(lambda: pg_waiting(ledger, backend), "the runner to wait for the lock")
        else:
            time.sleep(0.5)  # give the runner time to reach BEGIN IMMEDIATE (not asserted)
        released = dt.datetime.now(dt.timezone.utc)

    number, started, expires = json.loads(collect(queue, {0: runner})[0])

    assert number == 2
    assert dt.datetime.fromisoformat(started) >= released
    assert dt.datetime.fromisoformat(expires) >= released + dt.timedelta(seconds=1)
    assert ledger.latest(JOB, D) == ledger.attempts(JOB, D)[1]
