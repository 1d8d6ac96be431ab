"""The SQL core of the ledger: one connection, its transactions and the schema.

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
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar

from gatekeeper.core.display import mask, mask_exception, url_secrets
from gatekeeper.core.errors import GatekeeperError, LedgerError
from gatekeeper.ledger import outages, schema
from gatekeeper.ledger.dialect import Dialect
from gatekeeper.ledger.sqltext import prepare

T = TypeVar("T")
#: statements sent together: each a text (``?`` placeholders) and its parameters
Statements = Sequence[tuple[str, Iterable[Any]]]

ATTEMPT_COLUMNS = (
    "job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error"
)
DEFAULT_BUSY_TIMEOUT = 30.0
DEFAULT_RECONNECT_WINDOW = 30.0


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
        self.url = url  # with its password, to open more connections; never shown
        self.secrets = url_secrets(url)  # masked in every message (``shown``)
        self.busy_timeout = busy_timeout
        self.reconnect_window = reconnect_window
        self._lock = threading.RLock()
        self._in_tx = False
        self._migrating = False
        self.waiting_for = ""  # the key a lock wait is for, named when it times out
        self._tx_clock: dt.datetime | None = None
        self._held: set[tuple[str, ...]] = set()  # keys locked in the current transaction
        self._version_unread = False  # in a transaction: its schema version is not read yet
        self._begin_pending = False  # in a transaction: its opening statement is not sent yet
        self._committed = False  # in a transaction: its COMMIT went with its last statements
        self._nesting = 0  # transactions opened inside the current one (they are part of it)
        self._settled = False  # in a transaction: a write's session was settled in it
        self._discard = False  # in a transaction: its connection is replaced when it ends
        self._conn: Any = None
        self._baseline: Any = None  # the session as opened (``Dialect.session_baseline``)
        try:
            self.riding_out(self._reconnect)
            self.riding_out(lambda: schema.prepare(self))
        except BaseException:
            self.close()
            raise

    # -- connection ----------------------------------------------------------------------------
    def _reconnect(self) -> None:
        self.close()
        try:
            self._conn = self.dialect.connect(self.busy_timeout)
            self._baseline = self.dialect.session_baseline(self._conn)
        except self.dialect.driver_errors() as exc:
            mask_exception(exc, self.secrets)  # libpq may quote the password it could not parse
            raise LedgerError(
                f"cannot open ledger {self.describe()}: {exc}",
                retryable=False,
                unreachable=self.dialect.reachable_later,
            ) from exc

    def _is_broken(self) -> bool:
        return self.dialect.is_broken(self._conn)

    @property
    def connection_or_none(self) -> Any:
        """The driver connection as it is (None once closed), not reopened."""
        return self._conn

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
        """Where the ledger lives, for messages: no password (``shown``)."""
        return self.shown(self.dialect.describe())

    def shown(self, text: object) -> str:
        """``text`` (a message, a driver error) with the URL's password masked."""
        return mask(text, self.secrets)

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
        """Send what the current transaction owes before a statement the core does not send
        itself: its opening statement, its schema version read."""
        if self._version_unread:
            self._read_version()
        elif self._begin_pending:
            self._send_all([])

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

        In a transaction whose schema version is not read yet, the version is one more column
        of it (removed here; a newer schema refused). Outside a transaction, a ``read``."""
        return self.select_row_then(columns, params)[0]

    def select_row_then(
        self,
        columns: str,
        params: Iterable[Any] = (),
        after: Statements = (),
        commit: bool = False,
    ) -> tuple[tuple[Any, ...], list[Any]]:
        """``select_row``, then the statements ``after`` (texts with ``?`` placeholders, and
        parameters) in the same round trip where the dialect can: the row and their cursors.
        Each runs whatever the ones before returned (it judges in SQL what it writes); a newer
        schema is refused once all ran. ``commit``: the COMMIT goes with them where it may
        (``commits_with``); nothing may follow it."""
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
            schema.refuse_newer(self, 0 if row[-1] is None else int(row[-1]))
            row = row[:-1]
        return tuple(row), cursors[1 : len(statements)]

    def vouch_version(self) -> None:
        """Statements of this transaction that guard on the schema version wrote: it is not
        newer (``lock_key(commit=True)``), and need not be read."""
        self._version_unread = False

    @property
    def committed(self) -> bool:
        """True when the current transaction's COMMIT went with its last statements."""
        return self._committed

    @property
    def commits_with(self) -> bool:
        """True when the current transaction may send its COMMIT with its last statements: it
        is not part of a caller's. Those must write only what a second run would find done (a
        dropped connection cannot tell whether the COMMIT ran: the work is run again)."""
        return self.dialect.pipelines and self._in_tx and self._nesting == 0

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
            self.waiting_for = waiting_for
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
        self._tx_clock = None
        self._held = set()
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

    def _read_version(self) -> None:
        """Read the schema version in the current transaction; refuse a newer one."""
        self._version_unread = False
        rows = self._send("SELECT version FROM gk_schema", ()).fetchall()
        schema.refuse_newer(self, int(rows[0][0]) if rows else 0)

    def _commit(self) -> None:
        if self._begin_pending or self._committed:  # nothing sent, or the COMMIT went already
            self._begin_pending = self._committed = False
            return
        try:
            self.dialect.end_transaction(self._conn, "COMMIT", self._settled)
        except self.dialect.driver_errors() as exc:
            if self._is_broken():
                raise LedgerError(
                    f"ledger {self.describe()}: the connection failed while committing; the "
                    f"outcome is unknown (check before retrying): {self.shown(exc)}",
                    retryable=False,
                ) from exc
            self._rollback()
            raise self._wrap(exc, committing=False) from exc

    def _rollback(self) -> None:
        """Roll the transaction back; a connection that cannot is replaced."""
        try:
            self.dialect.end_transaction(self._conn, "ROLLBACK", self._settled)
        except Exception:  # noqa: BLE001 - the transaction's own error is the one raised
            self._discard = self._discard or self._settled  # what it held may be held still

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

    def _wrap(self, exc: BaseException, committing: bool) -> LedgerError:
        """A LedgerError for a driver error (``outages.wrap``)."""
        return outages.wrap(self, exc, committing)

    def riding_out(self, operation: Callable[[], T]) -> T:
        """``operation()``, tried again while the database cannot be reached, for up to
        ``reconnect_window`` seconds (``outages.ride_out``); never inside a transaction."""
        return outages.ride_out(operation, self.reconnect_window, lambda: self._in_tx)

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
