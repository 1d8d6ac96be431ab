"""``gatekeeper status`` (every period in one state) and ``gatekeeper jobs``, on both backends.

The ledger is real (a SQLite file, a PostgreSQL schema); only the clock is fixed (``now=``,
``--now``). Tables, exit codes and JSON are read in process through ``gatekeeper.cli.main``
(``tests/helpers/in_process.py``).
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from gatekeeper.cli.status_text import run_rows
from gatekeeper.core.schedule import Schedule
from gatekeeper.report.states import PeriodState, PeriodStatus, collapse, counts, window_states
from gatekeeper.report.windows import JobWindow
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import snapshot

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 10, 8, 7, 0, tzinfo=UTC)
WINDOW = (
    "--start",
    "2026-10-01",
    "--stop",
    "2026-10-11",
    "--now",
    NOW.isoformat(),
    "--lateness",
    "0s",
    "--timezone",
    "UTC",
)

#: The Sales scenario, period by period (``sales`` builds it): every state appears.
EXPECTED = {
    "2026-10-01": (PeriodState.SUCCEEDED, 1, None),
    "2026-10-02": (PeriodState.SKIPPED, None, None),  # outside catchup last:4, never tried
    "2026-10-03": (PeriodState.FAILED, 1, None),  # outside last:4 but tried: failed
    "2026-10-04": (PeriodState.RUNNING, 2, None),  # attempt 1 succeeded, 2 holds a lease
    "2026-10-05": (PeriodState.MISSING, None, None),
    "2026-10-06": (PeriodState.ABANDONED, 1, None),  # running, lease expired before NOW
    "2026-10-07": (PeriodState.SUCCEEDED, 1, 2),  # published, then republished
    "2026-10-08": (PeriodState.NOT_DUE, None, None),
    "2026-10-09": (PeriodState.NOT_DUE, None, None),
    "2026-10-10": (PeriodState.NOT_DUE, None, None),
}


def at(hours: float) -> dt.datetime:
    """NOW shifted by ``hours``."""
    return NOW + dt.timedelta(hours=hours)


def sales(ledger: gk.Ledger) -> None:
    """Build the Sales scenario of EXPECTED (Sales publishes, requiring Upstream)."""
    ledger.record("Sales", "2026-10-01", 1, "r-01", "succeeded", at(-150), now=at(-149))
    ledger.record(
        "Sales", "2026-10-03", 1, "r-03", "failed", at(-100), error="disk full", now=at(-99)
    )
    ledger.record("Sales", "2026-10-04", 1, "r-04-1", "succeeded", at(-80), now=at(-79))
    ledger.begin_attempt("Sales", "2026-10-04", "r-04-2", lease_seconds=3600, now=at(-0.25))
    ledger.begin_attempt("Sales", "2026-10-06", "r-06", lease_seconds=60, now=at(-2))
    ledger.record("Upstream", "2026-10-07", 1, "u-07", "succeeded", at(-3), now=at(-3))
    ledger.begin_attempt("Sales", "2026-10-07", "r-07", lease_seconds=3600, now=at(-1))
    ledger.publish("Sales", "2026-10-07", ["Upstream"], "fp-1", producer="r-07", now=at(-0.9))
    ledger.record("Sales", "2026-10-07", 1, "r-07", "succeeded", at(-1), now=at(-0.8))
    ledger.republish("Sales", "2026-10-07", ["Upstream"], "fp-2", reason="late data", now=at(-0.5))


def window(**given: Any) -> JobWindow:
    """A JobWindow of the Schedule ``given`` names (``Schedule.parse``), requiring nothing."""
    return JobWindow(Schedule.parse(**given))


def status(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str]:
    """Run ``gatekeeper status`` in-process; return its exit code and stdout."""
    code = main(["--ledger", url, "status", *args])
    return code, capsys.readouterr().out


def test_window_states_every_state(ledger: gk.Ledger) -> None:
    sales(ledger)
    plan, states = window_states(
        ledger,
        "Sales",
        now=NOW,
        window=window(start="2026-10-01", stop="2026-10-11", lateness="0s", catchup="last:4"),
    )
    assert plan.describe().startswith("filled 2/7, contiguous through 2026-10-01")
    found = {s.period: (s.state, s.attempt, s.revision) for s in states}
    assert found == EXPECTED
    by_period = {s.period: s for s in states}
    assert by_period["2026-10-03"].error == "disk full"
    assert by_period["2026-10-04"].lease_expires_at == at(0.75)
    assert by_period["2026-10-04"].run_id == "r-04-2"
    assert by_period["2026-10-06"].error == (
        f"running, but its lease expired at {at(-2 + 1 / 60).isoformat()}"
    )
    assert by_period["2026-10-07"].evidence == {"Upstream": "u-07"}
    assert counts(states) == {
        PeriodState.SUCCEEDED: 2,
        PeriodState.FAILED: 1,
        PeriodState.RUNNING: 1,
        PeriodState.ABANDONED: 1,
        PeriodState.BLOCKED: 0,
        PeriodState.MISSING: 1,
        PeriodState.NOT_DUE: 3,
        PeriodState.SKIPPED: 1,
    }


def test_window_states_lease_judged_at_now(ledger: gk.Ledger) -> None:
    """The same running attempt is running before its lease ends and abandoned after."""
    ledger.begin_attempt("Sales", "2026-10-01", "r-1", lease_seconds=3600, now=NOW)
    for now, state in ((at(0.5), PeriodState.RUNNING), (at(1), PeriodState.ABANDONED)):
        one = window(start="2026-10-01", stop="2026-10-02")
        _, states = window_states(ledger, "Sales", now=now, window=one)
        assert [s.state for s in states] == [state]


def test_window_states_open_window_ends_at_the_latest_due_period(ledger: gk.Ledger) -> None:
    plan, states = window_states(ledger, "Sales", now=NOW, window=window(start="2026-10-01"))
    assert [s.period for s in states][-1] == "2026-10-07" and len(states) == 7
    assert plan.stop is None and {s.state for s in states} == {PeriodState.MISSING}


def test_newest_publications_newest_revision_with_evidence(ledger: gk.Ledger) -> None:
    sales(ledger)
    found = ledger.newest_publications("Sales", "2026-10-01", "2026-10-31")
    assert list(found) == ["2026-10-07"]
    newest = found["2026-10-07"]
    assert (newest.revision, newest.fingerprint, newest.reason) == (2, "fp-2", "late data")
    assert newest == ledger.publication("Sales", "2026-10-07")
    assert ledger.newest_publications("Sales", "2026-10-08", "2026-10-31") == {}
    assert ledger.newest_publications("Upstream", "2026-10-01", "2026-10-31") == {}


@pytest.mark.parametrize(
    ("states", "runs"),
    [
        ("", []),
        (
            "SSFMM",
            [("d0", "d1", "succeeded", 2), ("d2", "d2", "failed", 1), ("d3", "d4", "missing", 2)],
        ),
        (
            "MSM",
            [("d0", "d0", "missing", 1), ("d1", "d1", "succeeded", 1), ("d2", "d2", "missing", 1)],
        ),
    ],
)
def test_collapse_runs_of_one_state(states: str, runs: list[tuple[Any, ...]]) -> None:
    names = {"S": PeriodState.SUCCEEDED, "F": PeriodState.FAILED, "M": PeriodState.MISSING}
    given = tuple(gk_status(f"d{i}", names[c]) for i, c in enumerate(states))
    assert [(a, b, s.value, n) for a, b, s, n in collapse(given)] == runs


def gk_status(period: str, state: PeriodState, **fields: Any) -> PeriodStatus:
    return PeriodStatus(period, state, **fields)


@pytest.mark.parametrize(
    ("runs", "detail"),
    [
        ([("F", 1, "disk full")], "attempt 1: disk full"),
        ([("F", 1, "disk full"), ("F", 2, "disk full")], "error: disk full"),
        (
            [("F", 1, "disk full"), ("F", 1, "timeout"), ("F", 1, None)],
            "2 different errors (gatekeeper history)",
        ),
        ([("A", 3, "x" * 80)], "attempt 3: " + "x" * 58 + "..."),
        ([("S", 1, None)], ""),
    ],
)
def test_run_rows_detail_of_a_collapsed_run(
    runs: list[tuple[str, int, str | None]], detail: str
) -> None:
    names = {"S": PeriodState.SUCCEEDED, "F": PeriodState.FAILED, "A": PeriodState.ABANDONED}
    given = [
        gk_status(f"2026-10-0{i + 1}", names[c], attempt=n, error=e)
        for i, (c, n, e) in enumerate(runs)
    ]
    assert run_rows(given) == [
        (
            given[0].period if len(given) == 1 else f"{given[0].period} .. {given[-1].period}",
            given[0].state.value,
            len(given),
            detail,
        )
    ]


def test_status_table_collapses_runs(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    sales(ledger)
    for day in ("2026-10-08", "2026-10-09"):  # 10-07 .. 10-09: one run of succeeded
        ledger.record("Sales", day, 1, f"r-{day}", "succeeded", at(30), now=at(30))
    code, out = status(
        capsys, ledger_url, "Sales", *WINDOW, "--catchup", "last:4", "--now", at(50).isoformat()
    )  # 10-04's lease has run out by now
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == (
        "Sales: filled 4/9, contiguous through 2026-10-01, next due at "
        "2026-10-11T00:00:00+00:00, 4 skipped by policy"
    )
    assert lines[1] == "  4 succeeded, 1 failed, 2 abandoned, 2 skipped, 1 not_due"
    assert lines[2:] == [
        "periods                   state      count  detail",
        "2026-10-01                succeeded  1",
        "2026-10-02                skipped    1      no attempt; left out by the catch-up policy",
        "2026-10-03                failed     1      attempt 1: disk full",
        "2026-10-04                abandoned  1      attempt 2: running, but its lease expired "
        "at 2026-10-08T07:45:00+00:00",
        "2026-10-05                skipped    1      no attempt; left out by the catch-up policy",
        "2026-10-06                abandoned  1      attempt 1: running, but its lease expired "
        "at 2026-10-08T05:01:00+00:00",
        "2026-10-07 .. 2026-10-09  succeeded  3      revision 2, 2 not published",
        "2026-10-10                not_due    1",
    ]


def test_status_running_lease_expired_at_now_shows_abandoned(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    sales(ledger)
    _, before = status(capsys, ledger_url, "Sales", *WINDOW, "--now", at(0.5).isoformat())
    _, after = status(capsys, ledger_url, "Sales", *WINDOW, "--now", at(1).isoformat())
    assert (
        "2026-10-04                running    1      attempt 2, lease live until "
        "2026-10-08T07:45:00+00:00"
    ) in before.splitlines()
    assert (
        "2026-10-04                abandoned  1      attempt 2: running, but its lease "
        "expired at 2026-10-08T07:45:00+00:00"
    ) in after.splitlines()


def test_status_failed_and_never_tried_are_distinguishable(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's case: 2026-11-03 failed, the dates after it never tried."""
    for day in ("2026-11-01", "2026-11-02"):
        ledger.record("Sales", day, 1, f"r-{day}", "succeeded", at(600), now=at(600))
    ledger.record("Sales", "2026-11-03", 1, "r-03", "failed", at(650), error="timeout", now=at(650))
    code, out = status(
        capsys,
        ledger_url,
        "Sales",
        "--start",
        "2026-11-01",
        "--stop",
        "2026-11-08",
        "--now",
        "2026-11-06T07:00:00+00:00",
        "--lateness",
        "0s",
        "--timezone",
        "UTC",
    )
    assert code == 1
    assert out.splitlines()[2:] == [
        "periods                   state      count  detail",
        "2026-11-01 .. 2026-11-02  succeeded  2",
        "2026-11-03                failed     1      attempt 1: timeout",
        "2026-11-04 .. 2026-11-05  missing    2      no attempt recorded",
        "2026-11-06 .. 2026-11-07  not_due    2",
    ]


