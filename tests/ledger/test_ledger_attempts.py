"""Contract tests of attempt records, on a real SQLite file and a real PostgreSQL schema."""

from __future__ import annotations

import datetime as dt

import pytest

import gatekeeper as gk
from gatekeeper.ledger.schema import SCHEMA_VERSION
from tests.helpers.ledgers import T0, UTC, snapshot

D = "2026-10-22"


def test_record_first_observation_changes_and_replay_does_not(ledger: gk.Ledger) -> None:
    assert ledger.record("A", D, 1, "r1", "running", T0) is True
    assert ledger.record("A", D, 1, "r1", gk.RunState.RUNNING, T0) is False
    assert ledger.record("A", D, 1, "r1", "succeeded", T0) is True
    assert ledger.record("A", D, 1, "r1", "succeeded", T0) is False
    latest = ledger.latest("A", D)
    assert latest is not None and latest.state is gk.RunState.SUCCEEDED
    assert latest.started_at == T0 and latest.business_date == D


# (observations before, new observation, expected: True/False or the error)
TRANSITIONS = [
    ([], "running", True),
    ([], "succeeded", True),
    ([], "failed", True),
    ([], "abandoned", True),
    (["running"], "running", False),
    (["running"], "succeeded", True),
    (["running"], "failed", True),
    (["running"], "abandoned", True),
    (["succeeded"], "succeeded", False),
    (["failed"], "failed", False),
    (["abandoned"], "abandoned", False),
    (["succeeded"], "running", False),
    (["failed"], "running", False),
    (["abandoned"], "running", False),
    (["succeeded"], "failed", gk.StateConflict),
    (["succeeded"], "abandoned", gk.StateConflict),
    (["failed"], "succeeded", gk.StateConflict),
    (["failed"], "abandoned", gk.StateConflict),
    (["abandoned"], "succeeded", gk.StateConflict),
    (["abandoned"], "failed", gk.StateConflict),
    (["running", "failed"], "succeeded", gk.StateConflict),
]


@pytest.mark.parametrize(("before", "new", "expected"), TRANSITIONS)
def test_record_transition_table(
    ledger: gk.Ledger, before: list[str], new: str, expected: object
) -> None:
    for state in before:
        ledger.record("A", D, 1, "r1", state, T0)
    final_before = before[-1] if before else None
    if isinstance(expected, bool):
        assert ledger.record("A", D, 1, "r1", new, T0) is expected
    else:
        rows = snapshot(ledger)
        with pytest.raises(gk.StateConflict, match="A 2026-10-22 attempt 1"):
            ledger.record("A", D, 1, "r1", new, T0)
        assert snapshot(ledger) == rows
    latest = ledger.latest("A", D)
    assert latest is not None
    if expected is True:
        assert latest.state.value == new
    elif final_before is not None:
        assert latest.state.value == (new if final_before == new else final_before)


def test_record_run_id_reused_for_other_attempt_is_conflict(ledger: gk.Ledger) -> None:
    ledger.record("A", D, 1, "r1", "succeeded", T0)
    rows = snapshot(ledger)
    for job, date, attempt in (("A", D, 2), ("B", D, 1), ("A", "2026-10-23", 1)):
        with pytest.raises(gk.StateConflict, match="run ID r1 already belongs to A"):
            ledger.record(job, date, attempt, "r1", "running", T0)
    assert snapshot(ledger) == rows


def test_record_other_run_id_for_same_attempt_is_conflict(ledger: gk.Ledger) -> None:
    ledger.record("A", D, 1, "r1", "running", T0)
    rows = snapshot(ledger)
    with pytest.raises(gk.StateConflict, match="recorded with run ID r1"):
        ledger.record("A", D, 1, "r2", "succeeded", T0)
    assert snapshot(ledger) == rows


NAIVE = dt.datetime(2026, 10, 23, 7, 0)
BAD_INPUTS = [
    ("started_at", dict(started_at=NAIVE)),
    ("started_at", dict(started_at="2026-10-23T07:00:00+00:00")),
    ("started_at", dict(started_at=dt.date(2026, 10, 23))),
    ("started_at", dict(started_at=None)),
    ("business_date", dict(business_date="2026-02-30")),
    ("business_date", dict(business_date="2026-1-5")),
    ("business_date", dict(business_date="20261023")),
    ("business_date", dict(business_date=dt.datetime(2026, 10, 23, tzinfo=UTC))),
    ("business_date", dict(business_date=True)),
    ("business_date", dict(business_date=20261023)),
    ("business_date", dict(business_date=None)),
    ("attempt", dict(attempt=True)),
    ("attempt", dict(attempt=0)),
    ("attempt", dict(attempt=-1)),
    ("attempt", dict(attempt="2")),
    ("attempt", dict(attempt=1.0)),
    ("job", dict(job="")),
    ("job", dict(job="   ")),
    ("job", dict(job=None)),
    ("run_id", dict(run_id="")),
    ("run_id", dict(run_id=7)),
    ("state", dict(state="succeded")),
    ("state", dict(state="SUCCEEDED")),
    ("state", dict(state=None)),
    ("state", dict(state="")),
]


