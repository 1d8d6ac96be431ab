"""Contract tests of docs/ownership.md at the ledger (no Luigi), on both backends.

- fenced publication: only the latest, running, live attempt of ``(consumer, period)`` may
  publish or republish; anyone else gets ``LeaseLost`` and nothing is written;
- heartbeats renew live attempts only; ``begin_attempt(skip_succeeded=True)`` does no
  duplicate work;
- the write handle: ``?`` placeholders on both backends, no transaction control;
- connections and waits: reconnect after a dropped connection, ``busy_timeout`` bounds every
  lock wait, URL checks, the database clock.

Every wait is bounded; every refusal asserts the error and that nothing was written.
"""

from __future__ import annotations

import datetime as dt
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import (
    PG_DSN,
    T0,
    count_rows,
    install_nap,
    kill_when_napping,
    nap_calls,
    pg_url,
    snapshot,
    succeed,
    user_table,
)

UTC = dt.timezone.utc
ROOT = Path(__file__).resolve().parents[2]
D = "2026-10-23"
CONSUMER = "DailySalesLoad"
UPSTREAM = ("DimCustomer", "DimProduct")
JOB = "NightlyLoad"
LEASE = 30.0
SHORT_LEASE = 1.0
PAST_SHORT_LEASE = 1.5  # seconds to sleep until a SHORT_LEASE has expired by any clock here
WAIT = 30.0  # upper bound of any wait on a thread or an event
KINDS = ("publish", "republish")
REVISION = {"publish": 1, "republish": 2}
WriteFn = Callable[[Any], None]


# -- helpers ---------------------------------------------------------------------------------
def with_query(url: str, param: str) -> str:
    """``url`` with one more query parameter."""
    return f"{url}{'&' if '?' in url else '?'}{param}"


def now_utc() -> dt.datetime:
    return dt.datetime.now(UTC)


def recorder(calls: list[str], cents: int = 17500) -> WriteFn:
    """A write callback that records its call and inserts one sales_totals row."""

    def write(tx: Any) -> None:
        calls.append("write")
        tx.execute("INSERT INTO sales_totals (business_date, cents) VALUES (?, ?)", (D, cents))

    return write


def prepare(ledger: gk.Ledger, kind: str) -> None:
    """For a republish: an earlier revision, published without a producer and without rows."""
    if kind == "republish":
        assert ledger.publish(CONSUMER, D, UPSTREAM, "fp-0") is True


def fenced(
    ledger: gk.Ledger,
    kind: str,
    producer: str | None,
    write: WriteFn | None,
    fingerprint: str = "fp-1",
) -> bool:
    """Publish or republish CONSUMER's output for D on behalf of ``producer``."""
    if kind == "publish":
        return ledger.publish(CONSUMER, D, UPSTREAM, fingerprint, write, producer=producer)
    return ledger.republish(
        CONSUMER, D, UPSTREAM, fingerprint, write, reason="late data", producer=producer
    )


def pg_sessions(application_name: str) -> int:
    """How many PostgreSQL sessions carry ``application_name`` (seen from a new connection)."""
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=10) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        ).fetchone()
    assert row is not None
    return int(row[0])


def pg_terminate(application_name: str) -> int:
    """Terminate every session named ``application_name``; returns how many were signalled."""
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=10) as conn:
        rows = conn.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        ).fetchall()
    deadline = time.monotonic() + WAIT
    while pg_sessions(application_name):
        if time.monotonic() > deadline:
            pytest.fail(f"sessions {application_name} still alive after {WAIT:.0f}s")
        time.sleep(0.05)
    return sum(1 for (done,) in rows if done)


def pg_schema_exists(schema: str) -> bool:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=10) as conn:
        rows = conn.execute(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
        ).fetchall()
    return bool(rows)


def assert_nothing_created(url: str) -> None:
    """The ledger at ``url`` (a fixture URL, never opened) still does not exist."""
    if url.startswith("sqlite:///"):
        path = Path(url[len("sqlite:///") :].partition("?")[0])
        assert list(path.parent.iterdir()) == [], "a refused URL created files"
        return
    schema = dict(parse_qsl(urlsplit(url).query))["schema"]
    assert not pg_schema_exists(schema), "a refused URL created its schema"


@pytest.fixture
def ready(ledger: gk.Ledger) -> dict[str, str]:
    """The output table and succeeded upstream attempts for D; returns their run IDs."""
    user_table(ledger)
    return {job: succeed(ledger, job, D) for job in UPSTREAM}


@pytest.fixture
def notes(ledger: gk.Ledger, ready: dict[str, str]) -> None:
    """A second output table of two text columns, for the write handle tests."""
    with ledger.transaction():
        ledger.execute("CREATE TABLE notes (d TEXT NOT NULL, t TEXT NOT NULL)")


