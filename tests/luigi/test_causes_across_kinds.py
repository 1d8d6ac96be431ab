"""Causes across kinds: a weekly, monthly or quarterly period whose required days failed or are
held by another run is ``blocked``, naming the first cause (the day's job, date, attempt and
error, or the holder's run and lease) in the range's closing line, ``gatekeeper status``, the
HTML report and serve's period JSON, as a daily one is (issue 47, item 2). Real Luigi in
process (local scheduler) on a real ledger, both backends."""

from __future__ import annotations

import datetime as dt
import json
import logging
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import luigi
import pytest

import gatekeeper as gk
from gatekeeper.luigi.fill import watch as fill_watch
from tests.helpers.cli import gatekeeper
from tests.helpers.luigi_support import build

pytestmark = pytest.mark.luigi

UTC = dt.timezone.utc
FAILED, HELD = "2026-09-08", "2026-09-09"  # a Tuesday and a Wednesday of 2026-W37, 09, Q3
ERROR = f"RuntimeError: no trades for {FAILED}"


class CauseDay(gk.BusinessDateTask):
    """A trading day's load: fails while ``<control>/fail-<date>`` exists."""

    calendar = "weekdays"
    control = luigi.Parameter(default="", significant=False)

    def run(self) -> None:
        if self.control and (Path(self.control) / f"fail-{self.business_date}").exists():
            raise RuntimeError(f"no trades for {self.business_date}")


class _EveryDay:
    """Requires the load of every trading day of its own period (as example_pipelines/trading)."""

    control = luigi.Parameter(default="", significant=False)

    def requires(self) -> list[CauseDay]:
        first = getattr(self, self.period_param)  # type: ignore[attr-defined]
        stop = self.period_kind.base.shift(first, 1)  # type: ignore[attr-defined]
        days = CauseDay.period_kind.between(first, stop)
        return [CauseDay(business_date=day, control=self.control) for day in days]

    def build(self) -> dict[str, str]:
        return {"period": self.period_key}  # type: ignore[attr-defined]


class CauseWeek(_EveryDay, gk.GatedWeekTask):
    pass


class CauseMonth(_EveryDay, gk.GatedMonthTask):
    pass


class CauseQuarter(_EveryDay, gk.GatedQuarterTask):
    pass


#: kind: (range class, task class, period key, range start, range stop)
KINDS: dict[str, tuple[Any, Any, str, dt.date, dt.date]] = {
    "weekly": (
        gk.RangeBusinessWeekly,
        CauseWeek,
        "2026-W37",
        dt.date(2026, 9, 7),
        dt.date(2026, 9, 14),
    ),
    "monthly": (
        gk.RangeBusinessMonthly,
        CauseMonth,
        "2026-09",
        dt.date(2026, 9, 1),
        dt.date(2026, 10, 1),
    ),
    "quarterly": (
        gk.RangeBusinessQuarterly,
        CauseQuarter,
        "2026-Q3",
        dt.date(2026, 7, 1),
        dt.date(2026, 10, 1),
    ),
}


class Lines(logging.Handler):
    """Collects the range's closing lines."""

    def __init__(self) -> None:
        super().__init__()
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if re.match(r"gatekeeper: RangeBusiness\w+ \w+: filled \d+/\d+ due", record.getMessage()):
            self.lines.append(record.getMessage())


@pytest.fixture
def closing_lines() -> Iterator[Lines]:
    lines = Lines()
    logger = logging.getLogger("luigi-interface.gatekeeper")
    level = logger.level
    logger.addHandler(lines)
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.removeHandler(lines)
        logger.setLevel(level)


def fill(kind: str, control: Path, lines: Lines) -> str:
    """Run the range of ``kind`` over its one period in process (the real clock), then close
    it as the ``luigi`` process does at exit: its closing line."""
    range_class, task, _, start, stop = KINDS[kind]
    rng = range_class(of=task, of_params={"control": str(control)}, start=start, stop=stop)
    assert not build(rng).scheduling_succeeded  # a day failed or was held: Luigi stops there
    fill_watch._close_at_exit()
    found = [line for line in lines.lines if f" {task.__name__}: " in line]
    assert len(found) == 1, lines.lines
    return found[0]


def status_json(ledger_url: str, job: str) -> dict[str, Any]:
    shown = gatekeeper("--ledger", ledger_url, "status", job, "--json")
    assert shown.returncode == 1, shown.stdout + shown.stderr
    periods = json.loads(shown.stdout)["periods"]
    assert len(periods) == 1, periods
    return dict(periods[0])


def report_cell(ledger_url: str, job: str, key: str, out: Path) -> tuple[str, str]:
    """The report's cell of ``job``'s ``key``: its state and its tooltip."""
    done = gatekeeper("--ledger", ledger_url, "report", job, "-o", str(out))
    assert done.returncode == 0, done.stderr
    cell = re.search(
        rf'<i[^>]*data-job="{job}" data-period="{key}" data-state="(\w+)" title="([^"]*)"',
        out.read_text(),
    )
    assert cell is not None, out.read_text()[-3000:]
    return cell.group(1), cell.group(2)


def served(ledger_url: str, job: str, key: str) -> dict[str, Any]:
    """serve's JSON of ``job``'s period ``key`` (the app in this process, the real clock)."""
    pytest.importorskip("starlette")
    from tests.helpers.serve import in_thread, read

    with in_thread(ledger_url, lambda: dt.datetime.now(UTC)) as base:
        return dict(json.loads(read(f"{base}/api/jobs/{job}/periods/{key}")))


