"""A job on a business calendar: its other days are ``non_business`` everywhere an operator
looks (status, check, the report, serve's page and /api/jobs), never missing, never due, never
a freshness breach; weekly, monthly and quarterly jobs get grids that fit them."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.web import page, views
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import run_luigi, write_config

pytestmark = pytest.mark.luigi

MODULE = "tests.helpers.calendar_tasks"
SATURDAY_NOON = dt.datetime(2026, 10, 31, 12, tzinfo=dt.timezone.utc)


def _range(cfg: Path, tmp_path: Path, kind: str, of: str, *window: str) -> None:
    done = run_luigi(
        cfg, "--module", MODULE, f"RangeBusiness{kind}", "--of", of, *window, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr[-3000:]


@pytest.mark.process
def test_weekends_are_non_business_in_status_check_report_and_serve(
    ledger_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, ledger_url)
    now = str(int(SATURDAY_NOON.timestamp()))
    _range(cfg, tmp_path, "Daily", "WeekdayFresh", "--start", "2026-10-24", "--now", now)
    with gk.open_ledger(ledger_url) as ledger:
        before = snapshot(ledger)

    monday = "2026-11-02T05:00:00+00:00"  # Sat and Sun closed; Monday not yet
    done = gatekeeper("--ledger", ledger_url, "status", "WeekdayFresh", "--now", monday, "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    states = {p["period"]: p["state"] for p in shown["periods"]}
    assert states["2026-10-24"] == states["2026-10-25"] == "non_business"
    assert states["2026-10-31"] == states["2026-11-01"] == "non_business"
    assert [k for k, s in states.items() if s == "succeeded"] == [
        f"2026-10-{d}" for d in (26, 27, 28, 29, 30)
    ]
    assert shown["total"] == shown["complete_count"] == 5  # 5/5 due: no weekend counted
    assert shown["freshness"]["met"] is True

    text = gatekeeper("--ledger", ledger_url, "status", "WeekdayFresh", "--now", monday)
    assert "non_business" in text.stdout and "missing" not in text.stdout

    check = gatekeeper("--ledger", ledger_url, "check", "WeekdayFresh", "--now", monday)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "BREACHED" not in check.stdout

    out = tmp_path / "report.html"
    rep = gatekeeper(
        "--ledger", ledger_url, "report", "WeekdayFresh", "--now", monday, "--output", str(out)
    )
    assert rep.returncode == 0, rep.stderr
    html = out.read_text()
    assert 'data-period="2026-10-31" data-state="non_business"' in html

    with gk.open_ledger(ledger_url) as ledger:
        at = dt.datetime.fromisoformat(monday)
        found, skipped = views.job_views(ledger, dt.timedelta(days=30), at)
        assert not skipped
        (view,) = found
        summary = view.summary()
        assert summary["calendar"] == "weekdays"
        assert summary["counts"]["non_business"] == 4 and summary["counts"]["missing"] == 0
        assert summary["counts"]["succeeded"] == 5
        drawn = page.render(found, skipped, dt.timedelta(days=30), ledger.describe())
        cells = views.job_cells(ledger, view)  # the strip the page asks for
        assert ["2026-11-01", "non_business"] in cells and len(cells) == view.cell_count
        assert view.last_period == cells[-1][0]
        shown = " ".join(s for s, n in summary["counts"].items() if n)  # the state filter's
        assert "non_business" in shown and f'data-states="{shown}"' in drawn
        assert snapshot(ledger) == before  # every view reads only


@pytest.mark.process
def test_an_all_days_job_shows_no_non_business_state(ledger_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, ledger_url)
    _range(cfg, tmp_path, "Monthly", "MonthEnd", "--start", "2025-01", "--stop", "2025-04")
    done = gatekeeper("--ledger", ledger_url, "status", "MonthEnd", "--json")
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    assert [p["state"] for p in shown["periods"]] == ["succeeded"] * 3
    assert [p["period"] for p in shown["periods"]] == ["2025-01", "2025-02", "2025-03"]


@pytest.mark.parametrize(
    ("kind", "of", "window", "columns", "cell"),
    [
        ("Weekly", "WeekLoad", ("2026-09-28", "2026-10-19"), 53, 'data-period="2026-W41"'),
        ("Monthly", "MonthEnd", ("2025-01", "2025-04"), 12, 'data-period="2025-03"'),
        ("Quarterly", "QuarterLoad", ("2025-Q1", "2025-Q3"), 4, 'data-period="2025-Q2"'),
    ],
)
@pytest.mark.process
def test_coarse_jobs_get_grids_that_fit_them(
    ledger_url: str,
    tmp_path: Path,
    kind: str,
    of: str,
    window: tuple[str, str],
    columns: int,
    cell: str,
) -> None:
    cfg = write_config(tmp_path, ledger_url)
    _range(cfg, tmp_path, kind, of, "--start", window[0], "--stop", window[1])
    out = tmp_path / "report.html"
    rep = gatekeeper("--ledger", ledger_url, "report", of, "--output", str(out))
    assert rep.returncode == 0, rep.stderr
    html = out.read_text()
    assert f"grid-template-columns:repeat({columns},var(--c))" in html
    assert cell in html and 'data-state="succeeded"' in html
    with gk.open_ledger(ledger_url) as ledger:
        found, _ = views.job_views(ledger, dt.timedelta(days=3000), dt.datetime.now(dt.UTC))
        drawn = page.render(found, [], dt.timedelta(days=3000), ledger.describe())
        (view,) = found
        cells = views.job_cells(ledger, view)
    key = cell.split('"')[1]
    assert f'data-kind="{kind.lower()}"' in drawn and [key, "succeeded"] in cells