# -- fenced publication ----------------------------------------------------------------------
def test_lease_lost_is_exported_state_conflict() -> None:
    assert "LeaseLost" in gk.__all__
    assert issubclass(gk.LeaseLost, gk.StateConflict)
    assert issubclass(gk.LeaseLost, gk.GatekeeperError)


@pytest.mark.parametrize("kind", KINDS)
def test_fenced_publish_by_live_latest_attempt_records_producer(
    ledger: gk.Ledger, ready: dict[str, str], kind: str
) -> None:
    prepare(ledger, kind)
    own = ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=LEASE)
    calls: list[str] = []

    assert fenced(ledger, kind, own.run_id, recorder(calls)) is True

    assert calls == ["write"]
    assert count_rows(ledger, "sales_totals") == 1
    pub = ledger.publication(CONSUMER, D)
    assert pub is not None
    assert (pub.revision, pub.fingerprint, pub.evidence) == (REVISION[kind], "fp-1", ready)
    assert (pub.run_id, pub.attempt) == ("pub-1", 1)
    if kind == "republish":  # the earlier revision keeps its own (absent) producer
        first = ledger.publications(CONSUMER, D)[-1]
        assert (first.revision, first.run_id, first.attempt) == (1, None, None)


@pytest.mark.parametrize("kind", KINDS)
def test_fenced_publish_without_producer_records_none(
    ledger: gk.Ledger, ready: dict[str, str], kind: str
) -> None:
    prepare(ledger, kind)
    ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=LEASE)  # irrelevant without producer
    calls: list[str] = []

    assert fenced(ledger, kind, None, recorder(calls)) is True

    pub = ledger.publication(CONSUMER, D)
    assert pub is not None and pub.revision == REVISION[kind]
    assert (pub.run_id, pub.attempt) == (None, None)
    assert calls == ["write"]


def _superseded(ledger: gk.Ledger) -> str:
    """Attempt 1 running with a live lease, but attempt 2 was recorded after it."""
    mine = ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=LEASE)
    ledger.record(CONSUMER, D, 2, "pub-2", "running", now_utc())
    return mine.run_id


def _ended(state: str) -> Callable[[gk.Ledger], str]:
    """Attempt 1 began, then its outcome ``state`` was recorded: it holds no lease."""

    def setup(ledger: gk.Ledger) -> str:
        mine = ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=LEASE)
        ledger.record(CONSUMER, D, 1, mine.run_id, state, mine.started_at)
        return mine.run_id

    return setup


def _expired(ledger: gk.Ledger) -> str:
    """Attempt 1 still running, the latest, but its lease expired (real time, DB clock)."""
    mine = ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=SHORT_LEASE)
    time.sleep(PAST_SHORT_LEASE)
    return mine.run_id


# scenario -> (setup returning the producer's run ID, attempt that took over or None)
NOT_OWNER: dict[str, tuple[Callable[[gk.Ledger], str], int | None]] = {
    "superseded": (_superseded, 2),
    "abandoned": (_ended("abandoned"), None),
    "failed": (_ended("failed"), None),
    "succeeded": (_ended("succeeded"), None),
    "lease_expired": (_expired, None),
}


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("scenario", sorted(NOT_OWNER))
def test_fenced_publish_without_live_lease_raises_lease_lost(
    ledger: gk.Ledger, ready: dict[str, str], kind: str, scenario: str
) -> None:
    prepare(ledger, kind)
    setup, taken_over = NOT_OWNER[scenario]
    producer = setup(ledger)
    rows = snapshot(ledger)
    calls: list[str] = []

    with pytest.raises(gk.LeaseLost) as caught:
        fenced(ledger, kind, producer, recorder(calls))

    assert calls == [] and snapshot(ledger) == rows
    assert count_rows(ledger, "sales_totals") == 0
    err = caught.value
    assert (err.job, str(err.period), err.attempt, err.run_id) == (CONSUMER, D, 1, producer)
    if taken_over is None:
        assert err.taken_over_by is None
    else:
        assert err.taken_over_by is not None
        assert (err.taken_over_by.attempt, err.taken_over_by.run_id) == (taken_over, "pub-2")
    assert CONSUMER in str(err) and D in str(err)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("whose", ["unknown", "upstream", "other_date", "other_job"])
