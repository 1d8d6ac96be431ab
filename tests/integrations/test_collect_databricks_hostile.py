"""``gatekeeper collect databricks`` against a hostile Jobs API: the real databricks-sdk
client, the local fake (tests/helpers/databricks_fake.py) serving listings that never end,
repeat themselves, or hold malformed and never-executed runs; real ledgers and the command."""

from __future__ import annotations

import datetime as dt
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.cli import main
from gatekeeper.integrations.collectors import databricks as dbx
from gatekeeper.integrations.collectors import databricks_states
from gatekeeper.integrations.collectors.databricks_api import Bounds, fetch_runs
from tests.helpers.databricks_fake import GET, LIST, T0_MS, state, status
from tests.helpers.databricks_support import at, clean_env, rows
from tests.helpers.ledgers import snapshot

H = 3_600_000  # an hour in epoch milliseconds
NOT_EXECUTED, MALFORMED = dbx.SkipKind.NOT_EXECUTED, dbx.SkipKind.MALFORMED


def entry(run_id: Any, *, start: Any = T0_MS, date: str | None = "2026-10-22", **more: Any) -> Any:
    """A raw runs/list entry with its (empty) repair history; ``life``/``result`` set state."""
    life, result = more.pop("life", "TERMINATED"), more.pop("result", "SUCCESS")
    run: dict[str, Any] = {
        "job_id": 42,
        "run_id": run_id,
        "original_attempt_run_id": run_id,
        "attempt_number": 0,
        "start_time": start,
        "state": state(life, result),
        "repair_history": [],
        **more,
    }
    if date is not None:
        run["job_parameters"] = [{"name": "business_date", "default": "", "value": date}]
    return run


def script(*pages: list[Any], last: str | None = None) -> dict[str, Any]:
    """runs/list answers by page token: page i points to token t{i+1}; the last to ``last``."""
    answers = {}
    for i, runs in enumerate(pages):
        body: dict[str, Any] = {"runs": runs, "has_more": False}
        token = f"t{i + 1}" if i + 1 < len(pages) else last
        if token:
            body.update(next_page_token=token, has_more=True)
        answers["" if i == 0 else f"t{i}"] = body
    return answers


def skips(report: dbx.CollectReport) -> dict[str | None, list[tuple[dbx.SkipKind, str]]]:
    found: dict[str | None, list[tuple[dbx.SkipKind, str]]] = {}
    for s in report.skipped:
        assert "\n" not in s.reason and s.reason.isprintable(), s.reason  # one printable line
        found.setdefault(s.run_id, []).append((s.kind, s.reason))
    return found


# -- bounded paging --------------------------------------------------------------------------------
def test_collect_endless_page_tokens_stop_at_max_pages(ledger: gk.Ledger, fake: Any) -> None:
    jobs, client, _ = fake
    jobs.add_run(1, start=T0_MS, date="2026-10-22")
    jobs.add_run(2, start=T0_MS + H, date="2026-10-23")
    jobs.endless = True  # a new next_page_token on every page, forever
    before = snapshot(ledger)
    with pytest.raises(dbx.ListingIncomplete, match=r"more than max_pages=5 pages; nothing rec"):
        dbx.collect(ledger, client, job_id=42, job="orders", max_pages=5)
    assert snapshot(ledger) == before
    assert len(jobs.list_queries()) == 5 and all(path == LIST for path, _ in jobs.requests)


def test_collect_endless_page_tokens_stop_within_the_time_budget(
    sqlite_url: str, fake: Any
) -> None:
    """The budget is read on the listing's clock: here each runs/list page served costs
    0.125 s of it, so pages start at 0, 0.125, 0.25 and 0.375 s and none at 0.5 s."""
    jobs, client, _ = fake
    jobs.add_run(1, start=T0_MS, date="2026-10-22")
    jobs.endless = True

    def clock() -> float:
        return 0.125 * len(jobs.list_queries())

    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
        with pytest.raises(dbx.ListingIncomplete, match=r"time budget of 0\.5 s spent before"):
            bounded = {"max_pages": 10**6, "time_budget": 0.5, "clock": clock}
            dbx.collect(ledger, client, job_id=42, job="orders", **bounded)
        assert snapshot(ledger) == before
    assert len(jobs.list_queries()) == 4  # none started once the clock reads the budget


