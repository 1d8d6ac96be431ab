"""A period retried to success by Luigi's retry policy (issue 48, item 3): the run's exit code
is the one Luigi gives the same case over plain tasks, and its last closing line says the
window is filled.

Each case runs the real ``luigi`` command (exit codes as the shell sees them): luigi's
``RangeDaily`` over a plain task beside a contiguous ``RangeBusinessDaily`` (the default
strategy) over its gatekeeper twin (``tests/helpers/fleet_tasks.py``), one date failing on its
first run only, with Luigi's retry policy (``retry_count = 3``, a retry delay of 1 s) and a
worker kept alive to see the retry.
"""

from __future__ import annotations

import re
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
)
from tests.helpers.luigi_support import write_config
from tests.helpers.luigid_support import Luigid
from tests.luigi.test_fleet import runs, twin_folders

pytestmark = [pytest.mark.luigi, pytest.mark.slow]

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
