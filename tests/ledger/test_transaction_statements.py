"""What the SQL core sends for a write transaction, on a real SQLite file and PostgreSQL schema.

Every write transaction reads the schema version (a newer schema is refused, also by a process
that opened the ledger before the upgrade) without a statement of its own where it can: on
PostgreSQL the version is a column of the transaction's first statement when the core makes
it (the key lock, the clock). Whatever the first statement, the refusal holds and nothing is
written.
"""

from __future__ import annotations

import contextlib
import datetime as dt
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


# -- the one-round-trip paths are taken, and only where they apply ------------------------------
# Each case below writes the same rows whichever path it takes (the read-and-judge path is the
# one-round-trip path's definition), so only the statements sent tell them apart.
def _reads(statements: list[str], table: str) -> list[str]:
    return [s for s in statements if s.startswith("SELECT") and f"FROM {table}" in s]


def _known(ledger: gk.Ledger) -> None:
    """A start and a success of job A on 2026-10-20: this connection knows A's period kind."""
    started = ledger.begin_attempt("A", "2026-10-20", "r-known", lease_seconds=30)
    ledger.begin_attempt("A", "2026-10-19", "r-known-2", lease_seconds=30)  # reads the kind
    ledger.record("A", "2026-10-20", started.attempt, "r-known", "succeeded", T0)


def test_a_start_and_a_finish_of_a_known_job_read_no_attempt(
    ledger: gk.Ledger, sent: list[str]
) -> None:
    """Once the connection knows the job's period kind, the next attempt's start and its
    outcome are each one transaction that reads no attempt (the statements judge in SQL)."""
    _known(ledger)
    del sent[:]
    started = ledger.begin_attempt("A", D, "r1", lease_seconds=30)
    ledger.record("A", D, started.attempt, "r1", "succeeded", T0)
    again = ledger.begin_attempt("A", "2026-10-23", "r2", lease_seconds=30)
    ledger.record("A", "2026-10-23", again.attempt, "r2", "failed", T0, error="boom")
    found = transactions(sent)
    assert len(found) == 4, found
    assert _reads(sent, "gk_attempts") == [] and VERSION_READ not in sent, found
    assert [ledger.history("A", day)[-1].state.value for day in (D, "2026-10-23")] == [
        "succeeded",
        "failed",
    ]


def test_a_start_the_one_round_trip_path_cannot_take_is_judged_in_one_transaction_more(
    ledger: gk.Ledger, sent: list[str]
) -> None:
    """A period whose running attempt's lease ran out: the one-statement start writes nothing,
    and one transaction more at most (none on SQLite) reads, abandons the old attempt and
    starts the next one."""
    _known(ledger)
    ledger.begin_attempt("A", D, "r-old", lease_seconds=30, now=T0)
    del sent[:]
    started = ledger.begin_attempt(
        "A", D, "r-new", lease_seconds=30, now=T0 + dt.timedelta(minutes=5)
    )
    assert (started.attempt, started.run_id) == (2, "r-new")
    # PostgreSQL sends the statements with their COMMIT (one round trip): the read is a second
    # transaction; SQLite reads in the same one
    assert len(transactions(sent)) == (2 if ledger.dialect == "postgresql" else 1), sent
    assert [a.state.value for a in ledger.history("A", D)] == ["abandoned", "running"]


def test_an_attempt_asked_for_by_number_is_that_number_for_a_known_job(
    ledger: gk.Ledger,
) -> None:
    _known(ledger)
    assert ledger.begin_attempt("A", D, "r-3", lease_seconds=30, attempt=3).attempt == 3


def test_a_known_jobs_kind_is_checked_on_every_path(ledger: gk.Ledger) -> None:
    """A daily job refuses an hourly key, also once the connection knows its kind (when the
    next attempt's start would take the one-round-trip path), with nothing written."""
    _known(ledger)
    before = snapshot(ledger)
    for attempt in (0, 1):
        with pytest.raises(gk.GatekeeperError, match="2026-10-22T05"):
            ledger.begin_attempt("A", "2026-10-22T05", "r-h", lease_seconds=30, attempt=attempt)
    assert snapshot(ledger) == before


def test_a_known_jobs_kind_is_not_read_again(ledger: gk.Ledger, sent: list[str]) -> None:
    """The kind is read once per connection: a start by number, which reads and judges, reads
    the period's attempts and not the job's kind."""
    _known(ledger)
    del sent[:]
    ledger.begin_attempt("A", D, "r-5", lease_seconds=30, attempt=5)
    assert [s for s in sent if "LIMIT 1" in s and "FROM gk_attempts" in s] == [], sent


def test_an_outcome_that_leaves_completeness_alone_touches_no_run(
    ledger: gk.Ledger, sent: list[str]
) -> None:
    """Failures recorded without a start (the read-and-judge path) on a period that was not
    complete change no run of complete periods: nothing of them is read or written."""
    _known(ledger)
    del sent[:]
    ledger.record("A", D, 1, "r-f1", "failed", T0, error="one")
    ledger.record("A", D, 2, "r-f2", "failed", T0, error="two")
    ledger.record("A", D, 3, "r-f3", "abandoned", T0, error="three")
    assert [s for s in sent if "gk_complete_runs" in s] == [], sent
    assert [a.state.value for a in ledger.history("A", D)] == ["failed"] * 2 + ["abandoned"]
