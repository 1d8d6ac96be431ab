"""The SQL core of the ledger: one connection, its transactions and the schema.

``SqlCore`` is shared by every store (attempts, publications, staleness, reservations); its
``Dialect`` (``sqlite.py``, ``postgres.py``) supplies only connection creation, the transaction
opening statement, per-key locking, the database clock and which driver errors mean what.

Failure rules (see ``docs/ownership.md``): a dropped connection is replaced on next use; a
transaction that failed before its COMMIT was sent cannot have committed and is retried on a
fresh connection; a failure during COMMIT is reported as an unknown outcome, never retried.
While the database cannot be reached (a connection cannot be opened, or is lost before the
commit was sent), an operation is tried again with backoff for up to the URL's
``reconnect_window`` seconds, then fails with LedgerError. Every wait for a lock is bounded by
the URL's ``busy_timeout``.

The schema version is read in every write transaction, before its first statement (at the
latest before its COMMIT), so a schema newer than this code is refused also by a process that
opened the ledger before the upgrade. Where that first statement is one the core makes (a key
lock or the clock: ``select_row``), the version is one more column of it, not a statement.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from gatekeeper.core.errors import GatekeeperError, LedgerError
from gatekeeper.ledger.dialect import Dialect
from gatekeeper.ledger.schema import MIGRATIONS, SCHEMA_VERSION
from gatekeeper.ledger.sqltext import prepare

T = TypeVar("T")
#: statements sent together: each a text (``?`` placeholders) and its parameters
Statements = Sequence[tuple[str, Iterable[Any]]]

ATTEMPT_COLUMNS = (
    "job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error"
)
DEFAULT_BUSY_TIMEOUT = 30.0
DEFAULT_RECONNECT_WINDOW = 30.0
BACKOFF = (0.1, 2.0)  # first and longest pause between tries while the database is unreachable


class SqlCore:
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
        self.dialect = dialect
        self.url = url
        self.busy_timeout = busy_timeout
        self.reconnect_window = reconnect_window
        self._lock = threading.RLock()
        self._in_tx = False
        self._migrating = False
        self._waiting_for = ""
        self._tx_clock: dt.datetime | None = None
        self._held: set[tuple[str, ...]] = set()  # keys locked in the current transaction
        self._version_unread = False  # in a transaction: its schema version is not read yet
        self._begin_pending = False  # in a transaction: its opening statement is not sent yet
        self._committed = False  # in a transaction: its COMMIT went with its last statements
        self._nesting = 0  # transactions opened inside the current one (they are part of it)
        self._conn: Any = None
        self.riding_out(self._reconnect)
        self.riding_out(self._migrate)

    # -- connection ----------------------------------------------------------------------------
    def _reconnect(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.close()
            self._conn = None
        try:
            self._conn = self.dialect.connect(self.busy_timeout)
        except self.dialect.driver_errors() as exc:
            raise LedgerError(
                f"cannot open ledger {self.describe()}: {exc}",
                retryable=False,
                unreachable=self.dialect.reachable_later,
            ) from exc

    def _is_broken(self) -> bool:
        return self.dialect.is_broken(self._conn)

    def _usable(self) -> None:
        """Replace a connection that was dropped (it is reopened on next use)."""
        if self._conn is None or self._is_broken():
            self._reconnect()

    def close(self) -> None:
        """Close the connection; the next use opens a new one."""
        with self._lock:
            if self._conn is not None:
                with contextlib.suppress(Exception):
                    self._conn.close()
                self._conn = None

    def describe(self) -> str:
        return self.dialect.describe()

    @property
    def connection(self) -> Any:
        """The driver connection, for inspection (tests, benchmarks); in a transaction, one
        whose opening statement and schema version read were sent."""
        if self._in_tx:
            self._started()
            return self._conn
        self._usable()
        return self._conn

    def _send(self, statement: str, params: tuple[Any, ...]) -> Any:
        """Send one statement of the current transaction (``_send_all``); its cursor."""
        if self._version_unread:  # select_row reads it in its own statement
            self._read_version()
        return self._send_all([(statement, params)])[0]

    def _send_all(self, statements: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Send statements of the current transaction, with its opening statement when that
        is still owed (``Dialect.send``: one round trip on PostgreSQL). Their cursors."""
        if self._committed:
            raise AssertionError("a statement after its transaction's COMMIT was sent")
        if not self._begin_pending:
            return self.dialect.send(self._conn, statements)
        self._begin_pending = False
        return self.dialect.send(self._conn, [(self.dialect.begin_sql(), ()), *statements])[1:]

    def _started(self) -> None:
        """Send what the current transaction still owes before a statement the core does
        not send itself: its opening statement, its schema version read."""
        if self._version_unread:
            self._read_version()
        elif self._begin_pending:
            self._begin_pending = False
            self._conn.execute(self.dialect.begin_sql())

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        """Run one statement (``?`` placeholders on every backend) and return the cursor.

        Placeholders are translated by a tokenizer; a statement that would control the
        transaction, or several statements, raise InvalidInput.
        """
        if self._in_tx:
            return self._send(prepare(sql, self.dialect.name), tuple(params))
        self._usable()
        return self._conn.execute(prepare(sql, self.dialect.name), tuple(params))

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> Any:
        """Run one statement for each parameter row (``?`` placeholders); returns the cursor."""
        prepared = prepare(sql, self.dialect.name)
        if self._in_tx:
            self._started()
        return self.dialect.executemany(self._conn, prepared, [tuple(r) for r in rows])

    def select_row(self, columns: str, params: Iterable[Any] = ()) -> tuple[Any, ...]:
        """The one row of ``SELECT <columns>`` (a select list, no FROM; ``?`` placeholders).

        In a transaction whose schema version is not read yet, the version is read in the
        same statement (one more column, removed here) and a newer schema refused, so the
        check costs no statement of its own. Outside a transaction, a ``read``.
        """
        return self.select_row_then(columns, params)[0]

    def select_row_then(
        self,
        columns: str,
        params: Iterable[Any] = (),
        after: Statements = (),
        commit: bool = False,
    ) -> tuple[tuple[Any, ...], list[Any]]:
        """``select_row``, then the statements ``after`` (each a text with ``?`` placeholders
        and its parameters) in the same round trip where the dialect can; the row and the
        cursors of ``after``. Each of ``after`` runs whatever the row (and the statements
        before it) returned: it must judge in SQL what it writes. A newer schema is refused
        once they all ran (the transaction then rolls back: nothing written). ``commit``:
        the transaction's COMMIT goes with them (``commits_with``), and nothing may follow."""
        values = tuple(params)
        if not self._in_tx:
            row = tuple(self.read(f"SELECT {columns}", values)[0])
            return row, [self.execute(text, more) for text, more in after]
        version = self._version_unread
        self._version_unread = False
        text = f"SELECT {columns}" + (", (SELECT version FROM gk_schema)" if version else "")
        statements = [(prepare(text, self.dialect.name), values)]
        statements += [(prepare(t, self.dialect.name), tuple(p)) for t, p in after]
        commit = commit and self.commits_with
        cursors = self._send_all([*statements, ("COMMIT", ())] if commit else statements)
        self._committed = commit
        row = cursors[0].fetchone()
        if version:
            self._refuse_newer_schema(0 if row[-1] is None else int(row[-1]))
            row = row[:-1]
        return tuple(row), cursors[1 : len(statements)]

    @property
    def committed(self) -> bool:
        """True when the current transaction's COMMIT went with its last statements."""
        return self._committed

    @property
    def commits_with(self) -> bool:
        """True when the current transaction may send its COMMIT with its last statements
        (``lock_key(commit=True)``): it is not part of a caller's transaction. Such a
        transaction's statements must write only what a second run would find done (a
        dropped connection cannot tell whether that COMMIT ran, and the work is run again)."""
        return self.dialect.pipelines and self._in_tx and self._nesting == 0

    def lock_key(
        self,
        *parts: str,
        clock: bool = True,
        then: tuple[str, ...] | None = None,
        after: Statements = (),
        commit: bool = False,
    ) -> list[Any]:
        """Serialize writers of one key inside the current transaction; the database's clock
        (``db_now``) is then read when the lock was held, where the dialect reads it with the
        lock (unless ``clock`` is False: a lock taken after the clock was read). ``then``: a
        second key, locked after it in the same statement (a transaction that will need it
        takes it without a round trip of its own). A key already held in the transaction is
        not locked again. Where the transaction's opening statement serializes every writer,
        a no-op. ``after``: statements (each a text and its parameters) run once the locks
        are held, in the same round trip where the dialect can (``select_row_then``);
        returns their cursors. ``commit``: the transaction's COMMIT goes with them where it
        may (``commits_with``); nothing may be sent after them then."""
        if not self.dialect.locks_keys or parts in self._held:
            cursors = [self.execute(text, params) for text, params in after]
            if commit and self.commits_with:
                self._send_all([("COMMIT", ())])
                self._committed = True
            return cursors
        keys = (parts,) if then is None or then in self._held else (parts, then)
        self._waiting_for = " then ".join(" ".join(key) for key in keys)
        held, cursors = self.dialect.lock_key(self, parts, *keys[1:], after=after, commit=commit)
        self._held.update(keys)
        if clock:
            self._tx_clock = held
        return cursors

    def db_now(self) -> dt.datetime:
        """The database's clock, by which leases are judged (inside a transaction of a
        dialect that locks keys: as read when its latest key lock was granted)."""
        if self._in_tx and self._tx_clock is not None:
            return self._tx_clock
        return self.dialect.clock(self)

    def ts_in(self, value: dt.datetime | None) -> Any:
        """Convert an aware datetime to what the driver stores."""
        return self.dialect.ts_in(value)

    def ts_out(self, value: Any) -> dt.datetime | None:
        """Convert a stored timestamp back to an aware UTC datetime."""
        return self.dialect.ts_out(value)

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
            self._waiting_for = waiting_for
            self._open_transaction()
            self._in_tx = True
            try:
                yield
                if self._version_unread:  # the block sent nothing through the core
                    self._read_version()
            except BaseException as exc:
                self._in_tx = False
                self._version_unread = False
                if not (self._begin_pending or self._committed):  # else no transaction is open
                    with contextlib.suppress(Exception):
                        self._conn.execute("ROLLBACK")
                self._begin_pending = self._committed = False
                errors = self.dialect.driver_errors()
                if isinstance(exc, errors) and not isinstance(exc, GatekeeperError):
                    raise self._wrap(exc, committing=False) from exc
                raise
            self._in_tx = False
            self._commit()

    def _open_transaction(self) -> None:
        """Send the opening statement (or, where the dialect ``pipelines``, owe it to the
        first statement, which carries it: ``_send``); the schema version is read with the
        first statement of the transaction (``execute``, ``select_row``) or before its
        COMMIT."""
        self._usable()
        self._tx_clock = None
        self._held = set()
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

    def _read_version(self) -> None:
        """Read the schema version in the current transaction; refuse a newer one."""
        self._version_unread = False
        rows = self._send("SELECT version FROM gk_schema", ()).fetchall()
        self._refuse_newer_schema(int(rows[0][0]) if rows else 0)

    def _commit(self) -> None:
        if self._begin_pending or self._committed:  # nothing sent, or the COMMIT went already
            self._begin_pending = self._committed = False
            return
        try:
            self._conn.execute("COMMIT")
        except self.dialect.driver_errors() as exc:
            if self._is_broken():
                raise LedgerError(
                    f"ledger {self.describe()}: the connection failed while committing; the "
                    f"outcome is unknown (check before retrying): {exc}",
                    retryable=False,
                ) from exc
            with contextlib.suppress(Exception):
                self._conn.execute("ROLLBACK")
            raise self._wrap(exc, committing=False) from exc

    def _wrap(self, exc: BaseException, committing: bool) -> LedgerError:
        """A LedgerError for a driver error; a dropped connection is replaced on next use."""
        if self.dialect.is_timeout(exc):
            what = f" waiting for {self._waiting_for}" if self._waiting_for else ""
            return LedgerError(
                f"ledger {self.describe()}: timed out after {self.busy_timeout:g}s{what} "
                f"(busy_timeout); another writer holds the lock: {exc}",
                retryable=False,
            )
        broken = self._is_broken()
        retry = self.dialect.is_retryable(exc) or (broken and not committing)
        lost = " (connection lost; it is reopened on next use)" if broken else ""
        return LedgerError(
            f"ledger {self.describe()}: {exc}{lost}",
            retryable=retry,
            unreachable=broken and not committing,
        )

    def _refuse_newer_schema(self, version: int) -> None:
        """A schema newer than this code is refused, also by a process that opened the ledger
        before the upgrade: checked in every write transaction (``_read_version``,
        ``select_row``)."""
        if version > SCHEMA_VERSION:
            raise LedgerError(
                f"ledger {self.describe()} has schema version {version}; this gatekeeper "
                f"knows up to {SCHEMA_VERSION}: upgrade gatekeeper",
                retryable=False,
            )

    def riding_out(self, operation: Callable[[], T]) -> T:
        """``operation()``; while it fails because the database cannot be reached (LedgerError
        ``unreachable``: nothing can have committed), again after a pause that doubles from
        0.1 s to 2 s, for up to ``reconnect_window`` seconds from the first failure. Past it,
        the last LedgerError, saying how long it tried."""
        deadline: float | None = None
        pause = BACKOFF[0]
        while True:
            try:
                return operation()
            except LedgerError as exc:
                if not exc.unreachable or self._in_tx:
                    raise
                now = time.monotonic()
                deadline = now + self.reconnect_window if deadline is None else deadline
                if now >= deadline:
                    raise LedgerError(
                        f"{exc}; still unreachable after {self.reconnect_window:g}s "
                        "(reconnect_window)",
                        retryable=exc.retryable,
                    ) from exc
                time.sleep(min(pause, deadline - now))
                pause = min(pause * 2, BACKOFF[1])

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

    def read(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Fetch all rows of a read-only query (on a fresh connection if it dropped, riding
        out a database that cannot be reached); raises LedgerError."""
        values = tuple(params)

        def once() -> list[Any]:
            try:
                rows = self.execute(sql, values).fetchall()  # on a usable connection
                if not self._in_tx:
                    self.dialect.end_read(self._conn)
                return list(rows)
            except self.dialect.driver_errors() as exc:
                raise self._wrap(exc, committing=False) from exc

        with self._lock:
            return self.riding_out(once)

    # -- schema --------------------------------------------------------------------------------
    def schema_version(self) -> int:
        """The schema version the database holds (0 before the first migration)."""
        if not self.dialect.table_exists(self, "gk_schema"):
            return 0
        rows = self.execute("SELECT version FROM gk_schema").fetchall()
        return int(rows[0][0]) if rows else 0

    @contextlib.contextmanager
    def _migration(self, what: str) -> Iterator[None]:
        """A schema transaction: opened without reading the version, under the schema lock."""
        self._migrating = True
        try:
            with self.transaction(what):
                self.lock_key("gatekeeper-schema")
                yield
        finally:
            self._migrating = False

    def _migrate(self) -> None:
        setup = self.dialect.setup_sql()
        if setup:
            with self._migration("the schema"):
                for statement in setup:
                    self.execute(statement)
        try:  # an up-to-date ledger opens without waiting for the write lock
            if self.schema_version() == SCHEMA_VERSION:
                return
        except self.dialect.driver_errors():
            pass  # e.g. the schema table is being created right now: decide under the lock
        with self._migration("the schema migration"):
            self._migrate_locked()

    def _migrate_locked(self) -> None:
        version = self.schema_version()
        self._refuse_newer_schema(version)
        if version == 0:
            self.execute("CREATE TABLE gk_schema (version INTEGER NOT NULL)")
            self.execute("INSERT INTO gk_schema (version) VALUES (0)")
        for number in range(version, SCHEMA_VERSION):
            for step in MIGRATIONS[number]:
                if isinstance(step, str):
                    self.execute(step.replace("{ts}", self.dialect.ts_type))
                else:
                    step(self)
            self.execute("UPDATE gk_schema SET version = ?", (number + 1,))
