"""Reading back a write whose COMMIT's outcome is unknown (``docs/ownership.md``).

When the connection fails while a transaction commits (``outages.UnknownOutcome``), the
ledger does not guess: it opens a transaction on a fresh connection (riding out a database it
cannot reach, within ``reconnect_window``), takes the key lock the write took (so a commit
still in flight on the old session has ended, one way or the other) and reads what the write
would have left. Found: it committed, and its result is returned. Not found: it did not commit,
and never will, so the work runs again. When even that read cannot be made, ``UnknownOutcome``
with ``probed`` naming what it tried to read: the caller records nothing it cannot know (the
Luigi adapter leaves its attempt ``running`` for the lease to resolve).
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from typing import TypeVar

from gatekeeper.core.errors import LedgerError
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.ledger.attempt_reads import attempt_of_row
from gatekeeper.ledger.outages import UnknownOutcome
from gatekeeper.ledger.sql import ATTEMPT_COLUMNS, SqlCore

T = TypeVar("T")
logger = logging.getLogger("gatekeeper.ledger")
AGAIN = 3  # times a write found not committed runs again before its UnknownOutcome stands


def settle(sql: SqlCore, work: Callable[[], T], probe: Callable[[], T | None], what: str) -> T:
    """``work()`` (which runs its own transactions); when its COMMIT's outcome is unknown,
    ``probe()`` in a transaction of its own answers: its result when the write committed, None
    when it did not (``work`` then runs again, up to ``AGAIN`` times). Raises UnknownOutcome
    (``probed``: ``what``) when the probe cannot be made; whatever ``work`` raises otherwise."""
    for _ in range(AGAIN):
        try:
            return work()
        except UnknownOutcome as lost:
            if lost.probed is not None:  # a write inside ``work`` read back already
                raise
            found = _probe(sql, probe, what, lost)
        if found is not None:
            logger.warning("gatekeeper: %s: its COMMIT's answer was lost; it committed", what)
            return found
        logger.warning("gatekeeper: %s: its COMMIT's answer was lost; it had not committed", what)
    return work()


def _probe(
    sql: SqlCore, probe: Callable[[], T | None], what: str, lost: UnknownOutcome
) -> T | None:
    try:
        return sql.run_in_transaction(probe, f"the read-back of {what}")
    except LedgerError as exc:
        raise UnknownOutcome(
            f"{what}: the outcome of its COMMIT is unknown and could not be read back ({exc}); "
            f"nothing more was recorded (first failure: {lost})",
            probed=what,
        ) from exc


def attempt_of_run(sql: SqlCore, job: str, period: str, run_id: str) -> Attempt | None:
    """In a transaction: the attempt ``run_id`` of (job, period) once the period's attempt key
    lock is held (a commit of it in flight has ended), or None."""
    sql.lock_key("attempt", job, period, clock=False)
    rows = sql.execute(
        f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts WHERE job = ? AND period = ? AND run_id = ?",
        (job, period, run_id),
    ).fetchall()
    return attempt_of_row(sql, rows[0]) if rows else None


def started_probe(sql: SqlCore, job: str, period: str, run_id: str) -> Callable[[], Attempt | None]:
    """The probe of a start: the attempt ``run_id``, when its row committed."""
    return lambda: attempt_of_run(sql, job, period, run_id)


def finished_probe(
    sql: SqlCore, job: str, period: str, run_id: str, state: RunState
) -> Callable[[], bool | None]:
    """The probe of an observation: True when attempt ``run_id`` is in ``state`` (it
    committed), None when it is not (the observation runs again and is judged then)."""

    def probe() -> bool | None:
        found = attempt_of_run(sql, job, period, run_id)
        return True if found is not None and found.state is state else None

    return probe


def fenced_commit(sql: SqlCore, owner: Attempt, lost: UnknownOutcome) -> None:
    """After a fenced write of ``owner`` (a task body's transaction, ``owned.py``) lost its
    COMMIT's answer: return when the transaction committed; LedgerError (``retryable``: it did
    not commit, nothing it wrote was kept, it may run again) when it did not; UnknownOutcome
    (``probed``) when that cannot be read. ``lost`` carries no ``transaction_id``: re-raised.

    The body's rows are its own, so nothing of them is read: the fence's last check, just
    before the COMMIT, read the transaction's ID (``Dialect.owner_sql``, PostgreSQL's
    ``txid_current()``), which ``lost`` carries. On a fresh connection the attempt's row is
    locked (``Dialect.outcome_sql``; the lost transaction held it to its end, so it has
    ended, one way or the other) and the database's own record of that transaction read
    (``txid_status``): ``committed`` or ``aborted``. No marker row, no schema change."""
    xid = lost.transaction_id
    if xid is None:
        raise lost
    what = (
        f"a write of {owner.job} {owner.business_date} attempt {owner.attempt} (run {owner.run_id})"
    )
    statement = sql.dialect.outcome_sql()
    status = _probe(sql, lambda: sql.execute(statement, (owner.run_id, xid)).fetchall(), what, lost)
    found = status[0][0] if status else None
    if found == "committed":
        logger.warning("gatekeeper: %s: its COMMIT's answer was lost; it committed", what)
        return
    if found == "aborted":
        raise LedgerError(
            f"{what}: the connection failed while committing; read back, it did not commit: "
            f"nothing it wrote was kept (first failure: {lost})",
            retryable=True,
        ) from lost
    raise UnknownOutcome(
        f"{what}: the outcome of its COMMIT is unknown (the database reports {found!r} for "
        f"its transaction {xid}); nothing more was recorded (first failure: {lost})",
        probed=what,
    ) from lost


class Ended:
    """The attempt an abandon's transaction recorded, as it would read back, kept by the try
    that reached its COMMIT, for the read-back (``abandon_probe``)."""

    def __init__(self) -> None:
        self.attempt: Attempt | None = None


def abandon_probe(
    sql: SqlCore, job: str, period: str, ended: Ended
) -> Callable[[], Attempt | None]:
    """The probe of an abandon: the attempt it ended, when its row is as the lost COMMIT left
    it (its state, stamp and error: ``abandoned`` with the reason, or ``succeeded`` when a
    publication named it); None when the transaction ended none, or the row is otherwise (the
    abandon runs again and is judged then: done, or a StateConflict)."""

    def probe() -> Attempt | None:
        if ended.attempt is None:
            return None
        found = attempt_of_run(sql, job, period, ended.attempt.run_id)
        return found if found == ended.attempt else None

    return probe


class Written:
    """What a publication transaction wrote (its revision and stamp), kept by the try that
    reached its COMMIT, for the read-back (``publication_probe``)."""

    def __init__(self) -> None:
        self.revision: int | None = None
        self.at: dt.datetime | None = None

    def wrote(self, revision: int, at: dt.datetime) -> None:
        self.revision, self.at = revision, at

    def forget(self) -> None:
        self.revision = self.at = None


def publication_probe(
    sql: SqlCore,
    consumer: str,
    period: str,
    fingerprint: str,
    producer: str | None,
    written: Written,
) -> Callable[[], bool | None]:
    """The probe of a publication or republish: True when the revision the lost COMMIT
    carried is there with its stamp, fingerprint and producer (it committed); None when the
    transaction wrote none, or another one holds the revision (the work runs again and is
    judged then: a retry, a conflict)."""

    def probe() -> bool | None:
        if written.revision is None:
            return None
        sql.lock_key("publication", consumer, period, clock=False)
        rows = sql.execute(
            "SELECT fingerprint, producer_run_id, published_at FROM gk_publications "
            "WHERE consumer = ? AND period = ? AND revision = ?",
            (consumer, period, written.revision),
        ).fetchall()
        if not rows:
            return None
        stored, by, at = rows[0]
        mine = stored == fingerprint and by == producer and sql.ts_out(at) == written.at
        return True if mine else None

    return probe


def names_as_producer(sql: SqlCore, attempt: Attempt) -> bool:
    """A committed publication of ``attempt``'s period names it as its producer: its worker
    stopped after the publication committed, before its success was recorded (in the
    caller's transaction)."""
    rows = sql.execute(
        "SELECT revision FROM gk_publications WHERE consumer = ? AND period = ? "
        "AND producer_run_id = ? LIMIT 1",
        (attempt.job, attempt.business_date, attempt.run_id),
    ).fetchall()
    return bool(rows)
