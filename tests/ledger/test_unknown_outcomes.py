"""A COMMIT whose outcome is unknown is read back, and the truth recorded (issue 36).

Each case loses a COMMIT through a real TCP proxy in front of PostgreSQL
(``tests/helpers/pg_proxy.py``): ``answer``, the server commits and its answer is dropped;
``request``, the COMMIT never reaches the server. The write is the publication, an
attempt's start, its finish or its abandon (issue 48); afterwards the ledger holds the truth:
what committed is reported as done (the attempt of a committed publication succeeds, and the
evidence names it), what did not runs again cleanly. When even the read-back cannot be made
(the database unreachable past ``reconnect_window``), ``UnknownOutcome`` names what it tried
to read, nothing more is recorded, and the next attempt after the lease expired finds the
truth.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.ledger.outages import UnknownOutcome
from tests.helpers.ledgers import PG_DSN, T0, pg_url, succeed
from tests.helpers.pg_proxy import PgProxy, has, pg_proxy

D = "2026-10-23"
CONSUMER = "DailySalesLoad"
UPSTREAM = ("DimCustomer", "DimProduct")
MODES = ["answer", "request"]
RUNNING, SUCCEEDED = gk.RunState.RUNNING, gk.RunState.SUCCEEDED


@pytest.fixture
def proxy() -> Iterator[PgProxy]:
    with pg_proxy(PG_DSN) as opened:
        yield opened


@pytest.fixture
def direct(pg_schema: str) -> Iterator[gk.Ledger]:
    """The test's own view of the ledger, not through the proxy."""
    with gk.open_ledger(pg_url(pg_schema)) as opened:
        with opened.transaction():
            opened.execute("CREATE TABLE sales_totals (business_date TEXT PRIMARY KEY, cents INT)")
        yield opened


def proxied(proxy: PgProxy, schema: str, window: float = 5) -> gk.Ledger:
    return gk.open_ledger(f"{proxy.url(pg_url(schema))}&reconnect_window={window:g}")


def ready(ledger: gk.Ledger) -> dict[str, str]:
    return {job: succeed(ledger, job, D) for job in UPSTREAM}


def write_total(tx: Any) -> None:
    tx.execute("INSERT INTO sales_totals VALUES (?, ?)", (D, 17500))


def finish_slow(statements: list[str]) -> bool:
    """A finish read and judged in its own transaction (``_record``), not the one-trip one."""
    return any("UPDATE gk_attempts SET state" in s and "WITH c AS" not in s for s in statements)


def states(ledger: gk.Ledger, job: str = CONSUMER) -> list[tuple[int, str, gk.RunState]]:
    return [(a.attempt, a.run_id, a.state) for a in ledger.attempts(job, D)]


# -- the publication -------------------------------------------------------------------------
@pytest.mark.postgres
@pytest.mark.parametrize("mode", MODES)
def test_lost_publication_commit_is_read_back_and_the_attempt_succeeds(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, mode: str
) -> None:
    evidence = ready(direct)
    with proxied(proxy, pg_schema) as ledger:
        run = ledger.begin_attempt(CONSUMER, D, "pub-1", lease_seconds=60)
        proxy.arm(mode, has("INSERT INTO gk_publications"))
        assert ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write_total, producer="pub-1")
        assert proxy.cuts == [mode]
        assert ledger.record(CONSUMER, D, 1, "pub-1", "succeeded", run.started_at) is True

    (only,) = direct.publications(CONSUMER, D)
    assert (only.revision, only.run_id, only.attempt, only.evidence) == (1, "pub-1", 1, evidence)
    assert states(direct) == [(1, "pub-1", SUCCEEDED)]
    assert direct.read("SELECT business_date, cents FROM sales_totals") == [(D, 17500)]


@pytest.mark.postgres
@pytest.mark.parametrize("mode", MODES)
def test_lost_republish_commit_is_read_back(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, mode: str
) -> None:
    ready(direct)
    direct.publish(CONSUMER, D, UPSTREAM, "fp-1")
    with proxied(proxy, pg_schema) as ledger:
        ledger.begin_attempt(CONSUMER, D, "fix-2", lease_seconds=60, attempt=2)
        proxy.arm(mode, has("INSERT INTO gk_publications"))
        assert ledger.republish(CONSUMER, D, UPSTREAM, "fp-2", reason="late", producer="fix-2")
        assert proxy.cuts == [mode]
    newest, first = direct.publications(CONSUMER, D)
    assert (newest.revision, newest.fingerprint, newest.run_id) == (2, "fp-2", "fix-2")
    assert first.revision == 1


