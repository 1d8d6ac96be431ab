"""The write handle cannot change the session (docs/ownership.md, "The write handle"), on both
backends.

Whatever a publisher's ``write`` runs, the ledger's connection keeps its settings for the
statements that follow and for every later operation: each case runs a statement that would
change the session (through a function, where a text check cannot see it), then checks the
settings are the ledger's and that a lock wait on the same connection still ends after
``busy_timeout`` (a holder keeps the lock from another connection). A change that cannot be
put back refuses the publication: nothing is written and the connection is replaced.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import PG_DSN, count_rows, snapshot, succeed

D, D2 = "2026-10-23", "2026-10-24"
CONSUMER = "DailySalesLoad"
UPSTREAM = ("DimCustomer", "DimProduct")
BUSY = 0.3  # the waiting ledger's busy_timeout, seconds

FUNCTIONS = (
    # SET SESSION where no text check of the caller's statement can see it
    "CREATE FUNCTION gk_test_unbound() RETURNS void LANGUAGE plpgsql AS $$ BEGIN "
    "SET SESSION lock_timeout = 0; SET SESSION search_path = public; END $$",
    # any statement, run by the server
    "CREATE FUNCTION gk_test_run(q text) RETURNS void LANGUAGE plpgsql AS $$ BEGIN "
    "EXECUTE q; END $$",
)

# (id, statements write runs): the publication is kept, the session put back
KEPT = {
    "postgresql": [
        ("lock_timeout", ["SELECT set_config('lock_timeout', '0', false)"]),
        ("search_path", ["SELECT set_config('search_path', 'public', false)"]),
        ("statement_timeout", ["SELECT set_config('statement_timeout', '100', false)"]),
        ("time_zone", ["SELECT set_config('TimeZone', 'Pacific/Kiritimati', false)"]),
        ("read_only", ["SELECT set_config('default_transaction_read_only', 'on', false)"]),
        ("set_session_in_function", ["SELECT gk_test_unbound()"]),
        ("advisory_session_lock", ["SELECT pg_advisory_lock(4242)"]),
        ("listen", ["SELECT gk_test_run('LISTEN gk_test')"]),
        ("temp_table_shadows_ledger", ["CREATE TEMP TABLE gk_publications (consumer TEXT)"]),
    ],
    "sqlite": [],
}
# (id, statements write runs, what the refusal names): nothing written, connection replaced
REFUSED = {
    "postgresql": [
        ("prepare_in_function", ["SELECT gk_test_run('PREPARE gk_p AS SELECT 1')"], "PREPARE"),
        ("deallocate_in_function", ["SELECT gk_test_run('DEALLOCATE ALL')"], "DEALLOCATE"),
    ],
    "sqlite": [
        ("busy_timeout", ["EXPLAIN PRAGMA busy_timeout = 0"], "busy_timeout"),
        ("check_constraints", ["EXPLAIN PRAGMA ignore_check_constraints = 1"], "ignore_check"),
        ("query_only", ["EXPLAIN QUERY PLAN PRAGMA query_only = 1"], "query_only"),
        (
            "temp_table_shadows_ledger",
            ["CREATE TEMP TABLE gk_publications (consumer TEXT)"],
            "temporary table gk_publications",
        ),
        (
            "temp_view_shadows_ledger",
            ["CREATE TEMP VIEW gk_attempts AS SELECT * FROM main.gk_attempts WHERE 0"],
            "temporary view gk_attempts",
        ),
    ],
}


def cases(table: dict[str, list[Any]]) -> list[Any]:
    """``pytest.param`` per (dialect, case): the dialect is ``ledger_url``'s (indirect)."""
    return [
        pytest.param(dialect, *case, id=f"{dialect}-{case[0]}")
        for dialect, rows in table.items()
        for case in rows
    ]


@pytest.fixture
def waiter(ledger: gk.Ledger, ledger_url: str) -> Iterator[gk.Ledger]:
    """The ledger whose session a ``write`` attacks, with ``busy_timeout`` BUSY; upstream
    ready for D and D2, a ``notes`` table and the test functions."""
    for date in (D, D2):
        for job in UPSTREAM:
            succeed(ledger, job, date)
    with ledger.transaction():
        ledger.execute("CREATE TABLE notes (d TEXT NOT NULL, t TEXT NOT NULL)")
        for function in FUNCTIONS if ledger.dialect == "postgresql" else ():
            ledger.execute(function)
    sep = "&" if "?" in ledger_url else "?"
    with gk.open_ledger(f"{ledger_url}{sep}busy_timeout={BUSY}") as opened:
        yield opened


def session(ledger: gk.Ledger) -> tuple[Any, ...]:
    """What the ledger relies on in its session, read on its own connection."""
    if ledger.dialect == "sqlite":
        return tuple(
            ledger.read(
                "SELECT * FROM pragma_busy_timeout, pragma_foreign_keys, pragma_synchronous, "
                "pragma_journal_mode, pragma_query_only, "
                "(SELECT count(*) FROM temp.sqlite_master)"
            )[0]
        )
    return tuple(
        ledger.read(
            "SELECT current_setting('lock_timeout'), current_setting('search_path'), "
            "current_setting('TimeZone'), current_setting('statement_timeout'), "
            "current_setting('default_transaction_read_only'), current_user, "
            "(SELECT count(*) FROM pg_class WHERE relnamespace = pg_my_temp_schema()), "
            "(SELECT count(*) FROM pg_listening_channels()), "
            "(SELECT count(*) FROM pg_prepared_statements WHERE from_sql)"
        )[0]
    )


