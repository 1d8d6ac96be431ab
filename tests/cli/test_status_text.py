"""``status``'s text (issue 47, item 7): the days off a job's calendar fold into the run around
them (``2026-10-26 .. 2026-11-06 succeeded 10 (+2 days off)``), and the grid of several jobs
lines their strips up by date."""

from __future__ import annotations

import gatekeeper as gk
from gatekeeper.cli.status_text import run_rows
from gatekeeper.report.states import PeriodState, PeriodStatus
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import succeed

OK, OFF, FAILED = PeriodState.SUCCEEDED, PeriodState.NON_BUSINESS, PeriodState.FAILED


def _states(*found: tuple[str, PeriodState]) -> list[PeriodStatus]:
    return [PeriodStatus(day, state) for day, state in found]


def test_run_rows_fold_days_off_into_the_run_around_them() -> None:
    states = _states(
        ("2026-10-24", OFF),  # Saturday and Sunday before the first business day
        ("2026-10-25", OFF),
        ("2026-10-26", OK),
        ("2026-10-30", OK),  # (the days between left out: runs read only neighbours)
        ("2026-10-31", OFF),
        ("2026-11-01", OFF),
        ("2026-11-02", OK),
        ("2026-11-03", FAILED),
        ("2026-11-07", OFF),
    )
    assert [row[:3] for row in run_rows(states)] == [
        ("2026-10-26 .. 2026-11-02", "succeeded", "3 (+4 days off)"),
        ("2026-11-03", "failed", "1 (+1 day off)"),
    ]


def test_run_rows_keep_a_window_of_days_off_only() -> None:
    states = _states(("2026-10-31", OFF), ("2026-11-01", OFF))
    assert [row[:3] for row in run_rows(states)] == [
        ("2026-10-31 .. 2026-11-01", "non_business", 2)
    ]


def test_run_rows_name_the_periods_off_of_their_kind() -> None:
    states = _states(("2026-W01", OK), ("2026-W02", OFF), ("2026-W03", OK))
    assert run_rows(states, "weekly")[0][:3] == (
        "2026-W01 .. 2026-W03",
        "succeeded",
        "2 (+1 week off)",
    )


def test_status_grid_lines_up_jobs_by_date(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        for day in range(1, 7):
            succeed(ledger, "Early", f"2026-10-0{day}")
        for day in range(4, 7):
            succeed(ledger, "Late", f"2026-10-0{day}")
    done = gatekeeper(
        "--ledger", ledger_url, "status", "Early", "Late", "--now", "2026-10-07T12:00:00+00:00"
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2026-10-01 .. 2026-10-06 (daily, 6 periods):" in done.stdout
    lines = done.stdout.splitlines()
    header = next(i for i, line in enumerate(lines) if "strip" in line.split())
    column = lines[header].index("strip")
    strips = {line.split()[0]: line[column : column + 6] for line in lines[header + 1 : header + 3]}
    assert strips == {"Early": "######", "Late": "   ###"}
