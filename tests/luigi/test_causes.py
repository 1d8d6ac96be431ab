"""Causes before effects, through the real ``luigi`` and ``gatekeeper`` commands: a period an
upstream failure blocks is ``blocked`` (status, ``--json``, the report) and named by the range's
closing line; a period another run's live lease holds is named with the run and the lease; and
``status``/``report`` plan a job's window as its range did, with no flags (an hourly job, a
job in a zone far from UTC)."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.core.causes import Requirement, profile
from tests.helpers.cli import gatekeeper
from tests.helpers.luigi_support import run_luigi, write_config
from tests.helpers.report_browser import Elements, dump_dom, need_chromium

pytestmark = [pytest.mark.luigi, pytest.mark.slow]

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 30, tzinfo=UTC)
NOW_S = str(int(NOW.timestamp()))
FAILURE = "RuntimeError: injected failure for 2026-10-04"


def fill(cfg: Path, folder: Path, of: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``luigi RangeBusinessDaily --of OF`` over 2026-10-01..07 at NOW, controlled by
    ``folder``."""
    return run_luigi(
        cfg,
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        "--of",
        of,
        "--of-params",
        json.dumps({"control": str(folder)}),
        "--start",
        "2026-10-01",
        "--stop",
        "2026-10-08",
        "--now",
        NOW_S,
        *extra,
        cwd=folder,
    )


def closing(done: subprocess.CompletedProcess[str], job: str) -> str:
    found = re.findall(rf"gatekeeper: RangeBusiness\w+ {job}: filled \d+/\d+ due .*", done.stderr)
    assert len(found) == 1, done.stderr[-3000:]
    return str(found[0])


def test_upstream_failure_is_named_as_the_cause_everywhere(ledger_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, ledger_url)
    (tmp_path / "fail-2026-10-04").touch()
    done = fill(cfg, tmp_path, "ControlledTotal")
    assert done.returncode == 30, done.stderr[-3000:]
    assert closing(done, "ControlledTotal") == (
        "gatekeeper: RangeBusinessDaily ControlledTotal: filled 3/7 due (3 this run); "
        f"2026-10-04 blocked: Controlled failed (attempt 1: {FAILURE}); 4 gaps remain"
    )

    # status with no flags: the window the range planned, the blocked periods and why
    status = gatekeeper(
        "--ledger", ledger_url, "status", "ControlledTotal", "--now", NOW.isoformat()
    )
    assert status.returncode == 1, status.stderr
    assert status.stdout.splitlines()[0].startswith(
        "ControlledTotal: filled 3/7, contiguous through 2026-10-03"
    )
    assert (
        "2026-10-04 .. 2026-10-07  blocked    4      2 causes, first by Controlled 2026-10-04 "
        "failed (attempt 1: RuntimeEr..."  # the detail is cut; --json has it whole
    ) in status.stdout, status.stdout
    as_json = gatekeeper(
        "--ledger", ledger_url, "status", "ControlledTotal", "--now", NOW.isoformat(), "--json"
    )
    periods = {p["period"]: p for p in json.loads(as_json.stdout)["periods"]}
    assert [periods[d]["state"] for d in sorted(periods)] == [
        "succeeded",
        "succeeded",
        "succeeded",
        "blocked",  # its upstream failed
        "blocked",  # its upstream is missing (the fill stopped at the failure)
        "blocked",
        "blocked",
    ]
    assert periods["2026-10-04"]["blocked_by"] == {
        "job": "Controlled",
        "period": "2026-10-04",
        "state": "failed",
        "attempt": 1,
        "run_id": periods["2026-10-04"]["blocked_by"]["run_id"],
        "error": FAILURE,
    }
    assert periods["2026-10-06"]["blocked_by"]["state"] == "missing"

    # the report: the cells, their tooltips, and the cause listed before its effects
    out = tmp_path / "coverage.html"
    report = gatekeeper(
        "--ledger",
        ledger_url,
        "report",
        "Controlled",
        "ControlledTotal",
        "-o",
        str(out),
        "--now",
        NOW.isoformat(),
    )
    assert report.returncode == 0, report.stderr
    page = out.read_text()
    cell = re.search(
        r'<i[^>]*data-job="ControlledTotal" data-period="2026-10-04" data-state="blocked" '
        r'title="([^"]*)"',
        page,
    )
    assert cell is not None and "blocked by Controlled 2026-10-04 failed" in cell.group(1)
    controlled = page.index('data-job="Controlled"')
    total = page.index('data-job="ControlledTotal"')
    assert page.index("<b>failed</b> 2026-10-04", controlled) < total  # the cause, first
    attention = page[total:].split('<div class="cells">')[0]
    assert "<b>blocked</b> 2026-10-04 to 2026-10-07 (4)" in attention
    assert "by <code>Controlled 2026-10-04 failed" in attention


