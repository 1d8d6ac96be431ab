"""Bad input is refused before anything is written (docs/ownership.md, "Input checks").

Every refusal is ``gk.InvalidInput`` whose ``field`` names the offending field, and the ledger
is byte-for-byte unchanged afterwards (``snapshot`` before == after). Each ledger test runs on a
real SQLite file and a real PostgreSQL schema (the ``ledger`` fixture). Covered:

1. attempt ordinals (1..2,147,483,647; 0 = "next" only where allowed; never bool/float/str);
2. the CLI's attempt argument (ASCII digits only, exit 2, no traceback);
3. names (job, consumer, run ID, reason, location, fingerprint, required jobs);
4. required jobs are (job, period) pairs: job ``A@2026-10-22`` is not ``("A", "2026-10-22")``;
5. a job keeps one period kind; the planner ignores a foreign key already stored;
6. 2,500 required jobs on one publication;
7. timestamps (0001-01-02 .. 9999-12-01 UTC) and ``lease_seconds`` (finite, > 0, <= a week);
8. gatekeeper's Luigi parameters are checked when the task is built;
9. a schema newer than the code is refused by a ledger opened before the upgrade.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from tests.helpers.ledgers import PG_DSN, T0, UTC, snapshot, succeed

D = "2026-10-23"
PREV = "2026-10-22"
HOUR = "2026-10-23T05:00Z"
MAX_ATTEMPT = 2**31 - 1
WEEK = 7 * 24 * 3600


# -- helpers ---------------------------------------------------------------------------------
def refuse(ledger: gk.Ledger, field: str, call: Callable[[], Any]) -> gk.InvalidInput:
    """Assert ``call()`` raises InvalidInput naming ``field`` and writes nothing."""
    before = snapshot(ledger)
    with pytest.raises(gk.InvalidInput) as caught:
        call()
    assert caught.value.field == field, str(caught.value)
    assert snapshot(ledger) == before
    return caught.value


def raw_sql(url: str, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Run one statement on the ledger's database without gatekeeper (autocommit)."""
    if url.startswith("sqlite:///"):
        conn = sqlite3.connect(url[len("sqlite:///") :], timeout=30, isolation_level=None)
        try:
            return [tuple(r) for r in conn.execute(sql, params).fetchall()]
        finally:
            conn.close()
    import psycopg

    schema = parse_qs(urlsplit(url).query)["schema"][0]
    with psycopg.connect(PG_DSN, autocommit=True) as pg:
        pg.execute(f'SET search_path TO "{schema}"')
        cursor = pg.execute(sql.replace("?", "%s"), params)
        return [tuple(r) for r in cursor.fetchall()] if cursor.description else []


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """Run ``gatekeeper ARGS`` in-process; (exit code, stdout, stderr)."""
    try:
        code = main(list(args))
    except SystemExit as exc:  # argparse refusals
        code = exc.code if isinstance(exc.code, int) else 2
    out = capsys.readouterr()
    return code, out.out, out.err


def attempt_rows(ledger: gk.Ledger) -> int:
    return int(ledger.read("SELECT COUNT(*) FROM gk_attempts")[0][0])


# -- 1. attempt ordinals ---------------------------------------------------------------------
BAD_ATTEMPTS: list[Any] = [-1, 2**31, 2**63, 2**64, True, 1.0, "2"]


@pytest.mark.parametrize("attempt", [0, *BAD_ATTEMPTS], ids=repr)
def test_record_refuses_bad_attempt(ledger: gk.Ledger, attempt: Any) -> None:
    refuse(ledger, "attempt", lambda: ledger.record("A", D, attempt, "r1", "succeeded", T0))


@pytest.mark.parametrize("attempt", BAD_ATTEMPTS, ids=repr)
def test_begin_attempt_refuses_bad_attempt(ledger: gk.Ledger, attempt: Any) -> None:
    refuse(
        ledger,
        "attempt",
        lambda: ledger.begin_attempt("A", D, "r1", lease_seconds=30, attempt=attempt, now=T0),
    )