def test_fetch_retry_delays_count_against_the_time_budget(fake: Any) -> None:
    """A retry whose delay would end past the budget is not slept: the listing stops."""
    jobs, client, _ = fake
    jobs.add_run(1, start=T0_MS, date="2026-10-22")
    for _ in range(4):
        jobs.fault(LIST, 502)
    now = [0.0]

    def sleep(seconds: float) -> None:
        now[0] += seconds  # the faked clock advances by what is slept

    with pytest.raises(dbx.ListingIncomplete, match=r"2\.5 s spent retrying runs/list page 1"):
        fetch_runs(client, 42, sleep=sleep, bounds=Bounds(10, 2.5), clock=lambda: now[0])
    assert now[0] == 1.0 and len(jobs.list_queries()) == 2


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        ("repeated_token", 'page 3 repeated page token "t1"; refusing to loop'),
        ("runs_not_a_list", 'page 2: runs is not a list: "not a list"'),
        ("has_more_without_token", "page 3 has_more without a next_page_token"),
    ],
)
def test_collect_a_listing_that_pages_wrongly_records_nothing(
    sqlite_url: str, fake: Any, fault: str, why: str
) -> None:
    jobs, client, _ = fake
    pages = [[entry(1)], [entry(2, date="2026-10-23")], [entry(3, date="2026-10-24")]]
    jobs.script = script(*pages, last="t1" if fault == "repeated_token" else None)
    if fault == "runs_not_a_list":
        jobs.script["t1"]["runs"] = "not a list"
    if fault == "has_more_without_token":
        jobs.script["t2"]["has_more"] = True
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
        with pytest.raises(dbx.ListingIncomplete, match=re.escape(why)):
            dbx.collect(ledger, client, job_id=42, job="orders")
        assert snapshot(ledger) == before


# -- malformed runs: reported one by one, the runs beside them recorded ------------------------
def test_collect_impossible_start_times_are_reported_beside_valid_runs(
    ledger: gk.Ledger, fake: Any
) -> None:
    jobs, client, _ = fake
    jobs.script = script(
        [entry(11, start=10**20), entry(12, start=-5, date="2026-10-23"), entry(14)],
        [entry(13, start="soon", date="2026-10-24"), entry(15, start=True, date="2026-10-25")],
    )
    report = dbx.collect(ledger, client, job_id=42, job="orders")
    assert rows(ledger) == [("2026-10-22", 1, "databricks:14", "succeeded")]
    found = skips(report)
    assert sorted(found) == [f"databricks:{n}" for n in (11, 12, 13, 15)]
    assert found["databricks:11"] == [
        (
            MALFORMED,
            "impossible start_time 100000000000000000000 (expected epoch milliseconds from "
            "0001-01-02 to 9999-12-01)",
        )
    ]
    assert 'impossible start_time "soon"' in found["databricks:13"][0][1]
    assert "impossible start_time true" in found["databricks:15"][0][1]


def test_collect_runs_without_a_run_id_are_reported_not_merged(
    ledger: gk.Ledger, fake: Any
) -> None:
    jobs, client, _ = fake
    nameless = entry(None, date="2026-10-23")
    del nameless["run_id"]
    jobs.script = script(
        [entry(None, start=T0_MS + 2 * H, result="FAILED"), entry(21), "\x1b[2Jgarbage"],
        [entry(None, start=T0_MS + 3 * H), nameless],
    )
    report = dbx.collect(ledger, client, job_id=42, job="orders")
    assert rows(ledger) == [("2026-10-22", 1, "databricks:21", "succeeded")]
    assert [kind for kind, _ in skips(report)[None]] == [MALFORMED] * 4
    reasons = [reason for _, reason in skips(report)[None]]
    assert reasons == [
        "page 1 item 1: no usable run_id (run_id null, expected a positive integer; start_time "
        '1792634400000, business_date ["2026-10-22"]): not recorded',
        'page 1 item 3 is not a JSON object: "\\u001b[2Jgarbage"',
        "page 2 item 1: no usable run_id (run_id null, expected a positive integer; start_time "
        '1792638000000, business_date ["2026-10-22"]): not recorded',
        "page 2 item 2: no usable run_id (run_id missing, expected a positive integer; "
        'start_time 1792627200000, business_date ["2026-10-23"]): not recorded',
    ]


