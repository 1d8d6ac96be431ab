"""PostgreSQL dialect (psycopg 3): races are resolved by the database, never by the client.

Writers of one key take a transaction-scoped advisory lock on it; primary keys and unique
constraints back every rule, and a unique violation or serialization failure retries the
whole transaction. Leases are judged by the server's ``clock_timestamp()``; every lock wait is
bounded by ``lock_timeout`` (the URL's ``busy_timeout``). ``?schema=NAME`` keeps a deployment
in its own schema; other query parameters go to libpq.
"""

from __future__ import annotations

import datetime as dt
import difflib
import re
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from gatekeeper.core.errors import InvalidInput, LedgerError
from gatekeeper.ledger.dialect import Dialect

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore, Statements

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
LIBPQ_DEFAULTS = (("application_name", "gatekeeper"), ("connect_timeout", "10"))
#: what a ``write`` may have left in the session, undone in its transaction (``settle_session``)
_SETTLE = (
    "RESET SESSION AUTHORIZATION",
    "RESET ROLE",
    "RESET ALL",
    "DISCARD TEMP",
    "UNLISTEN *",
    "CLOSE ALL",
)
_PREPARED = (
    "SELECT array_agg(name ORDER BY name) FILTER (WHERE from_sql), "
    "array_agg(name) FILTER (WHERE NOT from_sql) FROM pg_prepared_statements"
)


def _driver() -> Any:
    try:
        import psycopg
    except ImportError as exc:
        raise LedgerError(
            "a postgresql:// ledger needs psycopg 3: pip install -e '.[postgres]' in a "
            "gatekeeper checkout (or pip install 'psycopg[binary]')"
        ) from exc
    return psycopg


def split_schema(url: str, connect_timeout: float | None = None) -> tuple[str, str | None]:
    """Return (libpq URL, schema): ``schema=``, ``busy_timeout=`` and ``reconnect_window=``
    removed from the query,
    libpq defaults (``application_name=gatekeeper``, ``connect_timeout=10``, or the
    ``connect_timeout`` given) added where the URL sets none. Raises InvalidInput for a
    schema that is not one SQL identifier."""
    parts = urlsplit(url)
    query = parse_qsl(parts.query, keep_blank_values=True)
    schemas = [v for k, v in query if k == "schema"]
    rest = [(k, v) for k, v in query if k not in ("schema", "busy_timeout", "reconnect_window")]
    if len(schemas) > 1 or (schemas and not _IDENTIFIER.match(schemas[0])):
        raise InvalidInput("ledger_url.schema", schemas, "expected one SQL identifier")
    given = {k for k, _ in rest}
    defaults = dict(LIBPQ_DEFAULTS)
    if connect_timeout is not None:  # libpq takes whole seconds; 2 is its shortest
        defaults["connect_timeout"] = str(max(2, int(connect_timeout)))
    rest += [(k, v) for k, v in defaults.items() if k not in given]
    return urlunsplit(parts._replace(query=urlencode(rest))), (schemas[0] if schemas else None)


