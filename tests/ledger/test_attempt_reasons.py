"""Why an attempt was asked for (``begin_attempt(reason=...)``, a task's ``--rerun REASON``):
stored with the attempt, read back by every read of attempts, refused when it says nothing,
and NULL for the attempts of a ledger migrated from before (schema 14). Both backends."""

from __future__ import annotations

import pytest

import gatekeeper as gk
from gatekeeper.ledger.schema import MIGRATIONS, RUNNING_INDEX, SCHEMA_VERSION
from tests.helpers.ledgers import T0, snapshot

D = "2026-10-22"


def _stored(ledger: gk.Ledger, job: str, period: str) -> list[tuple[int, str | None]]:
    """(attempt, reason) of each row of (job, period), as the table holds them."""
    rows = ledger.read(
        "SELECT attempt, reason FROM gk_attempts WHERE job = ? AND period = ? ORDER BY attempt",
        (job, period),
    )
    return [(int(n), reason) for n, reason in rows]


def test_begin_attempt_reruns_a_succeeded_period_as_the_next_attempt_with_its_reason(
    ledger: gk.Ledger,
) -> None:
    ledger.record("A", D, 1, "r1", "succeeded", T0)
    ledger.record("A", D, 2, "r2", "succeeded", T0)
    started = ledger.begin_attempt("A", D, "r3", lease_seconds=60, reason="late rows")
    assert (started.attempt, started.reason, started.state) == (3, "late rows", gk.RunState.RUNNING)
    assert _stored(ledger, "A", D) == [(1, None), (2, None), (3, "late rows")]
    ledger.record("A", D, 3, "r3", "succeeded", T0)
    latest = ledger.latest("A", D)
    assert latest is not None and latest.reason == "late rows" and latest.attempt == 3
    assert [a.reason for a in ledger.history("A", D)] == [None, None, "late rows"]
    assert ledger.latest_between("A", D, D)[D].reason == "late rows"
    assert latest.to_json()["reason"] == "late rows"
    assert ledger.verify() == []


def test_an_explicit_attempt_keeps_its_reason(ledger: gk.Ledger) -> None:
    ledger.record("A", D, 1, "r1", "failed", T0)
    started = ledger.begin_attempt("A", D, "r5", lease_seconds=60, attempt=5, reason="fix")
    assert (started.attempt, started.reason) == (5, "fix")
    assert _stored(ledger, "A", D) == [(1, None), (5, "fix")]


def test_the_one_round_trip_start_stores_the_reason_too(ledger: gk.Ledger) -> None:
    """Once the connection knows the job's kind, a period with a failed latest attempt is
    started in one statement (``one_trip.start``): the reason goes with it."""
    ledger.record("A", "2026-10-01", 1, "k0", "succeeded", T0)
    ledger.begin_attempt("A", "2026-10-02", "k1", lease_seconds=60)  # learns the job's kind
    ledger.record("A", D, 1, "f1", "failed", T0)
    started = ledger.begin_attempt("A", D, "f2", lease_seconds=60, reason="upstream fixed")
    assert (started.attempt, started.reason) == (2, "upstream fixed")
    assert _stored(ledger, "A", D) == [(1, None), (2, "upstream fixed")]
    plain = ledger.begin_attempt("A", "2026-10-03", "p1", lease_seconds=60)
    assert plain.reason is None and _stored(ledger, "A", "2026-10-03") == [(1, None)]


@pytest.mark.parametrize(
    "reason", ["", "  ", " late", "late\x00rows", 7], ids=["empty", "blank", "padded", "nul", "int"]
)
def test_a_reason_that_says_nothing_is_refused_naming_it_writing_nothing(
    ledger: gk.Ledger, reason: object
) -> None:
    ledger.record("A", D, 1, "r1", "succeeded", T0)
    before = snapshot(ledger)
    with pytest.raises(gk.InvalidInput, match="reason"):
        ledger.begin_attempt("A", D, "r2", lease_seconds=60, reason=reason)  # type: ignore[arg-type]
    assert snapshot(ledger) == before


def test_a_version_13_ledger_migrates_keeping_attempts_without_a_reason(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as fresh:  # rebuild gk_attempts as schema 13 held it
        with fresh.transaction():
            fresh.execute("DROP TABLE gk_attempts")
            fresh.execute(str(MIGRATIONS[0][0]).replace("{ts}", fresh.ts_type))
            fresh.execute(RUNNING_INDEX)
            fresh.execute(
                "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, "
                "updated_at) VALUES ('A', ?, 1, 'old-run', 'succeeded', ?, ?)",
                (D, fresh.sql.ts_in(T0), fresh.sql.ts_in(T0)),
            )
            fresh.execute("UPDATE gk_schema SET version = 13")
    with gk.open_ledger(ledger_url) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION >= 14
        old = migrated.latest("A", D)
        assert old is not None and (old.run_id, old.reason) == ("old-run", None)
        started = migrated.begin_attempt("A", D, "new-run", lease_seconds=60, reason="late rows")
        assert started.attempt == 2
        assert _stored(migrated, "A", D) == [(1, None), (2, "late rows")]
