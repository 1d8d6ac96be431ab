"""The one-round-trip start and finish of an attempt (``ledger/one_trip.py``) under faults.

On PostgreSQL a start (BEGIN, the key lock, the INSERT, COMMIT) and a finish (the UPDATE, the
run's extension, COMMIT) each go in one round trip, so a connection that drops during it
cannot tell whether its COMMIT ran: the work is run again, which is safe because a second run
finds it done. Here the session is really terminated (``pg_terminate_backend``) while it sleeps
in the COMMIT (a deferred trigger), and the idempotence the retry relies on is held on both
backends.
"""

from __future__ import annotations

import uuid

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import (
    T0,
    install_nap,
    kill_when_napping,
    nap_calls,
    pg_url,
    snapshot,
)

JOB = "NightlyLoad"
WAIT = 30.0


def _known(ledger: gk.Ledger) -> None:
    """An attempt of JOB on 2026-10-20, so this connection knows its period kind (a start
    then takes the one-round-trip path) and 2026-10-21 extends its run."""
    started = ledger.begin_attempt(JOB, "2026-10-20", "r-known-a", lease_seconds=300)
    ledger.record(JOB, "2026-10-20", started.attempt, "r-known-a", "succeeded", T0)
    started = ledger.begin_attempt(JOB, "2026-10-19", "r-known-b", lease_seconds=300)
    ledger.record(JOB, "2026-10-19", started.attempt, "r-known-b", "failed", T0)


@pytest.mark.postgres
@pytest.mark.parametrize("event", ["INSERT", "UPDATE"])
def test_one_trip_killed_in_its_commit_is_run_again_and_lands_once(
    pg_schema: str, event: str
) -> None:
    name = f"gk_nap_{uuid.uuid4().hex[:12]}"
    url = f"{pg_url(pg_schema)}&application_name={name}"
    with gk.open_ledger(url) as ledger:
        _known(ledger)
        started = None
        if event == "UPDATE":  # the finish is killed: start first
            started = ledger.begin_attempt(JOB, "2026-10-21", "r-1", lease_seconds=300)
        install_nap(pg_schema, at_commit=True, event=event)
        killed: list[int] = []
        killer = kill_when_napping(name, killed)

        if started is None:
            started = ledger.begin_attempt(JOB, "2026-10-21", "r-1", lease_seconds=300)
        else:
            assert ledger.record(JOB, "2026-10-21", 1, "r-1", "succeeded", T0) is True

        killer.join(WAIT)
        assert len(killed) == 1, "the session never slept in its COMMIT"
        assert nap_calls(pg_schema) == 2  # the killed transaction, then the one run again
        attempts = ledger.attempts(JOB, "2026-10-21")
        assert [(a.attempt, a.run_id) for a in attempts] == [(1, "r-1")]
        assert started.attempt == 1 and started.run_id == "r-1"
        if event == "UPDATE":
            assert attempts[0].state is gk.RunState.SUCCEEDED
            runs = ledger.complete_runs(JOB, "2026-10-19", "2026-10-21")
            assert list(runs.key_pairs()) == [("2026-10-20", "2026-10-21")]


def test_a_start_run_again_with_its_run_id_finds_it(ledger: gk.Ledger) -> None:
    """What a start run again after its COMMIT ran finds: its own running attempt, as it was
    (on the one-round-trip path and on the read-and-judge one); another run ID is held off
    by its lease, and nothing is written."""
    _known(ledger)
    for day in ("2026-10-21", "2026-10-25"):  # extends the run / no run to extend
        first = ledger.begin_attempt(JOB, day, f"r-{day}", lease_seconds=300)
        before = snapshot(ledger)
        again = ledger.begin_attempt(JOB, day, f"r-{day}", lease_seconds=300)
        assert again == first
        with pytest.raises(gk.LeaseHeld):
            ledger.begin_attempt(JOB, day, "r-other", lease_seconds=300)
        assert snapshot(ledger) == before
    fresh = ledger.begin_attempt("Fresh", "2026-10-21", "r-fresh", lease_seconds=300)
    assert ledger.begin_attempt("Fresh", "2026-10-21", "r-fresh", lease_seconds=300) == fresh


def test_a_finish_run_again_is_a_harmless_replay(ledger: gk.Ledger) -> None:
    _known(ledger)
    started = ledger.begin_attempt(JOB, "2026-10-21", "r-1", lease_seconds=300)
    assert ledger.record(JOB, "2026-10-21", 1, "r-1", "succeeded", T0) is True
    before = snapshot(ledger)
    assert ledger.record(JOB, "2026-10-21", 1, "r-1", "succeeded", T0) is False
    assert snapshot(ledger) == before
    assert started.attempt == 1
