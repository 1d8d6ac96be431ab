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


def test_takeover_waits_for_a_fenced_transaction_in_flight(ledger_url: str) -> None:
    """The check holds: a takeover that starts while the owner's fenced transaction is open
    is ordered after it (PostgreSQL: the row lock; SQLite: the write lock), so the owner's
    rows land before the takeover, never after it."""
    with gk.open_ledger(ledger_url) as ledger, gk.open_ledger(ledger_url) as other:
        rows_table(ledger)
        owner = ledger.owned_by(ledger.begin_attempt(JOB, D, "slow-1", lease_seconds=0.5))
        inside = threading.Event()
        order: list[str] = []

        def takeover() -> None:
            inside.wait(30)
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                try:
                    other.begin_attempt(JOB, D, "next-2", lease_seconds=60)
                    order.append("takeover")
                    return
                except gk.LeaseHeld:
                    time.sleep(0.05)

        thread = threading.Thread(target=takeover)
        thread.start()
        with owner.transaction():
            owner.execute("INSERT INTO dim_rows VALUES (?, 1, 'slow-1')", (D,))
            inside.set()
            time.sleep(1.0)  # the lease expires while the transaction is open
            order.append("owner commits")
        thread.join(60)
        assert order == ["owner commits", "takeover"]
        assert ledger.read("SELECT run_id FROM dim_rows") == [("slow-1",)]
        with pytest.raises(gk.LeaseLost):
            owner.execute("INSERT INTO dim_rows VALUES (?, 2, 'slow-1')", (D,))
