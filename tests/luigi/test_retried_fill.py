"""A period retried to success by Luigi's retry policy (issue 48, item 3): the run's exit code
is the one Luigi gives the same case over plain tasks, and its last closing line says the
window is filled.

Each case runs the real ``luigi`` command (exit codes as the shell sees them): luigi's
``RangeDaily`` over a plain task beside a contiguous ``RangeBusinessDaily`` (the default
strategy) over its gatekeeper twin (``tests/helpers/fleet_tasks.py``), one date failing on its
first run only, with Luigi's retry policy (``retry_count = 3``, a retry delay of 1 s) and a
worker kept alive to see the retry; then four processes sharing one range on a luigid, where
the retry may run on another process than the failure.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.fleet import (
    BAD,
    DATES,
    KEEP_ALIVE,
    LUIGID_RETRY,
    range_args,
    run,
    scheduler_args,
    start,
)
from tests.helpers.luigi_support import luigi_command, write_config
from tests.helpers.luigid_support import Luigid, stop_all
from tests.luigi.test_fleet import runs, twin_folders

pytestmark = [pytest.mark.luigi, pytest.mark.slow]

ALREADY_RUNNING = 10  # [retcode] in write_config
FILLED = "gatekeeper: RangeBusinessDaily GkRetry3: filled 5/5 due"
RETRIED = {date: ["ok"] for date in DATES} | {BAD: ["failed", "ok"]}


def closing_lines(output: str) -> list[str]:
    """The range's closing lines, in the order logged."""
    return re.findall(r"gatekeeper: RangeBusinessDaily GkRetry3: filled \d+/\d+ due.*", output)


def assert_ends_filled(output: str) -> None:
    """The last closing line says the window is filled, and no line after the fill says a gap
    remains."""
    lines = closing_lines(output)
    assert lines and lines[-1].startswith(FILLED), lines or output[-3000:]
    assert "gaps" not in lines[-1], lines
    assert "gaps remain after this invocation" not in output, output[-3000:]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("where", ["local", "luigid"])
def test_fleet_retry_to_success_exits_as_range_daily_does(
    tmp_path: Path, sqlite_url: str, where: str, workers: str
) -> None:
    """BAD fails once, then succeeds on Luigi's retry: both twins run it twice and exit
    alike (0: "there were failed tasks but they all succeeded in a retry"); the gatekeeper
    range's last closing line says ``filled 5/5 due (5 this run)``."""
    plain, mine = twin_folders(tmp_path)
    cfg = write_config(tmp_path, sqlite_url)
    server = Luigid(tmp_path / "luigid", LUIGID_RETRY) if where == "luigid" else None
    if server is not None:
        server.start()
    results = {}
    try:
        for twin, cls, control in (("plain", "PlainRetry3", plain), ("gk", "GkRetry3", mine)):
            (control / f"flaky-{BAD}").touch()
            args = range_args(
                twin, cls, control, "--workers", workers, *KEEP_ALIVE, *scheduler_args(server)
            )
            results[twin] = run(cfg, tmp_path, args)
    finally:
        if server is not None:
            server.stop()
    assert runs(plain) == runs(mine) == RETRIED
    codes = {twin: result.returncode for twin, result in results.items()}
    assert codes == {"plain": 0, "gk": 0}, results["gk"].stderr[-3000:]
    assert_ends_filled(results["gk"].stderr)
    assert closing_lines(results["gk"].stderr)[-1] == f"{FILLED} (5 this run)"
    with gk.open_ledger(sqlite_url) as ledger:
        states = [a.state.value for a in ledger.attempts("GkRetry3", BAD)]
    assert states == ["failed", "succeeded"]


@pytest.mark.timeout(180)
@pytest.mark.parametrize("strategy", ["contiguous", "forward"])
def test_fleet_shared_range_retried_to_success_exits_0_in_every_process(
    tmp_path: Path, sqlite_url: str, strategy: str
) -> None:
    """Four kept-alive processes add the same range to one luigid; BAD fails once and is
    retried to success, by whichever worker luigid gives the retry to: the window is filled,
    so no process exits task_failed (30) or not_run (25), whichever ran the failure, the
    retry or the range's last round. Each exits 0 with a closing line saying the window is
    filled, or already_running (10: Luigi's own reading of a worker that left while another
    worker still ran the range, docs/inline.md)."""
    control = tmp_path / "control"
    control.mkdir()
    (control / f"flaky-{BAD}").touch()
    (control / "sleep").write_text("0.2")
    cfg = write_config(tmp_path, sqlite_url)
    server = Luigid(tmp_path / "luigid", LUIGID_RETRY)
    server.start()
    started: list[subprocess.Popen[str]] = []
    try:
        args = luigi_command(
            *range_args(
                "gk",
                "GkRetry3",
                control,
                "--strategy",
                strategy,
                *KEEP_ALIVE,
                *scheduler_args(server),
            ),
            "--no-lock",
        )
        started = start(cfg, tmp_path, args, count=4)
        outputs = [p.communicate(timeout=120)[0] for p in started]
    finally:
        stop_all(started)
        server.stop()
    assert runs(control) == RETRIED
    codes = [p.returncode for p in started]
    assert set(codes) <= {0, ALREADY_RUNNING} and 0 in codes, [o[-3000:] for o in outputs]
    for code, output in zip(codes, outputs, strict=True):
        if code == 0:
            assert_ends_filled(output)