def hold(ledger: gk.Ledger, day: str) -> dt.datetime:
    """Another run holds ``day``'s load: a running attempt on a live lease; its expiry."""
    ledger.begin_attempt("CauseDay", day, "other-run", lease_seconds=3600)
    until = ledger.latest("CauseDay", day).lease_expires_at
    assert until is not None
    return until


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_coarse_range_failed_day_is_the_first_cause_everywhere(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    tmp_path: Path,
    closing_lines: Lines,
    kind: str,
) -> None:
    _, task, key, _, _ = KINDS[kind]
    job = task.__name__
    (tmp_path / f"fail-{FAILED}").touch()
    hold(ledger_cfg, HELD)  # after the failure: the failure is named first
    line = fill(kind, tmp_path, closing_lines)
    failed = ledger_cfg.latest("CauseDay", FAILED)
    assert failed is not None and failed.error == ERROR
    assert line == (
        f"gatekeeper: RangeBusiness{type_name(kind)} {job}: filled 0/1 due (0 this run); "
        f"{key} blocked: CauseDay {FAILED} failed (attempt 1: {ERROR}); 1 gaps remain"
    )

    period = status_json(ledger_url, job)
    assert (period["period"], period["state"]) == (key, "blocked")
    assert period["blocked_by"] == {
        "job": "CauseDay",
        "period": FAILED,
        "state": "failed",
        "attempt": 1,
        "run_id": failed.run_id,
        "error": ERROR,
    }
    shown = gatekeeper("--ledger", ledger_url, "status", job)
    assert f"{key}  blocked" in shown.stdout and f"by CauseDay {FAILED} failed" in shown.stdout

    state, title = report_cell(ledger_url, job, key, tmp_path / "report.html")
    assert state == "blocked"
    assert f"blocked by CauseDay {FAILED} failed (attempt 1: {ERROR})" in title

    detail = served(ledger_url, job, key)
    assert detail["state"] == "blocked"
    assert detail["blocked_by"] == period["blocked_by"]
    assert detail["cause"] == f"blocked: CauseDay {FAILED} failed (attempt 1: {ERROR})"


def type_name(kind: str) -> str:
    return {"weekly": "Weekly", "monthly": "Monthly", "quarterly": "Quarterly"}[kind]


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_coarse_range_held_day_names_its_holder_everywhere(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    tmp_path: Path,
    closing_lines: Lines,
    kind: str,
) -> None:
    _, task, key, _, _ = KINDS[kind]
    job = task.__name__
    until = hold(ledger_cfg, HELD)
    waiting = f"waiting on CauseDay {HELD}, held by run other-run until {until.isoformat()}"
    line = fill(kind, tmp_path, closing_lines)
    assert line == (
        f"gatekeeper: RangeBusiness{type_name(kind)} {job}: filled 0/1 due (0 this run); "
        f"{key} {waiting}; 1 gaps remain"
    )

    period = status_json(ledger_url, job)
    assert (period["period"], period["state"]) == (key, "blocked")
    assert period["blocked_by"] == {
        "job": "CauseDay",
        "period": HELD,
        "state": "held",
        "attempt": 1,
        "run_id": "other-run",
        "error": None,
        "until": until.isoformat(),
    }
    shown = gatekeeper("--ledger", ledger_url, "status", job)
    assert f"{key}  blocked" in shown.stdout and "waiting on CauseDay" in shown.stdout

    state, title = report_cell(ledger_url, job, key, tmp_path / "report.html")
    assert state == "blocked"
    assert waiting in title

    detail = served(ledger_url, job, key)
    assert detail["state"] == "blocked"
    assert detail["blocked_by"] == period["blocked_by"]
    assert detail["cause"] == f"blocked: {waiting}"


def test_month_without_a_range_names_its_failed_day_from_its_last_publication(
    ledger_cfg: gk.Ledger, ledger_url: str, tmp_path: Path
) -> None:
    """A month run directly (no range, so no requirements recorded) requires what its newest
    publication's evidence names: every trading day of its month, read on the days' own
    recorded calendar, so the next month is blocked by its failed day."""
    august = CauseMonth(business_month=dt.date(2026, 8, 1), control=str(tmp_path))
    assert build(august).scheduling_succeeded
    (tmp_path / f"fail-{FAILED}").touch()
    september = CauseMonth(business_month=dt.date(2026, 9, 1), control=str(tmp_path))
    assert not build(september).scheduling_succeeded
    failed = ledger_cfg.latest("CauseDay", FAILED)
    assert failed is not None

    shown = gatekeeper(
        "--ledger", ledger_url, "status", "CauseMonth", "--stop", "2026-10", "--json"
    )
    assert shown.returncode == 1, shown.stdout + shown.stderr
    periods = {p["period"]: p for p in json.loads(shown.stdout)["periods"]}
    assert [(k, p["state"]) for k, p in sorted(periods.items())] == [
        ("2026-08", "succeeded"),
        ("2026-09", "blocked"),
    ]
    assert periods["2026-09"]["blocked_by"] == {
        "job": "CauseDay",
        "period": FAILED,
        "state": "failed",
        "attempt": 1,
        "run_id": failed.run_id,
        "error": ERROR,
    }
