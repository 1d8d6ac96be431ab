"""``gatekeeper collect databricks``: the real databricks-sdk against a local fake Jobs API
(tests/helpers/databricks_fake.py), real ledgers (SQLite and PostgreSQL) and the real command."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.integrations.collectors import databricks as dbx
from gatekeeper.integrations.collectors import databricks_states
from gatekeeper.integrations.collectors.databricks_api import CollectError, fetch_runs
from tests.helpers.databricks_fake import (
    GET,
    LIST,
    T0_MS,
    FakeJobs,
    state,
    status,
)
from tests.helpers.databricks_support import ROOT, at, clean_env, command, rows
from tests.helpers.ledgers import snapshot

H = 3_600_000  # an hour in epoch milliseconds
UTC = dt.timezone.utc


def workspace(jobs: FakeJobs) -> None:
    """Nine runs of job 42 (five pages of two): retries, repairs, a run without a date, a
    backfill dated by an overriding parameter and a run with only the newer status field."""
    jobs.add_run(201, start=T0_MS, date="2026-10-20")
    jobs.add_run(202, start=T0_MS + H, result="FAILED", date="2026-10-21")
    jobs.add_run(203, start=T0_MS + 2 * H, date="2026-10-21", original=202, attempt_number=1)
    jobs.add_run(204, start=T0_MS + 3 * H, result="FAILED", date="2026-10-22")
    jobs.repair(204, 7001, start=T0_MS + 5 * H, result="FAILED")
    jobs.repair(204, 7002, start=T0_MS + 6 * H)
    jobs.add_run(205, start=T0_MS + 4 * H)  # no business date
    jobs.add_run(206, start=T0_MS + 7 * H, life="RUNNING", result=None, date="2026-10-23")
    jobs.add_run(
        207, start=T0_MS + 8 * H, overriding={"notebook_params": {"business_date": "2026-10-19"}}
    )
    run = jobs.add_run(
        208, start=T0_MS + 9 * H, date="2026-10-24", run_status=status("TERMINATED", "SUCCESS")
    )
    del run["state"]  # only the newer field
    jobs.add_run(209, start=T0_MS + 10 * H, job_id=77, date="2026-10-24")  # another job


EXPECTED = [
    ("2026-10-19", 1, "databricks:207", "succeeded"),
    ("2026-10-20", 1, "databricks:201", "succeeded"),
    ("2026-10-21", 1, "databricks:202", "failed"),
    ("2026-10-21", 2, "databricks:203", "succeeded"),
    ("2026-10-22", 1, "databricks:204", "failed"),
    ("2026-10-22", 2, "databricks:204:repair:7001", "failed"),
    ("2026-10-22", 3, "databricks:204:repair:7002", "succeeded"),
    ("2026-10-23", 1, "databricks:206", "running"),
    ("2026-10-24", 1, "databricks:208", "succeeded"),
]


def test_collect_pages_throttling_retries_and_repairs(ledger: gk.Ledger, fake: Any) -> None:
    jobs, client, _ = fake
    workspace(jobs)
    for extra in range(4):  # more runs of job 42 for other dates: 12 runs, six pages of two
        jobs.add_run(300 + extra, start=T0_MS - (extra + 1) * H, date=f"2026-10-0{extra + 1}")
    jobs.fault(LIST, 429, page_token="page-4", headers={"Retry-After": "0"})
    report = dbx.collect(ledger, client, job_id=42, job="orders")

    assert report.recorded == 13 and report.unchanged == 0
    assert [(s.run_id, s.kind) for s in report.skipped] == [
        ("databricks:205", dbx.SkipKind.NO_DATE)
    ]
    assert "never dated by its start time" in report.skipped[0].reason
    assert rows(ledger)[4:] == EXPECTED
    assert [a.started_at for a in ledger.attempts("orders", "2026-10-22")] == [
        at(T0_MS + 3 * H),
        at(T0_MS + 5 * H),
        at(T0_MS + 6 * H),
    ]
    assert ledger.attempts("orders", "2026-10-21")[0].error == (
        'Databricks: state.life_cycle_state="TERMINATED" state.result_state="FAILED"'
    )
    tokens = [q.get("page_token", "") for q in jobs.list_queries()]
    assert tokens == ["", "page-2", "page-4", "page-4", "page-6", "page-8", "page-10"]
    assert all(q["job_id"] == "42" and "start_time_from" not in q for q in jobs.list_queries())
    gets = [q for path, q in jobs.requests if path == GET]
    assert len(gets) == 12 and all(q["include_history"] == "true" for q in gets)
    ready = ledger.readiness(["orders"], "2026-10-22")
    assert ready and ready.evidence == {"orders": "databricks:204:repair:7002"}
    assert not ledger.readiness(["orders"], "2026-10-23")


def test_collect_again_records_nothing(ledger: gk.Ledger, fake: Any) -> None:
    jobs, client, _ = fake
    workspace(jobs)
    dbx.collect(ledger, client, job_id=42, job="orders")
    before = snapshot(ledger)
    again = dbx.collect(ledger, client, job_id=42, job="orders")
    assert (again.recorded, again.unchanged) == (0, 9)
    assert [s.run_id for s in again.skipped] == ["databricks:205"]
    assert snapshot(ledger) == before


def test_collect_running_run_terminates_between_collections(ledger: gk.Ledger, fake: Any) -> None:
    jobs, client, _ = fake
    jobs.add_run(401, start=T0_MS, life="RUNNING", result=None, date="2026-10-22")
    assert dbx.collect(ledger, client, job_id=42, job="orders").recorded == 1
    assert rows(ledger) == [("2026-10-22", 1, "databricks:401", "running")]
    jobs.set_state(401, "TERMINATING")
    assert dbx.collect(ledger, client, job_id=42, job="orders").unchanged == 1
    jobs.set_state(401, "TERMINATED", "TIMEDOUT")
    report = dbx.collect(ledger, client, job_id=42, job="orders")
    assert (report.recorded, report.unchanged, report.skipped) == (1, 0, ())
    (attempt,) = ledger.attempts("orders", "2026-10-22")
    assert attempt.state is gk.RunState.FAILED and attempt.started_at == at(T0_MS)
    assert attempt.error is not None and '"TIMEDOUT"' in attempt.error


def test_collect_late_run_is_out_of_order(ledger: gk.Ledger, fake: Any) -> None:
    jobs, client, _ = fake
    jobs.add_run(501, start=T0_MS + 2 * H, result="FAILED", date="2026-10-22")
    dbx.collect(ledger, client, job_id=42, job="orders")
    jobs.add_run(502, start=T0_MS + H, date="2026-10-22")  # started earlier, seen later
    jobs.add_run(503, start=T0_MS + 3 * H, date="2026-10-22")
    report = dbx.collect(ledger, client, job_id=42, job="orders")
    assert (report.recorded, report.unchanged) == (1, 1)
    (skip,) = report.skipped
    assert skip.run_id == "databricks:502" and skip.kind is dbx.SkipKind.OUT_OF_ORDER
    assert "attempt 1 (run databricks:501" in skip.reason
    assert rows(ledger) == [
        ("2026-10-22", 1, "databricks:501", "failed"),
        ("2026-10-22", 2, "databricks:503", "succeeded"),
    ]


def test_collect_unknown_states_are_reported_raw_not_recorded(sqlite_url: str, fake: Any) -> None:
    jobs, client, _ = fake
    jobs.add_run(601, start=T0_MS, life="HIBERNATING", result=None, date="2026-10-22")
    jobs.add_run(602, start=T0_MS + H, result="EXPLODED", date="2026-10-23")
    jobs.add_run(
        603,
        start=T0_MS + 2 * H,
        date="2026-10-24",
        run_status=status("TERMINATED", "RUN_EXECUTION_ERROR"),
    )  # they disagree
    jobs.add_run(604, start=T0_MS + 3 * H, date="2026-10-25")
    typed = {r.run_id: r for r in client.jobs.list_runs(job_id=42)}
    assert typed[601].state.life_cycle_state is None  # why the collector reads raw JSON
    with gk.open_ledger(sqlite_url) as ledger:
        report = dbx.collect(ledger, client, job_id=42, job="orders")
        assert rows(ledger) == [("2026-10-25", 1, "databricks:604", "succeeded")]
    reasons = {s.run_id: s.reason for s in report.unknown_states}
    assert sorted(reasons) == ["databricks:601", "databricks:602", "databricks:603"]
    assert 'state.life_cycle_state="HIBERNATING"' in reasons["databricks:601"]
    assert 'state.result_state="EXPLODED"' in reasons["databricks:602"]
    assert reasons["databricks:601"].startswith("state not in the map: ")
    assert reasons["databricks:603"].startswith("state and status disagree: ")
    assert 'status.termination_details.code="RUN_EXECUTION_ERROR"' in reasons["databricks:603"]


def test_collect_dates_from_parameters_or_refuses(sqlite_url: str, fake: Any) -> None:
    jobs, client, _ = fake
    jobs.add_run(701, start=T0_MS, date="2026-10-22", date_param="ds")
    jobs.add_run(702, start=T0_MS + H, overriding={"python_named_params": {"ds": "2026-10-23"}})
    jobs.add_run(703, start=T0_MS + 2 * H, date="yesterday", date_param="ds")
    jobs.add_run(
        704,
        start=T0_MS + 3 * H,
        date="2026-10-24",
        date_param="ds",
        overriding={"job_parameters": {"ds": "2026-10-25"}},
    )
    jobs.add_run(705, start=T0_MS + 4 * H, date="2026-10-24")  # business_date, not ds
    with gk.open_ledger(sqlite_url) as ledger:
        report = dbx.collect(ledger, client, job_id=42, job="orders", date_param="ds")
        assert rows(ledger) == [
            ("2026-10-22", 1, "databricks:701", "succeeded"),
            ("2026-10-23", 1, "databricks:702", "succeeded"),
        ]
    kinds = {s.run_id: (s.kind, s.reason) for s in report.skipped}
    assert kinds["databricks:703"][0] is dbx.SkipKind.BAD_DATE
    assert "'yesterday'" in kinds["databricks:703"][1]
    assert kinds["databricks:704"][0] is dbx.SkipKind.BAD_DATE
    assert "disagree" in kinds["databricks:704"][1]
    assert kinds["databricks:705"][0] is dbx.SkipKind.NO_DATE


def test_collect_terminal_state_contradicting_the_ledger_is_a_conflict(
    sqlite_url: str, fake: Any
) -> None:
    jobs, client, _ = fake
    jobs.add_run(801, start=T0_MS, date="2026-10-22")
    jobs.add_run(802, start=T0_MS, life="RUNNING", result=None, date="2026-10-23")  # stale
    jobs.add_run(803, start=T0_MS, date="2026-10-24")  # its run ID is another job's
    jobs.add_run(804, start=T0_MS + H, date="2026-10-24")
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("orders", "2026-10-22", 1, "databricks:801", "failed", at(T0_MS))
        ledger.record("orders", "2026-10-23", 1, "databricks:802", "succeeded", at(T0_MS))
        ledger.record("other", "2026-10-24", 1, "databricks:803", "succeeded", at(T0_MS))
        before = snapshot(ledger)
        report = dbx.collect(ledger, client, job_id=42, job="orders")
        assert snapshot(ledger) == before
    assert (report.recorded, report.unchanged) == (0, 1)  # a late "running" is a replay
    reasons = {s.run_id: s.reason for s in report.conflicts}
    assert "attempt 1 is failed in the ledger" in reasons["databricks:801"]
    assert "already belongs to other 2026-10-24 attempt 1" in reasons["databricks:803"]
    assert reasons["databricks:804"] == (
        "not recorded: an earlier run of orders 2026-10-24 was refused"
    )  # no attempt 2 without attempt 1


def test_collect_since_is_start_time_from(sqlite_url: str, fake: Any) -> None:
    jobs, client, _ = fake
    jobs.add_run(901, start=T0_MS, date="2026-10-21")
    jobs.add_run(902, start=T0_MS + 2 * H, date="2026-10-22")
    with gk.open_ledger(sqlite_url) as ledger:
        dbx.collect(ledger, client, job_id=42, job="orders", since="2026-10-22T02:00:00+01:00")
        assert rows(ledger) == [("2026-10-22", 1, "databricks:902", "succeeded")]
    assert [q["start_time_from"] for q in jobs.list_queries()] == [str(T0_MS + H)]


def test_fetch_retries_5xx_with_backoff_then_gives_up(fake: Any) -> None:
    jobs, client, _ = fake
    for n in range(5):
        jobs.add_run(950 + n, start=T0_MS + n * H, date="2026-10-22")
    jobs.fault(LIST, 502, page_token="page-2")
    jobs.fault(GET, 500)
    slept: list[float] = []
    assert len(fetch_runs(client, 42, sleep=slept.append)) == 5
    assert slept == [1.0, 1.0]
    for _ in range(4):
        jobs.fault(LIST, 504)
    slept.clear()
    with pytest.raises(CollectError, match="runs/list"):
        fetch_runs(client, 42, sleep=slept.append)
    assert slept == [1.0, 2.0, 4.0]


def test_collect_refuses_a_page_token_that_repeats(sqlite_url: str, fake: Any) -> None:
    jobs, client, _ = fake
    for n in range(5):
        jobs.add_run(960 + n, start=T0_MS + n * H, date="2026-10-22")
    jobs.stuck_token = "page-2"
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
        with pytest.raises(dbx.ListingIncomplete, match='repeated page token "page-2"'):
            dbx.collect(ledger, client, job_id=42, job="orders")
        assert snapshot(ledger) == before
    assert [q.get("page_token", "") for q in jobs.list_queries()] == ["", "page-2"]


@pytest.mark.parametrize(
    ("kwargs", "field", "shown"),
    [
        ({"job_id": 0}, "job_id", "0"),
        ({"job_id": "4x2"}, "job_id", "'4x2'"),
        ({"job_id": True}, "job_id", "True"),
        ({"job": " orders"}, "job", "' orders'"),
        ({"date_param": ""}, "date_param", "''"),
        ({"since": "2026-10-22T00:00"}, "since", "'2026-10-22T00:00'"),
        ({"max_pages": 0}, "max_pages", "0"),
        ({"max_pages": True}, "max_pages", "True"),
        ({"max_pages": "5"}, "max_pages", "'5'"),
        ({"time_budget": float("nan")}, "time_budget", "nan"),
        ({"time_budget": 0}, "time_budget", "0"),
        ({"time_budget": 86_401}, "time_budget", "86401"),
    ],
)
def test_collect_bad_input_is_refused_before_anything(
    sqlite_url: str, fake: Any, kwargs: dict[str, Any], field: str, shown: str
) -> None:
    jobs, client, _ = fake
    jobs.add_run(990, start=T0_MS, date="2026-10-22")
    arguments = {"job_id": 42, "job": "orders", **kwargs}
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
        with pytest.raises(InvalidInput, match=f"invalid {field}={shown}") as caught:
            dbx.collect(ledger, client, **arguments)
        assert caught.value.field == field
        assert snapshot(ledger) == before
    assert jobs.requests == []


# -- the planner against a reference model ------------------------------------------------------
BASE = dt.datetime(2026, 10, 22, tzinfo=UTC)
STATES = st.sampled_from(
    [gk.RunState.RUNNING, gk.RunState.SUCCEEDED, gk.RunState.FAILED, dbx.NOT_EXECUTED]
)
RUNS = st.dictionaries(st.integers(1, 9), st.tuples(st.integers(0, 30), STATES), max_size=7)


def observations_of(runs: dict[int, tuple[int, Any]]) -> list[dbx.Observation]:
    return [
        dbx.Observation(
            f"databricks:{n}",
            "2026-10-22",
            BASE + dt.timedelta(minutes=m),
            state,
            state.value,
            (n,),
        )
        for n, (m, state) in runs.items()
    ]


def applied(held: list[gk.Attempt], plan: dbx.Plan) -> list[gk.Attempt]:
    """The reference ledger: each action replaces or appends its attempt."""
    out = {a.attempt: a for a in held}
    for act in plan.actions:
        out[act.attempt] = gk.Attempt(
            "orders",
            act.business_date,
            act.attempt,
            act.run_id,
            act.state,
            act.started_at,
            act.started_at,
        )
    return [out[k] for k in sorted(out)]


@settings(max_examples=150, deadline=None)
@given(first=RUNS, later=RUNS)
def test_plan_attempts_against_a_model(
    first: dict[int, tuple[int, Any]], later: dict[int, tuple[int, Any]]
) -> None:
    """Two collections: the second sees the first's runs (perhaps finished) and new ones. A
    run never executed is never an attempt; one held as running ends as failed."""
    finished = {
        n: (m, later[n][1] if state is gk.RunState.RUNNING and n in later else state)
        for n, (m, state) in first.items()
    }  # a running run may have ended since
    held: list[gk.Attempt] = []
    for runs in (first, {**later, **finished}):
        seen = observations_of(runs)
        plan = dbx.plan_attempts("orders", seen, {"2026-10-22": held})
        assert len(plan.actions) + plan.unchanged + len(plan.skipped) == len(seen)
        known = {a.run_id: a for a in held}
        floor = max((a.started_at for a in held), default=None)
        expected_new = sorted(
            (
                o
                for o in seen
                if o.run_id not in known
                and o.state is not dbx.NOT_EXECUTED
                and (floor is None or o.started_at > floor)
            ),
            key=lambda o: (o.started_at, o.order),
        )
        never = [s for s in plan.skipped if s.kind is dbx.SkipKind.NOT_EXECUTED]
        assert len(never) == sum(
            o.state is dbx.NOT_EXECUTED and o.run_id not in known for o in seen
        )
        new = [a for a in plan.actions if a.run_id not in known]
        assert [a.run_id for a in new] == [o.run_id for o in expected_new]
        assert [a.attempt for a in new] == list(range(len(held) + 1, len(held) + 1 + len(new)))
        for act in plan.actions:
            if act.run_id in known:  # only a running attempt moves, to a terminal state
                assert known[act.run_id].state is gk.RunState.RUNNING and act.state.terminal
                if runs[int(act.run_id.split(":")[1])][1] is dbx.NOT_EXECUTED:
                    assert act.state is gk.RunState.FAILED and "never executed" in str(act.error)
        held = applied(held, plan)
        assert [a.attempt for a in held] == list(range(1, len(held) + 1))
        starts = [a.started_at for a in held]
        assert starts == sorted(starts)  # runs started in the same millisecond: by run ID
        again = dbx.plan_attempts("orders", seen, {"2026-10-22": held})
        assert again.actions == ()


# -- the state map, row by row -------------------------------------------------------------------
def item_for(field: str, life: Any, outcome: Any) -> dict[str, Any]:
    return (
        {"state": state(life, outcome)} if field == "state" else {"status": status(life, outcome)}
    )


@pytest.mark.parametrize(
    ("key", "expected"),
    sorted(dbx.STATE_MAP.items()),
    ids=lambda v: "/".join(v) if isinstance(v, tuple) else str(v),
)
def test_state_map_row(key: tuple[str, str, str], expected: gk.RunState) -> None:
    field, life, outcome = key
    outcomes = [None, "SUCCESS", "FAILED"] if outcome == databricks_states.ANY else [outcome]
    for value in outcomes:
        found, raw = dbx.resolve_state(item_for(field, life, value))
        assert found is expected, (key, value, raw)
        assert json.dumps(life) in raw


@pytest.mark.parametrize(
    ("field", "life", "outcome"),
    [
        ("state", "TERMINATED", None),
        ("state", "TERMINATED", "EXPLODED"),
        ("state", "SKIPPED_LATER", None),
        ("state", "HIBERNATING", None),
        ("state", None, None),
        ("state", "terminated", "SUCCESS"),
        ("status", "TERMINATED", None),
        ("status", "TERMINATED", "disabled"),
        ("status", "WAITING_FOR_RETRY", None),
        ("status", "TERMINATED", "FAILED"),
    ],
)
def test_state_map_leaves_anything_else_uninterpreted(field: str, life: Any, outcome: Any) -> None:
    found, raw = dbx.resolve_state(item_for(field, life, outcome))
    assert found is None and json.dumps(outcome) in raw


def test_state_map_every_row_through_the_sdk(sqlite_url: str, fake: Any) -> None:
    """Each row of the table as one run (one business date each) through the whole path."""
    jobs, client, _ = fake
    jobs.page_size = 25
    expected = {}
    for n, ((field, life, outcome), mapped) in enumerate(sorted(dbx.STATE_MAP.items())):
        date = (dt.date(2026, 1, 1) + dt.timedelta(days=n)).isoformat()
        value = None if outcome == databricks_states.ANY else outcome
        run = jobs.add_run(
            1000 + n,
            start=T0_MS + n * H,
            date=date,
            run_status=status(life, value) if field == "status" else None,
        )
        if field == "status":
            del run["state"]
        else:
            run["state"] = state(life, value)
        expected[date] = mapped.value
    never = {d for d, s in expected.items() if s == dbx.NOT_EXECUTED.value}
    with gk.open_ledger(sqlite_url) as ledger:
        report = dbx.collect(ledger, client, job_id=42, job="orders")
        assert {d: s for d, _, _, s in rows(ledger)} == {
            d: s for d, s in expected.items() if d not in never
        }
    assert report.recorded == len(dbx.STATE_MAP) - len(never) and len(never) == 8
    assert {s.kind for s in report.skipped} == {dbx.SkipKind.NOT_EXECUTED}
    assert len(report.skipped) == len(never)


# -- the command -----------------------------------------------------------------------------------
@pytest.mark.slow
def test_command_collect_json_and_exit_codes(tmp_path: Path, fake: Any) -> None:
    jobs, _, url = fake
    workspace(jobs)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    base = ("collect", "databricks", "--ledger", ledger_url, "--job-id", "42", "--job", "orders")
    done = command(*base, "--json", env=clean_env(url))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "recorded": 9,
        "unchanged": 0,
        "skipped": [
            {
                "run_id": "databricks:205",
                "kind": "no_date",
                "reason": "no business_date parameter (a run is never dated by its start time)",
            }
        ],
    }
    with gk.open_ledger(ledger_url) as ledger:
        assert rows(ledger) == EXPECTED
        before = snapshot(ledger)
    jobs.add_run(210, start=T0_MS + 11 * H, result="EXPLODED", date="2026-10-25")
    done = command(*base, env=clean_env(url))
    assert done.returncode == 1, done.stderr
    assert "recorded 0, unchanged 9, skipped 2" in done.stdout
    assert 'state.result_state="EXPLODED"' in done.stdout
    for option, value in (("--job-id", "-42"), ("--since", "yesterday")):
        args = [*base[:-4], "--job-id", "42", "--job", "orders", option, value]
        done = command(*args, env=clean_env(url))
        assert done.returncode == 2
        assert f"invalid {option}='{value}'" in done.stderr
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before
    fresh = tmp_path / "never.db"
    done = command(
        "collect",
        "databricks",
        "--ledger",
        f"sqlite:///{fresh}",
        "--job-id",
        "x",
        "--job",
        "orders",
        env=clean_env(url),
    )
    assert done.returncode == 2 and "invalid --job-id='x'" in done.stderr
    assert not fresh.exists()


@pytest.mark.slow
def test_command_without_databricks_sdk_says_what_to_install(tmp_path: Path) -> None:
    hidden = tmp_path / "hide" / "databricks"
    hidden.mkdir(parents=True)
    (hidden / "__init__.py").write_text("raise ImportError('databricks-sdk hidden by a test')\n")
    env = clean_env("http://127.0.0.1:9", PYTHONPATH=str(hidden.parent))
    imported = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gatekeeper, gatekeeper.cli, gatekeeper.integrations.collectors."
            "databricks\ntry:\n import databricks.sdk\nexcept ImportError:\n print('hidden')",
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert imported.returncode == 0 and imported.stdout == "hidden\n", imported.stderr
    db = tmp_path / "ledger.db"
    done = command(
        "collect",
        "databricks",
        "--ledger",
        f"sqlite:///{db}",
        "--job-id",
        "42",
        "--job",
        "orders",
        env=env,
        process=True,  # the SDK hidden from a fresh interpreter
    )
    assert done.returncode == 1
    assert "pip install 'luigi-gatekeeper[databricks]'" in done.stderr
    assert not db.exists()


@pytest.mark.slow
def test_command_ledger_conflict_exits_3(tmp_path: Path, fake: Any) -> None:
    jobs, _, url = fake
    jobs.add_run(1201, start=T0_MS, date="2026-10-22")
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with gk.open_ledger(ledger_url) as ledger:
        ledger.record("other", "2026-10-22", 1, "databricks:1201", "succeeded", at(T0_MS))
        before = snapshot(ledger)
    done = command(
        "--json",
        "collect",
        "databricks",
        "--ledger",
        ledger_url,
        "--job-id",
        "42",
        "--job",
        "orders",
        env=clean_env(url),
    )
    assert done.returncode == 3, done.stderr
    (skip,) = json.loads(done.stdout)["skipped"]
    assert skip["run_id"] == "databricks:1201" and skip["kind"] == "conflict"
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before


@pytest.mark.slow
def test_readme_example_runs_as_written(tmp_path: Path) -> None:
    """The docs' example (docs/databricks.md), on a free port, in a scratch directory: its output
    as shown."""
    page = (ROOT / "docs" / "databricks.md").read_text()
    block = page.split("```bash\n", 1)[1].split("```\n", 1)[0]
    script = "\n".join(line for line in block.splitlines() if not line.startswith("#"))
    shown = [line[4:] for line in block.splitlines() if line.startswith("#   ")]
    assert len(shown) == 6
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    env = {
        **clean_env("unused"),
        "PYTHONPATH": str(ROOT),
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }
    shell = subprocess.Popen(
        ["bash", "-ec", script.replace("8765", port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = shell.communicate(timeout=60)
    finally:  # the fake server, if the script stopped before its kill
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)
    done = subprocess.CompletedProcess(shell.args, shell.returncode, stdout, stderr)
    assert done.returncode == 0, done.stderr
    lines = [line.rstrip() for line in done.stdout.splitlines()]
    assert all(line in lines for line in shown), (shown, lines)
    assert (tmp_path / "databricks-demo.db").exists()