@pytest.mark.parametrize("attempt", [1, MAX_ATTEMPT])
def test_record_accepts_attempt_bounds_and_reads_back(ledger: gk.Ledger, attempt: int) -> None:
    assert ledger.record("A", D, attempt, "r1", "succeeded", T0) is True
    latest = ledger.latest("A", D)
    assert latest is not None and latest.attempt == attempt and type(latest.attempt) is int
    assert [a.attempt for a in ledger.history("A")] == [attempt]


@pytest.mark.parametrize("attempt", [1, MAX_ATTEMPT])
def test_begin_attempt_accepts_attempt_bounds_and_reads_back(
    ledger: gk.Ledger, attempt: int
) -> None:
    started = ledger.begin_attempt("A", D, "r1", lease_seconds=30, attempt=attempt, now=T0)
    assert started.attempt == attempt
    latest = ledger.latest("A", D)
    assert latest is not None and latest.attempt == attempt and latest.run_id == "r1"


@pytest.mark.parametrize("operation", ["record", "begin_attempt"])
def test_attempt_refused_overflow_does_not_poison_the_key(
    ledger: gk.Ledger, operation: str
) -> None:
    if operation == "record":
        refuse(ledger, "attempt", lambda: ledger.record("A", D, 2**63, "r1", "running", T0))
    else:
        refuse(
            ledger,
            "attempt",
            lambda: ledger.begin_attempt("A", D, "r1", lease_seconds=30, attempt=2**63, now=T0),
        )
    assert ledger.record("A", D, 1, "r1", "succeeded", T0) is True
    latest = ledger.latest("A", D)
    assert latest is not None and (latest.attempt, latest.state) == (1, gk.RunState.SUCCEEDED)


def test_begin_attempt_next_after_max_is_refused_not_overflowed(ledger: gk.Ledger) -> None:
    """After attempt 2,147,483,647 there is no next ordinal: a refusal, never a raw error."""
    ledger.record("A", D, MAX_ATTEMPT, "r-max", "failed", T0)
    before = snapshot(ledger)
    with pytest.raises((gk.InvalidInput, gk.StateConflict)):
        ledger.begin_attempt("A", D, "r-next", lease_seconds=30, now=T0 + dt.timedelta(hours=1))
    assert snapshot(ledger) == before


# -- 2. the CLI's attempt argument -----------------------------------------------------------
BAD_CLI_ATTEMPTS = ["2_0", "\u0663", "+2", " 2", "1e3", "0", "-1", "2147483648"]