@pytest.mark.parametrize(("field", "override"), BAD_INPUTS)
def test_record_bad_input_is_refused_and_writes_nothing(
    ledger: gk.Ledger, field: str, override: dict[str, object]
) -> None:
    ledger.record("A", D, 1, "r0", "running", T0)
    rows = snapshot(ledger)
    args: dict[str, object] = dict(
        job="A",
        business_date="2026-10-23",
        attempt=2,
        run_id="r1",
        state="succeeded",
        started_at=T0,
    )
    args.update(override)
    with pytest.raises(gk.InvalidInput) as caught:
        ledger.record(**args)  # type: ignore[arg-type]
    assert caught.value.field == field
    assert field in str(caught.value)
    assert snapshot(ledger) == rows


def test_record_accepts_date_objects_and_keeps_utc(ledger: gk.Ledger) -> None:
    paris = dt.timezone(dt.timedelta(hours=2))
    ledger.record("A", dt.date(2026, 10, 22), 1, "r1", "running", T0.astimezone(paris))
    latest = ledger.latest("A", "2026-10-22")
    assert latest is not None and latest.started_at == T0
    assert latest.started_at.utcoffset() == dt.timedelta(0)


def test_attempts_are_ordered_and_latest_is_greatest(ledger: gk.Ledger) -> None:
    for n in (3, 1, 2):
        ledger.record("A", D, n, f"r{n}", "failed", T0)
    assert [a.attempt for a in ledger.attempts("A", D)] == [1, 2, 3]
    latest = ledger.latest("A", D)
    assert latest is not None and latest.attempt == 3
    assert ledger.latest("A", "2026-10-21") is None
    assert ledger.attempts("nobody", D) == []


def test_delayed_observation_never_overrides_greater_attempt(ledger: gk.Ledger) -> None:
    ledger.record("A", D, 1, "r1", "running", T0)
    ledger.record("A", D, 2, "r2", "running", T0 + dt.timedelta(hours=1))
    ledger.record("A", D, 1, "r1", "succeeded", T0)  # attempt 1's result arrives late
    assert not gk.check_ready(ledger, ["A"], D)
    assert gk.check_ready(ledger, ["A"], D).blockers == {"A": "running"}
    ledger.record("A", D, 2, "r2", "failed", T0 + dt.timedelta(hours=1))
    assert gk.check_ready(ledger, ["A"], D).blockers == {"A": "failed"}
    latest = ledger.latest("A", D)
    assert latest is not None and (latest.attempt, latest.state.value) == (2, "failed")


def test_midnight_crossing_counts_for_its_business_date(ledger: gk.Ledger) -> None:
    started = dt.datetime(2026, 10, 22, 23, 50, tzinfo=UTC)
    ended = dt.datetime(2026, 10, 23, 0, 10, tzinfo=UTC)
    ledger.record("A", "2026-10-22", 1, "r1", "running", started, now=started)
    ledger.record("A", "2026-10-22", 1, "r1", "succeeded", started, now=ended)
    assert gk.check_ready(ledger, ["A"], "2026-10-22").evidence == {"A": "r1"}
    assert gk.check_ready(ledger, ["A"], "2026-10-23").blockers == {"A": "missing"}
    latest = ledger.latest("A", "2026-10-22")
    assert latest is not None and latest.updated_at == ended and latest.started_at == started


def test_begin_attempt_allocates_next_ordinal_with_lease(ledger: gk.Ledger) -> None:
    first = ledger.begin_attempt("A", D, "r1", lease_seconds=60, now=T0)
    assert (first.attempt, first.state) == (1, gk.RunState.RUNNING)
    assert first.lease_expires_at == T0 + dt.timedelta(seconds=60)
    ledger.record("A", D, 1, "r1", "failed", T0)
    second = ledger.begin_attempt("A", D, "r2", lease_seconds=60, now=T0)
    assert second.attempt == 2
    ledger.record("A", D, 2, "r2", "succeeded", T0)
    latest = ledger.latest("A", D)
    assert latest is not None and latest.lease_expires_at is None


