"""A task body's writes through the ledger are fenced (``Ledger.owned_by``, issue 36).

After a takeover, a zombie's ``run_in_transaction``, ``transaction``, ``execute``,
``executemany`` and ``publish`` raise LeaseLost and write nothing, on both backends; while it
still owns its period they write as the plain ledger does.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import count_rows, snapshot, succeed

D = "2026-10-23"
JOB = "DimCustomer"


def rows_table(ledger: gk.Ledger) -> None:
    with ledger.transaction():
        ledger.execute("CREATE TABLE dim_rows (business_date TEXT, id INTEGER, run_id TEXT)")


def taken_over(ledger: gk.Ledger) -> tuple[gk.Ledger, gk.Attempt]:
    """A zombie's view (attempt 1, its lease expired and taken over by attempt 2) and the
    attempt that took over."""
    rows_table(ledger)
    first = ledger.begin_attempt(JOB, D, "zombie-1", lease_seconds=0.2)
    zombie = ledger.owned_by(first)
    time.sleep(0.4)  # the lease expires by the database's clock
    second = ledger.begin_attempt(JOB, D, "owner-2", lease_seconds=60)
    return zombie, second


WRITES: dict[str, Callable[[gk.Ledger], Any]] = {
    "run_in_transaction": lambda z: z.run_in_transaction(
        lambda: z.execute("INSERT INTO dim_rows VALUES (?, 1, 'zombie-1')", (D,))
    ),
    "transaction": lambda z: _in_transaction(z),
    "execute": lambda z: z.execute("INSERT INTO dim_rows VALUES (?, 1, 'zombie-1')", (D,)),
    "executemany": lambda z: z.executemany(
        "INSERT INTO dim_rows VALUES (?, ?, 'zombie-1')", [(D, 1), (D, 2)]
    ),
    "publish": lambda z: z.publish(JOB, D, ["Upstream"], "fp-zombie"),
    "publish another consumer": lambda z: z.publish("Other", D, ["Upstream"], "fp-zombie"),
}


def _in_transaction(zombie: gk.Ledger) -> None:
    with zombie.transaction():
        zombie.execute("INSERT INTO dim_rows VALUES (?, 1, 'zombie-1')", (D,))


@pytest.mark.parametrize("write", list(WRITES))
def test_zombie_body_write_raises_lease_lost_and_writes_nothing(
    ledger: gk.Ledger, write: str
) -> None:
    succeed(ledger, "Upstream", D)
    zombie, second = taken_over(ledger)
    before = snapshot(ledger)
    with pytest.raises(gk.LeaseLost) as lost:
        WRITES[write](zombie)
    assert lost.value.run_id == "zombie-1"
    assert lost.value.taken_over_by is not None and lost.value.taken_over_by.run_id == "owner-2"
    assert "taken over by attempt 2" in str(lost.value)
    assert snapshot(ledger) == before
    assert count_rows(ledger, "dim_rows") == 0
    assert second.run_id == ledger.latest(JOB, D).run_id  # type: ignore[union-attr]


@pytest.mark.parametrize("write", list(WRITES))
def test_owner_body_write_lands(ledger: gk.Ledger, write: str) -> None:
    succeed(ledger, "Upstream", D)
    rows_table(ledger)
    owner = ledger.owned_by(ledger.begin_attempt(JOB, D, "owner-1", lease_seconds=60))
    WRITES[write](owner)
    if write.startswith("publish"):
        consumer = JOB if write == "publish" else "Other"
        published = ledger.publication(consumer, D)
        assert published is not None
        assert published.run_id == ("owner-1" if consumer == JOB else None)
    else:
        assert count_rows(ledger, "dim_rows") >= 1


def test_body_write_after_the_attempt_finished_is_refused(ledger: gk.Ledger) -> None:
    rows_table(ledger)
    started = ledger.begin_attempt(JOB, D, "done-1", lease_seconds=60)
    owned = ledger.owned_by(started)
    ledger.record(JOB, D, 1, "done-1", "succeeded", started.started_at)
    with pytest.raises(gk.LeaseLost, match="already succeeded"):
        owned.execute("INSERT INTO dim_rows VALUES (?, 1, 'done-1')", (D,))
    assert count_rows(ledger, "dim_rows") == 0


def test_body_write_from_a_thread_is_fenced_too(ledger: gk.Ledger) -> None:
    zombie, _ = taken_over(ledger)
    caught: list[BaseException] = []

    def body_thread() -> None:
        try:
            zombie.execute("INSERT INTO dim_rows VALUES (?, 1, 'zombie-1')", (D,))
        except BaseException as exc:  # noqa: BLE001 - asserted below
            caught.append(exc)

    thread = threading.Thread(target=body_thread)
    thread.start()
    thread.join(30)
    assert [type(e) for e in caught] == [gk.LeaseLost]
    assert count_rows(ledger, "dim_rows") == 0


def test_lease_lost_during_a_fenced_transaction_refuses_its_commit(ledger_url: str) -> None:
    """The check is made again just before the COMMIT: an owner whose lease expired while its
    transaction was open, and was taken over meanwhile, writes nothing (PostgreSQL: the
    takeover need not wait for it; SQLite: it waits for the write lock, then takes over)."""
    with gk.open_ledger(ledger_url) as ledger, gk.open_ledger(ledger_url) as other:
        rows_table(ledger)
        owner = ledger.owned_by(ledger.begin_attempt(JOB, D, "slow-1", lease_seconds=0.3))
        taken: list[gk.Attempt] = []

        def takeover() -> None:
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline and not taken:
                try:
                    taken.append(other.begin_attempt(JOB, D, "next-2", lease_seconds=60))
                except gk.LeaseHeld:
                    time.sleep(0.05)

        thread = threading.Thread(target=takeover)
        with pytest.raises(gk.LeaseLost), owner.transaction():
            owner.execute("INSERT INTO dim_rows VALUES (?, 1, 'slow-1')", (D,))
            thread.start()
            time.sleep(1.0)  # the lease expires while the transaction is open
            if ledger.dialect == "postgresql":
                deadline = time.monotonic() + 30
                while not taken and time.monotonic() < deadline:
                    time.sleep(0.05)
                assert taken, "the takeover waited for the owner's transaction"
        thread.join(60)
        assert [a.run_id for a in taken] == ["next-2"]
        assert count_rows(ledger, "dim_rows") == 0


@pytest.mark.postgres
def test_fenced_transaction_does_not_hold_up_the_heartbeat(pg_ledger_url: str) -> None:
    """A body's long fenced transaction: its heartbeat renews the lease meanwhile (the row is
    locked only for the final check), so another worker gets LeaseHeld and the rows land."""
    with gk.open_ledger(pg_ledger_url) as ledger, gk.open_ledger(pg_ledger_url) as beat:
        rows_table(ledger)
        owner = ledger.owned_by(ledger.begin_attempt(JOB, D, "long-1", lease_seconds=0.5))
        with owner.transaction():
            owner.execute("INSERT INTO dim_rows VALUES (?, 1, 'long-1')", (D,))
            for _ in range(6):  # three leases, renewed by the heartbeat's own connection
                time.sleep(0.25)
                assert beat.heartbeat("long-1", lease_seconds=0.5)
            with pytest.raises(gk.LeaseHeld):
                beat.begin_attempt(JOB, D, "next-2", lease_seconds=60)
        assert ledger.read("SELECT run_id FROM dim_rows") == [("long-1",)]