def expected_session(ledger: gk.Ledger, url: str) -> tuple[Any, ...]:
    """The ledger's own: BUSY, WAL and ``synchronous=FULL``; UTC and its schema; nothing
    temporary, listened to or prepared."""
    if ledger.dialect == "sqlite":
        return (int(BUSY * 1000), 1, 2, "wal", 0, 0)
    busy, schema = f"{int(BUSY * 1000)}ms", schema_of(url)
    return (busy, schema, "UTC", "0", "off", "postgres", 0, 0, 0)


def schema_of(url: str) -> str:
    return dict(parse_qsl(urlsplit(url).query))["schema"]


def writing(statements: list[str], date: str = D) -> Callable[[Any], None]:
    def write(tx: Any) -> None:
        tx.execute("INSERT INTO notes (d, t) VALUES (?, ?)", (date, "out"))
        for statement in statements:
            tx.execute(statement)

    return write


@contextlib.contextmanager
def lock_held(ledger: gk.Ledger, url: str) -> Iterator[None]:
    """The lock a publication of the ledger needs, held on another connection."""
    if ledger.dialect == "sqlite":
        path = urlsplit(url).path[1:]
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()
        return
    import psycopg

    schema = schema_of(url)
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute("BEGIN")
        conn.execute(f'LOCK TABLE "{schema}".gk_publications IN ACCESS EXCLUSIVE MODE')
        try:
            yield
        finally:
            conn.execute("ROLLBACK")


def assert_wait_bounded(opened: gk.Ledger, url: str) -> None:
    """A publication on ``opened`` behind a held lock ends in the driver's own lock timeout
    (the session's busy_timeout, BUSY: ``session()`` reads its value), not in a wait without
    end, and the error names it."""
    with lock_held(opened, url):
        with pytest.raises(gk.LedgerError, match="timed out") as caught:
            opened.publish(CONSUMER, D2, UPSTREAM, "fp-2", writing([], D2))
    assert f"timed out after {BUSY:g}s" in str(caught.value)
    assert "busy_timeout" in str(caught.value)
    cause = caught.value.__cause__
    if opened.dialect == "sqlite":
        assert isinstance(cause, sqlite3.OperationalError) and "locked" in str(cause), cause
    else:
        assert getattr(cause, "sqlstate", None) == "55P03", cause  # lock_timeout fired


@pytest.mark.timeout(30)
@pytest.mark.parametrize(("ledger_url", "case", "statements"), cases(KEPT), indirect=["ledger_url"])
def test_write_session_change_is_put_back(
    waiter: gk.Ledger, ledger: gk.Ledger, ledger_url: str, case: str, statements: list[str]
) -> None:
    expected = expected_session(waiter, ledger_url)
    assert session(waiter) == expected

    assert waiter.publish(CONSUMER, D, UPSTREAM, "fp-1", writing(statements)) is True

    assert session(waiter) == expected
    assert ledger.publication(CONSUMER, D) is not None  # in the ledger's table, not a shadow
    assert ledger.read("SELECT d, t FROM notes") == [(D, "out")]
    if case == "advisory_session_lock":  # held to the end of the transaction, not beyond
        import psycopg

        with psycopg.connect(PG_DSN, autocommit=True) as other:
            assert other.execute("SELECT pg_try_advisory_lock(4242)").fetchone() == (True,)
    assert_wait_bounded(waiter, ledger_url)
    assert session(waiter) == expected


@pytest.mark.timeout(30)
@pytest.mark.parametrize(
    ("ledger_url", "case", "statements", "named"), cases(REFUSED), indirect=["ledger_url"]
)
def test_write_session_change_that_stays_is_refused(
    waiter: gk.Ledger,
    ledger: gk.Ledger,
    ledger_url: str,
    case: str,
    statements: list[str],
    named: str,
) -> None:
    for _ in range(6):  # the driver prepares a statement it runs often (psycopg: the 5th)
        assert waiter.read("SELECT count(*) FROM gk_attempts") == [(4,)]
    rows = snapshot(ledger)
    first = waiter.connection

    with pytest.raises(gk.GatekeeperError, match="rolled back") as caught:
        waiter.publish(CONSUMER, D, UPSTREAM, "fp-1", writing(statements))

    assert named in str(caught.value)
    assert snapshot(ledger) == rows
    assert count_rows(ledger, "notes") == 0
    assert waiter.connection is not first  # replaced: nothing the write did is kept
    assert waiter.read("SELECT count(*) FROM gk_attempts") == [(4,)]
    assert session(waiter) == expected_session(waiter, ledger_url)
    assert_wait_bounded(waiter, ledger_url)
    assert waiter.publish(CONSUMER, D, UPSTREAM, "fp-1", writing([])) is True


def test_driver_prepared_statements_are_readable(pg_ledger_url: str) -> None:
    """The ledger reads psycopg's prepared statements from a private cache: an upgrade that
    moves it fails here, not silently (``postgres._driver_prepared``)."""
    from gatekeeper.ledger.postgres import _driver_prepared

    with gk.open_ledger(pg_ledger_url) as opened:
        for _ in range(6):
            opened.read("SELECT count(*) FROM gk_attempts")
        names = _driver_prepared(opened.connection)
        server = opened.read("SELECT name FROM pg_prepared_statements WHERE NOT from_sql")
    assert names and names == {row[0] for row in server}
