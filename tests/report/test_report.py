"""The HTML coverage report: pure rendering, the ``gatekeeper report`` command, and the page in
a real headless Chromium (DOM after load, console, a screenshot's pixels)."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.core.planning import plan_range
from gatekeeper.report.assets import PALETTE
from gatekeeper.report.html import JobCoverage, render_report
from gatekeeper.report.states import PeriodState, PeriodStatus
from tests.helpers.in_process import gatekeeper_in_process
from tests.helpers.ledgers import snapshot
from tests.helpers.report_browser import (
    JOBS,
    NOW,
    Elements,
    build_month,
    dump_dom,
    need_chromium,
    pixel,
    probe,
    read_png,
    report_command,
    screenshot,
    with_probe,
)

UTC = dt.timezone.utc
ALL_STATES = tuple(PeriodState)


def daily_job(job: str, states: list[PeriodStatus], start: str = "2026-10-01") -> JobCoverage:
    plan = plan_range([], start=start, stop="2026-11-01", now=NOW, lateness="2h")
    return JobCoverage(job, plan, tuple(states))


def one_of_each(first_day: int = 1) -> list[PeriodStatus]:
    return [
        PeriodStatus(
            f"2026-10-{first_day + i:02d}",
            s,
            attempt=1 if i < 4 else None,
            run_id=f"run-{i}" if i < 4 else None,
        )
        for i, s in enumerate(ALL_STATES)
    ]


def test_render_report_cells_carry_job_period_and_state() -> None:
    states = one_of_each()
    page = Elements(render_report([daily_job("Sales", states)], generated_at=NOW))
    cells = page.cells()
    assert [(c["data-job"], c["data-period"], c["data-state"]) for c in cells] == [
        ("Sales", s.period, s.state.value) for s in states
    ]
    assert all(c["title"].startswith(f"{c['data-period']}: ") for c in cells)
    assert page.first("body")["class"] == "compact"  # short daily windows side by side


def test_render_report_escapes_user_text() -> None:
    job = 'Load(region=<eu>, q="a&b")'
    error = "</script><script>alert('x')</script> & \"quoted\""
    states = [PeriodStatus("2026-10-01", PeriodState.FAILED, 2, "run<1>", error)]
    html = render_report([daily_job(job, states)], generated_at=NOW)
    assert "<script>alert" not in html and "<eu>" not in html and "run<1>" not in html
    page = Elements(html)
    cell = page.cells()[0]
    assert cell["data-job"] == job
    assert f"attempt 2, run run<1>\nerror: {error}" in cell["title"]
    embedded = html.split('id="gk-data">', 1)[1].split("</script>", 1)[0]
    assert json.loads(embedded)["jobs"][0]["job"] == job


def test_render_report_tooltip_names_attempt_run_error_revision_and_evidence() -> None:
    states = [
        PeriodStatus(
            "2026-10-05",
            PeriodState.SUCCEEDED,
            3,
            "sales-5-3",
            revision=2,
            evidence={"DimCustomer": "cust-5-1", "DimProduct@2026-10-04": "p-4"},
        ),
        PeriodStatus(
            "2026-10-06",
            PeriodState.RUNNING,
            1,
            "sales-6-1",
            lease_expires_at=NOW + dt.timedelta(minutes=5),
        ),
    ]
    cells = Elements(render_report([daily_job("Sales", states)], generated_at=NOW)).cells()
    assert cells[0]["title"] == (
        "2026-10-05: succeeded\nattempt 3, run sales-5-3\npublished revision 2\n"
        "  evidence DimCustomer: run cust-5-1\n  evidence DimProduct@2026-10-04: run p-4"
    )
    assert cells[1]["title"] == (
        "2026-10-06: running\nattempt 1, run sales-6-1\nlease until 2026-10-23T07:05:00+00:00"
    )


def test_render_report_counts_every_state() -> None:
    states = one_of_each() + [PeriodStatus("2026-10-20", PeriodState.FAILED)]
    job = daily_job("Sales", states)
    expected = {s.value: 1 for s in ALL_STATES} | {"failed": 2}
    assert job.counts() == expected
    assert list(job.counts()) == [s.value for s in PALETTE]
    html = render_report([job], generated_at=NOW)
    overview = html.split('<table class="overview">', 1)[1].split("</table>", 1)[0]
    row = overview.split("<tbody>", 1)[1]
    numbers = [int(part.split("<", 1)[0]) for part in row.split('">')[2:] if part[:1].isdigit()]
    assert numbers == list(expected[s.value] for s in PALETTE)


def test_render_report_legend_has_one_swatch_per_state_in_the_cells_colour() -> None:
    html = render_report([daily_job("Sales", one_of_each())], generated_at=NOW)
    swatches = [a for t, a in Elements(html).found if "data-color" in a]
    assert [(a["data-state"], a["data-color"]) for a in swatches] == [
        (s.value, colour) for s, (colour, _) in PALETTE.items()
    ]
    for state, (colour, _) in PALETTE.items():
        assert f'[data-state="{state.value}"]{{background:{colour}}}' in html
    assert PALETTE[PeriodState.FAILED][0] not in {
        c for s, (c, _) in PALETTE.items() if s is not PeriodState.FAILED
    }


@pytest.mark.parametrize(
    ("first", "column"),
    [
        ("2026-10-01", 4),  # a Thursday: fourth column of a Monday-first week
        ("2026-10-05", 1),  # a Monday
        ("2026-10-11", 7),  # a Sunday
    ],
)
def test_render_report_daily_month_starts_on_its_weekday(first: str, column: int) -> None:
    states = [PeriodStatus(first, PeriodState.MISSING)]
    cell = Elements(render_report([daily_job("Sales", states, first)], generated_at=NOW)).cells()[0]
    assert cell["style"] == f"grid-column-start:{column}"


def test_render_report_hourly_is_a_day_by_24_grid() -> None:
    plan = plan_range(
        [], start="2026-10-22T05:00Z", stop="2026-10-24T00:00Z", now=NOW, period="hourly"
    )
    keys = [f"2026-10-22T{h:02d}:00Z" for h in range(5, 24)]
    keys += [f"2026-10-23T{h:02d}:00Z" for h in range(24)]
    states = tuple(PeriodStatus(k, PeriodState.NOT_DUE) for k in keys)
    page = Elements(render_report([JobCoverage("Hourly", plan, states)], generated_at=NOW))
    cells = page.cells()
    assert [c["data-period"] for c in cells] == keys
    starts = {c["data-period"]: c.get("style") for c in cells if "style" in c}
    assert starts == {
        "2026-10-22T05:00Z": "grid-column-start:7",  # hour 5 after the label
        "2026-10-23T00:00Z": "grid-column-start:2",
    }
    assert any(a.get("class") == "hg" for _, a in page.found)
    assert page.first("body").get("class") is None  # a day x 24 grid is not put side by side


def test_cli_report_writes_the_file_and_prints_counts(ledger_url: str, tmp_path: Path) -> None:
    build_month(ledger_url)
    out = tmp_path / "report.html"
    done = report_command(ledger_url, out, *JOBS, extra=("--catchup", "last:19", "--json"))
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["output"] == str(out)
    counts = {j["job"]: j["counts"] for j in data["jobs"]}
    assert counts["DimCustomer"] == dict.fromkeys(counts["DimCustomer"], 0) | {
        "succeeded": 21,
        "failed": 1,
        "not_due": 9,
    }
    assert counts["DailySalesLoad"] == dict.fromkeys(counts["DimCustomer"], 0) | {
        "succeeded": 16,
        "running": 1,
        "abandoned": 1,
        "missing": 2,
        "skipped": 2,
        "not_due": 9,
    }
    cells = Elements(out.read_text(encoding="utf-8")).cells()
    assert len(cells) == 3 * 31
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


def test_cli_report_replaces_an_existing_file(sqlite_url: str, tmp_path: Path) -> None:
    build_month(sqlite_url)
    out = tmp_path / "report.html"
    out.write_text("old report")
    done = report_command(sqlite_url, out, "DimProduct")
    assert done.returncode == 0, done.stderr
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert ledger_and(tmp_path) == ["ledger.db", "report.html"]


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (("--start", "2026-13-01"), "start"),
        (("--stop", "2026-09-01"), "stop"),
        (("--now", "2026-10-23T07:00"), "now"),
        (("--lateness", "-2h"), "lateness"),
        (("--catchup", "last:0"), "catchup"),
        (("--timezone", "Mars/Olympus"), "timezone"),
        (("--period", "hourly"), "period"),  # DimProduct is daily in the ledger
        (("DimProduct",), "job"),
        (("-o", "{tmp}/missing-folder/report.html"), "output"),
        (("-o", "{tmp}"), "output"),
    ],
)
def test_cli_report_bad_input_exits_2_and_writes_nothing(
    sqlite_url: str, tmp_path: Path, args: tuple[str, ...], field: str
) -> None:
    build_month(sqlite_url)
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
    out = tmp_path / "report.html"
    base = {
        "--start": "2026-10-01",
        "--stop": "2026-11-01",
        "--now": NOW.isoformat(),
        "--lateness": "2h",
        "--timezone": "UTC",
        "-o": str(out),
    }
    jobs = ["DimProduct"]
    extra = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if extra[0] in base:
        base[extra[0]] = extra[1]
    else:
        jobs += extra
    flat = [f"{k}={v}" for k, v in base.items()]  # --lateness=-2h is not read as an option
    done = gatekeeper_in_process("--ledger", sqlite_url, "report", *jobs, *flat)
    assert done.returncode == 2, done.stderr
    assert "InvalidInput" in done.stderr and field in done.stderr
    assert ledger_and(tmp_path) == ["ledger.db"]
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


def test_cli_report_unavailable_ledger_exits_4(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    done = report_command(
        "postgresql://postgres@127.0.0.1:1/test?connect_timeout=5&reconnect_window=1",
        out,
        "DimProduct",
    )
    assert done.returncode == 4 and "LedgerError" in done.stderr
    assert "still unreachable after 1s (reconnect_window)" in done.stderr
    assert not out.exists()


def expected_state(job: str, day: int) -> str:
    """The scenario of ``build_month`` at NOW with catch-up last:19, written out by hand."""
    if day >= 23:
        return "not_due"
    special = {
        ("DimCustomer", 22): "failed",
        ("DimProduct", 15): "missing",
        ("DailySalesLoad", 1): "skipped",
        ("DailySalesLoad", 2): "skipped",
        ("DailySalesLoad", 9): "abandoned",
        ("DailySalesLoad", 15): "missing",
        ("DailySalesLoad", 21): "running",
        ("DailySalesLoad", 22): "missing",
    }
    return special.get((job, day), "succeeded")


@pytest.fixture
def month_report(sqlite_url: str, tmp_path: Path) -> Path:
    build_month(sqlite_url)
    out = tmp_path / "report.html"
    done = report_command(sqlite_url, out, *JOBS, extra=("--catchup", "last:19"))
    assert done.returncode == 0, done.stderr
    return out


@pytest.mark.browser
def test_report_in_chromium_every_cell_has_its_state_and_no_console_message(
    month_report: Path,
) -> None:
    need_chromium()
    page = dump_dom(month_report)
    assert page.console == ()
    dom = Elements(page.dom)
    assert dom.first("body")["data-ready"] == "ok"
    found = {(c["data-job"], c["data-period"]): c for c in dom.cells()}
    assert {k: c["data-state"] for k, c in found.items()} == {
        (job, f"2026-10-{day:02d}"): expected_state(job, day)
        for job in JOBS
        for day in range(1, 32)
    }
    failed = found[("DimCustomer", "2026-10-22")]["title"]
    assert "attempt 2, run cust-22-2" in failed and '"Service Unavailable" & retries' in failed
    published = found[("DailySalesLoad", "2026-10-05")]["title"]
    assert "published revision 1" in published
    assert "evidence DimCustomer: run cust-05-1" in published
    assert "evidence DimProduct: run prod-05-1" in published


@pytest.mark.slow
@pytest.mark.browser
def test_report_in_chromium_failed_cell_is_drawn_in_the_legend_colour(
    month_report: Path, tmp_path: Path
) -> None:
    need_chromium()
    probed = with_probe(month_report, tmp_path / "probed.html")
    size = {"width": 1200, "height": 900}
    boxes = probe(dump_dom(probed, **size).dom)
    shot = tmp_path / "shot.png"
    assert screenshot(probed, shot, **size).console == ()
    width, height, rows = read_png(shot)
    assert (width, height) == (1200, 900)
    assert boxes["period"] == "2026-10-22"
    red = PALETTE[PeriodState.FAILED][0]
    for name in ("failed", "legend"):
        left, top, w, h = boxes[name]
        assert 0 <= left and left + w <= width and 0 <= top and top + h <= height - 60, boxes
        assert pixel(rows, int(left + w / 2), int(top + h / 2)) == red, name
    assert pixel(rows, 2, 2) == "#ffffff"


@pytest.mark.slow
@pytest.mark.browser
def test_chromium_checks_can_fail(month_report: Path, tmp_path: Path) -> None:
    """The console and self-check assertions above are not vacuous: a script error is seen,
    and a cell whose state disagrees with the embedded counts makes the page say so."""
    need_chromium()
    broken = tmp_path / "broken.html"
    broken.write_text("<!DOCTYPE html><body><script>notDefined();</script></body>")
    assert any("notDefined" in line for line in dump_dom(broken).console)
    tampered = tmp_path / "tampered.html"
    text = month_report.read_text(encoding="utf-8")
    tampered.write_text(
        text.replace('data-state="failed" title', 'data-state="succeeded" title', 1),
        encoding="utf-8",
    )
    ready = Elements(dump_dom(tampered).dom).first("body")["data-ready"]
    assert ready.startswith("mismatch: ") and "DimCustomer failed" in ready


def ledger_and(folder: Path) -> list[str]:
    """The files in ``folder`` but the empty ``-wal``/``-shm`` a read-only reader of a WAL
    ledger leaves (SQLite makes them to read; only a writer removes them)."""
    return sorted(p.name for p in folder.iterdir() if not p.name.endswith(("-wal", "-shm")))