def test_begin_attempt_explicit_ordinal_must_exceed_recorded(ledger: gk.Ledger) -> None:
    ledger.record("A", D, 2, "r2", "failed", T0)
    rows = snapshot(ledger)
    for wanted in (1, 2):
        with pytest.raises(gk.StateConflict, match="attempt 2 is already recorded"):
            ledger.begin_attempt("A", D, f"x{wanted}", lease_seconds=60, attempt=wanted, now=T0)
    assert snapshot(ledger) == rows
    assert ledger.begin_attempt("A", D, "r5", lease_seconds=60, attempt=5, now=T0).attempt == 5


def test_begin_attempt_live_lease_refuses_and_expired_is_abandoned(ledger: gk.Ledger) -> None:
    ledger.begin_attempt("A", D, "r1", lease_seconds=30, now=T0)
    rows = snapshot(ledger)
    with pytest.raises(gk.LeaseHeld, match="attempt 1 holds a live lease"):
        ledger.begin_attempt("A", D, "r2", lease_seconds=30, now=T0 + dt.timedelta(seconds=29))
    assert snapshot(ledger) == rows
    assert ledger.heartbeat("r1", lease_seconds=30, now=T0 + dt.timedelta(seconds=20)) is True
    with pytest.raises(gk.LeaseHeld):
        ledger.begin_attempt("A", D, "r2", lease_seconds=30, now=T0 + dt.timedelta(seconds=49))
    later = T0 + dt.timedelta(seconds=50)
    second = ledger.begin_attempt("A", D, "r2", lease_seconds=30, now=later)
    assert second.attempt == 2
    first = ledger.attempts("A", D)[0]
    assert first.state is gk.RunState.ABANDONED and "lease expired" in (first.error or "")
    assert ledger.heartbeat("r1", lease_seconds=30, now=later) is False
    with pytest.raises(gk.StateConflict):
        ledger.record("A", D, 1, "r1", "succeeded", T0)  # the dead worker wakes up: refused


def test_begin_attempt_replayed_by_its_own_run_is_the_attempt_it_started(
    ledger: gk.Ledger,
) -> None:
    """A start its own run makes again (a try whose connection dropped after the COMMIT, as
    ``_begin_next`` replays it), with attempt 0 or the attempt's own ordinal: the attempt it
    started, nothing written; another ordinal or another run meets the live lease."""
    first = ledger.begin_attempt("A", D, "r1", lease_seconds=60, now=T0)
    rows = snapshot(ledger)
    later = T0 + dt.timedelta(seconds=5)
    for wanted in (0, 1):
        again = ledger.begin_attempt("A", D, "r1", lease_seconds=60, attempt=wanted, now=later)
        assert again == first
    assert snapshot(ledger) == rows
    for run, wanted in (("r1", 2), ("r2", 0)):
        with pytest.raises(gk.LeaseHeld, match="attempt 1 holds a live lease"):
            ledger.begin_attempt("A", D, run, lease_seconds=60, attempt=wanted, now=later)
    assert snapshot(ledger) == rows
    ledger.record("A", D, 1, "r1", "failed", T0)
    with pytest.raises(gk.StateConflict):  # over: the run's ID names a finished attempt
        ledger.begin_attempt("A", D, "r1", lease_seconds=60, now=later)


def test_begin_attempt_running_without_lease_blocks(ledger: gk.Ledger) -> None:
    ledger.record("A", D, 1, "r1", "running", T0)
    with pytest.raises(gk.LeaseHeld, match="running without a lease"):
        ledger.begin_attempt("A", D, "r2", lease_seconds=30, now=T0 + dt.timedelta(days=9))


@pytest.mark.parametrize("lease", [0, -1, True, "5", None])
def test_begin_attempt_bad_lease_is_refused(ledger: gk.Ledger, lease: object) -> None:
    rows = snapshot(ledger)
    with pytest.raises(gk.InvalidInput, match="lease_seconds"):
        ledger.begin_attempt("A", D, "r1", lease_seconds=lease, now=T0)  # type: ignore[arg-type]
    assert snapshot(ledger) == rows


def test_history_lists_every_date(ledger: gk.Ledger) -> None:
    ledger.record("A", "2026-10-23", 1, "r3", "succeeded", T0)
    ledger.record("A", "2026-10-22", 2, "r2", "succeeded", T0)
    ledger.record("A", "2026-10-22", 1, "r1", "failed", T0)
    assert [(a.business_date, a.attempt) for a in ledger.history("A")] == [
        ("2026-10-22", 1),
        ("2026-10-22", 2),
        ("2026-10-23", 1),
    ]
    assert [a.run_id for a in ledger.history("A", "2026-10-22")] == ["r1", "r2"]


