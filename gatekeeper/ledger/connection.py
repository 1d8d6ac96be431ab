"""The ledger's connection and the statements sent on it (the base of ``sql.SqlCore``).

``SqlConnection`` owns one driver connection: opening it (and again when it dropped),
masking the URL's password in messages, sending a transaction's statements (its opening
statement and its schema version read with the first of them, where the ``Dialect`` can:
one round trip on PostgreSQL), and reads riding out a database that cannot be reached.
``sql.SqlCore`` adds the transactions, per-key locks and the schema on top of it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

from gatekeeper.core.display import mask, mask_exception, url_secrets
from gatekeeper.core.errors import LedgerError
from gatekeeper.ledger import outages, schema
from gatekeeper.ledger.dialect import Dialect
from gatekeeper.ledger.sqltext import prepare

T = TypeVar("T")
#: statements sent together: each a text (``?`` placeholders) and its parameters
Statements = Sequence[tuple[str, Iterable[Any]]]

DEFAULT_BUSY_TIMEOUT = 30.0
DEFAULT_RECONNECT_WINDOW = 30.0


class SqlConnection:
    """One database connection and the statements sent on it; its transactions are
    ``sql.SqlCore``'s (which sets the transaction state read here)."""

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
        self._tx_id: int | None = None  # in a transaction: its ID, once noted (``identify``)
        self._held: set[tuple[str, ...]] = set()  # keys locked in the current transaction
        self._before_commit: list[Callable[[], object]] = []  # checks run before its COMMIT
        self._version_unread = False  # in a transaction: its schema version is not read yet
        self._begin_pending = False  # in a transaction: its opening statement is not sent yet
        self._committed = False  # in a transaction: its COMMIT went with its last statements
        self._nesting = 0  # transactions opened inside the current one (they are part of it)
        self._settled = False  # in a transaction: a write's session was settled in it
        self._discard = False  # in a transaction: its connection is replaced when it ends
        self._conn: Any = None
        self._baseline: Any = None  # the session as opened (``Dialect.session_baseline``)

    # -- connection ----------------------------------------------------------------------------
    def _reconnect(self) -> None:
        self.close()
        try:
            self._conn = self.dialect.connect(self.busy_timeout)
            self._baseline = self.dialect.session_baseline(self._conn)
        except self.dialect.driver_errors() as exc:
            mask_exception(exc, self.secrets)  # libpq may quote the password it could not parse
            raise LedgerError(
                f"cannot open ledger {self.describe()}: {self.shown(exc)}",
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
        """``text`` (a message, a driver error) with the URL's password masked, on one line
        (libpq's messages carry a newline and a tab: a message is one line)."""
        return " ".join(mask(text, self.secrets).split())

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
        transaction, or several statements, raise InvalidInput. Outside a transaction a
        driver error is a LedgerError (``outages.wrap``: a dropped connection is reopened on
        next use), so none reaches a caller unwrapped.
        """
        if self._in_tx:  # ``transaction`` wraps its driver errors
            return self._send(prepare(sql, self.dialect.name), tuple(params))
        with self._lock:
            self._usable()
            try:
                return self._conn.execute(prepare(sql, self.dialect.name), tuple(params))
            except self.dialect.driver_errors() as exc:  # the one boundary outside one
                raise self._wrap(exc, committing=False) from exc

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
    def in_transaction(self) -> bool:
        """True while a transaction of this connection is open."""
        return self._in_tx

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

    def ts_in(self, value: dt.datetime | None) -> Any:
        """Convert an aware datetime to what the driver stores."""
        return self.dialect.ts_in(value)

    def ts_out(self, value: Any) -> dt.datetime | None:
        """Convert a stored timestamp back to an aware UTC datetime."""
        return self.dialect.ts_out(value)

    def _read_version(self) -> None:
        """Read the schema version in the current transaction; refuse a newer one."""
        self._version_unread = False
        rows = self._send("SELECT version FROM gk_schema", ()).fetchall()
        schema.refuse_newer(self, int(rows[0][0]) if rows else 0)

    def _wrap(self, exc: BaseException, committing: bool) -> LedgerError:
        """A LedgerError for a driver error (``outages.wrap``)."""
        return outages.wrap(self, exc, committing)

    def riding_out(self, operation: Callable[[], T]) -> T:
        """``operation()``, tried again while the database cannot be reached, for up to
        ``reconnect_window`` seconds (``outages.ride_out``); never inside a transaction."""
        return outages.ride_out(operation, self.reconnect_window, lambda: self._in_tx)

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