# -- an attempt's start and its finish --------------------------------------------------------
@pytest.mark.postgres
@pytest.mark.parametrize("mode", MODES)
def test_lost_start_commit_is_read_back(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The attempt it started, whether the lost COMMIT ran (read back: found) or not (run
    again), and a warning naming the start and which it was."""
    with proxied(proxy, pg_schema) as ledger:  # its first start is read and judged (_begin)
        proxy.arm(mode, has("INSERT INTO gk_attempts"))
        with caplog.at_level("WARNING", logger="gatekeeper.ledger"):
            started = ledger.begin_attempt(CONSUMER, D, "start-1", lease_seconds=60)
        assert proxy.cuts == [mode]
    found = "it committed" if mode == "answer" else "it had not committed"
    lost = f"gatekeeper: the start of attempt {CONSUMER} {D}: its COMMIT's answer was lost; {found}"
    assert [r.getMessage() for r in caplog.records] == [lost]
    assert (started.attempt, started.run_id, started.state) == (1, "start-1", RUNNING)
    assert states(direct) == [(1, "start-1", RUNNING)]


@pytest.mark.postgres
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("way", ["read and judged", "one trip"])
def test_lost_finish_commit_is_read_back(
    proxy: PgProxy,
    direct: gk.Ledger,
    pg_schema: str,
    mode: str,
    way: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Read and judged, the finish changed the ledger whether its lost COMMIT ran (read back:
    found) or not (run again): True both times, and the warning names the attempt and which
    it was. One trip, it is run again blindly (``SqlCore.commits_with``): a second run of a
    COMMIT that ran is a harmless replay (False), and nothing is read back."""
    ready(direct)
    with proxied(proxy, pg_schema) as ledger:
        run = ledger.begin_attempt(CONSUMER, D, "end-1", lease_seconds=60)
        if way == "read and judged":  # a publisher's success is judged in _record
            ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", producer="end-1")
            proxy.arm(mode, finish_slow)
        else:
            proxy.arm(mode, has("UPDATE gk_attempts SET state"))
        with caplog.at_level("WARNING", logger="gatekeeper.ledger"):
            changed = ledger.record(CONSUMER, D, 1, "end-1", "succeeded", run.started_at)
        assert proxy.cuts == [mode]
        warned = [r.getMessage() for r in caplog.records]
        if way == "read and judged":
            found = "it committed" if mode == "answer" else "it had not committed"
            lost = f"gatekeeper: attempt {CONSUMER} {D} 1: its COMMIT's answer was lost; {found}"
            assert (changed, warned) == (True, [lost])
        else:
            assert (changed, warned) == (mode == "request", [])
        assert ledger.record(CONSUMER, D, 1, "end-1", "succeeded", run.started_at) is False
    assert states(direct) == [(1, "end-1", SUCCEEDED)]
    assert direct.completed_periods(CONSUMER, D, D) == {D}
    assert list(direct.complete_runs(CONSUMER, D, D).keys()) == [D]


# -- an abandon --------------------------------------------------------------------------------
@pytest.mark.postgres
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("published", [False, True])
def test_lost_abandon_commit_is_read_back(
    proxy: PgProxy,
    direct: gk.Ledger,
    pg_schema: str,
    mode: str,
    published: bool,
    caplog: pytest.LogCaptureFixture,
) -> None:
    ready(direct)
    direct.begin_attempt(CONSUMER, D, "gone-1", lease_seconds=3600)
    if published:  # its worker stopped after its publication committed: it succeeded
        direct.publish(CONSUMER, D, UPSTREAM, "fp-1", producer="gone-1")
    with proxied(proxy, pg_schema) as ledger:
        proxy.arm(mode, has("UPDATE gk_attempts SET state"))
        found = ledger.abandon(CONSUMER, D, reason="host lost")
        assert proxy.cuts == [mode]
    assert f"the abandon of {CONSUMER} {D}: its COMMIT's answer was lost" in caplog.text
    state = SUCCEEDED if published else gk.RunState.ABANDONED
    assert found is not None and (found.attempt, found.run_id, found.state) == (1, "gone-1", state)
    assert states(direct) == [(1, "gone-1", state)]
    assert found == direct.latest(CONSUMER, D)  # as recorded, error and stamp included
    assert direct.completed_periods(CONSUMER, D, D, CONSUMER) == ({D} if published else set())


# -- the read-back cannot be made --------------------------------------------------------------
@pytest.mark.postgres
@pytest.mark.parametrize("mode", MODES)
def test_unreadable_outcome_is_unknown_and_the_next_attempt_finds_the_truth(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, mode: str
) -> None:
    ready(direct)
    with proxied(proxy, pg_schema, window=1) as ledger:
        ledger.begin_attempt(CONSUMER, D, "lost-1", lease_seconds=1)
        proxy.arm(mode, has("INSERT INTO gk_publications"), then_refuse=True)
        with pytest.raises(UnknownOutcome) as caught:
            ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", write_total, producer="lost-1")
        assert caught.value.probed == f"publication {CONSUMER} {D}"
        assert isinstance(caught.value, gk.LedgerError) and not caught.value.retryable
    proxy.accept()
    assert states(direct) == [(1, "lost-1", RUNNING)]  # nothing recorded it could not know
    committed = mode == "answer"
    assert (direct.publication(CONSUMER, D) is not None) is committed

    time.sleep(1.2)  # the lease expires by the database's clock
    taken = direct.begin_attempt(CONSUMER, D, "next-2", lease_seconds=60, skip_succeeded=True)
    if committed:  # its publication committed: it succeeded, nothing runs again
        assert (taken.attempt, taken.run_id, taken.state) == (1, "lost-1", SUCCEEDED)
        assert states(direct) == [(1, "lost-1", SUCCEEDED)]
        assert direct.publication(CONSUMER, D).run_id == "lost-1"  # type: ignore[union-attr]
        assert list(direct.complete_runs(CONSUMER, D, D, CONSUMER).keys()) == [D]
    else:
        assert states(direct) == [(1, "lost-1", gk.RunState.ABANDONED), (2, "next-2", RUNNING)]
        assert direct.publish(CONSUMER, D, UPSTREAM, "fp-1", write_total, producer="next-2")
    assert direct.read("SELECT count(*) FROM sales_totals") == [(1,)]


# -- a worker killed after its publication committed (both backends, fake clock) -------------
@pytest.mark.parametrize("skip", [True, False])
def test_expired_attempt_named_by_a_publication_is_recorded_succeeded(
    ledger: gk.Ledger, skip: bool
) -> None:
    ready(ledger)
    ledger.begin_attempt(CONSUMER, D, "dead-1", lease_seconds=60, now=T0)
    ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", producer="dead-1", now=T0)
    later = T0 + dt.timedelta(minutes=5)  # its worker was killed before recording success
    taken = ledger.begin_attempt(
        CONSUMER, D, "next-2", lease_seconds=60, now=later, skip_succeeded=skip
    )
    first = ledger.attempts(CONSUMER, D)[0]
    assert (first.attempt, first.run_id, first.state) == (1, "dead-1", SUCCEEDED)
    if skip:  # no duplicate work: the period is complete
        assert taken == first
        assert len(ledger.attempts(CONSUMER, D)) == 1
        assert list(ledger.complete_runs(CONSUMER, D, D, CONSUMER).keys()) == [D]
    else:  # a repair: attempt 2 runs, and the period is no longer complete
        assert (taken.attempt, taken.state) == (2, RUNNING)
        assert list(ledger.complete_runs(CONSUMER, D, D, CONSUMER).keys()) == []
    assert ledger.completed_periods(CONSUMER, D, D, CONSUMER) == ({D} if skip else set())


def test_expired_attempt_without_a_publication_is_still_abandoned(ledger: gk.Ledger) -> None:
    ledger.begin_attempt(CONSUMER, D, "dead-1", lease_seconds=60, now=T0)
    later = T0 + dt.timedelta(minutes=5)
    ledger.begin_attempt(CONSUMER, D, "next-2", lease_seconds=60, now=later, skip_succeeded=True)
    assert states(ledger) == [(1, "dead-1", gk.RunState.ABANDONED), (2, "next-2", RUNNING)]


def test_abandoning_an_attempt_whose_publication_committed_records_it_succeeded(
    ledger: gk.Ledger,
) -> None:
    ready(ledger)
    ledger.begin_attempt(CONSUMER, D, "dead-1", lease_seconds=3600, now=T0)
    ledger.publish(CONSUMER, D, UPSTREAM, "fp-1", producer="dead-1", now=T0)
    found = ledger.abandon(CONSUMER, D, reason="host lost", now=T0 + dt.timedelta(minutes=1))
    assert found is not None and (found.run_id, found.state) == ("dead-1", SUCCEEDED)
    (only,) = ledger.attempts(CONSUMER, D)
    assert (only.state, only.error, only.lease_expires_at) == (SUCCEEDED, None, None)
    assert ledger.completed_periods(CONSUMER, D, D, CONSUMER) == {D}
    assert list(ledger.complete_runs(CONSUMER, D, D, CONSUMER).keys()) == [D]
    published = ledger.publication(CONSUMER, D)
    assert published is not None and published.run_id == "dead-1"  # a succeeded producer