class PostgresDialect(Dialect):
    """The ledger in a PostgreSQL database, shared by every worker of a deployment."""

    name = "postgresql"
    ts_type = "TIMESTAMPTZ"
    locks_keys = True
    pipelines = True  # psycopg's pipeline mode; BEGIN takes no lock

    def __init__(self, url: str, read_only: bool = False, connect_timeout: float | None = None):
        self._psycopg = _driver()
        self.conninfo, self.schema = split_schema(url, connect_timeout)
        self.read_only = read_only

    def connect(self, busy_timeout: float) -> Any:
        conn = self._psycopg.connect(self.conninfo, autocommit=True)
        conn.execute("; ".join(self._settings(busy_timeout)), prepare=False)  # one round trip
        return conn

    def _settings(self, busy_timeout: float) -> list[str]:
        """The ledger's session settings: UTC, ``lock_timeout``, the schema, read-only-ness."""
        # lock_timeout 0 would mean "wait forever": the shortest wait is a millisecond
        settings = [
            "SET TIME ZONE 'UTC'",
            f"SET lock_timeout = '{max(1, int(busy_timeout * 1000))}ms'",
        ]
        if self.schema:
            settings.append(f'SET search_path TO "{self.schema}"')
        if self.read_only:  # every transaction of the session, BEGIN'd or implicit
            settings.append("SET default_transaction_read_only = on")
        return settings

    def read_transaction_sql(self) -> tuple[str, ...]:
        """One snapshot for every query (``REPEATABLE READ``), read-only whatever the session."""
        return ("BEGIN ISOLATION LEVEL REPEATABLE READ", "SET TRANSACTION READ ONLY")

    def settle_session(self, sql: SqlCore, baseline: Any) -> str | None:
        """After ``write`` returned, in its transaction, one round trip: every setting back to
        the connection's own (``RESET`` then the ledger's, session-wide: they hold after the
        COMMIT and a ROLLBACK restores them anyway), its temporary tables dropped, its
        ``LISTEN`` and ``WITH HOLD`` cursors undone (``end_transaction`` releases its session
        advisory locks). What cannot be undone is named: SQL ``PREPARE``d statements, the
        driver's prepared statements gone (``DEALLOCATE``)."""
        conn = sql.connection
        cursor = conn.execute(
            "; ".join((*_SETTLE, *self._settings(sql.busy_timeout), _PREPARED)), prepare=False
        )
        while cursor.nextset():  # the result of the last statement: the prepared statements
            pass
        from_sql, protocol = cursor.fetchone()
        if from_sql:
            return f"PREPARE of {', '.join(from_sql)}, which outlives the transaction"
        missing = _driver_prepared(conn) - set(protocol or ())
        if missing:
            return "DEALLOCATE of the ledger connection's prepared statements"
        return None

    def end_transaction(self, conn: Any, statement: str, settled: bool) -> None:
        """``statement``; after a settled ``write``, with ``pg_advisory_unlock_all()`` in the
        same round trip: a session advisory lock it took is held to the end of its
        transaction, as ``pg_advisory_xact_lock`` would be, never beyond."""
        if settled:
            conn.execute(f"{statement}; SELECT pg_advisory_unlock_all()", prepare=False)
        else:
            conn.execute(statement)

    def setup_sql(self) -> tuple[str, ...]:
        return (f'CREATE SCHEMA IF NOT EXISTS "{self.schema}"',) if self.schema else ()

    def lock_key(
        self,
        sql: SqlCore,
        parts: tuple[str, ...],
        *more: tuple[str, ...],
        after: Statements = (),
        commit: bool = False,
    ) -> tuple[dt.datetime | None, list[Any]]:
        """Take the key's advisory lock, then read the server's clock in the same statement
        (expressions of a select list run in order), so ``db_now()`` is when the lock was
        held without another round trip (and, in a transaction's first statement, the
        schema version with them: ``SqlCore.select_row``); the statements ``after`` run next,
        in the same round trip (each its own statement: its snapshot is taken once the locks
        are held)."""
        keys = ["\x1f".join((self.schema or "", *key)) for key in (parts, *more)]
        locks = "pg_advisory_xact_lock(hashtextextended(?, 0)), " * len(keys)
        row, cursors = sql.select_row_then(f"{locks}clock_timestamp()", keys, after, commit)
        clock: dt.datetime = row[len(keys)]
        return clock.astimezone(dt.timezone.utc), cursors

    def clock(self, sql: SqlCore) -> dt.datetime:
        """The server's ``clock_timestamp()``: one clock for every worker's leases."""
        value: dt.datetime = sql.select_row("clock_timestamp()")[0]
        return value.astimezone(dt.timezone.utc)

    def clock_row(
        self, lease_seconds: float, fixed: dt.datetime | None
    ) -> tuple[str, tuple[Any, ...]]:
        """The server's ``clock_timestamp()`` read once, when the statement runs."""
        if fixed is not None:
            return super().clock_row(lease_seconds, fixed)
        return (
            "SELECT t AS at, t + ? * INTERVAL '1 second' AS until "
            "FROM (SELECT clock_timestamp() AS t) AS now",
            (float(lease_seconds),),
        )

    def owner_sql(self, columns: str, lock: bool = True) -> str:
        """With ``lock``, the attempt's row ``FOR SHARE`` (a takeover's UPDATE of it waits for
        this transaction; one that committed while this waited is the row read); then the
        server's clock, once the lock is held (the outer select runs after the materialized
        one), and with ``lock`` the transaction's ID (``txid_current()``: the row lock has
        given it one already)."""
        share, xid = (" FOR SHARE", "txid_current()") if lock else ("", "NULL")
        return (
            f"WITH mine AS MATERIALIZED (SELECT {columns} FROM gk_attempts WHERE run_id = ?"
            f"{share}) SELECT mine.*, clock_timestamp(), {xid} FROM mine"
        )

    def outcome_sql(self) -> str:
        """The attempt's row ``FOR NO KEY UPDATE``, which waits for the lost transaction's end
        (it held the row ``FOR SHARE`` from its last check to its COMMIT), then the server's
        record of that transaction: ``txid_status``, ``committed``, ``aborted``, ``in
        progress`` or NULL (too old to tell)."""
        return (
            "WITH mine AS MATERIALIZED (SELECT run_id FROM gk_attempts WHERE run_id = ? "
            "FOR NO KEY UPDATE) SELECT txid_status(?) FROM mine"
        )

    def driver_errors(self) -> tuple[type[BaseException], ...]:
        return (self._psycopg.Error,)

    def is_retryable(self, exc: BaseException | None) -> bool:
        errors = self._psycopg.errors
        return isinstance(
            exc, (errors.UniqueViolation, errors.SerializationFailure, errors.DeadlockDetected)
        )

    def is_timeout(self, exc: BaseException) -> bool:
        return isinstance(exc, self._psycopg.errors.LockNotAvailable)

    def is_broken(self, conn: Any) -> bool:
        return conn is None or bool(conn.closed or conn.broken)

    def executemany(self, conn: Any, sql: str, rows: list[tuple[Any, ...]]) -> Any:
        cursor = conn.cursor()
        cursor.executemany(sql, rows)
        return cursor

    def send(self, conn: Any, statements: list[tuple[str, tuple[Any, ...]]]) -> list[Any]:
        """``statements`` in one round trip: psycopg's pipeline mode, prepared statements
        kept; the server runs them in order, each with its own snapshot. An error in one is
        raised when the pipeline ends, and none after it ran."""
        if len(statements) == 1:
            return [conn.execute(*statements[0])]
        with conn.pipeline():
            cursors = [conn.execute(statement, params) for statement, params in statements]
        return cursors

    def table_exists(self, sql: SqlCore, name: str) -> bool:
        rows = sql.execute(
            "SELECT 1 FROM information_schema.tables "
            "WHERE table_schema = current_schema() AND table_name = ?",
            (name,),
        ).fetchall()
        return bool(rows)

    def refuse_absent(self, sql: SqlCore) -> None:
        """InvalidInput naming ``ledger_url.schema`` and the schema (absent, or without
        gatekeeper's tables), with the closest schemas that hold a ledger; or ``ledger_url``
        when the URL names no schema."""
        where = f"postgresql {self._server()}"
        if not self.schema:
            raise InvalidInput(
                "ledger_url", None, f"no gatekeeper ledger in {where}; nothing was created"
            )
        found = sql.read("SELECT 1 FROM pg_namespace WHERE nspname = ?", (self.schema,))
        ledgers = [
            row[0]
            for row in sql.read(
                "SELECT table_schema FROM information_schema.tables WHERE table_name = ?",
                ("gk_schema",),
            )
        ]
        closest = difflib.get_close_matches(self.schema, ledgers, n=3)
        what = "holds no gatekeeper ledger" if found else "does not exist"
        hint = f" (closest: {', '.join(closest)})" if closest else ""
        raise InvalidInput(
            "ledger_url.schema",
            self.schema,
            f"schema {self.schema} {what} in {where}{hint}; nothing was created (a command "
            "that writes, e.g. record, or a task creates a ledger)",
        )

    def ts_out(self, value: Any) -> dt.datetime | None:
        if value is None:
            return None
        stamp: dt.datetime = value
        if stamp.tzinfo is dt.timezone.utc:  # as psycopg returns it: the session is in UTC
            return stamp
        return stamp.astimezone(dt.timezone.utc)

    def _server(self) -> str:
        """``host:port/database`` (no user, no password)."""
        parts = urlsplit(self.conninfo)
        try:
            port: object = parts.port or 5432
        except ValueError:  # not a number: libpq will say so when it connects
            port = "?"
        return f"{parts.hostname or 'localhost'}:{port}{parts.path}"

    def describe(self) -> str:
        """``postgresql HOST:PORT/DB schema NAME``: never the user or the password."""
        where = f"postgresql {self._server()}"
        return where + (f" schema {self.schema}" if self.schema else "")


def _driver_prepared(conn: Any) -> set[str]:
    """The names of the statements psycopg has prepared on ``conn`` and will use again.

    psycopg keeps them in a private cache (``_prepared._names``, psycopg 3.1 to 3.3); its
    absence fails ``test_driver_prepared_statements_are_readable`` rather than pass silently.
    """
    names = conn._prepared._names.values()
    return {name.decode() for name in names}
