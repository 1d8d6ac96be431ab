"""PostgreSQL dialect (psycopg 3): races are resolved by the database, never by the client.

Writers of one key take a transaction-scoped advisory lock on it; primary keys and unique
constraints back every rule, and a unique violation or serialization failure retries the
whole transaction. Leases are judged by the server's ``clock_timestamp()``; every lock wait is
bounded by ``lock_timeout`` (the URL's ``busy_timeout``). ``?schema=NAME`` keeps a deployment
in its own schema; other query parameters go to libpq.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from gatekeeper.core.errors import InvalidInput, LedgerError
from gatekeeper.ledger.staleness import StalenessStore

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
LIBPQ_DEFAULTS = (("application_name", "gatekeeper"), ("connect_timeout", "10"))


def _driver() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise LedgerError(
            "a postgresql:// ledger needs psycopg 3: pip install -e '.[postgres]' in a "
            "gatekeeper checkout (or pip install 'psycopg[binary]')"
        ) from exc
    return psycopg


def split_schema(url: str) -> tuple[str, str | None]:
    """Return (libpq URL, schema): ``schema=``, ``busy_timeout=`` and ``reconnect_window=``
    removed from the query,
    libpq defaults (``application_name=gatekeeper``, ``connect_timeout=10``) added where the
    URL sets none. Raises InvalidInput for a schema that is not one SQL identifier."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    rest = [(k, v) for k, v in query if k not in ("schema", "busy_timeout", "reconnect_window")]
    if len(schemas) > 1 or (schemas and not _IDENTIFIER.match(schemas[0])):
        raise InvalidInput("ledger_url.schema", schemas, "expected one SQL identifier")
    given = {k for k, _ in rest}
    rest += [(k, v) for k, v in LIBPQ_DEFAULTS if k not in given]
    return urlunsplit(parts._replace(query=urlencode(rest))), (schemas[0] if schemas else None)


class PostgresLedger(StalenessStore):
    """The ledger in a PostgreSQL database, shared by every worker of a deployment."""

    dialect = "postgresql"
    ts_type = "TIMESTAMPTZ"

    def __init__(self, url: str, busy_timeout: float, reconnect_window: float):
        self._psycopg = _driver()
        self.conninfo, self.schema = split_schema(url)
        super().__init__(url, busy_timeout, reconnect_window)

    def _connect(self) -> Any:
        conn = self._psycopg.connect(self.conninfo, autocommit=True)
        conn.execute("SET TIME ZONE 'UTC'")
        # lock_timeout 0 would mean "wait forever": the shortest wait is a millisecond
        conn.execute(f"SET lock_timeout = '{max(1, int(self.busy_timeout * 1000))}ms'")
        if self.schema:
            conn.execute(f'SET search_path TO "{self.schema}"')
        return conn

    def _migrate(self) -> None:
        if self.schema:
            self._migrating = True
            try:
                with self.transaction("the schema"):
                    self._lock_key("gatekeeper-schema")
                    self.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
            finally:
                self._migrating = False
        super()._migrate()

    def _lock_key(self, *parts: str) -> None:
        """Take the key's advisory lock, then read the server's clock in the same statement
        (expressions of a select list run in order), so ``db_now()`` is when the lock was
        held without another round trip."""
        self._waiting_for = " ".join(parts)
        key = "\x1f".join((self.schema or "", *parts))
        row = self.execute(
            "SELECT pg_advisory_xact_lock(hashtextextended(?, 0)), clock_timestamp()", (key,)
        ).fetchone()
        self._tx_clock = row[1].astimezone(dt.timezone.utc)

    def _begin_reading_version(self) -> int:
        cursor = self._conn.execute(f"{self._begin_sql()}; SELECT version FROM gk_schema")
        cursor.nextset()
        rows = cursor.fetchall()
        return int(rows[0][0]) if rows else 0

    def db_now(self) -> dt.datetime:
        """The server's ``clock_timestamp()``: one clock for every worker's leases (inside a
        transaction, as read when its latest key lock was granted)."""
        if self._in_tx and self._tx_clock is not None:
            return self._tx_clock
        value: dt.datetime = self.read("SELECT clock_timestamp()")[0][0]
        return value.astimezone(dt.timezone.utc)

    def _driver_errors(self) -> tuple[type[BaseException], ...]:
        return (self._psycopg.Error,)

    def _is_retryable(self, exc: BaseException | None) -> bool:
        errors = self._psycopg.errors
        return isinstance(
            exc, (errors.UniqueViolation, errors.SerializationFailure, errors.DeadlockDetected)
        )

    def _is_timeout(self, exc: BaseException) -> bool:
        return isinstance(exc, self._psycopg.errors.LockNotAvailable)

    def _is_broken(self) -> bool:
        return self._conn is None or bool(self._conn.closed or self._conn.broken)

    def _executemany(self, sql: str, rows: list[tuple[Any, ...]]) -> Any:
        cursor = self._conn.cursor()
        cursor.executemany(sql, rows)
        return cursor

    def _table_exists(self, name: str) -> bool:
        rows = self.execute(
            "SELECT 1 FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_name = ?",
            (name,),
        ).fetchall()
        return bool(rows)

    def ts_out(self, value: Any) -> dt.datetime | None:
        return None if value is None else value.astimezone(dt.timezone.utc)

    def describe(self) -> str:
        parts = urlsplit(self.conninfo)
        where = f"{parts.hostname or 'localhost'}:{parts.port or 5432}{parts.path}"
        return f"postgresql {where}" + (f" schema {self.schema}" if self.schema else "")