def test_fenced_publish_by_run_id_of_another_key_is_refused(
    ledger: gk.Ledger, ready: dict[str, str], kind: str, whose: str
) -> None:
    prepare(ledger, kind)
    ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=LEASE)  # the real, live owner
    if whose == "unknown":
        producer = "nobody-ever"
    elif whose == "upstream":
        producer = ready["DimCustomer"]
    elif whose == "other_date":
        producer = ledger.begin_attempt(
            CONSUMER, "2026-10-22", "pub-22", lease_seconds=LEASE
        ).run_id
    else:
        producer = ledger.begin_attempt("OtherConsumer", D, "other-1", lease_seconds=LEASE).run_id
    rows = snapshot(ledger)
    calls: list[str] = []

    with pytest.raises(gk.GatekeeperError):
        fenced(ledger, kind, producer, recorder(calls))

    assert calls == [] and snapshot(ledger) == rows
    assert count_rows(ledger, "sales_totals") == 0


def test_fenced_publish_zombie_refused_after_takeover(
    ledger: gk.Ledger, ready: dict[str, str]
) -> None:
    zombie = ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=SHORT_LEASE)
    time.sleep(PAST_SHORT_LEASE)  # the worker "pauses" past its lease
    heir = ledger.begin_attempt(CONSUMER, D, "pub-2", lease_seconds=LEASE)
    assert heir.attempt == 2
    assert ledger.attempts(CONSUMER, D)[0].state is gk.RunState.ABANDONED
    rows = snapshot(ledger)
    calls: list[str] = []

    with pytest.raises(gk.LeaseLost) as caught:  # the zombie wakes and tries to publish
        ledger.publish(
            CONSUMER, D, UPSTREAM, "fp-zombie", recorder(calls, 666), producer=zombie.run_id
        )
    assert calls == [] and snapshot(ledger) == rows
    err = caught.value
    assert (err.attempt, err.run_id) == (1, "pub-1")
    assert err.taken_over_by is not None
    assert (err.taken_over_by.attempt, err.taken_over_by.run_id) == (2, "pub-2")
    assert ledger.heartbeat(zombie.run_id, lease_seconds=LEASE) is False  # nor renew
    assert snapshot(ledger) == rows

    assert (
        ledger.publish(CONSUMER, D, UPSTREAM, "fp-heir", recorder(calls, 2), producer=heir.run_id)
        is True
    )
    pub = ledger.publication(CONSUMER, D)
    assert pub is not None
    assert (pub.run_id, pub.attempt, pub.fingerprint, pub.evidence) == (
        "pub-2",
        2,
        "fp-heir",
        ready,
    )
    assert ledger.read("SELECT business_date, cents FROM sales_totals") == [(D, 2)]


def test_fenced_publish_retry_by_same_producer_is_noop(
    ledger: gk.Ledger, ready: dict[str, str]
) -> None:
    own = ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=LEASE)
    calls: list[str] = []
    assert (
        ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", recorder(calls), producer=own.run_id) is True
    )
    rows = snapshot(ledger)

    assert (
        ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", recorder(calls), producer=own.run_id) is False
    )

    assert calls == ["write"] and snapshot(ledger) == rows
    assert count_rows(ledger, "sales_totals") == 1