def test_status_grid_for_two_jobs(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    sales(ledger)
    code, out = status(capsys, ledger_url, "Sales", "Upstream", *WINDOW)
    assert code == 1
    lines = out.splitlines()
    assert lines[0].startswith("Sales: filled 2/7, contiguous through 2026-10-01")
    assert lines[1].startswith("Upstream: filled 1/7, contiguous through nothing")
    assert lines[3:9] == [
        "2026-10-01 .. 2026-10-10 (daily, 10 periods):",
        "  # succeeded  F failed  R running  A abandoned  b blocked  . missing  - not_due",
        "",
        "job       strip       #  F  R  A  b  .  s  -",
        "Sales     #bFRbA#---  2  1  1  1  2        3",  # Sales requires Upstream: blocked
        "Upstream  ......#---  1              6     3",
    ]
    assert all(len(line) <= 80 for line in lines[3:9])  # the grid
    runs = lines[10:]
    assert runs[0] == "job       periods                   state      count  detail"
    assert runs[1].startswith("Sales     2026-10-01                succeeded  1")
    assert "Upstream  2026-10-01 .. 2026-10-06  missing    6      no attempt recorded" in runs
    assert runs[-1] == "          2026-10-08 .. 2026-10-10  not_due    3"


def test_status_grid_readable_at_80_columns_for_a_month(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    for day in range(1, 21):
        ledger.record(
            "DailySalesLoad", f"2026-10-{day:02d}", 1, f"r-{day}", "succeeded", at(0), now=at(0)
        )
    ledger.record("DimCustomer", "2026-09-30", 1, "r-0930", "failed", at(0), now=at(0))
    code, out = status(
        capsys,
        ledger_url,
        "DailySalesLoad",
        "DimCustomer",
        "--start",
        "2026-10-01",
        "--stop",
        "2026-11-01",
        "--now",
        "2026-10-23T07:00:00Z",
        "--lateness",
        "0s",
        "--timezone",
        "UTC",
    )
    assert code == 1
    grid = out.splitlines()[3:9]
    assert grid[3:] == [
        "job             strip                             #  F  R  A  b   .  s  -",
        "DailySalesLoad  ####################..---------  20               2     9",
        "DimCustomer     ......................---------                  22     9",
    ]
    assert all(len(line) <= 80 for line in grid)


def test_status_grid_drops_the_strip_for_a_long_window(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger.record("Sales", "2026-09-01", 1, "r-1", "succeeded", NOW, now=NOW)
    ledger.record("Upstream", "2026-07-31", 1, "r-0", "failed", NOW, now=NOW)  # known, not here
    code, out = status(
        capsys,
        ledger_url,
        "Sales",
        "Upstream",
        "--start",
        "2026-08-01",
        "--stop",
        "2026-10-11",
        *WINDOW[4:],
    )
    lines = out.splitlines()
    assert code == 1 and lines[3] == "2026-08-01 .. 2026-10-10 (daily, 71 periods):"
    assert lines[6:9] == [
        "job       #  F  R  A  b   .  s  -",
        "Sales     1              67     3",
        "Upstream                 68     3",
    ]


@pytest.mark.parametrize(
    ("args", "code", "with_upstream"),
    [
        (("--stop", "2026-10-02"), 0, 1),  # 10-01 succeeded
        (("--stop", "2026-10-04"), 1, 1),  # 10-03 failed
        (("--stop", "2026-10-02", "--now", "2026-10-01T12:00:00+00:00"), 0, 0),  # nothing due
        (("--catchup", "none", "--stop", "2026-10-02"), 0, 1),  # only 10-01, the latest due
        (("--catchup", "none", "--stop", "2026-10-03"), 1, 1),  # 10-02 is the latest due, missing
    ],
)
def test_status_exit_codes(
    ledger_url: str,
    ledger: gk.Ledger,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    code: int,
    with_upstream: int,
) -> None:
    """1 while any job has gaps, else 0: for one job and for a grid of two."""
    sales(ledger)
    base = (
        "--start",
        "2026-10-01",
        "--now",
        NOW.isoformat(),
        "--lateness",
        "0s",
        "--timezone",
        "UTC",
    )
    assert status(capsys, ledger_url, "Sales", *base, *args)[0] == code
    assert status(capsys, ledger_url, "Sales", "Upstream", *base, *args)[0] == with_upstream
    done = gatekeeper("--ledger", ledger_url, "status", "Sales", *base, *args)
    assert done.returncode == code, done.stderr


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("--now", "2026-10-08T07:00:00"), "now"),
        (("--period", "hourly"), "period"),  # Sales is daily in the ledger
        (("--catchup", "last:0"), "catchup"),
        (("--strategy", "sideways"), "strategy"),
        (("--task-limit", "-1"), "task_limit"),
        (("--stop", "2026-09-01"), "stop"),
        (("--lateness", "-2h"), "lateness"),
        (("--timezone", "Mars/Base"), "timezone"),
    ],
)
def test_status_bad_input_exit_2_names_the_field_and_writes_nothing(
    ledger_url: str, ledger: gk.Ledger, args: tuple[str, ...], field: str
) -> None:
    sales(ledger)
    before = snapshot(ledger)
    full = {"--now": NOW.isoformat(), "--lateness": "0s", "--timezone": "UTC"}
    full.update(dict(zip(args[::2], args[1::2], strict=True)))
    done = gatekeeper(
        "--ledger",
        ledger_url,
        "status",
        "Sales",
        "--start",
        "2026-10-01",
        *(f"{k}={v}" for k, v in full.items()),
        "--json",
    )
    assert done.returncode == 2, done.stderr
    assert "InvalidInput" in done.stderr and field in done.stderr
    assert json.loads(done.stdout)["error"] == "InvalidInput"
    assert snapshot(ledger) == before


