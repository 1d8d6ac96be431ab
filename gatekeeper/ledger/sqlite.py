"""SQLite dialect: WAL, ``synchronous=FULL``, a busy timeout and ``BEGIN IMMEDIATE`` for every
write transaction; or a read-only connection that never writes the file."""

from __future__ import annotations

import datetime as dt
import os
import sqlite3
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from gatekeeper.core.errors import InvalidInput, LedgerError
from gatekeeper.ledger.dialect import Dialect

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore

#: the connection settings a ``write`` must leave as they were (``settle_session``): the
#: pragmas SQLite reads as table-valued functions that bear on waits, durability, integrity,
#: the schema or whether the next operation can run at all (2 us each to read: the ones that
#: only tune speed, or are deprecated no-ops, are left out)
_SETTINGS = (
    "busy_timeout", "locking_mode", "synchronous", "fullfsync", "checkpoint_fullfsync",
    "journal_mode", "journal_size_limit", "foreign_keys", "ignore_check_constraints",
    "recursive_triggers", "query_only", "writable_schema", "trusted_schema",
    "legacy_alter_table", "reverse_unordered_selects", "count_changes", "max_page_count",
    "cache_size", "soft_heap_limit", "hard_heap_limit",
)  # fmt: skip
_READ_SETTINGS = "SELECT * FROM " + ", ".join(f"pragma_{name}" for name in _SETTINGS)
_READ_OBJECTS = (
    "SELECT 'temporary ' || type || ' ' || name FROM temp.sqlite_master UNION ALL "
    "SELECT 'attached database ' || name FROM pragma_database_list "
    "WHERE name NOT IN ('main', 'temp')"
)

#: SQLite's result codes (the low byte of an extended code) that mean "cannot open or create
#: a file it needs": a read-only directory or filesystem
_CANTOPEN, _READONLY = 14, 8


class SqliteDialect(Dialect):
    """The ledger in one SQLite file (``sqlite:///relative.db`` or ``sqlite:////abs.db``).

    Writers are serialized by ``BEGIN IMMEDIATE``: a read-then-write transaction takes the
    database's write lock before it reads, so two publishers cannot both see "not published".
    A writer waits at most ``busy_timeout`` seconds for the lock. One host, one clock: leases
    are judged by this host's clock. Every connection commits with ``synchronous`` (``FULL``
    unless the URL says ``synchronous=normal``). ``read_only``: opened with ``mode=ro``
    (``connect_read_only``), never migrated or written.
    """

    name = "sqlite"
    reachable_later = False  # a file that cannot be opened now will not open by waiting

    def __init__(self, path: str, synchronous: str = "FULL", read_only: bool = False):
        self.path = path
        self.synchronous = synchronous
        self.read_only = read_only

    def connect(self, busy_timeout: float) -> sqlite3.Connection:
        if self.read_only:
            conn = connect_read_only(self.path, busy_timeout)
        else:
            conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
            _set_wal(conn, busy_timeout)
        conn.execute(f"PRAGMA synchronous = {self.synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        return conn

    def session_baseline(self, conn: Any) -> Any:
        """The connection's settings (``_SETTINGS``) as opened."""
        return conn.execute(_READ_SETTINGS).fetchone()

    def settle_session(self, sql: SqlCore, baseline: Any) -> str | None:
        """Compare the session with ``baseline`` (one query): SQLite's settings cannot be put
        back inside a transaction (``foreign_keys`` ignores it) and do not roll back, so a
        changed one (an ``EXPLAIN PRAGMA`` runs its pragma) is named, as are temporary
        objects, which would shadow the ledger's tables, and attached databases."""
        now = sql.connection.execute(_READ_SETTINGS).fetchone()
        changed = [
            f"{name} {before!r} -> {after!r}"
            for name, before, after in zip(_SETTINGS, baseline, now, strict=True)
            if before != after
        ]
        changed += [row[0] for row in sql.connection.execute(_READ_OBJECTS)]
        if not changed:
            return None
        return f"session changes that outlive the transaction ({', '.join(changed)})"

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

    def refuse_absent(self, sql: SqlCore) -> None:
        raise InvalidInput(
            "ledger_url",
            sql.url,
            f"sqlite file {os.path.abspath(self.path)} holds no gatekeeper ledger; nothing was "
            "created (check the path)",
        )

    def ts_in(self, value: dt.datetime | None) -> Any:
        if value is None:
            return None
        return value.astimezone(dt.timezone.utc).isoformat(timespec="microseconds")

    def ts_out(self, value: Any) -> dt.datetime | None:
        return None if value is None else dt.datetime.fromisoformat(value)

    def describe(self) -> str:
        return f"sqlite file {self.path}"


def connect_read_only(path: str, busy_timeout: float) -> sqlite3.Connection:
    """A connection that cannot write ``path``: ``mode=ro``, which reads a live ledger beside
    its writers (SQLite may create the shared ``-wal`` and ``-shm`` files a reader needs, where
    the directory allows it; it never writes the ledger file).

    Where those files cannot be made (a read-only directory or filesystem: a backup, a
    snapshot) and no ``-wal`` file holds transactions, the file is read ``immutable=1``: every
    committed transaction is then in the file itself and no writer can be connected (a writer
    keeps a ``-wal`` file beside it). Immutable, SQLite takes no lock and assumes nothing
    changes the file while it reads. A ``-wal`` file with transactions that cannot be read (its
    ``-shm`` missing and not creatable) is refused (LedgerError): reading the file alone would
    silently miss committed transactions."""
    uri = f"file:{quote(os.path.abspath(path))}?mode=ro"
    try:
        return _open(uri, busy_timeout)
    except sqlite3.OperationalError as exc:
        if not _cannot_open(exc):
            raise
        if _wal_size(path) > 0:
            raise LedgerError(
                f"cannot read ledger sqlite file {path} read-only: its {path}-wal holds "
                "transactions that need a -shm file SQLite cannot create there (read-only "
                f"directory or filesystem); copy the ledger's files somewhere writable ({exc})",
                retryable=False,
            ) from exc
    return _open(f"{uri}&immutable=1", busy_timeout)


def _open(uri: str, busy_timeout: float) -> sqlite3.Connection:
    """A connection to ``uri`` once it has read the schema (SQLite opens its files on first
    use); closed and the error raised if it cannot."""
    conn = sqlite3.connect(
        uri, uri=True, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute("SELECT count(*) FROM sqlite_master").fetchall()
    except BaseException:
        conn.close()
        raise
    return conn


def _cannot_open(exc: sqlite3.OperationalError) -> bool:
    """True when ``exc`` says SQLite could not open or create a file (not a lock wait)."""
    code = getattr(exc, "sqlite_errorcode", None)  # Python 3.11+
    if code is not None:
        return code & 0xFF in (_CANTOPEN, _READONLY)
    text = str(exc)
    return "unable to open" in text or "readonly database" in text


def _wal_size(path: str) -> int:
    """The size of the ledger's ``-wal`` file (0 when there is none)."""
    try:
        return os.path.getsize(f"{path}-wal")
    except FileNotFoundError:
        return 0


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