def test_collect_contradictory_copies_across_pages_are_reported(
    ledger: gk.Ledger, fake: Any
) -> None:
    """A run listed twice (pages shift while read): identical copies are one run, a run that
    ended between the reads is taken as ended, any other difference records neither copy."""
    jobs, client, _ = fake
    jobs.script = script(
        [
            entry(31),
            entry(32, start=T0_MS + H, date="2026-10-23", life="RUNNING", result=None),
            entry(33, start=T0_MS + 2 * H, date="2026-10-24"),
            entry(34, start=T0_MS + 3 * H, date="2026-10-25"),
        ],
        [
            entry(31, date="2026-10-23"),
            entry(32, start=T0_MS + H, date="2026-10-23"),
            entry(33, start=T0_MS + 2 * H, date="2026-10-24"),
            entry(34, start=T0_MS + 3 * H, date="2026-10-25", life="RUNNING", result=None),
        ],
    )
    report = dbx.collect(ledger, client, job_id=42, job="orders")
    assert rows(ledger) == [
        ("2026-10-23", 1, "databricks:32", "succeeded"),
        ("2026-10-24", 1, "databricks:33", "succeeded"),
    ]
    found = skips(report)
    assert sorted(found) == ["databricks:31", "databricks:34"]
    (kind, reason), *_ = found["databricks:31"]
    assert kind is MALFORMED and reason.startswith("listed 2 times with different contents (")
    assert 'page 1 item 1: job_parameters.business_date="2026-10-22"' in reason
    assert 'page 2 item 1: job_parameters.business_date="2026-10-23"' in reason
    assert reason.endswith("); none recorded")
    assert 'state.life_cycle_state="RUNNING"' in found["databricks:34"][0][1]  # went back


def test_collect_repairs_without_an_id_are_reported_and_the_rest_recorded(
    ledger: gk.Ledger, fake: Any
) -> None:
    jobs, client, _ = fake
    jobs.add_run(41, start=T0_MS, result="FAILED", date="2026-10-22")
    for n in range(3):
        jobs.repair(41, 4101 + n, start=T0_MS + (n + 1) * H, result="FAILED" if n < 1 else None)
    jobs.set_state(41, "TERMINATED", "SUCCESS")
    history = jobs.runs[41]["repair_history"]
    del history[1]["id"]
    history[2]["id"] = None  # the last repair (4103) keeps its id
    jobs.add_run(42, start=T0_MS, result="FAILED", date="2026-10-23")
    jobs.repair(42, 4201, start=T0_MS + H)
    del jobs.runs[42]["repair_history"][1]["id"]  # its only repair succeeded, without an id
    report = dbx.collect(ledger, client, job_id=42, job="orders")
    assert rows(ledger) == [
        ("2026-10-22", 1, "databricks:41", "failed"),
        ("2026-10-22", 2, "databricks:41:repair:4103", "succeeded"),
        ("2026-10-23", 1, "databricks:42", "failed"),
    ]
    found = skips(report)
    assert [r for _, r in found["databricks:41"]] == [
        "repair_history[1] is a repair without a usable id (id null, start_time 1792630800000);"
        " its run's other executions are recorded",
        "repair_history[2] is a repair without a usable id (id null, start_time 1792634400000);"
        " its run's other executions are recorded",
    ]
    assert [k for k, _ in found["databricks:42"]] == [MALFORMED]
    ready = ledger.readiness(["orders"], "2026-10-22")
    assert ready and ready.evidence == {"orders": "databricks:41:repair:4103"}
    assert not ledger.readiness(["orders"], "2026-10-23")  # its repair unseen: fail closed