def test_fenced_publish_producer_shown_by_evidence_command(
    ledger: gk.Ledger, ledger_url: str, ready: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    from gatekeeper.cli import main

    own = ledger.begin_attempt(CONSUMER, D, "producer-run-7f3", lease_seconds=LEASE)
    assert ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", producer=own.run_id) is True
    capsys.readouterr()

    assert main(["--ledger", ledger_url, "evidence", CONSUMER, D]) == 0
    assert "producer-run-7f3" in capsys.readouterr().out
    assert main(["--ledger", ledger_url, "evidence", CONSUMER, D, "--json"]) == 0
    assert "producer-run-7f3" in capsys.readouterr().out


# -- heartbeat -------------------------------------------------------------------------------
def test_heartbeat_renews_live_attempt(ledger: gk.Ledger) -> None:
    first = ledger.begin_attempt(JOB, D, "hb-1", lease_seconds=LEASE)
    assert first.lease_expires_at is not None

    assert ledger.heartbeat("hb-1", lease_seconds=4 * LEASE) is True

    renewed = ledger.latest(JOB, D)
    assert renewed is not None and renewed.state is gk.RunState.RUNNING
    assert renewed.lease_expires_at is not None
    assert renewed.lease_expires_at > first.lease_expires_at


@pytest.mark.parametrize("state", ["succeeded", "failed", "abandoned"])
def test_heartbeat_of_ended_attempt_is_false_and_writes_nothing(
    ledger: gk.Ledger, state: str
) -> None:
    began = ledger.begin_attempt(JOB, D, "hb-1", lease_seconds=LEASE)
    ledger.record(JOB, D, 1, "hb-1", state, began.started_at)
    rows = snapshot(ledger)

    assert ledger.heartbeat("hb-1", lease_seconds=LEASE) is False

    assert snapshot(ledger) == rows
    ended = ledger.latest(JOB, D)
    assert ended is not None and ended.state.value == state
    if state == "succeeded":
        assert ended.lease_expires_at is None


def test_heartbeat_of_unknown_run_id_is_false(ledger: gk.Ledger) -> None:
    ledger.begin_attempt(JOB, D, "hb-1", lease_seconds=LEASE)
    rows = snapshot(ledger)
    assert ledger.heartbeat("hb-nobody", lease_seconds=LEASE) is False
    assert snapshot(ledger) == rows


# -- no duplicate work -----------------------------------------------------------------------
# recorded states of attempts 1..n, begin_attempt kwargs, (attempt, state) returned, new row?
SKIP_TABLE = [
    (("succeeded",), {"skip_succeeded": True}, (1, "succeeded"), False),
    (("failed", "succeeded"), {"skip_succeeded": True}, (2, "succeeded"), False),
    ((), {"skip_succeeded": True}, (1, "running"), True),
    (("failed",), {"skip_succeeded": True}, (2, "running"), True),
    (("abandoned",), {"skip_succeeded": True}, (2, "running"), True),
    (("succeeded", "failed"), {"skip_succeeded": True}, (3, "running"), True),
    (("succeeded",), {"skip_succeeded": True, "attempt": 2}, (2, "running"), True),
    (("succeeded",), {"skip_succeeded": True, "attempt": 5}, (5, "running"), True),
    (("succeeded",), {}, (2, "running"), True),
]


@pytest.mark.parametrize(("history", "kwargs", "expected", "writes"), SKIP_TABLE)
def test_begin_attempt_skip_succeeded(
    ledger: gk.Ledger,
    history: tuple[str, ...],
    kwargs: dict[str, Any],
    expected: tuple[int, str],
    writes: bool,
) -> None:
    for number, state in enumerate(history, start=1):
        ledger.record(JOB, D, number, f"old-{number}", state, T0)
    rows = snapshot(ledger)

    got = ledger.begin_attempt(JOB, D, "new-run", lease_seconds=LEASE, **kwargs)

    assert (got.attempt, got.state.value) == expected
    latest = ledger.latest(JOB, D)
    assert latest is not None
    assert (latest.attempt, latest.state.value, latest.run_id) == (*expected, got.run_id)
    if writes:
        assert got.run_id == "new-run" and got.lease_expires_at is not None
        assert len(ledger.attempts(JOB, D)) == len(history) + 1
    else:
        assert got.run_id == f"old-{expected[0]}"
        assert snapshot(ledger) == rows


def test_begin_attempt_skip_succeeded_still_refuses_live_lease(ledger: gk.Ledger) -> None:
    ledger.begin_attempt(JOB, D, "holder", lease_seconds=LEASE)
    rows = snapshot(ledger)
    with pytest.raises(gk.LeaseHeld):
        ledger.begin_attempt(JOB, D, "loser", lease_seconds=LEASE, skip_succeeded=True)
    assert snapshot(ledger) == rows


# -- the write handle ------------------------------------------------------------------------
@pytest.mark.parametrize("method", ["commit", "rollback", "close"])
@pytest.mark.parametrize("swallow", [False, True], ids=["raised", "swallowed"])
def test_write_handle_transaction_control_rolls_back_publication(
    ledger: gk.Ledger, ready: dict[str, str], method: str, swallow: bool
) -> None:
    rows = snapshot(ledger)
    seen: list[BaseException] = []

    def write(tx: Any) -> None:
        tx.execute("INSERT INTO sales_totals (business_date, cents) VALUES (?, ?)", (D, 1))
        try:
            getattr(tx, method)()
        except gk.GatekeeperError as exc:
            seen.append(exc)
            if not swallow:
                raise

    with pytest.raises(gk.GatekeeperError):
        ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write)

    assert len(seen) == 1, f"tx.{method}() did not raise GatekeeperError"
    assert snapshot(ledger) == rows
    assert count_rows(ledger, "sales_totals") == 0
    assert ledger.publication(CONSUMER, D) is None
    calls: list[str] = []  # the ledger is still usable, and nothing half-done stands in the way
    assert ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", recorder(calls)) is True
    assert count_rows(ledger, "sales_totals") == 1


