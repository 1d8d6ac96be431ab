"""``Ledger.compact`` on each backend: what is removed and what is kept for each rule, the
horizon across period kinds, a dry run writes nothing, bad input writes nothing, and the
ledger still verifies (attempt numbers, complete runs) with the kept attempts' ordinals as
they were."""

from __future__ import annotations

import pytest

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import kind_of_key
from gatekeeper.ledger.compaction import CompactedJob, Horizon
from tests.helpers.ledgers import T0
from tests.helpers.ledgers import snapshot as tables

OLD, OLD2, OLD3, OLD4 = "2026-09-01", "2026-09-02", "2026-09-03", "2026-09-04"
NEW = "2026-10-05"
BEFORE = "2026-10-01"


def snapshot(ledger: gk.Ledger) -> dict[str, list[tuple[object, ...]]]:
    """Every gatekeeper table's rows, and the counts of compacted attempts."""
    return {**tables(ledger), "gk_compacted": ledger.read("SELECT * FROM gk_compacted")}


def attempts(ledger: gk.Ledger, job: str, period: str) -> list[tuple[int, str, str]]:
    return [(a.attempt, a.run_id, a.state.value) for a in ledger.attempts(job, period)]


def tried(ledger: gk.Ledger, job: str, period: str, *states: str) -> None:
    """Attempts 1..n of (job, period) in ``states``; run IDs ``job-period-n``."""
    for n, state in enumerate(states, 1):
        if state == "running":
            ledger.begin_attempt(job, period, f"{job}-{period}-{n}", lease_seconds=3600, attempt=n)
        else:
            ledger.record(job, period, n, f"{job}-{period}-{n}", state, T0)


def history(ledger: gk.Ledger) -> None:
    """Job L: each rule once, on daily periods before and after the horizon."""
    tried(ledger, "L", OLD, "failed", "abandoned", "failed", "succeeded")  # 1-3 go
    tried(ledger, "L", OLD2, "failed")  # the latest: kept
    tried(ledger, "L", OLD3, "failed", "running")  # 1 goes; the running one is kept
    tried(ledger, "L", OLD4, "succeeded", "failed")  # succeeded kept, the latest kept
    tried(ledger, "L", NEW, "failed", "succeeded")  # newer than the horizon: kept


def test_compact_removes_superseded_failures_before_the_horizon_and_keeps_the_rest(
    ledger: gk.Ledger,
) -> None:
    history(ledger)
    result = ledger.compact(before=BEFORE)
    assert (result.before, result.dry_run, result.removed) == (BEFORE, False, 4)
    assert result.jobs == (CompactedJob("L", failed=3, abandoned=1, periods=2),)
    assert attempts(ledger, "L", OLD) == [(4, f"L-{OLD}-4", "succeeded")]
    assert attempts(ledger, "L", OLD2) == [(1, f"L-{OLD2}-1", "failed")]
    assert attempts(ledger, "L", OLD3) == [(2, f"L-{OLD3}-2", "running")]
    assert [a[2] for a in attempts(ledger, "L", OLD4)] == ["succeeded", "failed"]
    assert [a[2] for a in attempts(ledger, "L", NEW)] == ["failed", "succeeded"]
    assert ledger.verify() == []
    assert ledger.compact(before=BEFORE).removed == 0  # nothing left to remove


def test_compact_keeps_the_ordinals_and_the_next_attempt_follows_the_greatest(
    ledger: gk.Ledger,
) -> None:
    tried(ledger, "L", OLD, "failed", "failed", "failed")
    assert ledger.compact(before=BEFORE).removed == 2
    assert [a.attempt for a in ledger.history("L")] == [3]
    assert ledger.latest("L", OLD).attempt == 3  # type: ignore[union-attr]
    again = ledger.begin_attempt("L", OLD, "again", lease_seconds=60)
    assert again.attempt == 4
    ledger.record("L", OLD, 4, "again", "failed", T0)
    assert ledger.compact(before=BEFORE).removed == 1  # attempt 3; the count adds up
    assert [a.attempt for a in ledger.history("L")] == [4]
    assert ledger.read("SELECT removed FROM gk_compacted")[0][0] == 3
    assert ledger.verify() == []


