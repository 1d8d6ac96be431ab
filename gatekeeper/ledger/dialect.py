"""What a dialect supplies to the SQL core: connection creation and the SQL that differs.

The core (``sql.SqlCore``) owns the connection, the transactions, retries and the schema; a
dialect (``sqlite.SqliteDialect``, ``postgres.PostgresDialect``) holds no state of a
transaction and answers only what its database does differently. The defaults here are the
plain SQL both would share.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any, cast

from gatekeeper.core.clock import utc_now

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore, Statements


class Dialect:
    """Connection creation and SQL differences of one database kind."""

    #: ``sqlite`` or ``postgresql``: the placeholder style and the name users see
    name = "sql"
    #: the column type of a timestamp in the DDL (``{ts}`` in ``schema.MIGRATIONS``)
    ts_type = "TEXT"
    #: True when writers of one key take a lock of their own (``lock_key``); False when the
    #: transaction's opening statement already serializes every writer
    locks_keys = False
    #: True when a connection that could not be opened may open later (a server coming back),
    #: so opening it again is worth riding out; False for a local file
    reachable_later = True
    #: True when statements sent together go in one round trip (``send``): a transaction's
    #: opening statement then waits for its first statement and goes with it (it takes no
    #: lock of its own, and nothing reads the clock before that first statement: the key lock
    #: or the clock), and a COMMIT may go with the last (``SqlCore.commits_with``)
    pipelines = False
    #: True when the ledger was opened to read only (``open_ledger(create=False)``): its
    #: connections cannot write, and its schema is checked (``schema.check_readable``), never
    #: created or migrated
    read_only = False

    def connect(self, busy_timeout: float) -> Any:
        """A new driver connection in autocommit mode (the core sends BEGIN itself)."""
        raise NotImplementedError

    def describe(self) -> str:
        """Where the ledger lives, for messages (no password)."""
        raise NotImplementedError

    def driver_errors(self) -> tuple[type[BaseException], ...]:
        """The driver's exception classes, wrapped as LedgerError at the ledger boundary."""
        raise NotImplementedError

    def begin_sql(self) -> str:
        """The statement that opens a write transaction."""
        return "BEGIN"

    def read_transaction_sql(self) -> tuple[str, ...]:
        """The statements that open a read transaction: one snapshot for every query in it
        (SQLite's deferred ``BEGIN`` takes it at the first read and writes nothing)."""
        return ("BEGIN",)

    def setup_sql(self) -> tuple[str, ...]:
        """Statements run once, in their own transaction, before the schema is migrated."""
        return ()

    def lock_key(
        self,
        sql: SqlCore,
        parts: tuple[str, ...],
        *more: tuple[str, ...],
        after: Statements = (),
        commit: bool = False,
    ) -> tuple[dt.datetime | None, list[Any]]:
        """Take the lock of one key (then of each of ``more``, in order) in the current
        transaction (``locks_keys`` dialects), then run the statements ``after`` (and the
        COMMIT, where ``commit`` and ``SqlCore.commits_with``); returns the database's clock
        read once the locks were held (or None) and their cursors."""
        raise NotImplementedError

    def clock(self, sql: SqlCore) -> dt.datetime:
        """The database's clock, by which leases are judged (this host's by default)."""
        return utc_now()

    def clock_row(
        self, lease_seconds: float, fixed: dt.datetime | None
    ) -> tuple[str, tuple[Any, ...]]:
        """A one-row query (and its parameters) of ``at``, the database's clock when the
        statement it is part of runs (``fixed`` when given), and ``until``, ``at`` plus
        ``lease_seconds``: what a statement sent before its transaction read the clock sets
        its times from. This host's clock by default, read now."""
        at = utc_now() if fixed is None else fixed
        until = at + dt.timedelta(seconds=lease_seconds)
        return "SELECT ? AS at, ? AS until", (self.ts_in(at), self.ts_in(until))

    def owner_sql(self, columns: str, lock: bool = True) -> str:
        """A fenced write's check (``fencing.fence_owner``): ``columns`` of the attempt whose
        run ID is the parameter, then the database's clock (NULL: ``clock``), then, with
        ``lock``, the transaction's ID by which a lost COMMIT is read back (``outcome_sql``;
        NULL where none can be); with ``lock``, its row locked against a takeover until the
        transaction ends. By default the transaction's opening statement holds the one write
        lock already, and a COMMIT's answer is never lost (a local file)."""
        return f"SELECT {columns}, NULL, NULL FROM gk_attempts WHERE run_id = ?"

    def outcome_sql(self) -> str:
        """The outcome of a fenced write's transaction whose COMMIT's answer was lost
        (``readback.fenced_commit``), by the run ID and the transaction ID ``owner_sql`` read:
        only where it reads one."""
        raise NotImplementedError(f"{self.name}: a COMMIT's answer is never lost")

    def table_exists(self, sql: SqlCore, name: str) -> bool:
        raise NotImplementedError

    def refuse_absent(self, sql: SqlCore) -> None:
        """Raise InvalidInput: a read-only open found no gatekeeper ledger where the URL
        points (naming the URL's field and value, saying nothing was created)."""
        raise NotImplementedError

    def is_retryable(self, exc: BaseException | None) -> bool:
        """True for a race the database resolved by aborting this transaction."""
        return False

    def is_timeout(self, exc: BaseException) -> bool:
        """True when ``exc`` means a lock wait ran past ``busy_timeout``."""
        return False

    def is_broken(self, conn: Any) -> bool:
        """True when ``conn`` (None once closed) can no longer be used (dropped by the
        server)."""
        return False

    def executemany(self, conn: Any, sql: str, rows: list[tuple[Any, ...]]) -> Any:
        return conn.executemany(sql, rows)

    def send(self, conn: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """Run ``statements`` (text, parameters) in order; returns their cursors. One after
        the other by default; a dialect may send them in one round trip (then each runs
        whatever the earlier ones returned, and an error stops the rest)."""
        return [conn.execute(statement, params) for statement, params in statements]

    def session_baseline(self, conn: Any) -> Any:
        """What ``settle_session`` compares a session with, read once the connection is new
        (None by default)."""
        return None

    def settle_session(self, sql: SqlCore, baseline: Any) -> str | None:
        """After a publisher's ``write`` returned, in its transaction: put back what it may
        have changed in the connection's session (its settings, for the statements that
        follow and every later operation); returns what it changed that cannot be put back
        (the publication is then refused and the connection replaced), or None."""
        return None

    def end_transaction(self, conn: Any, statement: str, settled: bool) -> None:
        """Send ``statement`` (``COMMIT`` or ``ROLLBACK``); ``settled``: ``settle_session``
        ran in the transaction."""
        conn.execute(statement)

    def end_read(self, conn: Any) -> None:
        """Close the implicit read transaction where the driver opens one."""

    def ts_in(self, value: dt.datetime | None) -> Any:
        """Convert an aware datetime to what the driver stores."""
        return value

    def ts_out(self, value: Any) -> dt.datetime | None:
        """Convert a stored timestamp back to an aware UTC datetime."""
        return cast("dt.datetime | None", value)
