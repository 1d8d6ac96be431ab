"""Every writer of a key waits for that key's lock (PostgreSQL), and a write that waits past
``busy_timeout`` says what it waited for (both backends)."""

from __future__ import annotations

import datetime as dt
import threading
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import T0, snapshot, succeed

D = "2026-10-22"


# -- PostgreSQL: every writer of a key waits for that key's lock -------------------------------
# On SQLite ``_lock_key`` does nothing (BEGIN IMMEDIATE already serializes every writer), so
# mutmut (SQLite only) cannot see which key a write locks; these cases can. Each holds one key's
# lock in an open transaction and starts a write on another connection: the write must wait for
# exactly that key (and not for another key of the same kind).
def _record(ledger: gk.Ledger) -> Any:
    return ledger.record("Load", D, 1, "load-1", "succeeded", T0)


def _begin(ledger: gk.Ledger) -> Any:
    return ledger.begin_attempt("Load", D, "load-1", lease_seconds=60).attempt


def _publish(ledger: gk.Ledger) -> Any:
    return ledger.publish("Report", D, ["Dim"], "fp")


def _fenced_publish(ledger: gk.Ledger) -> Any:
    return ledger.publish("Report", D, ["Dim"], "fp", producer="pub-1")


def _record_failed(ledger: gk.Ledger) -> Any:
    return ledger.record("Load", D, 1, "load-1", "failed", T0)


def _record_running(ledger: gk.Ledger) -> Any:  # no one-statement finish: the read-and-judge path
    return ledger.record("Load", D, 1, "load-1", "running", T0)


@pytest.mark.parametrize(
    ("write", "key", "other"),
    [
        (_record, ("attempt", "Load", D), None),
        # a success settles the job's runs of complete periods: it also takes their lock
        (_record, ("complete runs", "Load"), ("complete runs", "Dim")),
        # a failure settles nothing: it does not wait for the runs' lock
        (_record_failed, ("attempt", "Load", D), ("complete runs", "Load")),
        (_record_running, ("attempt", "Load", D), None),
        (_begin, ("attempt", "Load", D), None),
        (_publish, ("publication", "Report", D), None),
        (_fenced_publish, ("attempt", "Report", D), None),  # the fence: the producer's key
    ],
)
def test_postgresql_write_waits_for_its_keys_lock(
    pg_ledger_url: str, write: Any, key: tuple[str, ...], other: tuple[str, ...] | None
) -> None:
    with gk.open_ledger(pg_ledger_url) as holder, gk.open_ledger(pg_ledger_url) as writer:
        succeed(holder, "Dim", D, run_id="dim-1")
        holder.begin_attempt("Report", D, "pub-1", lease_seconds=60)
        other = other or (key[0], key[1], "2026-10-21")
        for held, waits in [(other, False), (key, True)]:
            ended: list[Any] = []  # the write's result or refusal: only its timing matters here

            def run(ended: list[Any] = ended) -> None:
                try:
                    ended.append(write(writer))
                except gk.GatekeeperError as exc:  # begin_attempt again: LeaseHeld
                    ended.append(exc)

            thread = threading.Thread(target=run)
            with holder.transaction():
                holder.sql.lock_key(*held)
                thread.start()
                thread.join(1.0 if waits else 10.0)
                assert thread.is_alive() is waits, f"{write.__name__} under the lock of {held}"
            thread.join(10.0)
            assert not thread.is_alive() and len(ended) == 1


