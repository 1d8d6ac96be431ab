"""SQLite dialect: WAL, a busy timeout and ``BEGIN IMMEDIATE`` for every write transaction."""

from __future__ import annotations

import datetime as dt
import sqlite3
from typing import Any

from gatekeeper.ledger.staleness import StalenessStore

BUSY_TIMEOUT_SECONDS = 30.0


class SqliteLedger(StalenessStore):
    """The ledger in one SQLite file (``sqlite:///relative.db`` or ``sqlite:////abs.db``).

    Writers are serialized by ``BEGIN IMMEDIATE``: a read-then-write transaction takes the
    database's write lock before it reads, so two publishers cannot both see "not published".
    """

    dialect = "sqlite"

    def __init__(self, url: str, path: str):
        self.path = path
        super().__init__(url)

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self.path, timeout=BUSY_TIMEOUT_SECONDS, isolation_level=None,
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_SECONDS * 1000)}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def _begin_sql(self) -> str:
        return "BEGIN IMMEDIATE"

    def _driver_errors(self) -> tuple[type[BaseException], ...]:
        return (sqlite3.Error,)

    def _table_exists(self, name: str) -> bool:
        rows = self.execute(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).fetchall()
        return bool(rows)

    def ts_in(self, value: dt.datetime | None) -> Any:
        if value is None:
            return None
        return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f+00:00")

    def ts_out(self, value: Any) -> dt.datetime | None:
        return None if value is None else dt.datetime.fromisoformat(value)

    def describe(self) -> str:
        return f"sqlite file {self.path}"
