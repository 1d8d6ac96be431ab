"""What the ledger does when its database fails: a driver error becomes a LedgerError that
says whether the work may run again, and work is tried again while the database cannot be
reached (``docs/ownership.md``).

A transaction that failed before its COMMIT was sent cannot have committed and may run again
on a fresh connection; a failure during COMMIT is an unknown outcome (``UnknownOutcome``),
never retried blindly (but for the transactions whose COMMIT goes with their statements:
``SqlCore.commits_with``): the ledger's own writes read back what committed
(``readback.py``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

from gatekeeper.core.errors import LedgerError

if TYPE_CHECKING:
    from gatekeeper.ledger.connection import SqlConnection

T = TypeVar("T")
BACKOFF = (0.1, 2.0)  # first and longest pause between tries while the database is unreachable


class UnknownOutcome(LedgerError):
    """The connection failed while a transaction was committing: it may or may not have
    committed.

    ``probed`` is None when nothing was read back yet (the transaction's owner may read back
    what it wrote); otherwise it names what was read back for the truth, and that read could
    not be made either (the database still unreachable past ``reconnect_window``). Never
    ``retryable``: running the work again blindly could do it twice. ``transaction_id``: the
    database's ID of the transaction, when it was noted before its COMMIT
    (``SqlCore.identify``: a fenced write's, on PostgreSQL), else None.
    """

    def __init__(
        self, message: str, *, probed: str | None = None, transaction_id: int | None = None
    ):
        super().__init__(message, retryable=False)
        self.probed = probed
        self.transaction_id = transaction_id


def wrap(sql: SqlConnection, exc: BaseException, committing: bool) -> LedgerError:
    """A LedgerError for the driver error ``exc`` on ``sql``'s connection: a lock wait past
    ``busy_timeout`` names what it waited for; a race the database resolved, or a connection
    that dropped before the COMMIT was sent, is ``retryable`` (a dropped connection is
    replaced on next use, and ``unreachable`` unless ``committing``)."""
    if sql.dialect.is_timeout(exc):
        what = f" waiting for {sql.waiting_for}" if sql.waiting_for else ""
        return LedgerError(
            f"ledger {sql.describe()}: timed out after {sql.busy_timeout:g}s{what} "
            f"(busy_timeout); another writer holds the lock: {sql.shown(exc)}",
            retryable=False,
        )
    broken = sql.dialect.is_broken(sql.connection_or_none)
    retry = sql.dialect.is_retryable(exc) or (broken and not committing)
    lost = " (connection lost; it is reopened on next use)" if broken else ""
    return LedgerError(
        f"ledger {sql.describe()}: {sql.shown(exc)}{lost}",
        retryable=retry,
        unreachable=broken and not committing,
    )


def ride_out(operation: Callable[[], T], window: float, in_transaction: Callable[[], bool]) -> T:
    """``operation()``; while it fails because the database cannot be reached (LedgerError
    ``unreachable``: nothing can have committed) and no transaction is open, again after a
    pause that doubles from 0.1 s to 2 s, for up to ``window`` seconds from the first
    failure. Past it, the last LedgerError, saying how long it tried."""
    deadline: float | None = None
    pause = BACKOFF[0]
    while True:
        try:
            return operation()
        except LedgerError as exc:
            if not exc.unreachable or in_transaction() or window <= 0:
                raise  # a window of 0: give up at once (a read-only command)
            now = time.monotonic()
            deadline = now + window if deadline is None else deadline
            if now >= deadline:
                raise LedgerError(
                    f"{exc}; still unreachable after {window:g}s (reconnect_window)",
                    retryable=exc.retryable,
                ) from exc
            time.sleep(min(pause, deadline - now))
            pause = min(pause * 2, BACKOFF[1])