@pytest.mark.parametrize("text", BAD_CLI_ATTEMPTS, ids=ascii)
def test_cli_record_refuses_non_plain_attempt(
    ledger: gk.Ledger, ledger_url: str, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    before = snapshot(ledger)
    code, _, err = cli(
        capsys,
        "--ledger",
        ledger_url,
        "record",
        "A",
        D,
        text,
        "r1",
        "succeeded",
        "--started-at",
        "2026-10-23T07:00:00+00:00",
    )
    assert code == 2, err
    assert "attempt" in err and "Traceback" not in err
    assert "InvalidInput" in err
    assert snapshot(ledger) == before


def test_cli_record_accepts_max_attempt(
    ledger: gk.Ledger, ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(
        capsys,
        "--ledger",
        ledger_url,
        "record",
        "A",
        D,
        str(MAX_ATTEMPT),
        "r1",
        "succeeded",
        "--started-at",
        "2026-10-23T07:00:00+00:00",
    )
    assert code == 0, err
    latest = ledger.latest("A", D)
    assert latest is not None and latest.attempt == MAX_ATTEMPT


def test_cli_subprocess_non_ascii_attempt_exits_2_without_traceback(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "gatekeeper.cli",
            "--ledger",
            sqlite_url,
            "record",
            "A",
            D,
            "\u0663",
            "r1",
            "succeeded",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        encoding="utf-8",
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "Traceback" not in done.stderr and "attempt" in done.stderr
    assert "InvalidInput" in done.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


# -- 3. names --------------------------------------------------------------------------------
BAD_NAMES = ["a\x00b", "a\ud800b", "", " x", "x "]


def _publish(ledger: gk.Ledger, **override: Any) -> Any:
    args: dict[str, Any] = {
        "consumer": "Sales",
        "business_date": D,
        "required_jobs": ["A"],
        "fingerprint": "fp-1",
    }
    args.update(override)
    return ledger.publish(**args)


def _republish(ledger: gk.Ledger, reason: Any) -> Any:
    return ledger.republish("Sales", D, ["A"], "fp-2", reason=reason)


# (field, how to pass the bad value)
NAME_CALLS: list[tuple[str, Callable[[gk.Ledger, Any], Any]]] = [
    ("job", lambda lg, v: lg.record(v, D, 1, "r1", "succeeded", T0)),
    ("job", lambda lg, v: lg.begin_attempt(v, D, "r1", lease_seconds=30, now=T0)),
    ("run_id", lambda lg, v: lg.record("B", D, 1, v, "succeeded", T0)),
    ("run_id", lambda lg, v: lg.begin_attempt("B", D, v, lease_seconds=30, now=T0)),
    ("consumer", lambda lg, v: _publish(lg, consumer=v)),
    ("fingerprint", lambda lg, v: _publish(lg, fingerprint=v)),
    ("location", lambda lg, v: _publish(lg, location=v)),
    ("reason", _republish),
    ("run_id", lambda lg, v: lg.heartbeat(v, lease_seconds=30, now=T0)),
    ("producer", lambda lg, v: _publish(lg, producer=v)),
    ("jobs[]", lambda lg, v: _publish(lg, required_jobs=["A", v])),
]


@pytest.mark.parametrize("value", BAD_NAMES, ids=ascii)
@pytest.mark.parametrize(
    ("field", "call"), NAME_CALLS, ids=[f"{f}-{i}" for i, (f, _) in enumerate(NAME_CALLS)]
)
def test_names_refused_on_every_write(
    ledger: gk.Ledger, field: str, call: Callable[[gk.Ledger, Any], Any], value: str
) -> None:
    succeed(ledger, "A", D)
    refuse(ledger, field, lambda: call(ledger, value))


@pytest.mark.parametrize("error", ["a\x00b", "a\ud800b"], ids=ascii)
def test_record_refuses_unstorable_error_text(ledger: gk.Ledger, error: str) -> None:
    """Free text (an error summary) may be blank or padded, but must be storable."""
    refuse(ledger, "error", lambda: ledger.record("A", D, 1, "r1", "failed", T0, error=error))
    assert ledger.record("A", D, 1, "r1", "failed", T0, error=" spaced ") is True


# -- 4. required jobs are (job, period) pairs ------------------------------------------------
@pytest.mark.parametrize("first_pair_then_literal", [True, False])
def test_publish_pair_and_literal_at_name_are_different_upstreams(
    ledger: gk.Ledger, first_pair_then_literal: bool
) -> None:
    succeed(ledger, "A", PREV)
    succeed(ledger, "A@2026-10-22", D)  # a job literally named so, for the same date
    pair: list[Any] = [("A", PREV)]
    literal: list[Any] = ["A@2026-10-22"]
    first, second = (pair, literal) if first_pair_then_literal else (literal, pair)
    assert ledger.publish("Sales", D, first, "fp-1") is True
    assert ledger.publish("Sales", D, first, "fp-1") is False  # a real retry stays a retry
    before = snapshot(ledger)
    with pytest.raises(gk.PublicationConflict):
        ledger.publish("Sales", D, second, "fp-1")
    assert snapshot(ledger) == before
    pub = ledger.publication("Sales", D)
    assert pub is not None
    expected = ("A", PREV) if first_pair_then_literal else ("A@2026-10-22", D)
    assert [(i.job, i.business_date) for i in pub.items] == [expected]


def test_readiness_keeps_pair_and_literal_at_name_apart(ledger: gk.Ledger) -> None:
    succeed(ledger, "A", PREV)
    ledger.record("A@2026-10-22", D, 1, "r-literal", "failed", T0)
    readiness = ledger.readiness([("A", PREV), "A@2026-10-22"], D)
    assert not readiness
    ledger.record("A@2026-10-22", D, 2, "r-literal-2", "succeeded", T0)
    assert ledger.readiness([("A", PREV), "A@2026-10-22"], D)
    assert ledger.publish("Sales", D, [("A", PREV), "A@2026-10-22"], "fp-1") is True
    pub = ledger.publication("Sales", D)
    assert pub is not None
    assert sorted((i.job, i.business_date, i.attempt) for i in pub.items) == [
        ("A", PREV, 1),
        ("A@2026-10-22", D, 2),
    ]


# -- 5. one period kind per job --------------------------------------------------------------
# (key already stored, foreign key refused)
KIND_CASES = [(D, HOUR), (HOUR, D)]


@pytest.mark.parametrize(("stored", "foreign"), KIND_CASES, ids=["daily-job", "hourly-job"])
def test_record_refuses_other_period_kind(ledger: gk.Ledger, stored: str, foreign: str) -> None:
    succeed(ledger, "A", stored)
    refuse(
        ledger,
        "business_date",
        lambda: ledger.record("A", foreign, 1, "r-foreign", "succeeded", T0),
    )


@pytest.mark.parametrize(("stored", "foreign"), KIND_CASES, ids=["daily-job", "hourly-job"])
def test_begin_attempt_refuses_other_period_kind(
    ledger: gk.Ledger, stored: str, foreign: str
) -> None:
    succeed(ledger, "A", stored)
    refuse(
        ledger,
        "business_date",
        lambda: ledger.begin_attempt("A", foreign, "r-foreign", lease_seconds=30, now=T0),
    )


def test_cli_record_refuses_other_period_kind(
    ledger: gk.Ledger, ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    succeed(ledger, "A", D)
    before = snapshot(ledger)
    code, _, err = cli(
        capsys,
        "--ledger",
        ledger_url,
        "record",
        "A",
        HOUR,
        "1",
        "r-h",
        "succeeded",
        "--started-at",
        "2026-10-23T07:00:00+00:00",
    )
    assert code == 2, err
    assert "business_date" in err and "Traceback" not in err
    assert "InvalidInput" in err
    assert snapshot(ledger) == before


def test_other_jobs_keep_their_own_period_kind(ledger: gk.Ledger) -> None:
    succeed(ledger, "Daily", D)
    assert ledger.record("Hourly", HOUR, 1, "r-h", "succeeded", T0) is True
    assert ledger.record("Daily", "2026-10-24", 1, "r-d", "succeeded", T0) is True


def test_planner_ignores_foreign_key_already_stored(
    ledger: gk.Ledger, ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    for day in ("2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04"):
        succeed(ledger, "A", day)
    with ledger.transaction():  # stored before the rule existed (or by hand)
        ledger.execute(
            "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, "
            "updated_at) VALUES (?, ?, 1, ?, 'succeeded', ?, ?)",
            ("A", "2026-10-05T05:00Z", "r-hourly", ledger.sql.ts_in(T0), ledger.sql.ts_in(T0)),
        )
    done = ledger.completed_periods("A", "2026-10-01", "2026-10-31")
    assert {"2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04"} <= done
    assert "2026-10-05" not in done
    code, out, err = cli(
        capsys,
        "--ledger",
        ledger_url,
        "status",
        "A",
        "--start",
        "2026-10-01",
        "--stop",
        "2026-11-01",
        "--now",
        "2026-11-02T00:00:00+00:00",
        "--lateness",
        "0s",
        "--timezone",
        "UTC",
        "--json",
    )
    assert code == 1, err  # gaps remain; not 2 (bad input) nor a crash
    plan = json.loads(out)
    assert plan["total"] == 31 and plan["complete_count"] == 4
    assert plan["contiguous_through"] == "2026-10-04"
    assert plan["gaps"][0] == "2026-10-05"


# -- 6. 2,500 required jobs ------------------------------------------------------------------
MANY = 2500


def _many_upstreams(ledger: gk.Ledger, failed: str | None = None) -> list[str]:
    jobs = [f"Up{i:04d}" for i in range(MANY)]
    with ledger.transaction():
        for job in jobs:
            state = "failed" if job == failed else "succeeded"
            ledger.record(job, D, 1, f"r-{job}", state, T0)
    return jobs


def test_publish_with_2500_required_jobs(ledger: gk.Ledger) -> None:
    jobs = _many_upstreams(ledger)
    readiness = ledger.readiness(jobs, D)
    assert readiness and len(readiness.evidence) == MANY
    assert ledger.publish("Wide", D, jobs, "fp-wide") is True
    pub = ledger.publication("Wide", D)
    assert pub is not None and len(pub.items) == MANY
    assert {i.run_id for i in pub.items} == {f"r-{j}" for j in jobs}
    assert ledger.publish("Wide", D, jobs, "fp-wide") is False


def test_readiness_of_2500_required_jobs_names_the_failed_one(ledger: gk.Ledger) -> None:
    jobs = _many_upstreams(ledger, failed="Up1234")
    readiness = ledger.readiness(jobs, D)
    assert not readiness
    assert dict(readiness.blockers) == {"Up1234": "failed"}
    before = snapshot(ledger)
    with pytest.raises(gk.NotReady, match="Up1234"):
        ledger.publish("Wide", D, jobs, "fp-wide")
    assert snapshot(ledger) == before


# -- 7. timestamps and leases ----------------------------------------------------------------
PLUS_ONE = dt.timezone(dt.timedelta(hours=1))
BAD_STARTED_AT = [
    dt.datetime(1, 1, 1, tzinfo=UTC),
    dt.datetime(1, 1, 1, 0, 30, tzinfo=PLUS_ONE),  # before year 1 in UTC
    dt.datetime(9999, 12, 31, tzinfo=UTC),
    dt.datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
    dt.datetime(2026, 10, 23, 7, 0),  # naive
]


@pytest.mark.parametrize("started_at", BAD_STARTED_AT, ids=str)
def test_record_refuses_started_at_out_of_range(ledger: gk.Ledger, started_at: dt.datetime) -> None:
    refuse(ledger, "started_at", lambda: ledger.record("A", D, 1, "r1", "succeeded", started_at))


@pytest.mark.parametrize(
    "started_at",
    [dt.datetime(1, 1, 2, 12, tzinfo=UTC), dt.datetime(9999, 11, 30, tzinfo=UTC)],
    ids=str,
)
def test_record_accepts_started_at_inside_range_and_reads_back(
    ledger: gk.Ledger, started_at: dt.datetime
) -> None:
    assert ledger.record("A", D, 1, "r1", "succeeded", started_at) is True
    latest = ledger.latest("A", D)
    assert latest is not None and latest.started_at == started_at


FAR_NOW = dt.datetime(9999, 12, 31, 23, 0, tzinfo=UTC)
# (operation, how to pass now=)
NOW_CALLS: list[tuple[str, Callable[[gk.Ledger, dt.datetime], Any]]] = [
    ("record", lambda lg, now: lg.record("B", D, 1, "r-b", "succeeded", T0, now=now)),
    ("begin_attempt", lambda lg, now: lg.begin_attempt("B", D, "r-b", lease_seconds=300, now=now)),
    ("heartbeat", lambda lg, now: lg.heartbeat("r-running", lease_seconds=300, now=now)),
    ("publish", lambda lg, now: lg.publish("Sales", D, ["A"], "fp-1", now=now)),
    ("republish", lambda lg, now: lg.republish("Sales", D, ["A"], "fp-1", reason="late", now=now)),
]


@pytest.mark.parametrize(
    "now",
    [FAR_NOW, dt.datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC), dt.datetime(1, 1, 1, tzinfo=UTC)],
    ids=str,
)
@pytest.mark.parametrize(("operation", "call"), NOW_CALLS, ids=[n for n, _ in NOW_CALLS])
def test_ledger_writes_refuse_now_out_of_range(
    ledger: gk.Ledger,
    operation: str,
    call: Callable[[gk.Ledger, dt.datetime], Any],
    now: dt.datetime,
) -> None:
    succeed(ledger, "A", D)
    ledger.begin_attempt("C", D, "r-running", lease_seconds=30, now=T0)
    refuse(ledger, "now", lambda: call(ledger, now))


def test_cli_status_refuses_now_past_9999(
    ledger: gk.Ledger, ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    before = snapshot(ledger)
    code, _, err = cli(
        capsys,
        "--ledger",
        ledger_url,
        "status",
        "A",
        "--start",
        "2026-10-01",
        "--stop",
        "2026-11-01",
        "--now",
        "9999-12-31T23:00:00+00:00",
        "--lateness",
        "0s",
        "--timezone",
        "UTC",
    )
    assert code == 2, err
    assert "now" in err and "Traceback" not in err
    assert "InvalidInput" in err and "OverflowError" not in err
    assert snapshot(ledger) == before


@pytest.mark.parametrize("started_at", ["0001-01-01T00:00:00+00:00", "9999-12-31T00:00:00+00:00"])
def test_cli_record_refuses_started_at_out_of_range(
    ledger: gk.Ledger, ledger_url: str, capsys: pytest.CaptureFixture[str], started_at: str
) -> None:
    before = snapshot(ledger)
    code, _, err = cli(
        capsys,
        "--ledger",
        ledger_url,
        "record",
        "A",
        D,
        "1",
        "r1",
        "succeeded",
        "--started-at",
        started_at,
    )
    assert code == 2, err
    assert "started_at" in err and "Traceback" not in err
    assert "InvalidInput" in err
    assert snapshot(ledger) == before


BAD_LEASES: list[Any] = [math.inf, -math.inf, math.nan, 0, 0.0, -1, WEEK + 1, True, "30"]


@pytest.mark.parametrize("lease", BAD_LEASES, ids=repr)
def test_begin_attempt_refuses_bad_lease(ledger: gk.Ledger, lease: Any) -> None:
    refuse(
        ledger,
        "lease_seconds",
        lambda: ledger.begin_attempt("A", D, "r1", lease_seconds=lease, now=T0),
    )


@pytest.mark.parametrize("lease", BAD_LEASES, ids=repr)
def test_heartbeat_refuses_bad_lease(ledger: gk.Ledger, lease: Any) -> None:
    ledger.begin_attempt("A", D, "r1", lease_seconds=30, now=T0)
    refuse(ledger, "lease_seconds", lambda: ledger.heartbeat("r1", lease_seconds=lease, now=T0))


@pytest.mark.parametrize("lease", [0.5, 30, WEEK, float(WEEK)], ids=repr)
def test_begin_attempt_accepts_lease_up_to_a_week(ledger: gk.Ledger, lease: float) -> None:
    started = ledger.begin_attempt("A", D, "r1", lease_seconds=lease, now=T0)
    assert started.lease_expires_at == T0 + dt.timedelta(seconds=lease)
    latest = ledger.latest("A", D)
    assert latest is not None and latest.lease_expires_at == T0 + dt.timedelta(seconds=lease)


# -- 8. Luigi parameters, checked when the task is built -------------------------------------
@pytest.mark.parametrize("attempt", [-1, 2**31, 2**63], ids=repr)
def test_task_refuses_bad_attempt_when_built(ledger_cfg: gk.Ledger, attempt: int) -> None:
    from tests.helpers.luigi_tasks import Trivial

    before = snapshot(ledger_cfg)
    with pytest.raises(gk.InvalidInput) as caught:
        Trivial(business_date=dt.date(2026, 10, 23), attempt=attempt)
    assert caught.value.field == "attempt"
    assert snapshot(ledger_cfg) == before and attempt_rows(ledger_cfg) == 0


@pytest.mark.parametrize("lease", ["inf", "nan", "0", "-5", "604801"])
def test_task_refuses_configured_lease_before_recording(ledger_cfg: gk.Ledger, lease: str) -> None:
    """``[gatekeeper] lease_seconds`` (or --gatekeeper-lease-seconds) out of range: the run is
    refused before any attempt is recorded, naming the option."""
    from tests.helpers.luigi_support import configure, failures_of
    from tests.helpers.luigi_tasks import Trivial

    before = snapshot(ledger_cfg)
    for _ in configure({"lease_seconds": lease}):
        messages = failures_of(Trivial(business_date=dt.date(2026, 10, 23)))
        assert any("InvalidInput" in m and "lease_seconds" in m for m in messages), messages
    assert snapshot(ledger_cfg) == before and attempt_rows(ledger_cfg) == 0


@pytest.mark.parametrize("attempt", [0, 1, MAX_ATTEMPT])
def test_task_accepts_attempt_in_range_when_built(ledger_cfg: gk.Ledger, attempt: int) -> None:
    from tests.helpers.luigi_tasks import Trivial

    task = Trivial(business_date=dt.date(2026, 10, 23), attempt=attempt)
    assert task.attempt == attempt


@pytest.mark.parametrize("reason", [" x", "x ", "", "a\x00b", "a\ud800b"], ids=ascii)
def test_gated_task_refuses_bad_republish_reason_when_built(
    ledger_cfg: gk.Ledger, reason: str
) -> None:
    from tests.helpers.luigi_tasks import ExternalGated

    before = snapshot(ledger_cfg)
    with pytest.raises(gk.InvalidInput) as caught:
        ExternalGated(business_date=dt.date(2026, 10, 23), republish_reason=reason)
    assert caught.value.field == "republish_reason"
    assert snapshot(ledger_cfg) == before and attempt_rows(ledger_cfg) == 0


def test_gated_task_accepts_plain_republish_reason(ledger_cfg: gk.Ledger) -> None:
    from tests.helpers.luigi_tasks import ExternalGated

    task = ExternalGated(business_date=dt.date(2026, 10, 23), republish_reason="late data")
    assert task.republish_reason == "late data"


@pytest.mark.parametrize(
    "args",
    [
        ("Trivial", "--business-date", D, "--attempt", "-1"),
        ("Trivial", "--business-date", D, "--attempt", "2147483648"),
    ],
    ids=["attempt=-1", "attempt=2**31"],
)
def test_luigi_command_refuses_bad_attempt_before_recording(
    ledger: gk.Ledger, ledger_url: str, tmp_path: Path, args: tuple[str, ...]
) -> None:
    from tests.helpers.luigi_support import run_luigi, write_config

    cfg = write_config(tmp_path, ledger_url)
    before = snapshot(ledger)
    done = run_luigi(cfg, "--module", "tests.helpers.luigi_tasks", *args, cwd=tmp_path)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "InvalidInput" in done.stdout + done.stderr and "attempt" in done.stdout + done.stderr
    assert attempt_rows(ledger) == 0 and snapshot(ledger) == before


# -- 9. a schema newer than the code ---------------------------------------------------------
WRITES: list[tuple[str, Callable[[gk.Ledger], Any]]] = [
    ("record", lambda lg: lg.record("B", D, 1, "r-b", "succeeded", T0)),
    ("begin_attempt", lambda lg: lg.begin_attempt("B", D, "r-b", lease_seconds=30, now=T0)),
    ("publish", lambda lg: lg.publish("Sales", D, ["A"], "fp-1")),
    ("republish", lambda lg: lg.republish("Sales", D, ["A"], "fp-1", reason="late")),
]


@pytest.mark.parametrize(("operation", "write"), WRITES, ids=[n for n, _ in WRITES])
def test_newer_schema_refused_by_ledger_opened_before(
    ledger: gk.Ledger, ledger_url: str, operation: str, write: Callable[[gk.Ledger], Any]
) -> None:
    succeed(ledger, "A", D, run_id="r-a")
    raw_sql(ledger_url, "UPDATE gk_schema SET version = 99")
    tables = ("gk_attempts", "gk_publications", "gk_evidence")
    before = {t: sorted(map(str, raw_sql(ledger_url, f"SELECT * FROM {t}"))) for t in tables}
    with pytest.raises(gk.GatekeeperError, match="99|[Vv]ersion") as caught:
        write(ledger)
    assert not isinstance(caught.value, gk.InvalidInput)
    assert "version" in str(caught.value).lower()
    after = {t: sorted(map(str, raw_sql(ledger_url, f"SELECT * FROM {t}"))) for t in tables}
    assert after == before
    assert raw_sql(ledger_url, "SELECT version FROM gk_schema") == [(99,)]


def test_newer_schema_refused_on_open(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url):
        pass
    raw_sql(ledger_url, "UPDATE gk_schema SET version = 99")
    with pytest.raises(gk.LedgerError, match="version 99"):
        gk.open_ledger(ledger_url)