@pytest.mark.parametrize(
    ("sql", "params", "row"),
    [
        ("INSERT INTO notes (d, t) VALUES (?, 'why? 100%')", (D,), (D, "why? 100%")),
        ("INSERT INTO notes (d, t) VALUES (?, 'it''s ? %s')", (D,), (D, "it's ? %s")),
        ("INSERT INTO notes (d, t) VALUES (? /* a ? here, 5% */, ?)", (D, "x"), (D, "x")),
        ("INSERT INTO notes (d, t) -- why? 100%\nVALUES (?, ?)", (D, "y?"), (D, "y?")),
        ('INSERT INTO notes ("d", t) VALUES (?, ?)', (D, "%"), (D, "%")),
    ],
    ids=[
        "quoted-question-percent",
        "escaped-quote",
        "block-comment",
        "line-comment",
        "quoted-identifier",
    ],
)
def test_write_handle_placeholders_skip_literals_and_comments(
    ledger: gk.Ledger, notes: None, sql: str, params: tuple[Any, ...], row: tuple[str, str]
) -> None:
    counts: list[int] = []

    def write(tx: Any) -> None:
        counts.append(tx.execute(sql, params).rowcount)

    assert ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write) is True
    assert counts == [1]
    assert [tuple(r) for r in ledger.read("SELECT d, t FROM notes")] == [row]


def test_write_handle_executemany_and_fetch(ledger: gk.Ledger, notes: None) -> None:
    seen: dict[str, Any] = {}

    def write(tx: Any) -> None:
        cursor = tx.executemany(
            "INSERT INTO notes (d, t) VALUES (?, ?)", [(D, "a"), (D, "b?"), (D, "c%")]
        )
        seen["rowcount"] = cursor.rowcount
        seen["one"] = tx.execute("SELECT COUNT(*) FROM notes WHERE d = ?", (D,)).fetchone()
        seen["all"] = tx.execute("SELECT t FROM notes WHERE d = ? ORDER BY t", (D,)).fetchall()
        seen["none"] = tx.execute("SELECT t FROM notes WHERE d = ?", ("never",)).fetchone()

    assert ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write) is True
    assert seen["rowcount"] == 3
    assert tuple(seen["one"]) == (3,)
    assert [tuple(r) for r in seen["all"]] == [("a",), ("b?",), ("c%",)]
    assert seen["none"] is None
    assert count_rows(ledger, "notes") == 3


@pytest.mark.parametrize(
    "sql",
    [
        "COMMIT",
        "commit",
        "  /* sneaky */ COMMIT",
        "BEGIN",
        "ROLLBACK",
        "SAVEPOINT s1",
        "RELEASE SAVEPOINT s1",
        "ROLLBACK TO SAVEPOINT s1",
        "END",
        "INSERT INTO notes (d, t) VALUES (?, 'x'); DELETE FROM notes",
        "INSERT INTO notes (d, t) VALUES (?, 'x'); COMMIT",
    ],
)
def test_write_handle_refuses_control_and_multiple_statements(
    ledger: gk.Ledger, notes: None, sql: str
) -> None:
    params = (D,) if "?" in sql else ()
    rows = snapshot(ledger)

    def write(tx: Any) -> None:
        tx.execute("INSERT INTO notes (d, t) VALUES (?, ?)", (D, "before"))
        tx.execute(sql, params)

    with pytest.raises(gk.InvalidInput) as caught:
        ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write)

    assert caught.value.field == "sql"
    assert snapshot(ledger) == rows
    assert count_rows(ledger, "notes") == 0
    assert ledger.publication(CONSUMER, D) is None
    assert (
        ledger.publish(
            CONSUMER,
            D,
            UPSTREAM,
            "fp-1",
            lambda tx: tx.execute("INSERT INTO notes (d, t) VALUES (?, 'ok')", (D,)),
        )
        is True
    )
    assert ledger.read("SELECT t FROM notes") == [("ok",)]


SESSION_CHANGES = {
    "postgresql": [
        "SET lock_timeout = 0",
        "set search_path to public",
        "RESET ALL",
        "DISCARD ALL",
        "SET SESSION statement_timeout = 0",
        "PREPARE gk_p AS SELECT 1",
        "DEALLOCATE ALL",
        "LOAD 'auto_explain'",
    ],
    "sqlite": ["PRAGMA busy_timeout = 0", "PRAGMA foreign_keys = OFF"],
}


@pytest.mark.parametrize("index", range(8))
def test_write_handle_refuses_session_changes(ledger: gk.Ledger, notes: None, index: int) -> None:
    """A publication must not leave a changed session (no lock_timeout, another search_path)
    behind on the ledger's connection: such statements are refused and nothing is written."""
    statements = SESSION_CHANGES[ledger.dialect]
    if index >= len(statements):
        pytest.skip(f"{ledger.dialect} has {len(statements)} such cases")
    rows = snapshot(ledger)

    def write(tx: Any) -> None:
        tx.execute("INSERT INTO notes (d, t) VALUES (?, ?)", (D, "before"))
        try:
            tx.execute(statements[index])
        except gk.InvalidInput:
            pass  # swallowed: the publication still rolls back

    with pytest.raises(gk.GatekeeperError):
        ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write)
    assert snapshot(ledger) == rows
    assert count_rows(ledger, "notes") == 0
    if ledger.dialect == "postgresql":
        assert ledger.read("SHOW lock_timeout") != [("0",)]


