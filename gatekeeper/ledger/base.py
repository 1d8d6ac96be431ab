"""The SQL ledger contract: transactions, schema and every query, shared by both dialects.

Dialects (``sqlite.py``, ``postgres.py``) supply only connection creation, the transaction
opening statement, per-key locking, timestamp conversion and which driver errors mean what.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import Any, TypeVar

from gatekeeper.errors import GatekeeperError, LedgerError
from gatekeeper.ledger.schema import MIGRATIONS, SCHEMA_VERSION

L = TypeVar("L", bound="SqlLedger")

ATTEMPT_COLUMNS = (
    "job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error"
)


class SqlLedger:
    """A ledger of attempts and publications on one database connection.

    Thread-safe: transactions on the shared connection are serialized by a lock. Reads and
    writes raise LedgerError when the database fails; the driver error is its ``__cause__``.
    """

    dialect = "sql"
    param = "?"
    ts_type = "TEXT"
    retries = 5

    def __init__(self, url: str):
        self.url = url
        self._lock = threading.RLock()
        self._in_tx = False
        try:
            self._conn = self._connect()
        except self._driver_errors() as exc:
            raise LedgerError(f"cannot open ledger {self.describe()}: {exc}") from exc
        self._migrate()

    # -- dialect hooks -------------------------------------------------------------------------
    def _connect(self) -> Any:
        raise NotImplementedError

    def _begin_sql(self) -> str:
        return "BEGIN"

    def _lock_key(self, *parts: str) -> None:
        """Serialize writers of one key inside the current transaction (dialect-specific)."""

    def _driver_errors(self) -> tuple[type[BaseException], ...]:
        raise NotImplementedError

    def _is_retryable(self, exc: BaseException | None) -> bool:
        return False

    def ts_in(self, value: dt.datetime | None) -> Any:
        """Convert an aware datetime to what the driver stores."""
        return value

    def ts_out(self, value: Any) -> dt.datetime | None:
        """Convert a stored timestamp back to an aware UTC datetime."""
        return value

    def describe(self) -> str:
        return self.url

    # -- connection and transactions -----------------------------------------------------------
    def close(self) -> None:
        """Close the connection; the ledger is unusable afterwards."""
        with self._lock:
            with contextlib.suppress(Exception):
                self._conn.close()

    def __enter__(self: L) -> L:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def connection(self) -> Any:
        """The driver connection; writes through it belong to the current transaction."""
        return self._conn

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        """Run one statement of gatekeeper's SQL (``?`` placeholders) and return the cursor."""
        if self.param != "?":
            sql = sql.replace("?", self.param)
        return self._conn.execute(sql, tuple(params))

    @contextlib.contextmanager
    def transaction(self) -> Iterator[SqlLedger]:
        """Run the block in one write transaction: commit on success, roll back on any error.

        Driver errors are raised as LedgerError; gatekeeper and caller errors pass unchanged.
        """
        with self._lock:
            if self._in_tx:
                yield self
                return
            try:
                self._conn.execute(self._begin_sql())
            except self._driver_errors() as exc:
                raise LedgerError(f"ledger {self.describe()}: cannot begin: {exc}") from exc
            self._in_tx = True
            try:
                yield self
                self._conn.execute("COMMIT")
            except BaseException as exc:
                with contextlib.suppress(Exception):
                    self._conn.execute("ROLLBACK")
                if isinstance(exc, self._driver_errors()) and not isinstance(exc, GatekeeperError):
                    raise LedgerError(f"ledger {self.describe()}: {exc}") from exc
                raise
            finally:
                self._in_tx = False

    def run_in_transaction(self, work: Callable[[], Any]) -> Any:
        """Run ``work()`` in a transaction, retrying when the database reports a race."""
        for attempt in range(self.retries):
            try:
                with self.transaction():
                    return work()
            except LedgerError as exc:
                if attempt + 1 == self.retries or not self._is_retryable(exc.__cause__):
                    raise
        raise AssertionError("unreachable")

    def read(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Fetch all rows of a read-only query; raises LedgerError."""
        with self._lock:
            try:
                rows = self.execute(sql, params).fetchall()
                if not self._in_tx:
                    self._end_read()
                return list(rows)
            except self._driver_errors() as exc:
                raise LedgerError(f"ledger {self.describe()}: {exc}") from exc

    def _end_read(self) -> None:
        """Close the implicit read transaction where the driver opens one."""

    # -- schema --------------------------------------------------------------------------------
    def schema_version(self) -> int:
        return self._current_version()

    def _current_version(self) -> int:
        if not self._table_exists("gk_schema"):
            return 0
        rows = self.execute("SELECT version FROM gk_schema").fetchall()
        return int(rows[0][0]) if rows else 0

    def _table_exists(self, name: str) -> bool:
        raise NotImplementedError

    def _migrate(self) -> None:
        try:  # an up-to-date ledger opens without waiting for the write lock
            if self._current_version() == SCHEMA_VERSION:
                return
        except self._driver_errors():
            pass  # e.g. the schema table is being created right now: decide under the lock
        with self.transaction():
            self._lock_key("gatekeeper-schema")
            version = self._current_version()
            if version > SCHEMA_VERSION:
                raise LedgerError(
                    f"ledger {self.describe()} has schema version {version}; this gatekeeper "
                    f"knows up to {SCHEMA_VERSION}: upgrade gatekeeper"
                )
            if version == 0:
                self.execute("CREATE TABLE gk_schema (version INTEGER NOT NULL)")
                self.execute("INSERT INTO gk_schema (version) VALUES (0)")
            for number in range(version, SCHEMA_VERSION):
                for statement in MIGRATIONS[number]:
                    self.execute(statement.replace("{ts}", self.ts_type))
                self.execute("UPDATE gk_schema SET version = ?", (number + 1,))
