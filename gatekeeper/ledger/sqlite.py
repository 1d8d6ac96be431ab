"""SQLite dialect: WAL, a busy timeout and ``BEGIN IMMEDIATE`` for every write transaction."""

from __future__ import annotations

import datetime as dt
import sqlite3
import time
from typing import TYPE_CHECKING, Any

from gatekeeper.ledger.dialect import Dialect

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore


class SqliteDialect(Dialect):
    """The ledger in one SQLite file (``sqlite:///relative.db`` or ``sqlite:////abs.db``).

    Writers are serialized by ``BEGIN IMMEDIATE``: a read-then-write transaction takes the
    database's write lock before it reads, so two publishers cannot both see "not published".
    A writer waits at most ``busy_timeout`` seconds for the lock. One host, one clock: leases
    are judged by this host's clock.
    """

    name = "sqlite"
    reachable_later = False  # a file that cannot be opened now will not open by waiting

    def __init__(self, path: str):
        self.path = path

    def connect(self, busy_timeout: float) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path,
            timeout=busy_timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
        _set_wal(conn, busy_timeout)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def begin_sql(self) -> str:
        return "BEGIN IMMEDIATE"

    def driver_errors(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.Error,)

    def is_timeout(self, exc: BaseException) -> bool:
        return isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc)

    def table_exists(self, sql: SqlCore, name: str) -> bool:
        rows = sql.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchall()
        return bool(rows)

    def ts_in(self, value: dt.datetime | None) -> Any:
        if value is None:
            return None
        return value.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")

    def ts_out(self, value: Any) -> dt.datetime | None:
        return None if value is None else dt.datetime.fromisoformat(value)

    def describe(self) -> str:
        return f"sqlite file {self.path}"


def _set_wal(conn: sqlite3.Connection, busy_timeout: float) -> None:
    """``PRAGMA journal_mode = WAL``, tried again for up to ``busy_timeout`` seconds while
    another connection holds the lock it needs: SQLite answers "database is locked" at once
    there, without its busy handler (processes opening a new ledger file together race
    here)."""
    deadline = time.monotonic() + busy_timeout
    while True:
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)