def test_write_handle_set_local_is_allowed_on_postgresql(ledger: gk.Ledger, notes: None) -> None:
    if ledger.dialect != "postgresql":
        pytest.skip("SET LOCAL is PostgreSQL syntax")
    before = ledger.read("SHOW lock_timeout")

    def write(tx: Any) -> None:
        tx.execute("SET LOCAL lock_timeout = '5s'")
        tx.execute("INSERT INTO notes (d, t) VALUES (?, ?)", (D, "x"))

    assert ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write) is True
    assert ledger.read("SHOW lock_timeout") == before  # it ended with the transaction


def test_write_handle_failed_statement_rolls_back_even_if_swallowed(
    ledger: gk.Ledger, notes: None
) -> None:
    """SQLite would go on after a failed statement with part of the output: not here."""
    rows = snapshot(ledger)

    def write(tx: Any) -> None:
        tx.execute("INSERT INTO notes (d, t) VALUES (?, ?)", (D, "kept?"))
        try:
            tx.execute("INSERT INTO no_such_table VALUES (?)", (1,))
        except Exception:  # noqa: BLE001 - the point: the callback swallows the error
            pass

    with pytest.raises(gk.GatekeeperError, match="rolled back"):
        ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write)
    assert snapshot(ledger) == rows
    assert count_rows(ledger, "notes") == 0


def test_write_handle_after_publication_is_refused(ledger: gk.Ledger, notes: None) -> None:
    kept: list[Any] = []
    assert ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", kept.append) is True
    rows = snapshot(ledger)

    with pytest.raises(gk.GatekeeperError):
        kept[0].execute("INSERT INTO notes (d, t) VALUES (?, 'late')", (D,))

    assert snapshot(ledger) == rows
    assert count_rows(ledger, "notes") == 0


READS: list[tuple[str, tuple[Any, ...], list[tuple[Any, ...]]]] = [
    ("SELECT 'a?b', ?", (1,), [("a?b", 1)]),
    ("SELECT 'why? 100%', ?", (1,), [("why? 100%", 1)]),
    ("SELECT 'it''s ?', ?", (2,), [("it's ?", 2)]),
    ("SELECT /* ? */ ?", (3,), [(3,)]),
    ('SELECT ? AS "what?"', (4,), [(4,)]),
    ("SELECT '100%', 'a?b'", (), [("100%", "a?b")]),
]
PG_READS: list[tuple[str, tuple[Any, ...], list[tuple[Any, ...]]]] = [
    ("SELECT $$a?b 5%$$, ?", (5,), [("a?b 5%", 5)]),
    ("SELECT $q$ ? '$q$, ?", (6,), [(" ? '", 6)]),
    ("SELECT E'it\\'s ? 7%', ?", (7,), [("it's ? 7%", 7)]),
    ("SELECT /* a /* nested ? */ still ? */ ?", (8,), [(8,)]),
]


@pytest.mark.parametrize("case", range(len(READS) + len(PG_READS)))
def test_ledger_read_translates_placeholders_by_tokens(ledger: gk.Ledger, case: int) -> None:
    if case >= len(READS) and ledger.dialect != "postgresql":
        pytest.skip("dollar quotes are PostgreSQL syntax")
    sql, params, expected = (READS + PG_READS)[case]
    assert [tuple(r) for r in ledger.read(sql, params)] == expected


def test_ledger_execute_translates_placeholders_by_tokens(ledger: gk.Ledger) -> None:
    with ledger.transaction():
        ledger.execute("CREATE TABLE notes (d TEXT NOT NULL, t TEXT NOT NULL)")
        ledger.execute("INSERT INTO notes (d, t) VALUES (?, 'why? 100%')", (D,))
    assert ledger.read("SELECT d, t FROM notes WHERE t = 'why? 100%' AND d = ?", (D,)) == [
        (D, "why? 100%")
    ]


# -- connections -----------------------------------------------------------------------------
@pytest.mark.postgres
def test_ledger_reconnects_after_backend_terminated_for_a_write(pg_schema: str) -> None:
    name = f"gk_term_{uuid.uuid4().hex[:12]}"
    with gk.open_ledger(with_query(pg_url(pg_schema), f"application_name={name}")) as ledger:
        assert ledger.record(JOB, D, 1, "conn-1", "failed", T0) is True
        assert pg_terminate(name) == 1  # the URL's application_name reached libpq

        assert ledger.record(JOB, D, 2, "conn-2", "succeeded", T0) is True

        assert [(a.attempt, a.run_id, a.state.value) for a in ledger.attempts(JOB, D)] == [
            (1, "conn-1", "failed"),
            (2, "conn-2", "succeeded"),
        ]
        assert pg_sessions(name) == 1  # the new connection keeps the URL's parameters