def test_compact_keeps_the_attempts_a_publication_reads_and_its_runs(ledger: gk.Ledger) -> None:
    """A consumer published from U's attempt 2, then U was repaired (attempt 4, after a
    failed 3): the stale publication's evidence keeps attempt 2; failure 3 and failure 1
    go; C's own failure before its producer goes, the producer stays; the runs are the
    same and verify passes."""
    tried(ledger, "U", OLD, "failed", "succeeded")
    tried(ledger, "C", OLD, "failed")
    ledger.begin_attempt("C", OLD, "c2", lease_seconds=3600, attempt=2)
    ledger.publish("C", OLD, ["U"], "fp", producer="c2")
    ledger.record("C", OLD, 2, "c2", "succeeded", T0)
    ledger.record("U", OLD, 3, "u3", "failed", T0)
    ledger.record("U", OLD, 4, "u4", "succeeded", T0)
    runs = snapshot(ledger)["gk_complete_runs"]
    result = ledger.compact(before=BEFORE)
    assert {(j.job, j.attempts) for j in result.jobs} == {("U", 2), ("C", 1)}
    assert [a[0] for a in attempts(ledger, "U", OLD)] == [2, 4]
    assert [a[0] for a in attempts(ledger, "C", OLD)] == [2]
    assert ledger.stale("C") and ledger.publication("C", OLD) is not None
    assert snapshot(ledger)["gk_complete_runs"] == runs
    assert ledger.verify() == []


NAMED = {
    "evidence by run": "UPDATE gk_evidence SET run_id = 'U-{p}-1' WHERE job = 'U'",
    "evidence by attempt": "UPDATE gk_evidence SET attempt = 1 WHERE job = 'U'",
    "producer by run": "UPDATE gk_publications SET producer_run_id = 'U-{p}-1'",
    "producer by attempt": "UPDATE gk_publications SET consumer = 'U', producer_attempt = 1",
}


@pytest.mark.parametrize("plant", sorted(NAMED))
def test_compact_never_removes_an_attempt_evidence_or_a_publication_names(
    ledger: gk.Ledger, plant: str
) -> None:
    """Planted (the API names only succeeded attempts): a failed attempt named by an
    evidence row or as a producer, by run ID or by number, is kept."""
    tried(ledger, "U", OLD, "failed", "succeeded")
    tried(ledger, "U", OLD2, "failed", "succeeded")
    ledger.publish("C", OLD, ["U"], "fp")
    with ledger.transaction():
        if plant == "producer by attempt":
            ledger.execute("DELETE FROM gk_evidence")
        ledger.execute(NAMED[plant].format(p=OLD))
    ledger.compact(before=BEFORE)
    assert [a[0] for a in attempts(ledger, "U", OLD)] == [1, 2]
    assert [a[0] for a in attempts(ledger, "U", OLD2)] == [2]  # the unnamed one went


def test_compact_never_removes_a_reservations_producer(ledger: gk.Ledger) -> None:
    tried(ledger, "U", OLD, "succeeded")
    ledger.begin_attempt("X", OLD, "x1", lease_seconds=1, now=T0)
    ledger.reservations.reserve("X", OLD, ["U"], "fp", producer="x1", location="d://t", now=T0)
    ledger.begin_attempt("X", OLD, "x2", lease_seconds=3600)  # x1's lease ran out: abandoned
    assert attempts(ledger, "X", OLD)[0][2] == "abandoned"
    assert ledger.compact(before=BEFORE).removed == 0
    assert [a[0] for a in attempts(ledger, "X", OLD)] == [1, 2]


