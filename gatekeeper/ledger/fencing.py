"""Fencing: only the attempt that holds its period's live lease may write as its owner
(``docs/ownership.md``).

Two checks, each made inside the transaction whose writes it guards, by the database's clock:

- ``fence_producer``: a publication's producer (``publish(..., producer=)``, reservations) is
  the latest attempt of (consumer, period), running, its lease live; the attempt key's lock is
  held to the COMMIT, so no takeover slips between the check and the commit.
- ``fence_owner``: a task body's own writes (``Ledger.owned_by``, ``owned.py``): the attempt
  is still running with a live lease, checked before the transaction's first write and again
  just before its COMMIT, its row then locked against a takeover until the COMMIT: PostgreSQL
  ``SELECT ... FOR SHARE`` (a takeover's UPDATE of the row waits for this COMMIT, and one
  that committed first is the row read), SQLite by ``BEGIN IMMEDIATE`` (one writer at a time,
  for the whole transaction). A zombie's write raises LeaseLost and writes nothing.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from gatekeeper.core.errors import LeaseLost
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.ledger.sql import ATTEMPT_COLUMNS

if TYPE_CHECKING:
    from gatekeeper.ledger.attempt_reads import AttemptReads


def fence_producer(
    attempts: AttemptReads, consumer: str, period: str, producer: str, now: dt.datetime | None
) -> Attempt:
    """The producer's attempt, if it still owns (consumer, period): the latest attempt,
    running, its lease live by the database's clock (or ``now``). Else LeaseLost (nothing
    written). In a transaction: takes the attempt key's lock too, so no takeover can slip
    between this check and the commit; lock order is always publication, then attempt.
    """
    sql = attempts.sql
    sql.lock_key("attempt", consumer, period)  # pragma: no mutate
    found = attempts.of_period(consumer, period)
    mine = next((a for a in found if a.run_id == producer), None)
    latest = found[-1] if found else None
    at = now if now is not None else sql.db_now()
    if mine is not None and mine is latest and mine.lease_live(at):
        return mine
    raise lost(consumer, period, producer, mine, latest, at, "refusing to publish", "consumer")


def fence_owner(attempts: AttemptReads, run_id: str, lock: bool = True) -> Attempt:
    """In a transaction: attempt ``run_id``, when it is still running with a lease live by
    the database's clock; with ``lock``, its row locked against a takeover until the
    transaction ends (``Dialect.owner_sql``: made just before the COMMIT) and the
    transaction's ID noted (``SqlCore.identify``), where the dialect reads one. Else LeaseLost
    naming the attempt that took over, if any; the caller's transaction then rolls back
    (nothing written)."""
    sql = attempts.sql
    rows = sql.execute(sql.dialect.owner_sql(ATTEMPT_COLUMNS, lock), (run_id,)).fetchall()
    if not rows:
        raise lost("?", "?", run_id, None, None, sql.db_now(), "refusing its write")
    *row, read_at, xid = rows[0]
    job, period = row[0], row[1]
    clock = sql.ts_out(read_at) if read_at is not None else sql.db_now()
    assert clock is not None
    mine = attempts.to_attempt(row)
    if mine.lease_live(clock):
        if xid is not None:  # a lost COMMIT is read back by it (``readback.fenced_commit``)
            sql.identify(int(xid))
        return mine
    found = attempts.of_period(job, period)
    latest = found[-1] if found else None
    raise lost(job, period, run_id, mine, latest, clock, "refusing its write")


def lost(
    job: str,
    period: str,
    run_id: str,
    mine: Attempt | None,
    latest: Attempt | None,
    at: dt.datetime,
    refusing: str,
    whose: str = "job",
) -> LeaseLost:
    """LeaseLost for ``run_id`` (its attempt ``mine``, the period's ``latest``), saying why."""
    named = f"attempt {mine.attempt} (run {mine.run_id})" if mine else f"run {run_id}"
    taken = latest is not None and (mine is None or latest.run_id != mine.run_id)
    if mine is None:
        why = f"is not an attempt of this {whose} and date"
    elif latest is not None and taken:
        why = f"was taken over by attempt {latest.attempt} (run {latest.run_id})"
    elif mine.state is not RunState.RUNNING:
        why = f"is already {mine.state.value}"
    else:
        expired = mine.lease_expires_at.isoformat() if mine.lease_expires_at else "never set"
        why = f"lost its lease (expired {expired}; the database's clock reads {at.isoformat()})"
    return LeaseLost(
        f"{job} {period}: {named} {why}; {refusing}",
        run_id=run_id,
        taken_over_by=latest if taken else None,
        job=job,
        period=period,
        attempt=None if mine is None else mine.attempt,
    )