def test_status_bad_job_name_exit_2(ledger_url: str, ledger: gk.Ledger) -> None:
    before = snapshot(ledger)
    done = gatekeeper("--ledger", ledger_url, "status", "Sales", " Sales", *WINDOW)
    assert done.returncode == 2, done.stdout
    assert "InvalidInput: invalid job=' Sales'" in done.stderr, done.stderr
    assert snapshot(ledger) == before


def test_status_json_keeps_the_plan_and_adds_periods(ledger_url: str, ledger: gk.Ledger) -> None:
    sales(ledger)
    done = gatekeeper(
        "--ledger", ledger_url, "status", "Sales", *WINDOW, "--catchup", "last:4", "--json"
    )
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["job"] == "Sales"
    assert data["gaps"] == ["2026-10-04", "2026-10-05", "2026-10-06"]
    assert data["skipped_by_policy"] == ["2026-10-02", "2026-10-03"]
    assert data["contiguous_through"] == "2026-10-01" and data["total"] == 7
    assert data["description"].startswith("filled 2/7")
    periods = data["periods"]
    assert [p["period"] for p in periods] == list(EXPECTED)
    # Sales's publication required Upstream, missing on 10-05: that period is blocked
    assert [p["state"] for p in periods] == [
        "blocked" if p == "2026-10-05" else v[0].value for p, v in EXPECTED.items()
    ]
    assert all(
        set(p)
        == {
            "period",
            "state",
            "attempt",
            "run_id",
            "error",
            "lease_expires_at",
            "revision",
            "blocked_by",
        }
        for p in periods
    )
    by_period = {p["period"]: p for p in periods}
    assert by_period["2026-10-07"]["revision"] == 2
    assert by_period["2026-10-07"]["run_id"] == "r-07"
    assert by_period["2026-10-04"] == {
        "period": "2026-10-04",
        "state": "running",
        "attempt": 2,
        "run_id": "r-04-2",
        "error": None,
        "lease_expires_at": "2026-10-08T07:45:00+00:00",
        "revision": None,
        "blocked_by": None,
    }
    assert by_period["2026-10-03"]["error"] == "disk full"
    assert by_period["2026-10-05"] == {
        "period": "2026-10-05",
        "state": "blocked",
        "attempt": None,
        "run_id": None,
        "error": None,
        "lease_expires_at": None,
        "revision": None,
        "blocked_by": {
            "job": "Upstream",
            "period": "2026-10-05",
            "state": "missing",
            "attempt": None,
            "run_id": None,
            "error": None,
        },
    }