@pytest.mark.parametrize(
    ("before", "kept", "gone"),
    [
        # hours are on UTC's clock; a day, week, month or quarter from UTC midnight
        (
            "2026-09-01T01:00Z",
            ["2026-09-01T01:00Z", "2026-09-01", "2026-W36", "2026-09"],
            ["2026-09-01T00:00Z", "2026-08-31", "2026-W35", "2026-08", "2026-Q2"],
        ),
        (
            "2026-09-02",
            ["2026-09-02", "2026-W36", "2026-09", "2026-Q3"],
            ["2026-09-01T23:00Z", "2026-09-01", "2026-W35", "2026-08"],
        ),
        (
            "2026-W37",
            ["2026-09-07", "2026-W37", "2026-09"],
            ["2026-09-06T23:00Z", "2026-09-06", "2026-W36", "2026-08"],
        ),
        (
            "2026-10",
            ["2026-10-01", "2026-W40", "2026-10", "2026-Q4"],
            ["2026-09-30", "2026-W39", "2026-09", "2026-Q3"],
        ),
        ("2026-Q4", ["2026-10-01", "2026-10"], ["2026-09-30", "2026-09", "2026-Q3"]),
    ],
)
def test_compact_horizon_compares_every_kind_by_when_its_periods_end(
    ledger: gk.Ledger, before: str, kept: list[str], gone: list[str]
) -> None:
    for period in kept + gone:
        tried(ledger, kind_of_key(period).name, period, "failed", "succeeded")
    ledger.compact(before=before)
    for period in kept:
        assert len(ledger.attempts(kind_of_key(period).name, period)) == 2, period
    for period in gone:
        assert len(ledger.attempts(kind_of_key(period).name, period)) == 1, period
    assert ledger.verify() == []


def test_compact_of_jobs_touches_only_them(ledger: gk.Ledger) -> None:
    tried(ledger, "A", OLD, "failed", "succeeded")
    tried(ledger, "B", OLD, "failed", "succeeded")
    assert [j.job for j in ledger.compact(before=BEFORE, jobs=["B"]).jobs] == ["B"]
    assert len(ledger.attempts("A", OLD)) == 2 and len(ledger.attempts("B", OLD)) == 1


def test_compact_dry_run_writes_nothing_and_says_what_a_run_removes(ledger: gk.Ledger) -> None:
    history(ledger)
    before = snapshot(ledger)
    dry = ledger.compact(before=BEFORE, dry_run=True)
    assert snapshot(ledger) == before
    assert ledger.read("SELECT COUNT(*) FROM gk_compacted")[0][0] == 0
    done = ledger.compact(before=BEFORE)
    assert (dry.dry_run, done.dry_run) == (True, False)
    assert dry.jobs == done.jobs and dry.removed == 4


@pytest.mark.parametrize("before", ["yesterday", "2026-13-01", "2026-09-01T05:30Z", "", 20260901])
def test_compact_refuses_a_bad_horizon_writing_nothing(ledger: gk.Ledger, before: object) -> None:
    history(ledger)
    was = snapshot(ledger)
    with pytest.raises(InvalidInput) as refused:
        ledger.compact(before=before)
    assert refused.value.field == "before"
    assert snapshot(ledger) == was


def test_compact_refuses_a_bad_job_name_writing_nothing(ledger: gk.Ledger) -> None:
    history(ledger)
    was = snapshot(ledger)
    with pytest.raises(InvalidInput):
        ledger.compact(before=BEFORE, jobs=["L\x1b[2J"])
    assert snapshot(ledger) == was


def test_horizon_parse_names_its_field() -> None:
    with pytest.raises(InvalidInput, match=r"^invalid --before='soon'"):
        Horizon.parse("soon", "--before")
    assert Horizon.parse("2026-10-01").key == "2026-10-01"


def test_verify_still_names_a_gap_compaction_did_not_make(ledger: gk.Ledger) -> None:
    tried(ledger, "L", OLD, "failed", "failed", "succeeded")
    ledger.compact(before=BEFORE)
    with ledger.transaction():
        ledger.execute("UPDATE gk_compacted SET removed = 1")
    (found,) = ledger.verify()
    assert (found.invariant, found.job, found.period) == ("attempt-numbers", "L", OLD)
    assert "attempts 3, not 1..2 less 1 compacted" in found.detail


def test_compact_then_a_late_observation_of_a_removed_attempt_still_verifies(
    ledger: gk.Ledger,
) -> None:
    tried(ledger, "L", OLD, "failed", "failed", "succeeded")
    ledger.compact(before=BEFORE)
    assert ledger.record("L", OLD, 1, f"L-{OLD}-1", "failed", T0) is True  # a replay
    assert [a.attempt for a in ledger.history("L")] == [1, 3]
    assert ledger.verify() == []
    assert ledger.compact(before=BEFORE).removed == 1
    assert ledger.verify() == []
