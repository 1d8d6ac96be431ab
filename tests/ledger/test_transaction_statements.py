"""What the SQL core sends for a write transaction, on a real SQLite file and PostgreSQL schema.

Every write transaction reads the schema version (a newer schema is refused, also by a process
that opened the ledger before the upgrade) without a statement of its own where it can: on
PostgreSQL the version is a column of the transaction's first statement when the core makes
it (the key lock, the clock). Whatever the first statement, the refusal holds and nothing is
written.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import T0, snapshot

D = "2026-10-22"
VERSION_READ = "SELECT version FROM gk_schema"


class Recording:
    """The ledger's own driver connection, every ``execute`` text noted, and the round trips
    they went in (statements sent in one psycopg pipeline share one; nothing faked)."""

    def __init__(self, conn: Any):
        self.conn = conn
        self.sent: list[str] = []
        self.trips: list[list[str]] = []
        self._piped: list[str] | None = None

    def execute(self, sql: str, *params: Any) -> Any:
        self.sent.append(" ".join(sql.split()))
        if self._piped is None:
            self.trips.append([self.sent[-1]])
        else:
            self._piped.append(self.sent[-1])
        return self.conn.execute(sql, *params)

    @contextlib.contextmanager
    def pipeline(self) -> Iterator[Any]:
        self._piped = []
        try:
            with self.conn.pipeline() as pipe:
                yield pipe
        finally:
            self.trips.append(self._piped)
            self._piped = None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.conn, name)


@pytest.fixture
def recording(ledger: gk.Ledger, monkeypatch: pytest.MonkeyPatch) -> Iterator[Recording]:
    recording = Recording(ledger.connection)
    monkeypatch.setattr(ledger.sql, "_conn", recording)
    yield recording


@pytest.fixture
def sent(recording: Recording) -> list[str]:
    return recording.sent


def transactions(sent: list[str]) -> list[list[str]]:
    """The statements sent, cut into transactions (BEGIN ... COMMIT)."""
    found: list[list[str]] = []
    for statement in sent:
        if statement.startswith("BEGIN"):
            found.append([])
        if found:
            found[-1].append(statement)
    return found


def test_a_write_transaction_reads_the_schema_version_once_in_its_first_statement(
    ledger: gk.Ledger, sent: list[str]
) -> None:
    started = ledger.begin_attempt("A", D, "r1", lease_seconds=30)
    ledger.record("A", D, started.attempt, "r1", "succeeded", started.started_at)
    ledger.heartbeat("r1", lease_seconds=30)
    ledger.publish("Sales", D, ["A"], "fp-1")
    found = transactions(sent)
    assert len(found) == 4
    for statements in found:
        assert statements[0] == ledger.sql.dialect.begin_sql()
        assert statements[-1] == "COMMIT"
        # one read of the version (the one-round-trip writes guard on it in SQL: "<=")
        guarded = [s for s in statements if "FROM gk_schema) <=" in s]
        reads = [s for s in statements if "gk_schema" in s and s not in guarded]
        if guarded and len(guarded) == len(statements) - 2:  # guarded writes alone: they wrote
            assert reads == [], statements
            continue
        assert len(reads) == 1, statements
        if ledger.dialect == "postgresql":  # a column of the lock's (or the clock's) SELECT
            assert VERSION_READ not in statements
            assert f"({VERSION_READ})" in statements[1]
        else:  # SQLite: a statement in process, before any write that does not guard on it
            unguarded = [s for s in statements[1:] if s not in guarded]
            assert unguarded[0] == VERSION_READ, statements


def _bump(url: str) -> None:
    with gk.open_ledger(url) as other, other.transaction():
        other.execute("UPDATE gk_schema SET version = 99")


INSERT = (
    "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, updated_at) "
    "VALUES ('B', '2026-10-22', 1, 'r-b', 'failed', ?, ?)"
)


def _through_execute(ledger: gk.Ledger) -> None:
    with ledger.transaction():
        ledger.execute(INSERT, (ledger.sql.ts_in(T0), ledger.sql.ts_in(T0)))


def _through_the_raw_connection(ledger: gk.Ledger) -> None:
    at = ledger.sql.ts_in(T0)
    with ledger.transaction():
        ledger.connection.execute(
            INSERT.replace("?", "%s" if ledger.dialect != "sqlite" else "?"), (at, at)
        )


def _empty(ledger: gk.Ledger) -> None:
    with ledger.transaction():
        pass


FIRST_STATEMENTS: list[tuple[str, Callable[[gk.Ledger], Any]]] = [
    ("heartbeat", lambda lg: lg.heartbeat("r-a", lease_seconds=30)),  # the clock, then UPDATE
    ("execute", _through_execute),
    ("raw connection", _through_the_raw_connection),  # read before COMMIT
    ("empty", _empty),
    ("begin_attempt", lambda lg: lg.begin_attempt("B", D, "r-b", lease_seconds=30)),
]


@pytest.mark.parametrize(("what", "write"), FIRST_STATEMENTS, ids=[n for n, _ in FIRST_STATEMENTS])
def test_newer_schema_refused_whatever_the_transaction_sends_first(
    ledger: gk.Ledger, ledger_url: str, what: str, write: Callable[[gk.Ledger], Any]
) -> None:
    ledger.begin_attempt("A", D, "r-a", lease_seconds=300)
    _bump(ledger_url)
    before = snapshot(ledger)
    with pytest.raises(gk.LedgerError, match="schema version 99.*upgrade gatekeeper"):
        write(ledger)
    assert snapshot(ledger) == before
    with pytest.raises(gk.LedgerError, match="schema version 99"):  # and again: no caching
        write(ledger)
    assert snapshot(ledger) == before


def test_newer_schema_refused_by_the_one_round_trip_start_and_finish(
    ledger: gk.Ledger, ledger_url: str
) -> None:
    """Once the job's kind is known, a start and a finish go with their COMMIT in one round
    trip on PostgreSQL, before the version they read is seen: their writes guard on it in
    SQL, so a newer schema is still refused with nothing written."""
    for n, day in enumerate(("2026-10-20", "2026-10-21")):
        started = ledger.begin_attempt("A", day, f"r{n}", lease_seconds=300)
        ledger.record("A", day, started.attempt, started.run_id, "succeeded", T0)
    running = ledger.begin_attempt("A", D, "r-running", lease_seconds=300)
    _bump(ledger_url)
    before = snapshot(ledger)
    with pytest.raises(gk.LedgerError, match="schema version 99.*upgrade gatekeeper"):
        ledger.begin_attempt("A", "2026-10-23", "r-new", lease_seconds=300)
    with pytest.raises(gk.LedgerError, match="schema version 99.*upgrade gatekeeper"):
        ledger.record("A", D, running.attempt, "r-running", "succeeded", T0)
    assert snapshot(ledger) == before


def test_every_write_transaction_takes_its_own_key_locks_and_a_success_its_runs_lock(
    ledger: gk.Ledger, recording: Recording
) -> None:
    """PostgreSQL: each transaction locks its attempt key (none inherits the previous one's
    locks); finishing an attempt succeeded locks the key and the job's runs in one statement,
    then one UPDATE of the attempt and the statements that settle its run (each writes only
    in its case: the first day's inserts a run, the next days' extend it), sent with the
    locks and the COMMIT in one round trip. Once this connection knows the job's period kind
    (read from the first day's row on the second), a start is one round trip too: BEGIN, the
    lock, the INSERT, COMMIT. SQLite sends the same statements (its BEGIN IMMEDIATE
    serializes every writer: no lock statement)."""
    sent = recording.sent
    for n, day in enumerate(("2026-10-20", "2026-10-21", "2026-10-22")):
        started = ledger.begin_attempt("A", day, f"r{n}", lease_seconds=30)
        ledger.record("A", day, started.attempt, started.run_id, "succeeded", T0)
    found = transactions(sent)
    assert len(found) == 6
    if ledger.dialect == "sqlite":
        assert not [s for s in sent if "advisory" in s]  # BEGIN IMMEDIATE serializes
        return
    trips = transactions([t[0] for t in recording.trips])
    assert [len(t) for t in trips[1::2]] == [1, 1, 1], recording.trips  # every finish
    assert [len(t) for t in trips[-2:]] == [1, 1], recording.trips
    for n, (begin, finish) in enumerate(zip(found[::2], found[1::2], strict=True)):
        assert begin[1].count("pg_advisory_xact_lock") == 1
        if n == 2:
            assert begin[2].startswith("INSERT INTO gk_attempts") and begin[3] == "COMMIT"
        assert finish[1].count("pg_advisory_xact_lock") == 2
        assert "UPDATE gk_attempts" in finish[2] and "RETURNING" in finish[2]
        heads = [" ".join(s.split()[:2]) for s in finish[3:]]  # extend or prepend; a new run
        assert heads == ["UPDATE gk_complete_runs", "INSERT INTO", "COMMIT"], finish
    assert list(ledger.complete_runs("A", "2026-10-20", "2026-10-22").key_pairs()) == [
        ("2026-10-20", "2026-10-22")
    ]