# -- runs that never executed ------------------------------------------------------------------
def test_collect_never_executed_runs_are_reported_not_attempts(
    ledger: gk.Ledger, fake: Any
) -> None:
    """They processed nothing: a date an earlier good run made ready stays ready; a run held
    as running (seen queued) that then never executes ends, as failed."""
    jobs, client, _ = fake
    jobs.page_size = 25
    jobs.add_run(51, start=T0_MS, date="2026-10-22")
    jobs.add_run(52, start=T0_MS + 1 * H, life="SKIPPED", result=None, date="2026-10-22")
    jobs.add_run(
        53, start=T0_MS + 2 * H, result="MAXIMUM_CONCURRENT_RUNS_REACHED", date="2026-10-22"
    )
    queued = jobs.add_run(
        54,
        start=T0_MS + 3 * H,
        date="2026-10-22",
        run_status=status("TERMINATED", "MAX_JOB_QUEUE_SIZE_EXCEEDED"),
    )
    del queued["state"]  # only the newer field
    jobs.add_run(55, start=T0_MS + 4 * H, result="EXCLUDED", date="2026-10-22")
    jobs.add_run(56, start=T0_MS + 5 * H, result="DISABLED", date="2026-10-22")
    jobs.add_run(
        57,
        start=T0_MS + 6 * H,
        result="EXCLUDED",
        date="2026-10-22",
        run_status=status("TERMINATED", "SKIPPED"),
    )
    jobs.add_run(61, start=T0_MS, life="QUEUED", result=None, date="2026-10-23")
    report = dbx.collect(ledger, client, job_id=42, job="orders")
    assert rows(ledger) == [
        ("2026-10-22", 1, "databricks:51", "succeeded"),
        ("2026-10-23", 1, "databricks:61", "running"),
    ]
    found = skips(report)
    assert sorted(found) == [f"databricks:{n}" for n in range(52, 58)]
    assert all(kind is NOT_EXECUTED for ((kind, _),) in found.values())
    assert found["databricks:54"][0][1] == (
        'never executed (status.state="TERMINATED" status.termination_details.code='
        '"MAX_JOB_QUEUE_SIZE_EXCEEDED"): not an attempt, it processed nothing'
    )
    ready = ledger.readiness(["orders"], "2026-10-22")
    assert ready and ready.evidence == {"orders": "databricks:51"}

    jobs.set_state(61, "TERMINATED", "DISABLED")
    again = dbx.collect(ledger, client, job_id=42, job="orders")
    assert (again.recorded, again.unchanged, len(again.skipped)) == (1, 1, 6)
    (ended,) = ledger.attempts("orders", "2026-10-23")
    assert ended.state is gk.RunState.FAILED and ended.started_at == at(T0_MS)
    assert ended.error == (
        'Databricks: never executed: state.life_cycle_state="TERMINATED" '
        'state.result_state="DISABLED"'
    )
    before = snapshot(ledger)
    third = dbx.collect(ledger, client, job_id=42, job="orders")
    assert (third.recorded, third.unchanged) == (0, 2) and snapshot(ledger) == before


# -- the state map covers the SDK ----------------------------------------------------------------
def test_state_map_maps_every_member_the_sdk_defines() -> None:
    from databricks.sdk.service import jobs as sdk

    keys = set(databricks_states.STATE_MAP)
    lifecycles = {life for field, life, _ in keys if field == "state"}
    results = {out for field, life, out in keys if (field, life) == ("state", "TERMINATED")}
    v2 = {life for field, life, _ in keys if field == "status"}
    codes = {out for field, life, out in keys if (field, life) == ("status", "TERMINATED")}
    assert {m.value for m in sdk.RunLifeCycleState} <= lifecycles
    assert {m.value for m in sdk.RunResultState} <= results
    assert {m.value for m in sdk.RunLifecycleStateV2State} <= v2
    assert {m.value for m in sdk.TerminationCodeCode} <= codes
    # a terminated run's outcome is always read, never assumed
    assert ("state", "TERMINATED", "*") not in keys and ("status", "TERMINATED", "*") not in keys
    source = Path(databricks_states.__file__).read_text()
    table = source.split("STATE_MAP: Mapping", 1)[1].split("\n)\n", 1)[0]
    lines = [line for line in table.splitlines() if line.strip().startswith('("')]
    assert len(lines) == len(keys) and all("  # " in line for line in lines)  # a comment each