def test_a_held_lease_is_named_then_abandon_lets_the_period_refill(
    ledger_url: str, tmp_path: Path
) -> None:
    """A class whose periods are scheduled (a worker timeout) meets a dead worker's live lease
    under ``--local-scheduler``: the loser fails fast, and the closing line names the holder
    and its lease (a period run inline in a chunk would wait for it instead)."""
    cfg = write_config(tmp_path, ledger_url)
    with gk.open_ledger(ledger_url) as ledger:  # a worker that died holding 10-03's lease
        ledger.begin_attempt("TimedControlled", "2026-10-03", "dead-worker", lease_seconds=3600)
        until = ledger.latest("TimedControlled", "2026-10-03").lease_expires_at
    held = fill(cfg, tmp_path, "TimedControlled")
    assert held.returncode == 30, held.stderr[-3000:]
    assert closing(held, "TimedControlled") == (
        "gatekeeper: RangeBusinessDaily TimedControlled: filled 2/7 due (2 this run); "
        f"2026-10-03 held by run dead-worker until {until.isoformat()}; 5 gaps remain"
    )
    abandon = gatekeeper(
        "--ledger", ledger_url, "abandon", "TimedControlled", "2026-10-03", "--reason", "host lost"
    )
    assert abandon.returncode == 0, abandon.stderr
    refilled = fill(cfg, tmp_path, "TimedControlled")
    assert refilled.returncode == 0, refilled.stderr[-3000:]
    assert closing(refilled, "TimedControlled") == (
        "gatekeeper: RangeBusinessDaily TimedControlled: filled 7/7 due (5 this run)"
    )
    with gk.open_ledger(ledger_url) as ledger:
        assert [
            (a.attempt, a.state.value) for a in ledger.attempts("TimedControlled", "2026-10-03")
        ] == [
            (1, "abandoned"),
            (2, "succeeded"),
        ]