@pytest.mark.postgres
def test_ledger_reconnects_after_backend_terminated_for_a_read(pg_schema: str) -> None:
    name = f"gk_term_{uuid.uuid4().hex[:12]}"
    with gk.open_ledger(with_query(pg_url(pg_schema), f"application_name={name}")) as ledger:
        ledger.record(JOB, D, 1, "conn-1", "succeeded", T0)
        assert pg_terminate(name) == 1

        latest = ledger.latest(JOB, D)

        assert latest is not None and latest.run_id == "conn-1"


@pytest.mark.postgres
def test_ledger_default_application_name_is_gatekeeper(pg_schema: str) -> None:
    import psycopg

    with gk.open_ledger(pg_url(pg_schema)) as ledger:
        pid = int(ledger.read("SELECT pg_backend_pid()")[0][0])
        with psycopg.connect(PG_DSN, autocommit=True, connect_timeout=10) as conn:
            rows = conn.execute(
                "SELECT application_name FROM pg_stat_activity WHERE pid = %s", (pid,)
            ).fetchall()
    assert rows == [("gatekeeper",)]


@pytest.mark.postgres
def test_ledger_transaction_dropped_before_commit_is_retried(pg_schema: str) -> None:
    name = f"gk_nap_{uuid.uuid4().hex[:12]}"
    killed: list[int] = []
    with gk.open_ledger(with_query(pg_url(pg_schema), f"application_name={name}")) as ledger:
        install_nap(pg_schema, at_commit=False)
        killer = kill_when_napping(name, killed)

        assert ledger.record(JOB, D, 1, "nap-1", "succeeded", T0) is True

        killer.join(WAIT)
        assert len(killed) == 1, "the session never slept in its insert"
        assert nap_calls(pg_schema) == 2  # once in the killed transaction, once in the retry
        assert [(a.attempt, a.run_id) for a in ledger.attempts(JOB, D)] == [(1, "nap-1")]


@pytest.mark.postgres
def test_ledger_connection_lost_during_commit_is_read_back(pg_schema: str) -> None:
    name = f"gk_nap_{uuid.uuid4().hex[:12]}"
    killed: list[int] = []
    with gk.open_ledger(with_query(pg_url(pg_schema), f"application_name={name}")) as ledger:
        install_nap(pg_schema, at_commit=True)
        killer = kill_when_napping(name, killed)

        # the session is killed in its COMMIT: the ledger reconnects and reads back that the
        # attempt is not there (it never committed), so the observation runs again
        assert ledger.record(JOB, D, 1, "nap-1", "succeeded", T0) is True

        killer.join(WAIT)
        assert len(killed) == 1, "the session never slept in its COMMIT"
        assert nap_calls(pg_schema) == 2  # the killed COMMIT, then the run after the read-back
        attempts = ledger.attempts(JOB, D)
        assert [(a.run_id, a.state) for a in attempts] == [("nap-1", gk.RunState.SUCCEEDED)]
        assert ledger.record(JOB, D, 1, "nap-1", "succeeded", T0) is False  # a replay


@pytest.mark.parametrize("seconds", [None, 2])
def test_ledger_busy_timeout_sets_the_database_lock_wait(
    ledger_url: str, seconds: int | None
) -> None:
    url = ledger_url if seconds is None else with_query(ledger_url, f"busy_timeout={seconds}")
    expected = 30 if seconds is None else seconds
    with gk.open_ledger(url) as opened, opened.transaction():
        if opened.dialect == "postgresql":
            assert opened.read("SHOW lock_timeout") == [(f"{expected}s",)]
        else:
            assert opened.read("PRAGMA busy_timeout") == [(expected * 1000,)]