@pytest.mark.parametrize(
    ("hold", "wait", "what"),
    [
        (
            lambda tx: tx.sql.lock_key(
                "publication", "Report", D
            ),  # PostgreSQL's lock; SQLite: the tx
            lambda ledger: ledger.republish(
                "Report", D, ["Dim"], "fp2", reason="late rows", now=T0
            ),
            f"publication Report {D}",
        ),
        (
            lambda tx: tx.execute(
                "UPDATE gk_attempts SET updated_at = updated_at WHERE run_id = ?", ("load-1",)
            ),  # the attempt's row lock on PostgreSQL
            lambda ledger: ledger.heartbeat("load-1", lease_seconds=60),
            "the lease of run load-1",
        ),
        (
            lambda tx: tx.sql.lock_key("attempt", "Load", D),
            lambda ledger: ledger.begin_attempt("Load", D, "load-2", lease_seconds=60),
            f"attempt Load {D}",
        ),
        (
            lambda tx: tx.sql.lock_key("attempt", "Load", D),
            lambda ledger: ledger.record("Load", D, 1, "load-1", "failed", T0, now=T0),
            f"attempt Load {D}",
        ),
        (
            lambda tx: tx.sql.lock_key("attempt", "Load", D),
            lambda ledger: ledger.abandon("Load", D, reason="stuck", now=T0),
            f"attempt Load {D}",
        ),
        (  # an observation that is not an outcome: the read-and-judge path alone
            lambda tx: tx.sql.lock_key("attempt", "Load", D),
            lambda ledger: ledger.record("Load", D, 1, "load-1", "running", T0, now=T0),
            f"attempt Load {D}",
        ),
    ],
)
def test_lock_timeout_names_what_the_write_waited_for(
    ledger_url: str, hold: Any, wait: Any, what: str
) -> None:
    sep = "&" if "?" in ledger_url else "?"
    with (
        gk.open_ledger(ledger_url) as holder,
        gk.open_ledger(f"{ledger_url}{sep}busy_timeout=0.2") as waiter,
    ):
        succeed(holder, "Dim", D, run_id="dim-1")
        holder.publish("Report", D, ["Dim"], "fp", now=T0)
        holder.begin_attempt("Load", D, "load-1", lease_seconds=60)
        before = snapshot(holder)
        with holder.transaction():
            hold(holder)
            holder.execute("UPDATE gk_schema SET version = version")
            with pytest.raises(gk.LedgerError) as caught:
                wait(waiter)
        assert snapshot(holder) == before
    assert f"timed out after 0.2s waiting for {what} (busy_timeout)" in str(caught.value)


def test_lock_timeout_of_a_one_round_trip_start_names_its_attempt(ledger_url: str) -> None:
    """A start of a job whose period kind the connection knows goes in one round trip
    (``one_trip.py``); waiting past ``busy_timeout`` it names its attempt as the others do."""
    sep = "&" if "?" in ledger_url else "?"
    with (
        gk.open_ledger(ledger_url) as holder,
        gk.open_ledger(f"{ledger_url}{sep}busy_timeout=0.2") as waiter,
    ):
        for day in ("2026-10-20", "2026-10-21"):  # the second start knows the kind
            waiter.begin_attempt("Load", day, f"load-{day}", lease_seconds=60)
        before = snapshot(holder)
        with holder.transaction():
            holder.sql.lock_key("attempt", "Load", D)
            holder.execute("UPDATE gk_schema SET version = version")
            with pytest.raises(gk.LedgerError) as caught:
                waiter.begin_attempt("Load", D, "load-new", lease_seconds=60)
        assert snapshot(holder) == before
    assert f"timed out after 0.2s waiting for attempt Load {D} (busy_timeout)" in str(caught.value)


def test_postgresql_takeover_of_a_published_attempt_waits_for_the_jobs_runs_lock(
    pg_ledger_url: str,
) -> None:
    """An attempt whose publication committed and whose lease then ran out is recorded
    succeeded by the next begin (``AttemptStore.succeed_published``), which settles the job's
    runs: it waits for exactly that job's runs lock, and not for another job's."""
    days = {("complete runs", "Dim"): "2026-10-21", ("complete runs", "Report"): D}
    with gk.open_ledger(pg_ledger_url) as holder, gk.open_ledger(pg_ledger_url) as writer:
        for day in days.values():
            succeed(holder, "Dim", day, run_id=f"dim-{day}")
            holder.begin_attempt("Report", day, f"pub-{day}", lease_seconds=1)
            holder.publish("Report", day, ["Dim"], "fp", producer=f"pub-{day}")
        later = holder.db_now() + dt.timedelta(minutes=5)  # every lease has run out
        for held, day in days.items():
            ended: list[Any] = []

            def run(day: str = day, ended: list[Any] = ended) -> None:
                ended.append(
                    writer.begin_attempt("Report", day, f"new-{day}", lease_seconds=60, now=later)
                )

            thread = threading.Thread(target=run)
            waits = held[1] == "Report"
            with holder.transaction():
                holder.sql.lock_key(*held)
                thread.start()
                thread.join(1.0 if waits else 10.0)
                assert thread.is_alive() is waits, f"the takeover under the lock of {held}"
            thread.join(10.0)
            assert not thread.is_alive() and [a.attempt for a in ended] == [2]
            states = [a.state.value for a in writer.attempts("Report", day)]
            assert states == ["succeeded", "running"]