def test_status_and_report_plan_an_hourly_job_as_its_range_did(
    ledger_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, ledger_url)
    done = run_luigi(
        cfg,
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessHourly",
        "--of",
        "HourlyLoad",
        "--start",
        "2026-10-01T00",
        "--stop",
        "2026-10-03T00",
        "--now",
        NOW_S,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    status = gatekeeper("--ledger", ledger_url, "status", "HourlyLoad", "--now", NOW.isoformat())
    assert status.returncode == 0, status.stdout + status.stderr
    assert status.stdout.splitlines()[1] == "  48 succeeded", status.stdout
    wrong = gatekeeper(
        "--ledger", ledger_url, "status", "HourlyLoad", "--period", "daily", "--json"
    )
    assert wrong.returncode == 2 and "HourlyLoad is hourly in the ledger" in wrong.stderr
    out = tmp_path / "hours.html"
    report = gatekeeper("--ledger", ledger_url, "report", "HourlyLoad", "-o", str(out))
    assert report.returncode == 0, report.stderr
    page = out.read_text()  # the 48 hours: one run of complete periods, drawn as one bar
    assert page.count("data-count=") == 1 and "data-period=" not in page
    assert 'data-state="succeeded" data-first=' in page and 'data-count="48"' in page


def test_status_of_a_job_far_from_utc_shows_what_its_range_filled(
    ledger_url: str, tmp_path: Path
) -> None:
    """Filled in Pacific/Kiritimati (UTC+14): at 12:00 UTC on 10-05 its 10-05 has ended there
    but not in UTC. A plain ``status`` plans in the range's zone; with ``--timezone UTC`` the
    date is not due yet, and still shown succeeded, never hidden."""
    cfg = write_config(tmp_path, ledger_url)
    at = dt.datetime(2026, 10, 5, 12, tzinfo=UTC)
    done = run_luigi(
        cfg,
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        "--of",
        "Trivial",
        "--start",
        "2026-10-01",
        "--timezone",
        "Pacific/Kiritimati",
        "--now",
        str(int(at.timestamp())),
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    plain = gatekeeper("--ledger", ledger_url, "status", "Trivial", "--now", at.isoformat())
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert plain.stdout.startswith("Trivial: filled 5/5, contiguous through 2026-10-05")
    utc = gatekeeper(
        "--ledger",
        ledger_url,
        "status",
        "Trivial",
        "--now",
        at.isoformat(),
        "--timezone",
        "UTC",
        "--json",
    )
    periods = json.loads(utc.stdout)["periods"]
    assert [(p["period"], p["state"]) for p in periods][-1] == ("2026-10-05", "succeeded")


@pytest.mark.browser
def test_report_shows_blocked_periods_and_their_cause_in_chromium(
    sqlite_url: str, tmp_path: Path
) -> None:
    """The report in a real headless Chromium: the blocked cells carry their state and a
    tooltip naming the upstream failure, the attention list shows the failure (the cause)
    before the blocked run (its effect), and the page logs nothing to the console."""
    need_chromium()
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record_profile(profile("Total", "daily", "UTC", [Requirement("Orders")]))
        for day in ("2026-10-01", "2026-10-02"):
            ledger.record("Orders", day, 1, f"o-{day}", "succeeded", NOW)
            ledger.record("Total", day, 1, f"t-{day}", "succeeded", NOW)
        ledger.record("Orders", "2026-10-03", 1, "o-03", "failed", NOW, error="disk full")
    out = tmp_path / "coverage.html"
    done = gatekeeper(
        "--ledger",
        sqlite_url,
        "report",
        "Total",
        "-o",
        str(out),
        "--stop",
        "2026-10-06",
        "--now",
        NOW.isoformat(),
    )
    assert done.returncode == 0, done.stderr
    page = dump_dom(out)
    assert page.console == ()
    cells = {c["data-period"]: c for c in Elements(page.dom).cells()}
    assert [cells[f"2026-10-0{d}"]["data-state"] for d in range(1, 6)] == [
        "succeeded",
        "succeeded",
        "blocked",  # Orders failed
        "blocked",  # Orders missing
        "blocked",
    ]
    assert (
        "blocked by Orders 2026-10-03 failed (attempt 1: disk full)"
        in (cells["2026-10-03"]["title"])
    )
    assert "blocked by Orders 2026-10-04 missing" in cells["2026-10-04"]["title"]


def test_status_of_a_daily_and_an_hourly_job_shows_each_on_its_own_axis(
    sqlite_url: str,
) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("Day", "2026-10-01", 1, "d-1", "succeeded", NOW)
        ledger.record("Hour", "2026-10-01T00:00:00+00:00", 1, "h-0", "succeeded", NOW)
    done = gatekeeper(
        "--ledger", sqlite_url, "status", "Day", "Hour", "--now", "2026-10-01T02:00:00Z"
    )
    assert done.returncode == 1, done.stderr  # Hour's 01:00 is due and missing
    blocks = done.stdout.split("\n\n")
    assert blocks[0].startswith("Day: filled 0/0") and blocks[1].startswith("Hour: filled 1/2")