def test_status_json_for_several_jobs_is_a_list(ledger_url: str, ledger: gk.Ledger) -> None:
    sales(ledger)
    done = gatekeeper("--ledger", ledger_url, "status", "Sales", "Upstream", *WINDOW, "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert [d["job"] for d in data] == ["Sales", "Upstream"]
    upstream = {p["period"]: p["state"] for p in data[1]["periods"]}
    assert upstream["2026-10-07"] == "succeeded" and upstream["2026-10-01"] == "missing"
    assert data[1]["gaps"] == [
        "2026-10-01",
        "2026-10-02",
        "2026-10-03",
        "2026-10-04",
        "2026-10-05",
        "2026-10-06",
    ]


def test_status_hourly_periods(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    for hour in ("05", "06"):
        ledger.record("Clicks", f"2026-10-08T{hour}:00Z", 1, f"c-{hour}", "succeeded", NOW, now=NOW)
    code, out = status(
        capsys,
        ledger_url,
        "Clicks",
        "--period",
        "hourly",
        "--start",
        "2026-10-08T04:00Z",
        "--stop",
        "2026-10-08T09:00Z",
        "--now",
        NOW.isoformat(),
        "--lateness",
        "0s",
        "--timezone",
        "UTC",
    )
    assert code == 1
    assert out.splitlines()[3:] == [
        "2026-10-08T04:00Z                       missing    1      no attempt recorded",
        "2026-10-08T05:00Z .. 2026-10-08T06:00Z  succeeded  2",
        "2026-10-08T07:00Z .. 2026-10-08T08:00Z  not_due    2",
    ]


def test_jobs_text_and_json(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    sales(ledger)
    ledger.record("Clicks", "2026-10-08T05:00Z", 1, "c-05", "succeeded", at(-1), now=at(-1))
    ledger.record("Clicks", "2026-10-08T06:00Z", 1, "c-06", "failed", at(-1), now=at(-0.1))
    assert main(["--ledger", ledger_url, "jobs", "--now", NOW.isoformat()]) == 0
    assert capsys.readouterr().out.splitlines() == [
        "job       kind    first              last               last activity           "
        "periods by latest attempt",
        "Clicks    hourly  2026-10-08T05:00Z  2026-10-08T06:00Z  2026-10-08T06:54+00:00  "
        "1 succeeded, 1 failed",
        "Sales     daily   2026-10-01         2026-10-07         2026-10-08T06:45+00:00  "
        "2 succeeded, 1 failed, 1 running, 1 abandoned, 1 published",
        "Upstream  daily   2026-10-07         2026-10-07         2026-10-08T04:00+00:00  "
        "1 succeeded",
    ]
    done = gatekeeper("--ledger", ledger_url, "jobs", "--json", "--now", NOW.isoformat())
    assert done.returncode == 0, done.stderr
    data = {j["job"]: j for j in json.loads(done.stdout)}
    assert data["Sales"] == {
        "job": "Sales",
        "kind": "daily",
        "first_period": "2026-10-01",
        "last_period": "2026-10-07",
        "states": {"succeeded": 2, "failed": 1, "running": 1, "abandoned": 1},
        "published": 1,
        "last_updated": "2026-10-08T06:45:00+00:00",
    }
    assert data["Clicks"]["kind"] == "hourly"
    assert data["Clicks"]["states"] == {"succeeded": 1, "failed": 1, "running": 0, "abandoned": 0}
    later = gatekeeper("--ledger", ledger_url, "jobs", "--json", "--now", at(1).isoformat())
    sales_later = {j["job"]: j for j in json.loads(later.stdout)}["Sales"]["states"]
    assert (sales_later["running"], sales_later["abandoned"]) == (0, 2)  # lease ran out


def test_jobs_lists_a_consumer_without_attempts(ledger: gk.Ledger) -> None:
    ledger.record("Upstream", "2026-10-07", 1, "u-07", "succeeded", at(-3), now=at(-3))
    ledger.publish("Report", "2026-10-07", ["Upstream"], "fp", now=at(-2))
    found = {j.job: j for j in ledger.jobs_overview(NOW)}
    report = found["Report"]
    assert (report.kind, report.first_period, report.last_period) == (
        "daily",
        "2026-10-07",
        "2026-10-07",
    )
    assert report.published == 1 and report.count("succeeded") == 0
    assert report.last_updated == at(-2)


def test_jobs_empty_ledger(
    ledger_url: str, ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["--ledger", ledger_url, "jobs"]) == 0
    assert capsys.readouterr().out.startswith("no jobs in the ledger")
    done = gatekeeper("--ledger", ledger_url, "jobs", "--json")
    assert done.returncode == 0 and json.loads(done.stdout) == []
