"""PostgreSQL dialect (psycopg 3): races are resolved by the database, never by the client.

Writers of one key take a transaction-scoped advisory lock on it; primary keys and unique
constraints back every rule, and a unique violation or serialization failure retries the
whole transaction. ``?schema=NAME`` in the URL keeps a deployment in its own schema.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from gatekeeper.errors import InvalidInput, LedgerError
from gatekeeper.ledger.staleness import StalenessStore

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def _driver() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise LedgerError(
            "a postgresql:// ledger needs psycopg 3: pip install 'gatekeeper[postgres]'"
        ) from exc
    return psycopg


def split_schema(url: str) -> tuple[str, str | None]:
    """Return (libpq URL, schema) with ``schema=`` removed from the query; raises InvalidInput."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    rest = [(k, v) for k, v in query if k != "schema"]
    if len(schemas) > 1 or (schemas and not _IDENTIFIER.match(schemas[0])):
        raise InvalidInput("ledger_url.schema", schemas, "expected one SQL identifier")
    return urlunsplit(parts._replace(query=urlencode(rest))), (schemas[0] if schemas else None)


class PostgresLedger(StalenessStore):
    """The ledger in a PostgreSQL database, shared by every worker of a deployment."""

    dialect = "postgresql"
    param = "%s"
    ts_type = "TIMESTAMPTZ"

    def __init__(self, url: str):
        self._psycopg = _driver()
        self.conninfo, self.schema = split_schema(url)
        super().__init__(url)

    def _connect(self) -> Any:
        conn = self._psycopg.connect(self.conninfo, autocommit=True, connect_timeout=10)
        conn.execute("SET TIME ZONE 'UTC'")
        if self.schema:
            conn.execute(f'SET search_path TO "{self.schema}"')
        return conn

    def _migrate(self) -> None:
        if self.schema:
            with self.transaction():
                self._lock_key("gatekeeper-schema")
                self.execute(f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"')
        super()._migrate()

    def _lock_key(self, *parts: str) -> None:
        key = "\x1f".join((self.schema or "", *parts))
        self.execute("SELECT pg_advisory_xact_lock(hashtextextended(?, 0))", (key,))

    def _driver_errors(self) -> tuple[type[BaseException], ...]:
        return (self._psycopg.Error,)

    def _is_retryable(self, exc: BaseException | None) -> bool:
        errors = self._psycopg.errors
        return isinstance(
            exc, (errors.UniqueViolation, errors.SerializationFailure, errors.DeadlockDetected)
        )

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
