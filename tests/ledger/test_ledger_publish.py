"""Contract tests of readiness and atomic publication, on both backends."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import T0, count_rows, snapshot, succeed, user_table

D = "2026-10-23"
DIMS = ("DimCustomer", "DimProduct")


def writer(ledger: gk.Ledger, cents: int = 17500, calls: list[int] | None = None) -> Any:
    """A write callback inserting one sales_totals row on the publication's connection."""

    def write(conn: Any) -> None:
        if calls is not None:
            calls.append(1)
        sql = "INSERT INTO sales_totals (business_date, cents) VALUES (?, ?)"
        conn.execute(sql, (D, cents))

    return write


@pytest.fixture
def ready(ledger: gk.Ledger) -> dict[str, str]:
    user_table(ledger)
    return {job: succeed(ledger, job, D) for job in DIMS}


def test_readiness_blockers_name_each_state(ledger: gk.Ledger) -> None:
    ledger.record("Running", D, 1, "r1", "running", T0)
    ledger.record("Failed", D, 1, "r2", "failed", T0)
    ledger.record("Gone", D, 1, "r3", "abandoned", T0)
    ok = succeed(ledger, "Ok", D)
    readiness = gk.check_ready(ledger, ["Running", "Failed", "Gone", "Missing", "Ok"], D)
    assert not readiness and readiness.ready is False
    assert readiness.blockers == {
        "Running": "running",
        "Failed": "failed",
        "Gone": "abandoned",
        "Missing": "missing",
    }
    assert readiness.evidence == {"Ok": ok}
    assert "Running (attempt 1 running)" in readiness.describe_blockers()
    assert "Missing (missing)" in readiness.describe_blockers()


def test_readiness_greatest_attempt_wins(ledger: gk.Ledger) -> None:
    succeed(ledger, "A", D, attempt=1)
    assert gk.check_ready(ledger, ["A"], D)
    ledger.record("A", D, 2, "r2", "running", T0)
    assert gk.check_ready(ledger, ["A"], D).blockers == {"A": "running"}
    ledger.record("A", D, 2, "r2", "failed", T0)
    assert gk.check_ready(ledger, ["A"], D).blockers == {"A": "failed"}
    run3 = succeed(ledger, "A", D, attempt=3)
    assert gk.check_ready(ledger, ["A"], D).evidence == {"A": run3}


def test_readiness_backfill_run_today_is_not_today(ledger: gk.Ledger) -> None:
    for job in DIMS:  # backfills of the 16th that ran on the 23rd
        succeed(ledger, job, "2026-10-16")
    assert gk.check_ready(ledger, DIMS, "2026-10-16")
    assert gk.check_ready(ledger, DIMS, "2026-10-23").blockers == dict.fromkeys(DIMS, "missing")


def test_readiness_duplicates_collapse_and_other_dates_are_explicit(ledger: gk.Ledger) -> None:
    run_a = succeed(ledger, "A", D)
    run_y = succeed(ledger, "Snapshot", "2026-10-22")
    readiness = gk.check_ready(ledger, ["A", "A", ("Snapshot", "2026-10-22")], D)
    assert readiness.required == ("A", "Snapshot@2026-10-22")
    assert readiness.evidence == {"A": run_a, "Snapshot@2026-10-22": run_y}


@pytest.mark.parametrize("jobs", [[], "DimCustomer", [""], [None], [("A", "2026-02-30")], None])
def test_readiness_bad_jobs_are_refused(ledger: gk.Ledger, jobs: Any) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        gk.check_ready(ledger, jobs, D)
    assert caught.value.field.startswith("jobs")


def test_publish_first_then_retry_is_noop(ledger: gk.Ledger, ready: dict[str, str]) -> None:
    calls: list[int] = []
    fp = gk.fingerprint({"cents": 17500})
    assert ledger.publish("DailySalesLoad", D, DIMS, fp, writer(ledger, calls=calls)) is True
    assert (
        ledger.publish("DailySalesLoad", D, list(reversed(DIMS)), fp, writer(ledger, calls=calls))
        is False
    )
    assert calls == [1]
    assert count_rows(ledger, "sales_totals") == 1
    pub = ledger.publication("DailySalesLoad", D)
    assert pub is not None
    assert (pub.fingerprint, pub.revision, pub.evidence) == (fp, 1, ready)
    assert pub.published_at.utcoffset() is not None


def test_publish_retry_after_upstream_change_keeps_evidence(
    ledger: gk.Ledger, ready: dict[str, str]
) -> None:
    fp = gk.fingerprint({"cents": 17500})
    ledger.publish("DailySalesLoad", D, DIMS, fp, writer(ledger))
    succeed(ledger, "DimCustomer", D, attempt=2)
    ledger.record("DimProduct", D, 2, "p2", "failed", T0)  # upstream failure after publication
    assert ledger.publish("DailySalesLoad", D, DIMS, fp, writer(ledger)) is False
    pub = ledger.publication("DailySalesLoad", D)
    assert pub is not None and pub.evidence == ready
    assert [i.attempt for i in pub.items] == [1, 1]


@pytest.mark.parametrize(
    ("fp", "jobs", "what"),
    [
        ("other", DIMS, "fingerprint"),
        (None, ("DimCustomer",), "required jobs"),
        (None, (*DIMS, "DimStore"), "required jobs"),
    ],
)
def test_publish_different_output_is_conflict(
    ledger: gk.Ledger, ready: dict[str, str], fp: str | None, jobs: Any, what: str
) -> None:
    original = gk.fingerprint({"cents": 17500})
    ledger.publish("DailySalesLoad", D, DIMS, original, writer(ledger))
    succeed(ledger, "DimStore", D)
    rows = snapshot(ledger)
    calls: list[int] = []
    with pytest.raises(gk.PublicationConflict, match=what):
        ledger.publish("DailySalesLoad", D, jobs, fp or original, writer(ledger, 1, calls))
    assert calls == [] and snapshot(ledger) == rows
    assert count_rows(ledger, "sales_totals") == 1


def test_publish_gate_closed_raises_not_ready_and_writes_nothing(ledger: gk.Ledger) -> None:
    user_table(ledger)
    succeed(ledger, "DimCustomer", D)
    ledger.record("DimProduct", D, 1, "p1", "running", T0)
    rows = snapshot(ledger)
    calls: list[int] = []
    with pytest.raises(gk.NotReady, match="DimProduct") as caught:
        ledger.publish("DailySalesLoad", D, DIMS, "fp", writer(ledger, calls=calls))
    assert caught.value.readiness.blockers == {"DimProduct": "running"}
    assert calls == [] and snapshot(ledger) == rows
    assert count_rows(ledger, "sales_totals") == 0
    assert ledger.publication("DailySalesLoad", D) is None


def test_publish_exception_in_write_rolls_back(ledger: gk.Ledger, ready: dict[str, str]) -> None:
    def failing(conn: Any) -> None:
        writer(ledger)(conn)
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError, match="disk full"):
        ledger.publish("DailySalesLoad", D, DIMS, "fp", failing)
    assert count_rows(ledger, "sales_totals") == 0
    assert ledger.publication("DailySalesLoad", D) is None
    assert ledger.publish("DailySalesLoad", D, DIMS, "fp", writer(ledger)) is True


TRIGGERS = {
    "sqlite": [
        "CREATE TRIGGER reject_evidence BEFORE INSERT ON gk_evidence "
        "BEGIN SELECT RAISE(ABORT, 'evidence rejected'); END"
    ],
    "postgresql": [
        "CREATE FUNCTION reject_evidence() RETURNS trigger LANGUAGE plpgsql AS "
        "$$ BEGIN RAISE EXCEPTION 'evidence rejected'; END $$",
        "CREATE TRIGGER reject_evidence BEFORE INSERT ON gk_evidence "
        "FOR EACH ROW EXECUTE FUNCTION reject_evidence()",
    ],
}
DROP = {
    "sqlite": "DROP TRIGGER reject_evidence",
    "postgresql": "DROP TRIGGER reject_evidence ON gk_evidence",
}


def test_publish_evidence_insert_failure_rolls_back_output(
    ledger: gk.Ledger, ready: dict[str, str]
) -> None:
    with ledger.transaction():
        for statement in TRIGGERS[ledger.dialect]:
            ledger.connection.execute(statement)
    with pytest.raises(gk.LedgerError, match="evidence rejected"):
        ledger.publish("DailySalesLoad", D, DIMS, "fp", writer(ledger))
    assert count_rows(ledger, "sales_totals") == 0
    assert count_rows(ledger, "gk_publications") == 0
    with ledger.transaction():
        ledger.connection.execute(DROP[ledger.dialect])
    assert ledger.publish("DailySalesLoad", D, DIMS, "fp", writer(ledger)) is True
    assert count_rows(ledger, "sales_totals") == 1


def test_publish_two_publishers_on_independent_connections(
    ledger_url: str, ledger: gk.Ledger, ready: dict[str, str]
) -> None:
    barrier = threading.Barrier(2)
    results: list[bool] = []
    errors: list[BaseException] = []

    def publisher() -> None:
        with gk.open_ledger(ledger_url) as own:

            def slow_write(conn: Any) -> None:
                time.sleep(0.2)  # widen the window between reading and committing
                writer(own)(conn)

            barrier.wait()
            try:
                results.append(own.publish("DailySalesLoad", D, DIMS, "fp", slow_write))
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

    threads = [threading.Thread(target=publisher) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert errors == []
    assert sorted(results) == [False, True]
    assert count_rows(ledger, "sales_totals") == 1
    assert count_rows(ledger, "gk_publications") == 1


@pytest.mark.parametrize(
    ("field", "args"),
    [
        ("consumer", ("", D, DIMS, "fp")),
        ("business_date", ("C", "2026-13-01", DIMS, "fp")),
        ("jobs", ("C", D, [], "fp")),
        ("fingerprint", ("C", D, DIMS, "")),
        ("fingerprint", ("C", D, DIMS, None)),
    ],
)
def test_publish_bad_input_writes_nothing(
    ledger: gk.Ledger, ready: dict[str, str], field: str, args: tuple[Any, ...]
) -> None:
    rows = snapshot(ledger)
    with pytest.raises(gk.InvalidInput) as caught:
        ledger.publish(*args)
    assert caught.value.field == field and snapshot(ledger) == rows


def test_publication_of_unknown_key_is_none(ledger: gk.Ledger) -> None:
    assert ledger.publication("Nobody", D) is None
    assert ledger.publications("Nobody", D) == []


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        ({"x": 1, "y": [1, 2]}, {"y": [1, 2], "x": 1}, True),
        ({"cents": 17500}, {"cents": 17501}, False),
        (b"abc", b"abc", True),
        ([1, 2], [2, 1], False),
    ],
)
def test_fingerprint_is_canonical(a: Any, b: Any, same: bool) -> None:
    assert (gk.fingerprint(a) == gk.fingerprint(b)) is same
    assert gk.fingerprint(a).startswith("sha256:")


@pytest.mark.parametrize("payload", [{1, 2}, float("nan"), object()])
def test_fingerprint_refuses_non_json(payload: Any) -> None:
    with pytest.raises(gk.InvalidInput, match="payload"):
        gk.fingerprint(payload)
