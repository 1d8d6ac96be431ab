"""Ledgers for tests: PostgreSQL schemas, a snapshot of every row, rows written directly, and
the fake clock T0."""

from __future__ import annotations

import contextlib
import datetime as dt
import os
import threading
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

import gatekeeper as gk

PG_DSN = os.environ.get("GATEKEEPER_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
UTC = dt.timezone.utc
T0 = dt.datetime(2026, 10, 23, 7, 0, tzinfo=UTC)
_pg_status: dict[str, str | None] = {}


def pg_unavailable() -> str | None:
    """None when PostgreSQL answers at PG_DSN, else the reason (checked once per session)."""
    if "reason" not in _pg_status:
        try:
            import psycopg

            with psycopg.connect(PG_DSN, connect_timeout=5) as conn:
                conn.execute("SELECT 1")
            _pg_status["reason"] = None
        except Exception as exc:  # noqa: BLE001 - any failure means "not reachable"
            _pg_status["reason"] = f"PostgreSQL not reachable at {PG_DSN}: {exc}"
    return _pg_status["reason"]


def require_pg() -> None:
    reason = pg_unavailable()
    if reason is None:
        return
    if os.environ.get("GATEKEEPER_REQUIRE_PG") == "1":
        pytest.fail(f"GATEKEEPER_REQUIRE_PG=1 but {reason}")
    pytest.skip(reason)


def pg_url(schema: str) -> str:
    sep = "&" if "?" in PG_DSN else "?"
    return f"{PG_DSN}{sep}schema={schema}"


def drop_pg_schema(schema: str) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def snapshot(ledger: gk.Ledger) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every gatekeeper table, for "nothing was written" assertions."""
    tables = ("gk_schema", "gk_attempts", "gk_publications", "gk_evidence", "gk_complete_runs")
    return {
        t: sorted(tuple(map(str, r)) for r in ledger.read(f"SELECT * FROM {t}")) for t in tables
    }


def user_table(ledger: gk.Ledger, name: str = "sales_totals") -> None:
    """Create the caller's own output table in the ledger database."""
    with ledger.transaction():
        ledger.execute(
            f"CREATE TABLE {name} (business_date TEXT PRIMARY KEY, cents INTEGER NOT NULL)"
        )


def count_rows(ledger: gk.Ledger, table: str) -> int:
    return int(ledger.read(f"SELECT COUNT(*) FROM {table}")[0][0])


def succeed(
    ledger: gk.Ledger,
    job: str,
    date: str,
    attempt: int = 1,
    run_id: str | None = None,
    started_at: dt.datetime = T0,
) -> str:
    """Record a succeeded attempt and return its run ID."""
    run_id = run_id or f"{job}-{date}-{attempt}-{uuid.uuid4().hex[:6]}"
    ledger.record(job, date, attempt, run_id, "succeeded", started_at)
    return run_id


@contextlib.contextmanager
def fresh_pg_schema() -> Iterator[str]:
    """The URL of a new PostgreSQL schema (skipped, or failed under CI, without a server),
    dropped at the end."""
    require_pg()
    schema = f"gk_test_{uuid.uuid4().hex[:12]}"
    try:
        yield pg_url(schema)
    finally:
        drop_pg_schema(schema)


# -- PostgreSQL sessions killed mid-transaction -------------------------------------------
WAIT = 30.0  # upper bound of the wait for a session to nap

NAP = """
CREATE SEQUENCE "{s}".gk_nap_calls;
CREATE FUNCTION "{s}".gk_nap() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF nextval('"{s}".gk_nap_calls') = 1 THEN PERFORM pg_sleep(20); END IF;
    RETURN NULL;
END $$;
CREATE {kind} TRIGGER gk_nap AFTER {event} ON "{s}".gk_attempts {when}
    FOR EACH ROW EXECUTE FUNCTION "{s}".gk_nap();
"""


def install_nap(schema: str, at_commit: bool, event: str = "INSERT") -> None:
    """The first ``event`` (INSERT or UPDATE) of gk_attempts sleeps 20 s: in its statement,
    or in its COMMIT."""
    import psycopg

    kind, when = ("CONSTRAINT", "DEFERRABLE INITIALLY DEFERRED") if at_commit else ("", "")
    with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=10) as conn:
        conn.execute(NAP.format(s=schema, kind=kind, when=when, event=event).encode())


def nap_calls(schema: str) -> int:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=10) as conn:
        row = conn.execute(f'SELECT last_value FROM "{schema}".gk_nap_calls').fetchone()
    assert row is not None
    return int(row[0])


def kill_when_napping(application_name: str, killed: list[int]) -> threading.Thread:
    """A thread that terminates the session ``application_name`` once it sleeps in pg_sleep."""
    import psycopg

    def run() -> None:
        deadline = time.monotonic() + WAIT
        with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=10) as conn:
            while time.monotonic() < deadline:
                rows = conn.execute(
                    "SELECT pid FROM pg_stat_activity WHERE application_name = %s "
                    "AND wait_event = 'PgSleep'",
                    (application_name,),
                ).fetchall()
                for (pid,) in rows:
                    conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
                    killed.append(int(pid))
                if rows:
                    return
                time.sleep(0.02)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread
