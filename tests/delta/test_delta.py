"""GatedDeltaTask on real local Delta tables and a real ledger (SQLite; PostgreSQL where noted):
exactly once across the ledger and the table, one business date per revision, evidence in the
commit metadata, the real `luigi` command for a killed worker and concurrent range fills."""

from __future__ import annotations

import datetime as dt
import json
import multiprocessing
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import luigi
import luigi.configuration
import pytest
from deltalake import DeltaTable, write_deltalake

import gatekeeper as gk
from gatekeeper.delta import runner as delta_runner
from gatekeeper.delta.history import app_id
from gatekeeper.delta.table import table_fingerprint
from tests.helpers.delta_tasks import DeltaSales, DeltaSource, raise_in_helper, rows_for
from tests.helpers.in_process import gatekeeper_in_process
from tests.helpers.ledgers import snapshot, succeed
from tests.helpers.luigi_support import build, configure, luigi_command, luigi_env, write_config

D1, D2 = dt.date(2026, 10, 23), dt.date(2026, 10, 24)
TASK_FAILED = 30


@pytest.fixture
def delta(ledger_url: str, tmp_path: Path) -> Iterator[dict[str, Any]]:
    """Luigi configured for the test ledger and ``[delta_test]`` (a table in tmp_path)."""
    cfg = luigi.configuration.get_config()
    if not cfg.has_section("delta_test"):
        cfg.add_section("delta_test")
    settings = {"table": str(tmp_path / "sales"), "control": str(tmp_path)}
    for key, value in settings.items():
        cfg.set("delta_test", key, value)
    try:
        for _ in configure(
            {"ledger_url": ledger_url, "lease_seconds": "30", "lateness": "0s", "timezone": "UTC"}
        ):
            with gk.open_ledger(ledger_url) as ledger:
                yield {
                    "ledger": ledger,
                    "table": settings["table"],
                    "url": ledger_url,
                    "set": lambda key, value: _set(cfg, key, value),
                }
    finally:
        cfg.remove_section("delta_test")
        luigi.task_register.Register.clear_instance_cache()


def _set(cfg: Any, key: str, value: str) -> None:
    cfg.set("delta_test", key, value)
    luigi.task_register.Register.clear_instance_cache()


def rows(table: str, date: dt.date, version: int | None = None) -> list[tuple[str, str, int]]:
    data = DeltaTable(table, version=version).to_pyarrow_table(
        filters=[("business_date", "=", date.isoformat())]
    )
    return sorted((r["business_date"], r["item"], r["cents"]) for r in data.to_pylist())


def expected(date: dt.date, factor: int = 1) -> list[tuple[str, str, int]]:
    return sorted(
        (r["business_date"], r["item"], r["cents"])
        for r in rows_for(date.isoformat(), factor).to_pylist()
    )


def ledger_rows(ledger: gk.Ledger) -> dict[str, list[tuple[Any, ...]]]:
    """Every gatekeeper row but the attempts (a refused run records its failed attempt) and
    the runs of complete periods, which follow the attempts."""
    derived = ("gk_attempts", "gk_complete_runs")
    found = {k: v for k, v in snapshot(ledger).items() if k not in derived}
    found["gk_reservations"] = sorted(
        tuple(map(str, r)) for r in ledger.read("SELECT * FROM gk_reservations")
    )
    return found


def run_task(task: gk.GatedDeltaTask) -> None:
    """Run one attempt of ``task`` in this process (its upstream already recorded): raises
    what the attempt raised."""
    luigi.task_register.Register.clear_instance_cache()
    task.run()


def gatekeeper_cli(url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return gatekeeper_in_process("--ledger", url, *args)


# -- publish, retry, a second date (both backends) ---------------------------------------------
def test_delta_publish_retry_and_second_date(delta: dict[str, Any]) -> None:
    ledger, table = delta["ledger"], delta["table"]
    assert build(DeltaSales(business_date=D1)).scheduling_succeeded
    assert DeltaTable(table).version() == 0
    assert rows(table, D1) == expected(D1)
    (commit,) = DeltaTable(table).history()
    upstream = ledger.latest("DeltaSource", D1)
    producer = ledger.latest("DeltaSales", D1)
    assert upstream is not None and producer is not None
    pub = ledger.publication("DeltaSales", D1)
    assert pub is not None and (pub.revision, pub.location, pub.run_id) == (
        1,
        table,
        producer.run_id,
    )
    assert {k: v for k, v in commit.items() if k.startswith("gatekeeper.")} == {
        "gatekeeper.consumer": "DeltaSales",
        "gatekeeper.business_date": "2026-10-23",
        "gatekeeper.revision": "1",
        "gatekeeper.run_id": producer.run_id,
        "gatekeeper.attempt": "1",
        "gatekeeper.fingerprint": pub.fingerprint,
        "gatekeeper.evidence": json.dumps({"DeltaSource": upstream.run_id}),
        "gatekeeper.app_id": "gatekeeper:DeltaSales:2026-10-23",
    }
    assert pub.fingerprint == table_fingerprint(rows_for("2026-10-23"))
    assert DeltaTable(table).transaction_version(app_id("DeltaSales", "2026-10-23")) == 1
    (reserved,) = ledger.reservations.of("DeltaSales", D1)
    assert (reserved.state, reserved.table_version, reserved.writer_run_id) == (
        "committed",
        0,
        producer.run_id,
    )

    # a retry: complete, so Luigi runs nothing; an explicit rerun (attempt 2) writes nothing
    assert DeltaSales(business_date=D1).complete()
    before = ledger_rows(ledger)
    assert build(DeltaSales(business_date=D1)).scheduling_succeeded
    run_task(DeltaSales(business_date=D1, attempt=2))
    assert DeltaTable(table).version() == 0 and ledger_rows(ledger) == before
    assert [a.state.value for a in ledger.attempts("DeltaSales", D1)] == ["succeeded"] * 2

    # a second date: its own commit, the first date's rows untouched
    assert build(DeltaSales(business_date=D2)).scheduling_succeeded
    assert DeltaTable(table).version() == 1
    assert (rows(table, D1), rows(table, D2)) == (expected(D1), expected(D2))
    second = gk.delta_evidence(table, D2)
    assert second is not None and (second.table_version, second.revision) == (1, 1)
    assert second.evidence == {"DeltaSource": ledger.latest("DeltaSource", D2).run_id}
    first = gk.delta_evidence(table, D1, consumer="DeltaSales")
    assert first is not None and (first.table_version, first.run_id) == (0, producer.run_id)
    assert gk.delta_evidence(table, dt.date(2026, 10, 25)) is None

    shown = gatekeeper_cli(delta["url"], "evidence", "DeltaSales", "2026-10-24")
    assert shown.returncode == 0, shown.stderr
    assert f"to {table} at Delta table version 1" in shown.stdout
    as_json = json.loads(
        gatekeeper_cli(delta["url"], "--json", "evidence", "DeltaSales", "2026-10-23").stdout
    )
    assert [r["table_version"] for r in as_json["revisions"]] == [0]


# -- a correction after an upstream repair -----------------------------------------------------
@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
def test_delta_conflicting_rerun_refused_then_republish_replaces_only_that_date(
    delta: dict[str, Any],
) -> None:
    ledger, table = delta["ledger"], delta["table"]
    assert build(DeltaSales(business_date=D1), DeltaSales(business_date=D2)).scheduling_succeeded
    first = ledger.publication("DeltaSales", D1)
    assert first is not None
    # the upstream is repaired (attempt 2) and the rows change
    assert build(DeltaSource(business_date=D1, attempt=2)).scheduling_succeeded
    delta["set"]("factor", "3")
    before, version = ledger_rows(ledger), DeltaTable(table).version()
    with pytest.raises(gk.PublicationConflict) as refused:
        run_task(DeltaSales(business_date=D1, attempt=2))
    assert "revision 1 was published with fingerprint" in str(refused.value)
    assert refused.value.revision == 1
    assert DeltaTable(table).version() == version and ledger_rows(ledger) == before
    assert rows(table, D1) == expected(D1)

    result = build(DeltaSales(business_date=D1, republish_reason="late data for item b"))
    assert result.scheduling_succeeded
    assert DeltaTable(table).version() == version + 1
    assert rows(table, D1) == expected(D1, 3) and rows(table, D2) == expected(D2)
    assert rows(table, D1, version=version) == expected(D1)  # history keeps the old rows
    newest = DeltaTable(table).history(1)[0]
    assert (newest["gatekeeper.revision"], newest["gatekeeper.reason"]) == (
        "2",
        "late data for item b",
    )
    assert DeltaTable(table).transaction_version(app_id("DeltaSales", "2026-10-23")) == 2
    assert DeltaTable(table).transaction_version(app_id("DeltaSales", "2026-10-24")) == 1
    revisions = ledger.publications("DeltaSales", D1)
    assert [(p.revision, p.reason) for p in revisions] == [(2, "late data for item b"), (1, None)]
    repaired = ledger.latest("DeltaSource", D1)
    assert repaired is not None and repaired.attempt == 2
    assert revisions[0].evidence == {"DeltaSource": repaired.run_id}
    assert revisions[1].evidence == first.evidence
    found = gk.delta_evidence(table, D1)
    assert found is not None and (found.revision, found.reason, found.evidence) == (
        2,
        "late data for item b",
        {"DeltaSource": repaired.run_id},
    )
    assert DeltaSales(business_date=D1, republish_reason="late data for item b").complete()


# -- refusals: nothing written -----------------------------------------------------------------
@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
def test_delta_stray_rows_refused_before_anything_is_written(delta: dict[str, Any]) -> None:
    ledger, table = delta["ledger"], delta["table"]
    succeed(ledger, "DeltaSource", D1)
    succeed(ledger, "DeltaSource", D2)
    delta["set"]("stray", "2026-10-24")
    before = ledger_rows(ledger)
    with pytest.raises(gk.InvalidInput) as refused:
        run_task(DeltaSales(business_date=D1))
    assert (refused.value.field, refused.value.value) == ("business_date", "2026-10-24")
    assert "business_date='2026-10-24'" in str(refused.value)
    assert not os.path.exists(table) and ledger_rows(ledger) == before

    delta["set"]("stray", "")
    run_task(DeltaSales(business_date=D1))
    delta["set"]("stray", "2026-10-22")
    before, version = ledger_rows(ledger), DeltaTable(table).version()
    with pytest.raises(gk.InvalidInput, match="2026-10-22"):
        run_task(DeltaSales(business_date=D2))
    assert DeltaTable(table).version() == version and ledger_rows(ledger) == before
    assert rows(table, D2) == []


# -- completeness against the table ------------------------------------------------------------
@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
def test_delta_restored_table_is_output_mismatch_never_complete(
    delta: dict[str, Any], tmp_path: Path
) -> None:
    table = delta["table"]
    assert build(DeltaSales(business_date=D1), DeltaSales(business_date=D2)).scheduling_succeeded
    d1_version = gk.delta_evidence(table, D1).table_version
    DeltaTable(table).restore(d1_version)  # the commit of D2 is lost
    assert DeltaTable(table).transaction_version(app_id("DeltaSales", "2026-10-24")) == 1
    assert DeltaSales(business_date=D1).complete()
    with pytest.raises(gk.OutputMismatch, match="restored or overwritten"):
        DeltaSales(business_date=D2).complete()
    assert gk.delta_evidence(table, D2) is None  # the restore undid it
    assert gk.delta_evidence(table, D1).table_version == d1_version
    os.rename(table, tmp_path / "moved")
    with pytest.raises(gk.OutputMismatch, match="is missing"):
        DeltaSales(business_date=D1).complete()


# -- a crash before the Delta commit: the reservation is adopted or released -------------------
@pytest.mark.parametrize("same_rows", [True, False])
def test_delta_reservation_of_a_dead_attempt_is_adopted_or_released(
    delta: dict[str, Any], same_rows: bool
) -> None:
    ledger, table = delta["ledger"], delta["table"]
    succeed(ledger, "DeltaSource", D1)
    dead = ledger.begin_attempt("DeltaSales", D1, "dead-run", lease_seconds=0.3)
    factor = 1 if same_rows else 2
    ledger.reservations.reserve(
        "DeltaSales",
        D1,
        ["DeltaSource"],
        table_fingerprint(rows_for("2026-10-23", factor)),
        producer=dead.run_id,
        location=table,
    )
    time.sleep(0.4)  # its lease expires: the next attempt takes over
    run_task(DeltaSales(business_date=D1))
    # the takeover's fence commit (the table created empty), then the one commit of revision 1
    fence, commit = sorted(DeltaTable(table).history(), key=lambda h: h["version"])
    mine = ledger.latest("DeltaSales", D1)
    assert mine is not None and mine.attempt == 2
    assert (
        fence["version"],
        fence["gatekeeper.fenced_run_id"],
        fence["gatekeeper.fence_run_id"],
    ) == (
        0,
        "dead-run",
        mine.run_id,
    )
    assert "gatekeeper.revision" not in fence
    assert (commit["version"], commit["gatekeeper.revision"]) == (1, "1")
    assert rows(table, D1) == expected(D1)
    (reserved,) = ledger.reservations.of("DeltaSales", D1)
    assert (reserved.revision, reserved.state, reserved.writer_run_id) == (
        1,
        "committed",
        mine.run_id,
    )
    assert reserved.table_version == 1
    assert [a.state.value for a in ledger.attempts("DeltaSales", D1)] == ["abandoned", "succeeded"]


# -- the fence of the Delta commit in the ledger: claim -------------------------------------------
def test_delta_claim_reenters_the_fence_and_refuses_what_is_not_pending(ledger: gk.Ledger) -> None:
    succeed(ledger, "DeltaSource", D1)
    ledger.begin_attempt("DeltaSales", D1, "run-1", lease_seconds=30)
    args = ("DeltaSales", D1, ["DeltaSource"], "sha256:aa")
    reserved = ledger.reservations.reserve(*args, producer="run-1", location="/t", table_version=4)
    assert (reserved.revision, reserved.state, reserved.table_version) == (1, "reserved", 4)
    claimed = ledger.reservations.claim("DeltaSales", D1, 1, producer="run-1", table_version=None)
    assert (claimed.producer_run_id, claimed.table_version) == ("run-1", None)

    before = ledger_rows(ledger)
    for bad in (-1, True, "4"):
        with pytest.raises(gk.InvalidInput) as refused:
            ledger.reservations.claim("DeltaSales", D1, 1, producer="run-1", table_version=bad)
        assert (refused.value.field, refused.value.value) == ("table_version", bad)
    with pytest.raises(gk.InvalidInput, match="table_version"):
        ledger.reservations.reserve(*args, producer="run-1", location="/t", table_version=-2)
    with pytest.raises(gk.StateConflict, match="revision 2: no such reservation"):
        ledger.reservations.claim("DeltaSales", D1, 2, producer="run-1", table_version=4)
    ledger.abandon("DeltaSales", D1, reason="frozen past its lease")
    ledger.begin_attempt("DeltaSales", D1, "run-2", lease_seconds=30)
    with pytest.raises(gk.LeaseLost) as lost:  # fenced out, whatever it tries
        ledger.reservations.claim("DeltaSales", D1, 1, producer="run-1", table_version=5)
    assert lost.value.taken_over_by is not None and lost.value.taken_over_by.run_id == "run-2"
    for revision in (1, 2):
        with pytest.raises(gk.LeaseLost):
            ledger.reservations.commit(
                "DeltaSales", D1, revision, producer="run-1", table_version=5, writer="run-1"
            )
    assert ledger_rows(ledger) == before

    taken = ledger.reservations.claim("DeltaSales", D1, 1, producer="run-2", table_version=7)
    assert (taken.producer_run_id, taken.producer_attempt, taken.table_version) == ("run-2", 2, 7)
    ledger.reservations.commit(
        "DeltaSales", D1, 1, producer="run-2", table_version=8, writer="run-2"
    )
    with pytest.raises(gk.StateConflict, match="already recorded committed"):
        ledger.reservations.claim("DeltaSales", D1, 1, producer="run-2", table_version=8)
    (done,) = ledger.reservations.of("DeltaSales", D1)
    assert (done.state, done.table_version, done.writer_run_id) == ("committed", 8, "run-2")


def test_delta_evidence_refuses_a_revision_committed_twice(tmp_path: Path) -> None:
    """A table written before Delta commits were fenced: a zombie's commit of revision 1 landed
    after its successor's. Neither can be named from the history alone."""
    from deltalake import CommitProperties

    from gatekeeper.delta.history import DeltaEvidence, commit_metadata

    table = str(tmp_path / "sales")
    for run, factor in [("run-b", 2), ("run-a", 1)]:
        data = rows_for("2026-10-23", factor)
        evidence = DeltaEvidence(
            -1, "DeltaSales", "2026-10-23", 1, run, table_fingerprint(data), {"DeltaSource": "u"}
        )
        write_deltalake(
            table,
            data,
            mode="append",
            partition_by=["business_date"],
            commit_properties=CommitProperties(custom_metadata=commit_metadata(evidence)),
        )
    write_deltalake(table, rows_for("2026-10-24"), mode="append")
    with pytest.raises(gk.OutputMismatch) as refused:
        gk.delta_evidence(table, D1)
    assert "revision 1 has two commits" in str(refused.value)
    assert "version 0 by run run-b, version 1 by run run-a" in str(refused.value)
    assert gk.delta_evidence(table, D2) is None


# -- a fork of a process whose deltalake runtime was started (luigi --workers N) --------------
def _publish_in_fork(date: dt.date, recorded: bool, report: str) -> None:
    """In a forked child: publish ``date``; write whether the helper ran the Delta operations
    (or the error) to ``report``."""
    try:
        if not recorded:  # deltalake was used before the fork, but not by gatekeeper
            delta_runner._runtime_pid = None
        run_task(DeltaSales(business_date=date))
        Path(report).write_text(f"ok delegating={delta_runner.delegating()}")
    except BaseException as exc:  # noqa: BLE001 - a PanicException is a BaseException
        Path(report).write_text(f"{type(exc).__name__}: {exc}")
        os._exit(1)


@pytest.mark.parametrize("ledger_url", ["sqlite"], indirect=True)
@pytest.mark.parametrize("recorded", [True, False], ids=["gatekeeper-used-it", "panic"])
def test_delta_fork_of_a_process_that_used_deltalake_publishes_through_the_helper(
    delta: dict[str, Any], tmp_path: Path, recorded: bool
) -> None:
    ledger, table = delta["ledger"], delta["table"]
    succeed(ledger, "DeltaSource", D1)
    succeed(ledger, "DeltaSource", D2)
    run_task(DeltaSales(business_date=D1))  # deltalake's runtime now lives in this process
    assert DeltaTable(table).version() == 0 and not delta_runner.delegating()
    report = tmp_path / "report"
    child = multiprocessing.get_context("fork").Process(
        target=_publish_in_fork, args=(D2, recorded, str(report))
    )
    child.start()
    child.join(60)
    assert (child.exitcode, report.read_text()) == (0, "ok delegating=True")
    assert DeltaTable(table).version() == 1
    assert (rows(table, D1), rows(table, D2)) == (expected(D1), expected(D2))
    commits = [h["gatekeeper.business_date"] for h in DeltaTable(table).history()]
    assert sorted(commits) == ["2026-10-23", "2026-10-24"]
    pub = ledger.publication("DeltaSales", D2)
    found = gk.delta_evidence(table, D2)
    assert pub is not None and found is not None
    assert (found.run_id, found.fingerprint, found.table_version) == (
        pub.run_id,
        pub.fingerprint,
        1,
    )
    assert DeltaSales(business_date=D2).output().exists()  # this process still reads here


@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("InvalidInput", gk.InvalidInput),
        ("OutputMismatch", gk.OutputMismatch),
        ("CommitFailedError", None),
    ],
)
def test_delta_error_in_the_helper_process_arrives_as_its_own_type(kind: str, error: Any) -> None:
    import deltalake

    expected_type = error or deltalake.exceptions.CommitFailedError
    with pytest.raises(expected_type) as raised:
        delta_runner.in_helper(raise_in_helper, kind)
    assert type(raised.value) is expected_type
    if kind == "InvalidInput":
        assert (raised.value.field, raised.value.value) == ("partition_column", "day; DROP")
        assert str(raised.value) == "invalid partition_column='day; DROP': not a column name"
    else:  # raised in the helper, not here
        helper = int(str(raised.value).rsplit(" ", 1)[1])
        assert helper != os.getpid()
        assert delta_runner._helper is not None and helper in [
            p.pid for p in delta_runner._helper[1]._processes.values()
        ]
    # a commit that lost a race is caught (table.commit_at) and tried again: it must stay catchable
    from gatekeeper.delta.table import commit_conflicts

    assert (kind == "CommitFailedError") == isinstance(raised.value, commit_conflicts())


# -- the real luigi command --------------------------------------------------------------------
def delta_config(tmp_path: Path, url: str, lease: float = 300) -> Path:
    cfg = write_config(tmp_path, url, lease_seconds=lease)
    with cfg.open("a") as handle:
        handle.write(f"[delta_test]\ntable = {tmp_path / 'sales'}\ncontrol = {tmp_path}\n")
    return cfg


@pytest.mark.slow
def test_delta_killed_after_commit_then_rerun_records_it_without_a_second_write(
    sqlite_url: str, tmp_path: Path
) -> None:
    cfg, table = delta_config(tmp_path, sqlite_url, lease=2), str(tmp_path / "sales")
    args = (
        "--module",
        "tests.helpers.delta_tasks",
        "DeltaSales",
        "--business-date",
        "2026-10-23",
        "--local-scheduler",
    )
    (tmp_path / "die-after-commit").touch()
    killed = subprocess.run(
        luigi_command(*args),
        cwd=tmp_path,
        env=luigi_env(cfg),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stderr
    assert list(tmp_path.glob("died-*"))
    (tmp_path / "die-after-commit").unlink()
    assert DeltaTable(table).version() == 0
    with gk.open_ledger(sqlite_url) as ledger:
        assert ledger.publication("DeltaSales", D1) is None
        (pending,) = ledger.reservations.of("DeltaSales", D1)
        first = ledger.latest("DeltaSales", D1)
        assert first is not None and first.state is gk.RunState.RUNNING
        assert (pending.state, pending.producer_run_id) == ("reserved", first.run_id)
        while first.lease_live(dt.datetime.now(dt.timezone.utc)):
            time.sleep(0.1)
    rerun = subprocess.run(
        luigi_command(*args),
        cwd=tmp_path,
        env=luigi_env(cfg),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert rerun.returncode == 0, rerun.stderr
    assert "not written again" in rerun.stderr + rerun.stdout
    assert DeltaTable(table).version() == 0 and len(DeltaTable(table).history()) == 1
    assert rows(table, D1) == expected(D1)
    with gk.open_ledger(sqlite_url) as ledger:
        pub = ledger.publication("DeltaSales", D1)
        # the publication names the run whose commit is in the table: the killed one
        assert pub is not None and (pub.revision, pub.run_id, pub.attempt) == (1, first.run_id, 1)
        (done,) = ledger.reservations.of("DeltaSales", D1)
        assert (done.state, done.table_version) == ("committed", 0)
        assert [a.state.value for a in ledger.attempts("DeltaSales", D1)] == [
            "abandoned",
            "succeeded",
        ]
    shown = gatekeeper_cli(sqlite_url, "evidence", "DeltaSales", "2026-10-23")
    assert "at Delta table version 0" in shown.stdout and first.run_id in shown.stdout


RANGE_DATES = [dt.date(2026, 9, 1) + dt.timedelta(days=n) for n in range(6)]


@pytest.mark.slow
def test_delta_two_concurrent_range_fills_write_each_date_once(
    sqlite_url: str, tmp_path: Path
) -> None:
    cfg, table = delta_config(tmp_path, sqlite_url), str(tmp_path / "sales")
    # one date published first: each fill's scheduling reads the table (its completeness),
    # starting deltalake's runtime in the luigi process before it forks the task processes
    first = subprocess.run(
        luigi_command(
            "--module",
            "tests.helpers.delta_tasks",
            "DeltaSales",
            "--business-date",
            "2026-09-01",
            "--local-scheduler",
        ),
        cwd=tmp_path,
        env=luigi_env(cfg),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert first.returncode == 0, first.stderr[-3000:]
    command = luigi_command(
        "--module",
        "tests.helpers.delta_tasks",
        "RangeBusinessDaily",
        "--of",
        "DeltaSales",
        "--start",
        "2026-09-01",
        "--stop",
        "2026-09-07",
        "--strategy",
        "forward",
        "--workers",
        "2",
        "--local-scheduler",
        "--no-lock",
    )
    procs = [
        subprocess.Popen(
            command,
            cwd=tmp_path,
            env=luigi_env(cfg),
            text=True,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=180)[0] for p in procs]
    assert "Forked process detected" not in "".join(outputs)
    assert "runs its Delta operations in a spawned helper process" in "".join(outputs)
    for proc, out in zip(procs, outputs, strict=True):
        assert proc.returncode in (0, TASK_FAILED), out[-3000:]
        if proc.returncode == TASK_FAILED:  # a race loser meets the live lease
            assert "LeaseHeld" in out, out[-3000:]
    if TASK_FAILED in [p.returncode for p in procs]:
        rerun = subprocess.run(
            command, cwd=tmp_path, env=luigi_env(cfg), capture_output=True, text=True, timeout=180
        )
        assert rerun.returncode == 0, rerun.stderr[-3000:]

    history = DeltaTable(table).history()
    commits = sorted(h["gatekeeper.business_date"] for h in history if "gatekeeper.consumer" in h)
    assert commits == [d.isoformat() for d in RANGE_DATES]  # one commit per date
    data = DeltaTable(table).to_pyarrow_table().to_pylist()
    assert sorted((r["business_date"], r["item"], r["cents"]) for r in data) == sorted(
        row for d in RANGE_DATES for row in expected(d)
    )
    with gk.open_ledger(sqlite_url) as ledger:
        for day in RANGE_DATES:
            (pub,) = ledger.publications("DeltaSales", day)
            found = gk.delta_evidence(table, day)
            assert found is not None
            assert (found.revision, found.run_id, found.fingerprint, found.evidence) == (
                1,
                pub.run_id,
                pub.fingerprint,
                pub.evidence,
            )
            (done,) = ledger.reservations.of("DeltaSales", day)
            assert done.table_version == found.table_version


# -- the fingerprint and the input checks (pure) -----------------------------------------------
def test_delta_fingerprint_ignores_row_order_column_order_chunks_and_encoding() -> None:
    import pyarrow as pa

    from gatekeeper.delta.table import to_arrow

    class Frame:  # any frame library exposing the Arrow stream interface (polars, pandas...)
        def __init__(self, table: pa.Table) -> None:
            self._table = table

        def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
            return self._table.__arrow_c_stream__(requested_schema)

    base = rows_for("2026-10-23")
    same = [
        base.take([2, 0, 1]),
        base.select(["cents", "business_date", "item"]),
        pa.Table.from_batches(base.to_batches(max_chunksize=1)),
        base.set_column(1, "item", pa.compute.dictionary_encode(base["item"])),
        base.cast(
            pa.schema(
                [("business_date", pa.large_string()), ("item", pa.string()), ("cents", pa.int64())]
            )
        ),
        to_arrow(Frame(pa.Table.from_pylist(list(reversed(base.to_pylist()))))),
        to_arrow(base.to_reader()),
    ]
    assert {table_fingerprint(t) for t in same} == {table_fingerprint(base)}
    other = [
        rows_for("2026-10-23", 2),
        base.take([0, 1]),
        base.take([0, 1, 2, 2]),
        base.rename_columns(["business_date", "sku", "cents"]),
        base.set_column(2, "cents", pa.array([100.0, 250.0, 5.0])),
    ]
    assert len({table_fingerprint(t) for t in [base, *other]}) == 1 + len(other)


@pytest.mark.parametrize(
    ("data", "field", "value"),
    [
        ({"business_date": ["2026-10-23"]}, "build()", dict),
        ("business_date", "build()", str),
    ],
)
def test_delta_build_result_that_is_not_arrow_is_refused(data: Any, field: str, value: Any) -> None:
    from gatekeeper.delta.table import to_arrow

    with pytest.raises(gk.InvalidInput) as refused:
        to_arrow(data)
    assert (refused.value.field, refused.value.value) == (field, value)


@pytest.mark.parametrize(
    ("values", "value"),
    [
        (["2026-10-23", None], None),
        ([dt.date(2026, 10, 22)], dt.date(2026, 10, 22)),
        ([20261023], 20261023),
        ([dt.datetime(2026, 10, 23)], dt.datetime(2026, 10, 23)),
    ],
)
def test_delta_partition_values_other_than_the_date_are_named(
    values: list[Any], value: Any
) -> None:
    import pyarrow as pa

    from gatekeeper.delta.table import check_rows

    with pytest.raises(gk.InvalidInput) as refused:
        check_rows(pa.table({"day": values}), "day", "2026-10-23")
    assert (refused.value.field, refused.value.value) == ("day", value)
    check_rows(pa.table({"day": [dt.date(2026, 10, 23)]}), "day", "2026-10-23")
    with pytest.raises(gk.InvalidInput, match="no such column in the data"):
        check_rows(pa.table({"day": values}), "business_date", "2026-10-23")
    with pytest.raises(gk.InvalidInput) as bad:
        check_rows(pa.table({"day": values}), "day; DROP", "2026-10-23")
    assert bad.value.field == "partition_column"


@pytest.mark.parametrize("text", ["[1]", '{"a": 1}', "{nope"])
def test_delta_storage_options_must_be_a_json_object_of_strings(text: str) -> None:
    from gatekeeper.core.validation import check_storage_options

    with pytest.raises(gk.InvalidInput) as refused:
        check_storage_options(text, "gatekeeper.delta_storage_options")
    assert (refused.value.field, refused.value.value) == ("gatekeeper.delta_storage_options", text)
    assert check_storage_options('{"AWS_REGION": "eu-west-1"}', "x") == {"AWS_REGION": "eu-west-1"}
    assert check_storage_options("", "x") is None


def test_delta_core_imports_without_the_extra(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('deltalake', 'pyarrow'):\n"
        "            raise ImportError(name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import gatekeeper as gk\n"
        "try:\n"
        f"    gk.delta_evidence({str(tmp_path)!r}, '2026-10-23')\n"
        "except gk.GatekeeperError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert done.returncode == 0, done.stderr
    assert "need the delta extra (deltalake is missing)" in done.stdout


# -- a frozen attempt never commits after a takeover (docs/ownership.md, the timeline) ---------
#: (ledger, where the first attempt freezes, when it wakes, whether the successor builds the same
#: rows, whether the table exists before): it wakes after its successor finished, or "during":
#: between the successor's check of the table and its Delta commit. Frozen before it writes,
#: its commit would create the table (refused: version 0 is taken) or is made against a
#: version before the successor's fence commit (refused by delta-rs: same app ID). Every case
#: on SQLite; on PostgreSQL one per row of the timeline (the ledger's part is the same SQL).
FREEZES = [
    pytest.param(
        ledger,
        point,
        wake,
        same_rows,
        existing,
        id=f"{ledger}-{point}-wake-{wake}-{'same' if same_rows else 'other'}-rows"
        + ("-existing-table" if existing else ""),
    )
    for ledger, point, wake, same_rows, existing in [
        ("sqlite", "before-reserve", "after", False, False),
        ("sqlite", "before-check", "after", True, False),
        ("sqlite", "before-check", "after", False, False),
        ("sqlite", "before-write", "after", True, False),
        ("sqlite", "before-write", "after", False, False),
        ("sqlite", "before-write", "after", False, True),
        ("sqlite", "before-write", "during", True, True),
        ("sqlite", "before-write", "during", False, True),
        ("sqlite", "after-commit", "after", True, False),
        ("sqlite", "after-commit", "after", False, False),
        ("postgresql", "before-reserve", "after", False, False),
        ("postgresql", "before-check", "after", False, False),
        ("postgresql", "before-write", "after", True, True),
        ("postgresql", "before-write", "during", False, True),
        ("postgresql", "after-commit", "after", False, False),
    ]
]


def _lease_expired(ledger: gk.Ledger, job: str, date: dt.date) -> None:
    """Wait until the latest attempt's lease has expired by the database's clock."""
    deadline = time.monotonic() + 30
    while (latest := ledger.latest(job, date)) is not None and latest.lease_live(ledger.db_now()):
        assert time.monotonic() < deadline
        time.sleep(0.05)


@pytest.mark.parametrize(
    ("ledger_url", "point", "wake", "same_rows", "existing"), FREEZES, indirect=["ledger_url"]
)
def test_delta_frozen_attempt_never_commits_after_a_takeover(
    delta: dict[str, Any], tmp_path: Path, point: str, wake: str, same_rows: bool, existing: bool
) -> None:
    from tests.helpers.delta_zombie import FencedSales, Zombie

    ledger, table = delta["ledger"], delta["table"]
    succeed(ledger, "DeltaSource", D1)
    if existing:  # another writer's commit: the zombie's is made against its version
        write_deltalake(table, rows_for(D2.isoformat()), partition_by=["business_date"])
    settings = {
        "gatekeeper": {"ledger_url": delta["url"], "lease_seconds": "1", "lateness": "0s"},
        "delta_test": {"table": table, "control": "", "factor": "1"},
    }
    settings["gatekeeper"]["timezone"] = "UTC"
    zombie = Zombie(settings, D1.isoformat(), point, tmp_path)
    try:
        zombie.wait_frozen()
        _lease_expired(ledger, "FencedSales", D1)
        delta["set"]("factor", "1" if same_rows else "2")
        woken: list[str] = []

        def wake_zombie(at: str) -> None:  # the successor's own pause
            if at == "before-write" and wake == "during":
                woken.append(zombie.resume())

        FencedSales.pause = wake_zombie
        successor = FencedSales(business_date=D1)
        try:
            run_task(successor)
            taken_over = "succeeded"
        except gk.PublicationConflict as exc:
            taken_over = f"PublicationConflict: {exc}"
        finally:
            FencedSales.pause = None
        outcome = woken[0] if woken else zombie.resume()
    finally:
        zombie.stop()

    # the zombie stops at the fence, whatever it was doing
    assert outcome.startswith("LeaseLost: "), outcome
    assert (wake == "during") == bool(woken)
    attempts = {a.run_id: a.state.value for a in ledger.attempts("FencedSales", D1)}
    assert attempts == {
        zombie.run_id: "abandoned",
        successor.run_id: "succeeded" if taken_over == "succeeded" else "failed",
    }
    # one commit of revision 1; the rows, the ledger and delta_evidence agree on its producer
    landed = point == "after-commit"  # its commit was in the table before the takeover
    commits = [h for h in DeltaTable(table).history() if "gatekeeper.revision" in h]
    assert [c["gatekeeper.revision"] for c in commits] == ["1"]
    assert rows(table, D2) == (expected(D2) if existing else [])
    pub = ledger.publication("FencedSales", D1)
    assert pub is not None and pub.run_id == (zombie.run_id if landed else successor.run_id)
    assert rows(table, D1) == expected(D1, 1 if landed or same_rows else 2)
    date_rows = DeltaTable(table).to_pyarrow_table(filters=[("business_date", "=", "2026-10-23")])
    assert table_fingerprint(date_rows) == pub.fingerprint
    found = gk.delta_evidence(table, D1)
    (reserved,) = ledger.reservations.of("FencedSales", D1)
    assert found is not None
    assert (found.run_id, found.fingerprint, found.table_version) == (
        pub.run_id,
        pub.fingerprint,
        reserved.table_version,
    )
    # the successor is refused only when the zombie's other rows were published first
    assert taken_over.startswith("PublicationConflict") == (landed and not same_rows)
    # the ledger and the table agree (no OutputMismatch); a rerun completes, writing nothing
    # (after a PublicationConflict, a rerun of the published rows: other rows need a republish)
    assert FencedSales(business_date=D1).output().exists()
    if taken_over != "succeeded":
        delta["set"]("factor", "1")
    before = len(DeltaTable(table).history())
    assert build(FencedSales(business_date=D1)).scheduling_succeeded
    assert FencedSales(business_date=D1).complete()
    assert len(DeltaTable(table).history()) == before