# -- bounded waits ---------------------------------------------------------------------------
@pytest.mark.slow
def test_publish_lock_wait_past_busy_timeout_is_ledger_error(
    ledger: gk.Ledger, ledger_url: str, ready: dict[str, str]
) -> None:
    # Both opened before anybody holds a lock (on SQLite opening may need the write lock).
    holder = gk.open_ledger(ledger_url)
    waiter = gk.open_ledger(with_query(ledger_url, "busy_timeout=2"))
    entered, release = threading.Event(), threading.Event()
    outcome: list[Any] = []

    def hold() -> None:
        def write(tx: Any) -> None:
            tx.execute("INSERT INTO sales_totals (business_date, cents) VALUES (?, ?)", (D, 1))
            entered.set()
            release.wait(WAIT)

        try:
            outcome.append(holder.publish(CONSUMER, D, UPSTREAM, "fp-1", write))
        except BaseException as exc:  # noqa: BLE001 - reported by the assertions below
            outcome.append(exc)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    calls: list[str] = []
    try:
        assert entered.wait(WAIT), f"the holder never reached its write: {outcome}"
        with pytest.raises(gk.LedgerError) as caught:
            waiter.publish(CONSUMER, D, UPSTREAM, "fp-1", recorder(calls))
    finally:
        release.set()
        thread.join(WAIT)
    try:
        assert not thread.is_alive()
        message = str(caught.value)
        assert "timed out after 2s" in message, message  # the lock wait's own timeout ended it
        assert re.search("timed out|waiting", message, re.IGNORECASE), message
        assert CONSUMER in message and D in message, message
        assert calls == []
        assert outcome == [True]
        # the waiter's ledger is still usable: its publish is now a retry
        assert waiter.publish(CONSUMER, D, UPSTREAM, "fp-1", recorder(calls)) is False
        assert calls == []
        assert ledger.read("SELECT business_date, cents FROM sales_totals") == [(D, 1)]
    finally:
        holder.close()
        waiter.close()


def test_cli_record_lock_wait_past_busy_timeout_exits_4(
    ledger: gk.Ledger, ledger_url: str, tmp_path: Path
) -> None:
    url = with_query(ledger_url, "busy_timeout=1")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    env.pop("GATEKEEPER_LEDGER_URL", None)
    with ledger.transaction():  # holds the write lock (SQLite) and the key's lock (PostgreSQL)
        ledger.record(JOB, D, 1, "holder", "running", T0)
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "gatekeeper.cli",
                "--ledger",
                url,
                "record",
                JOB,
                D,
                "1",
                "run-x",
                "succeeded",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
    assert proc.returncode == 4, (proc.returncode, proc.stdout, proc.stderr)
    assert "LedgerError" in proc.stderr, proc.stderr
    assert [(a.attempt, a.run_id, a.state.value) for a in ledger.attempts(JOB, D)] == [
        (1, "holder", "running")
    ]


# -- URL checks ------------------------------------------------------------------------------
@pytest.mark.parametrize("param", ["frobnicate=1", "schema=other", "application_name=x"])
def test_open_ledger_sqlite_unknown_query_parameter_is_refused(tmp_path: Path, param: str) -> None:
    name = param.partition("=")[0]
    with pytest.raises(gk.InvalidInput) as caught:
        gk.open_ledger(f"sqlite:///{tmp_path / 'l.db'}?{param}")
    assert caught.value.field.startswith("ledger_url")
    assert name in caught.value.field, caught.value.field
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["abc", "-1", "inf", "nan", "", "1e400"])
def test_open_ledger_bad_busy_timeout_is_refused(ledger_url: str, value: str) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        gk.open_ledger(with_query(ledger_url, f"busy_timeout={value}"))
    assert "busy_timeout" in caught.value.field, caught.value.field
    assert_nothing_created(ledger_url)


def test_open_ledger_accepts_busy_timeout_and_libpq_parameters(ledger_url: str) -> None:
    url = with_query(ledger_url, "busy_timeout=2.5")
    if ledger_url.startswith("postgresql"):
        url = with_query(url, "connect_timeout=5&application_name=gk_custom")
    with gk.open_ledger(url) as opened:
        assert opened.record(JOB, D, 1, "r1", "succeeded", T0) is True
        if opened.dialect == "postgresql":
            assert opened.read("SELECT current_setting('application_name')") == [("gk_custom",)]
    with gk.open_ledger(ledger_url) as again:  # same database, without the options
        assert [a.run_id for a in again.attempts(JOB, D)] == ["r1"]


# -- one clock -------------------------------------------------------------------------------
def test_begin_attempt_without_now_uses_database_clock(ledger: gk.Ledger) -> None:
    got = ledger.begin_attempt(JOB, D, "clock-1", lease_seconds=LEASE)
    if ledger.dialect == "postgresql":
        clock = ledger.read("SELECT clock_timestamp()")[0][0]
    else:
        clock = now_utc()
    stored = ledger.latest(JOB, D)
    assert stored is not None and stored.lease_expires_at is not None
    assert abs(stored.started_at - clock) < dt.timedelta(seconds=2)
    assert abs(stored.lease_expires_at - stored.started_at - dt.timedelta(seconds=LEASE)) < (
        dt.timedelta(seconds=1)
    )
    assert abs(got.started_at - stored.started_at) < dt.timedelta(seconds=1)