def test_every_final_state_ends_a_running_attempt(sqlite_url: str, fake: Any) -> None:
    """Each row that is not RUNNING, as the end of a run first seen running (one date each)."""
    jobs, client, _ = fake
    jobs.page_size = 25
    final = sorted(
        (key, mapped)
        for key, mapped in databricks_states.STATE_MAP.items()
        if mapped is not gk.RunState.RUNNING
    )
    for n, _ in enumerate(final):
        date = (dt.date(2026, 1, 1) + dt.timedelta(days=n)).isoformat()
        jobs.add_run(2000 + n, start=T0_MS + n * H, life="RUNNING", result=None, date=date)
    with gk.open_ledger(sqlite_url) as ledger:
        assert dbx.collect(ledger, client, job_id=42, job="orders").recorded == len(final)
        for n, ((field, life, outcome), _) in enumerate(final):
            run = jobs.runs[2000 + n]
            value = None if outcome == databricks_states.ANY else outcome
            del run["state"]
            run["status" if field == "status" else "state"] = (
                status(life, value) if field == "status" else state(life, value)
            )
        report = dbx.collect(ledger, client, job_id=42, job="orders")
        assert report.skipped == () and report.recorded == len(final)
        ended = {int(a.run_id.split(":")[1]) - 2000: a for a in ledger.history("orders")}
    for n, (key, mapped) in enumerate(final):
        expected = gk.RunState.FAILED if mapped is dbx.NOT_EXECUTED else mapped
        assert ended[n].state is expected, key
        assert (mapped is dbx.NOT_EXECUTED) == ("never executed" in (ended[n].error or ""))


# -- any sequence of pages -------------------------------------------------------------------------
KINDS = {
    "SUCCESS": ("TERMINATED", "SUCCESS", "succeeded"),
    "FAILED": ("TERMINATED", "FAILED", "failed"),
    "RUNNING": ("RUNNING", None, "running"),
    "SKIPPED": ("SKIPPED", None, None),  # never executed
}
ENTRIES = st.one_of(
    st.tuples(st.just("run"), st.integers(1, 6), st.sampled_from(sorted(KINDS))),
    st.tuples(st.just("no_id"), st.just(0), st.just("SUCCESS")),
    st.tuples(st.just("bad_time"), st.integers(7, 8), st.sampled_from(["SUCCESS", "FAILED"])),
)
PAGES = st.lists(st.lists(ENTRIES, max_size=3), min_size=1, max_size=5)


def listed(base: int, kind: str, n: int, outcome: str) -> dict[str, Any]:
    """One generated entry, run ID ``base + n``: a run's date and start depend on ``n`` only,
    so its copies can differ by their state alone."""
    life, result, _ = KINDS[outcome]
    start = 10**20 if kind == "bad_time" else T0_MS + n * H
    run_id = base + n if n else None
    return entry(run_id, start=start, date=f"2026-10-2{n % 2}", life=life, result=result)


def model(base: int, pages: list[list[tuple[str, int, str]]]) -> tuple[list[Any], list[Any]]:
    """The rows and the skip kinds a whole listing of ``pages`` should give (by hand)."""
    copies: dict[int, list[str]] = {}
    skipped: list[tuple[str | None, dbx.SkipKind]] = []
    for kind, n, outcome in (e for page in pages for e in page):
        if kind == "no_id":
            skipped.append((None, MALFORMED))
        elif outcome not in copies.setdefault(n, []):
            copies[n].append(outcome)  # the fetch keeps distinct copies in reading order
    final: dict[int, str] = {}
    for n, states in copies.items():
        run_id = f"databricks:{base + n}"
        if n >= 7 or any(s != "RUNNING" for s in states[:-1]):
            skipped.append((run_id, MALFORMED))  # impossible start, or contradictory copies
        elif KINDS[states[-1]][2] is None:
            skipped.append((run_id, NOT_EXECUTED))
        else:
            final[n] = states[-1]
    found = []
    for date in ("2026-10-20", "2026-10-21"):
        ours = sorted(n for n in final if f"2026-10-2{n % 2}" == date)
        found += [
            (date, i, f"databricks:{base + n}", KINDS[final[n]][2]) for i, n in enumerate(ours, 1)
        ]
    return found, sorted(skipped, key=str)


EXAMPLES = iter(range(1, 10**6))  # one job and its own run IDs per example, in one ledger


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(pages=PAGES, repeat=st.booleans(), max_pages=st.integers(1, 6))
def test_collect_any_page_sequence_against_a_model(
    fake: Any,
    sqlite_url: str,
    pages: list[list[tuple[str, int, str]]],
    repeat: bool,
    max_pages: int,
) -> None:
    """Whatever the pages hold, the collection ends within its bounds; a listing read whole
    records exactly the model's attempts and reports the rest; one not read whole (a repeated
    token, more pages than max_pages) records nothing."""
    jobs, client, _ = fake
    repeat = repeat and len(pages) > 1
    example = next(EXAMPLES)
    job, base = f"orders{example}", 100 * example
    jobs.script = script(
        *[[listed(base, *e) for e in p] for p in pages], last="t1" if repeat else None
    )
    jobs.requests.clear()
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
        if repeat or len(pages) > max_pages:
            with pytest.raises(dbx.ListingIncomplete):
                dbx.collect(ledger, client, job_id=42, job=job, max_pages=max_pages)
            assert snapshot(ledger) == before
        else:
            report = dbx.collect(ledger, client, job_id=42, job=job, max_pages=max_pages)
            expected_rows, expected_skips = model(base, pages)
            assert rows(ledger, job) == expected_rows
            found = [(run_id, k) for run_id, kinds in skips(report).items() for k, _ in kinds]
            assert sorted(found, key=str) == expected_skips
            assert report.recorded == len(expected_rows)
    assert len(jobs.list_queries()) == min(len(pages), max_pages)
    assert not any(path == GET for path, _ in jobs.requests)


# -- the command (in process: the SDK is imported once) ----------------------------------------
def test_command_bounds_and_exit_codes(
    tmp_path: Path, fake: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """--max-pages beats $GATEKEEPER_DATABRICKS_MAX_PAGES; a bound reached exits 1 with nothing
    recorded; a bad bound exits 2 naming it; a malformed run exits 1, the others recorded; a
    never-executed run alone exits 0."""
    jobs, _, url = fake
    jobs.add_run(1, start=T0_MS, date="2026-10-22")
    jobs.add_run(2, start=T0_MS + H, date="2026-10-23")
    jobs.endless = True
    for name, value in clean_env(url, GATEKEEPER_DATABRICKS_MAX_PAGES="2").items():
        monkeypatch.setenv(name, value)
    ledger_url = f"sqlite:///{tmp_path / 'ledger.db'}"
    base = ["collect", "databricks", "--ledger", ledger_url, "--job-id", "42", "--job", "orders"]
    assert main([*base, "--max-pages", "3"]) == 1
    err = capsys.readouterr().err
    assert "ListingIncomplete" in err and "more than max_pages=3 pages" in err
    assert len(jobs.list_queries()) == 3
    assert main(base) == 1  # no flag: the environment's 2
    assert "more than max_pages=2 pages" in capsys.readouterr().err
    with gk.open_ledger(ledger_url) as ledger:
        assert rows(ledger) == []
        before = snapshot(ledger)
    for option, value, shown in (
        ("--max-pages", "0", "--max-pages='0': expected at least 1"),
        ("--time-budget", "1e9", "--time-budget=1000000000.0: expected seconds > 0 and at most"),
    ):
        assert main([*base, option, value]) == 2
        assert f"invalid {shown}" in capsys.readouterr().err
    monkeypatch.setenv("GATEKEEPER_DATABRICKS_TIME_BUDGET", "soon")
    assert main(base) == 2
    assert "invalid GATEKEEPER_DATABRICKS_TIME_BUDGET='soon'" in capsys.readouterr().err
    monkeypatch.delenv("GATEKEEPER_DATABRICKS_TIME_BUDGET")
    assert len(jobs.list_queries()) == 5  # nothing fetched for bad input
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before

    jobs.endless = False
    jobs.script = script(
        [entry(None, start=T0_MS + H), entry(3), entry(4, date="2026-10-23", result="EXCLUDED")]
    )
    assert main([*base, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["recorded"] == 1
    assert [(s["run_id"], s["kind"]) for s in report["skipped"]] == [
        (None, "malformed"),
        ("databricks:4", "not_executed"),
    ]
    jobs.script = script([entry(4, date="2026-10-23", result="EXCLUDED")])
    assert main(base) == 0
    assert "databricks:4  not_executed  never executed (" in capsys.readouterr().out