def test_latest_between_answers_a_range_in_one_query(ledger: gk.Ledger) -> None:
    ledger.record("A", "2026-10-01", 1, "a1", "succeeded", T0)
    ledger.record("A", "2026-10-01", 2, "a2", "failed", T0)
    ledger.record("A", "2026-10-02", 1, "b1", "succeeded", T0)
    ledger.record("A", "2026-11-02", 1, "c1", "succeeded", T0)
    latest = ledger.latest_between("A", "2026-10-01", "2026-10-31")
    states = {key: attempt.state for key, attempt in latest.items()}
    assert states == {"2026-10-01": gk.RunState.FAILED, "2026-10-02": gk.RunState.SUCCEEDED}


def test_schema_is_created_once_and_reopening_keeps_rows(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as first:
        first.record("A", D, 1, "r1", "succeeded", T0)
        assert first.schema_version() == SCHEMA_VERSION
    with gk.open_ledger(ledger_url) as again:
        assert again.schema_version() == SCHEMA_VERSION
        assert [a.run_id for a in again.attempts("A", D)] == ["r1"]


def test_schema_newer_than_code_is_refused(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as first:
        with first.transaction():
            first.execute("UPDATE gk_schema SET version = 99")
    with pytest.raises(gk.LedgerError, match="schema version 99"):
        gk.open_ledger(ledger_url)


def test_open_ledger_wraps_driver_errors(tmp_path: object) -> None:
    with pytest.raises(gk.LedgerError, match="cannot open ledger") as caught:
        gk.open_ledger("sqlite:////nonexistent-dir/sub/ledger.db")
    assert caught.value.__cause__ is not None


@pytest.mark.parametrize("url", ["", "mysql://x", "sqlite://", "sqlite:///", None])
def test_open_ledger_bad_url_names_the_field(url: object) -> None:
    with pytest.raises(gk.InvalidInput, match="ledger_url"):
        gk.open_ledger(url)  # type: ignore[arg-type]


def test_an_old_ledger_is_migrated_forward_keeping_its_rows(ledger_url: str) -> None:
    from gatekeeper.ledger.schema import MIGRATIONS

    with gk.open_ledger(ledger_url) as fresh:  # rebuild it as a version-1 ledger
        with fresh.transaction():
            tables = ("gk_complete_runs", "gk_reservations", "gk_evidence", "gk_publications")
            for table in (*tables, "gk_attempts"):
                fresh.execute(f"DROP TABLE {table}")
            for statement in MIGRATIONS[0]:
                fresh.execute(statement.replace("{ts}", fresh.ts_type))
            fresh.execute("UPDATE gk_schema SET version = 1")
            fresh.execute(
                "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, "
                "updated_at) VALUES ('A', '2026-10-22', 1, 'old-run', 'succeeded', ?, ?)",
                (fresh.sql.ts_in(T0), fresh.sql.ts_in(T0)),
            )
    with gk.open_ledger(ledger_url) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION > 1
        assert [a.run_id for a in migrated.attempts("A", D)] == ["old-run"]
        assert list(migrated.complete_runs("A", D, D).keys()) == [D]  # built by migration 6
        assert migrated.publish("C", D, ["A"], "fp", location="/data/c.csv")
        pub = migrated.publication("C", D)
        assert pub is not None and pub.location == "/data/c.csv"
        migrated.record("H", "2026-10-22T05:00Z", 1, "hourly-run", "succeeded", T0)
        assert migrated.latest("H", "2026-10-22T05:00Z") is not None


def test_a_begin_for_a_job_already_known_refuses_and_keeps_as_the_first_one_does(
    ledger: gk.Ledger,
) -> None:
    """Once a connection knows a job's period kind, the next attempt is started in one
    statement; every refusal of the read-and-judge path still holds there, nothing written."""
    ledger.record("K", "2026-10-01", 1, "k0", "succeeded", T0)
    kept = ledger.begin_attempt("K", "2026-10-01", "k-x", lease_seconds=60, skip_succeeded=True)
    assert (kept.attempt, kept.run_id) == (1, "k0")
    first = ledger.begin_attempt("K", "2026-10-02", "k1", lease_seconds=60)  # learns the kind
    assert first.attempt == 1
    again = ledger.begin_attempt("K", "2026-10-01", "k-y", lease_seconds=60, skip_succeeded=True)
    assert (again.attempt, again.run_id) == (1, "k0")
    before = snapshot(ledger)
    with pytest.raises(gk.LeaseHeld, match="live lease"):
        ledger.begin_attempt("K", "2026-10-02", "k2", lease_seconds=60)
    with pytest.raises(gk.InvalidInput, match="daily periods"):
        ledger.begin_attempt("K", "2026-10-03T05:00Z", "k3", lease_seconds=60)
    with pytest.raises(gk.StateConflict, match="run ID k1 already belongs to K 2026-10-02"):
        ledger.begin_attempt("K", "2026-10-04", "k1", lease_seconds=60)
    assert snapshot(ledger) == before
    ledger.record("K", "2026-10-02", 1, "k1", "failed", T0)
    assert ledger.begin_attempt("K", "2026-10-02", "k4", lease_seconds=60).attempt == 2
    fresh = ledger.begin_attempt("K", "2026-10-05", "k5", lease_seconds=60)
    assert fresh.attempt == 1 and ledger.latest("K", "2026-10-05") == fresh


def test_abandon_ends_a_live_lease_and_the_next_attempt_need_not_wait(ledger: gk.Ledger) -> None:
    first = ledger.begin_attempt("A", D, "r1", lease_seconds=3600, now=T0)
    later = T0 + dt.timedelta(minutes=1)  # the lease is live for another 59 minutes
    done = ledger.abandon("A", D, reason="worker host died", now=later)
    assert done is not None and (done.attempt, done.run_id) == (1, "r1")
    assert done.state is gk.RunState.ABANDONED and done.error == "worker host died"
    stored = ledger.latest("A", D)
    assert stored is not None and stored.state is gk.RunState.ABANDONED
    assert stored.error == "worker host died" and stored.lease_expires_at is None
    assert stored.updated_at == later and stored.started_at == first.started_at
    assert ledger.heartbeat("r1", lease_seconds=3600, now=later) is False
    second = ledger.begin_attempt("A", D, "r2", lease_seconds=3600, now=later)
    assert second.attempt == 2
    assert [a.state for a in ledger.attempts("A", D)] == [
        gk.RunState.ABANDONED,
        gk.RunState.RUNNING,
    ]


def test_abandon_refuses_the_old_workers_publish(ledger: gk.Ledger) -> None:
    ledger.record("Up", D, 1, "up-1", "succeeded", T0)
    ledger.begin_attempt("Pub", D, "p1", lease_seconds=3600, now=T0)
    ledger.abandon("Pub", D, reason="stuck", now=T0)
    before = snapshot(ledger)
    with pytest.raises(gk.LeaseLost, match="already abandoned"):
        ledger.publish("Pub", D, ["Up"], "fp", producer="p1", now=T0)
    assert snapshot(ledger) == before


@pytest.mark.parametrize("state", ["succeeded", "failed", "abandoned"])
def test_abandon_refuses_a_terminal_latest_attempt_and_writes_nothing(
    ledger: gk.Ledger, state: str
) -> None:
    ledger.record("A", D, 1, "r1", "running", T0)  # an earlier running attempt is not latest
    ledger.record("A", D, 2, "r2", state, T0)
    before = snapshot(ledger)
    with pytest.raises(gk.StateConflict, match=f"attempt 2 \\(run r2\\) is already {state}") as e:
        ledger.abandon("A", D, reason="why")
    assert (e.value.job, e.value.period, e.value.attempt) == ("A", D, 2)
    assert snapshot(ledger) == before


def test_abandon_without_an_attempt_returns_none_and_writes_nothing(ledger: gk.Ledger) -> None:
    ledger.record("A", "2026-10-21", 1, "r1", "running", T0)
    before = snapshot(ledger)
    assert ledger.abandon("A", D, reason="why") is None
    assert ledger.abandon("Unknown", D, reason="why") is None
    assert snapshot(ledger) == before


@pytest.mark.parametrize(
    ("job", "period", "reason", "field"),
    [
        ("A", D, "", "reason"),
        ("A", D, " padded", "reason"),
        ("A", D, "nul\x00", "reason"),
        ("", D, "why", "job"),
        ("A", "2026-13-01", "why", "business_date"),
    ],
)
def test_abandon_bad_input_is_refused_and_writes_nothing(
    ledger: gk.Ledger, job: str, period: str, reason: str, field: str
) -> None:
    ledger.record("A", D, 1, "r1", "running", T0)
    before = snapshot(ledger)
    with pytest.raises(gk.InvalidInput) as e:
        ledger.abandon(job, period, reason=reason)
    assert e.value.field == field
    assert snapshot(ledger) == before
