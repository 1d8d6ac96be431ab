"""The SQL core of the ledger: transactions on one connection (``connection.py``), per-key
locks and the schema.

``SqlCore`` is shared by every store (attempts, publications, staleness, reservations); its
``Dialect`` (``sqlite.py``, ``postgres.py``) supplies only connection creation, the SQL that
differs, per-key locking, the database clock, whether statements can share a round trip, and
which driver errors mean what. Failures and outages: ``outages.py``; every wait for a lock is
bounded by the URL's ``busy_timeout``. The schema version is read in every write transaction
(``schema.py``), as one more column of its first statement where the core makes it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from gatekeeper.core.errors import GatekeeperError, LedgerError
from gatekeeper.ledger import schema
from gatekeeper.ledger.connection import (
    DEFAULT_BUSY_TIMEOUT,
    DEFAULT_RECONNECT_WINDOW,
    SqlConnection,
    Statements,
)
from gatekeeper.ledger.dialect import Dialect
from gatekeeper.ledger.outages import UnknownOutcome
from gatekeeper.ledger.sqltext import prepare

T = TypeVar("T")

ATTEMPT_COLUMNS = (
    "job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error, reason"
)
__all__ = [
    "ATTEMPT_COLUMNS",
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_RECONNECT_WINDOW",
    "SqlCore",
    "Statements",
]


class SqlCore(SqlConnection):
    """One database connection, the transactions on it and the ledger's schema.

    Thread-safe: transactions on the shared connection are serialized by a lock. Reads and
    writes raise LedgerError when the database fails; the driver error is its ``__cause__``.
    """

    retries = 5

    def __init__(
        self,
        dialect: Dialect,
        url: str,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        reconnect_window: float = DEFAULT_RECONNECT_WINDOW,
    ):
        super().__init__(dialect, url, busy_timeout, reconnect_window)
        try:
            self.riding_out(self._reconnect)
            self.riding_out(lambda: schema.prepare(self))
        except BaseException:
            self.close()
            raise

    def lock_key(
        self,
        *parts: str,
        clock: bool = True,
        then: tuple[str, ...] | None = None,
        after: Statements = (),
        commit: bool = False,
    ) -> list[Any]:
        """Serialize writers of one key in the current transaction (a no-op where its opening
        statement serializes every writer, or for a key it holds); ``db_now`` is then the
        clock read with the lock (unless ``clock`` is False). ``then``: a second key, locked
        in the same statement. ``after``: statements run once the locks are held, in the
        same round trip where the dialect can (``select_row_then``, ``commit`` too); returns
        their cursors. With ``commit`` they must write nothing under a newer schema (they
        guard on its version in SQL): where no lock statement reads it, they go first, and
        ``vouch_version`` spares its read when they wrote."""
        if not self.dialect.locks_keys or parts in self._held:
            if not commit:
                return [self.execute(text, params) for text, params in after]
            name = self.dialect.name
            return self._send_all([(prepare(t, name), tuple(p)) for t, p in after])
        keys = (parts,) if then is None or then in self._held else (parts, then)
        self.waiting_for = " then ".join(" ".join(key) for key in keys)
        held, cursors = self.dialect.lock_key(self, parts, *keys[1:], after=after, commit=commit)
        self._held.update(keys)
        if clock:
            self._tx_clock = held
        return cursors

    def held(self, *parts: str) -> bool:
        """True in a transaction that holds the key ``parts`` (``lock_key``, ``hold``)."""
        return self._in_tx and parts in self._held

    def before_commit(self, check: Callable[[], object]) -> None:
        """Run ``check()`` at the end of the current transaction, just before its COMMIT (in
        it: what it raises rolls the transaction back)."""
        self._before_commit.append(check)

    def identify(self, transaction_id: int) -> None:
        """Note the current transaction's ID in the database, which an UnknownOutcome of its
        COMMIT then carries (``transaction_id``) for a read-back (``readback.fenced_commit``)."""
        self._tx_id = transaction_id

    def hold(self, *parts: str) -> None:
        """Mark ``parts`` held for the rest of the current transaction: a check made once in
        it (``fencing.py``), not a lock."""
        self._held.add(parts)

    def db_now(self) -> dt.datetime:
        """The database's clock, by which leases are judged (inside a transaction of a
        dialect that locks keys: as read when its latest key lock was granted)."""
        if self._in_tx and self._tx_clock is not None:
            return self._tx_clock
        return self.dialect.clock(self)

    # -- transactions --------------------------------------------------------------------------
    @contextlib.contextmanager
    def transaction(self, waiting_for: str = "") -> Iterator[None]:
        """Run the block in one write transaction: commit on success, roll back on any error.

        Driver errors are raised as LedgerError (``retryable`` when the transaction cannot have
        committed and may run again on a fresh connection); gatekeeper and caller errors pass
        unchanged. ``waiting_for`` names the key in a lock-timeout message. Nested: one
        transaction.
        """
        with self._lock:
            if self._in_tx:
                self._nesting += 1
                try:
                    yield
                finally:
                    self._nesting -= 1
                return
            self.waiting_for = waiting_for
            self._open_transaction()
            self._in_tx = True
            try:
                yield
                while self._before_commit:  # checks that must hold at the COMMIT
                    self._before_commit.pop(0)()
                if self._version_unread:  # the block sent nothing through the core
                    self._read_version()
            except BaseException as exc:
                self._in_tx = False
                self._version_unread = False
                if not (self._begin_pending or self._committed):  # else no transaction is open
                    self._rollback()
                self._begin_pending = self._committed = False
                try:  # the error is judged on the connection it happened on
                    errors = self.dialect.driver_errors()
                    if isinstance(exc, errors) and not isinstance(exc, GatekeeperError):
                        raise self._wrap(exc, committing=False) from exc
                    raise
                finally:
                    self._end_session()
            self._in_tx = False
            try:
                self._commit()
            finally:
                self._end_session()

    def _open_transaction(self) -> None:
        """Send the opening statement (or, where the dialect ``pipelines``, owe it to the
        first statement, which carries it: ``_send``); the schema version is read with the
        first statement of the transaction (``execute``, ``select_row``) or before its
        COMMIT."""
        if self.dialect.read_only:
            raise LedgerError(
                f"ledger {self.describe()} was opened read-only (create=False): it writes "
                "nothing; open it with create=True to write",
                retryable=False,
            )
        self._usable()
        self._tx_clock = self._tx_id = None
        self._held = set()
        self._before_commit = []
        self._settled = self._discard = False
        self._version_unread = not self._migrating
        if self.dialect.pipelines:  # sent with the first statement (``_send``)
            self._begin_pending = True
            return
        try:
            self._conn.execute(self.dialect.begin_sql())
        except self.dialect.driver_errors() as exc:
            with contextlib.suppress(Exception):
                self._conn.execute("ROLLBACK")
            raise self._wrap(exc, committing=False) from exc

    def _commit(self) -> None:
        if self._begin_pending or self._committed:  # nothing sent, or the COMMIT went already
            self._begin_pending = self._committed = False
            return
        try:
            self.dialect.end_transaction(self._conn, "COMMIT", self._settled)
        except self.dialect.driver_errors() as exc:
            if self._is_broken():
                raise UnknownOutcome(
                    f"ledger {self.describe()}: the connection failed while committing; the "
                    f"outcome is unknown (check before retrying): {self.shown(exc)}",
                    transaction_id=self._tx_id,
                ) from exc
            self._rollback()
            raise self._wrap(exc, committing=False) from exc

    def _rollback(self) -> None:
        """Roll the transaction back; a connection that cannot is replaced."""
        try:
            self.dialect.end_transaction(self._conn, "ROLLBACK", self._settled)
        except Exception:  # noqa: BLE001 - the transaction's own error is the one raised
            self._discard = self._discard or self._settled  # what it held may be held still

    @contextlib.contextmanager
    def read_transaction(self) -> Iterator[Callable[[str, tuple[Any, ...]], list[Any]]]:
        """One read transaction (``Dialect.read_transaction_sql``: a single snapshot, read-only
        on PostgreSQL), rolled back at the end; yields a function that fetches every row of a
        query (``?`` placeholders) in it. Writes nothing; driver errors are LedgerError."""
        with self._lock:
            if self._in_tx:
                raise AssertionError("a read transaction inside a transaction")
            self.riding_out(self._usable)
            conn, errors = self._conn, self.dialect.driver_errors()

            def rows(text: str, params: tuple[Any, ...] = ()) -> list[Any]:
                try:
                    return list(conn.execute(prepare(text, self.dialect.name), params).fetchall())
                except errors as exc:
                    raise self._wrap(exc, committing=False) from exc

            try:
                try:
                    for statement in self.dialect.read_transaction_sql():
                        conn.execute(statement)
                except errors as exc:
                    raise self._wrap(exc, committing=False) from exc
                yield rows
            finally:
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")

    # -- a publisher's session -----------------------------------------------------------------
    def settle_session(self) -> str | None:
        """After a publisher's ``write`` returned, in its transaction: put its session back
        (``Dialect.settle_session``); returns what it changed that cannot be put back (then
        the connection is replaced when the transaction ends), or None."""
        self._settled = True
        changed = self.dialect.settle_session(self, self._baseline)
        if changed is not None:
            self._discard = True
        return changed

    def discard_connection(self) -> None:
        """Replace the connection when the current transaction ends (a ``write`` that failed
        or misused its handle: nothing it did to the session is kept)."""
        self._discard = True

    def _end_session(self) -> None:
        """At the end of a transaction: close a connection ``discard_connection`` marked."""
        if self._discard:
            self.close()
        self._settled = self._discard = False

    def run_in_transaction(self, work: Callable[[], T], waiting_for: str = "") -> T:
        """Run ``work()`` in a transaction, again when the database reports a race, and while
        it cannot be reached (``riding_out``): a transaction whose connection dropped before
        the commit was sent cannot have committed."""

        def in_transaction() -> T:
            for attempt in range(self.retries):
                try:
                    with self.transaction(waiting_for):
                        return work()
                except LedgerError as exc:
                    if attempt + 1 == self.retries or not exc.retryable or exc.unreachable:
                        raise
            raise AssertionError("unreachable")

        with self._lock:
            return self.riding_out(in_transaction)

    # -- schema --------------------------------------------------------------------------------
    def schema_version(self) -> int:
        """The schema version the database holds (0 before the first migration)."""
        return schema.read_version(self)

    @contextlib.contextmanager
    def migration(self, what: str) -> Iterator[None]:
        """A schema transaction (``schema.migrate``): opened without reading the version,
        under the schema lock."""
        self._migrating = True
        try:
            with self.transaction(what):
                self.lock_key("gatekeeper-schema")
                yield
        finally:
            self._migrating = False
