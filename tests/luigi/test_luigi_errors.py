"""The `luigi` command's own refusals of gatekeeper parameters: one line naming the parameter
and value (the traceback only with ``--log-level DEBUG``), and Luigi's exit codes, compared
with what Luigi gives a plain task that fails the same way (tests/helpers/plain_tasks.py)."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import run_luigi, write_config

pytestmark = pytest.mark.luigi

SCHEDULING_ERROR, UNHANDLED = 35, 40  # write_config's [retcode]
SALES = ("--module", "example_pipelines.sales")
TASKS = ("--module", "tests.helpers.luigi_tasks")
RANGE = (*SALES, "RangeBusinessDaily", "--of", "DailySalesLoad", "--start", "2026-10-01")

# (arguments, the one line's words, Luigi's exit code for that kind of failure)
CASES = [
    pytest.param(
        (*RANGE, "--stop", "2026-10-03", "--lateness", "2hours"),
        "InvalidInput: invalid lateness='2hours'",
        SCHEDULING_ERROR,
        id="lateness",
    ),
    pytest.param(
        (*RANGE, "--stop", "2026-09-20"),
        "InvalidInput: invalid stop=2026-09-20: before start 2026-10-01",
        SCHEDULING_ERROR,
        id="stop-before-start",
    ),
    pytest.param(
        (*RANGE, "--stop", "2026-10-03", "--catchup", "last:0"),
        "InvalidInput: invalid catchup='last:0'",
        SCHEDULING_ERROR,
        id="catchup-last-0",
    ),
    pytest.param(
        (*TASKS, "RangeBusinessDaily", "--of", "HourlyLoad", "--start", "2026-10-01"),
        "InvalidInput: invalid of='HourlyLoad': is hourly; use the hourly range",
        SCHEDULING_ERROR,
        id="hourly-in-daily-range",
    ),
    pytest.param(
        (*SALES, "DimCustomer", "--business-date", "2026-13-01"),
        "InvalidInput: invalid business_date='2026-13-01'",
        UNHANDLED,
        id="business-date",
    ),
    pytest.param(
        (*SALES, "DimCustomer", "--business-date", "2026-10-01", "--attempt", "-1"),
        "InvalidInput: invalid attempt='-1'",
        UNHANDLED,
        id="attempt",
    ),
]

# what Luigi itself gives a plain task failing the same way: in requires(), or when built
PLAIN = {
    SCHEDULING_ERROR: ("--module", "tests.helpers.plain_tasks", "RaisesInRequires"),
    UNHANDLED: ("--module", "tests.helpers.plain_tasks", "PlainDated", "--day", "2026-13-01"),
}


@pytest.mark.parametrize(("args", "line", "luigi_code"), CASES)
@pytest.mark.process
def test_luigi_command_bad_parameter_is_one_line_with_luigis_exit_code(
    sqlite_url: str, tmp_path: Path, args: tuple[str, ...], line: str, luigi_code: int
) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    plain = run_luigi(cfg, *PLAIN[luigi_code], cwd=tmp_path)
    assert plain.returncode == luigi_code, plain.stderr  # Luigi's own code for the kind
    assert "Traceback" in plain.stderr  # and Luigi's own traceback for a plain task

    done = run_luigi(cfg, *args, cwd=tmp_path)
    assert done.returncode == luigi_code, done.stderr
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    (shown,) = [row for row in output.splitlines() if line in row]
    assert shown.endswith(shown.split(line)[1]) and "\n" not in shown

    debug = run_luigi(cfg, *args, "--log-level", "DEBUG", cwd=tmp_path)
    assert debug.returncode == luigi_code
    assert "Traceback" in debug.stderr and line.split(": ", 1)[1] in debug.stderr


@pytest.mark.process
def test_luigi_command_explicit_attempt_not_above_recorded_is_refused(
    sqlite_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    args = (*SALES, "DimCustomer", "--business-date", "2026-10-23")
    assert run_luigi(cfg, *args, cwd=tmp_path).returncode == 0  # attempt 1 succeeded
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
    for wanted in ("1", "0001"):
        refused = run_luigi(cfg, *args, "--attempt", wanted, cwd=tmp_path)
        assert refused.returncode == SCHEDULING_ERROR, refused.stderr
        assert "Traceback" not in refused.stderr
        assert (
            "StateConflict: DimCustomer 2026-10-23: --attempt 1 refused; recorded attempts: 1 "
            in (refused.stderr)
        )
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before  # refused before anything was recorded
    repair = run_luigi(cfg, *args, "--attempt", "2", cwd=tmp_path)
    assert repair.returncode == 0, repair.stderr
    again = run_luigi(cfg, *args, "--attempt", "2", cwd=tmp_path)  # the same repair, asked again
    assert again.returncode == SCHEDULING_ERROR and "recorded attempts: 1, 2 " in again.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        assert [a.attempt for a in ledger.attempts("DimCustomer", dt.date(2026, 10, 23))] == [1, 2]
