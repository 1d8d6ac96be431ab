"""A previous-period upstream held by a live worker is waited for (issue 48, item 3 (e)).

Process A fills a range of ``GkChained`` (each period requires the one before it,
``tests/helpers/fleet_tasks.py``) inline on a luigid, and is slow in one period; process B
runs, through the same luigid, the next period, whose requirement is the held one. Luigi's
worker in B schedules that requirement (luigid does not list a period run inline as running:
it hears of it when it ends), gets it, and its attempt finds A's live lease: it waits, as a
period run inline waits, and takes A's success instead of failing with ``LeaseHeld``; when
A's attempt fails instead, B's copy fails without retrying it, saying the holder failed.
"""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.fleet import range_args, scheduler_args, start
from tests.helpers.fleet_tasks import CHAIN_FIRST
from tests.helpers.luigi_support import luigi_command, write_config
from tests.helpers.luigid_support import Luigid, stop_all
from tests.luigi.test_fleet import runs

pytestmark = [pytest.mark.luigi, pytest.mark.slow]

HELD, NEXT = "2026-10-04", "2026-10-05"
#: the option every process here runs with: the wait is the inline deployment's (with
#: ``[gatekeeper] inline = false`` no period runs inline, and a held lease fails at once)
INLINE = ("--gatekeeper-inline", "true")


def held_by_a(ledger_url: str, process: subprocess.Popen[str]) -> gk.Attempt:
    """Wait until a running attempt of HELD is in the ledger; return it."""
    deadline = time.monotonic() + 60
    with gk.open_ledger(ledger_url) as ledger:
        while True:
            latest = ledger.latest("GkChained", HELD)
            if latest is not None and latest.state is gk.RunState.RUNNING:
                return latest
            assert process.poll() is None, process.communicate()[0][-3000:]
            assert time.monotonic() < deadline, "A never held HELD"
            time.sleep(0.05)


def run_a_then_b(
    tmp_path: Path, ledger_url: str, control: Path, workers: str
) -> tuple[list[subprocess.Popen[str]], list[str], gk.Attempt]:
    """A fills the chain up to NEXT inline, slow in HELD; B, started once A holds HELD, runs
    NEXT with ``--workers``: the processes, their outputs, and A's attempt of HELD."""
    (control / f"sleep-{HELD}").write_text("4")
    cfg = write_config(tmp_path, ledger_url)
    server = Luigid(tmp_path / "luigid")
    server.start()
    started: list[subprocess.Popen[str]] = []
    try:
        fill = range_args("gk", "GkChained", control, *INLINE, start=CHAIN_FIRST, stop=NEXT)
        started = start(cfg, tmp_path, luigi_command(*fill, *scheduler_args(server), "--no-lock"))
        holder = held_by_a(ledger_url, started[0])
        started += start(
            cfg,
            tmp_path,
            luigi_command(
                "--module",
                "tests.helpers.fleet_tasks",
                "GkChained",
                "--business-date",
                NEXT,
                "--control",
                str(control),
                "--workers",
                workers,
                *INLINE,
                *scheduler_args(server),
                "--no-lock",
            ),
        )
        outputs = [p.communicate(timeout=90)[0] for p in started]
    finally:
        stop_all(started)
        server.stop()
    return started, outputs, holder


@pytest.mark.timeout(120)
@pytest.mark.parametrize("workers", ["1", "2"])
def test_previous_period_held_by_a_live_inline_fill_is_waited_for(
    tmp_path: Path, sqlite_url: str, workers: str
) -> None:
    """B (``--workers 1`` and ``2``: the requirement runs in a forked task process) waits for
    A's attempt of HELD, then runs NEXT: both exit 0, HELD has one attempt (A's) and its body
    ran once, NEXT ran once, in B."""
    control = tmp_path / "control"
    control.mkdir()
    started, outputs, holder = run_a_then_b(tmp_path, sqlite_url, control, workers)
    assert [p.returncode for p in started] == [0, 0], [o[-3000:] for o in outputs]
    waited = f"GkChained {HELD}: attempt 1 (run {holder.run_id}) holds it; waiting for it"
    assert waited in outputs[1], outputs[1][-3000:]
    assert "LeaseHeld" not in outputs[1], outputs[1][-3000:]
    with gk.open_ledger(sqlite_url) as ledger:
        assert [(a.attempt, a.state, a.run_id) for a in ledger.attempts("GkChained", HELD)] == [
            (1, gk.RunState.SUCCEEDED, holder.run_id)
        ]
        assert [a.state for a in ledger.attempts("GkChained", NEXT)] == [gk.RunState.SUCCEEDED]
    assert runs(control)[HELD] == ["ok"] and runs(control)[NEXT] == ["ok"]
    by = {
        line.split()[0]: line.split()[3:5] for line in (control / "runs").read_text().splitlines()
    }
    assert str(started[1].pid) in by[NEXT] and str(started[0].pid) in by[HELD], by


@pytest.mark.timeout(120)
def test_previous_period_whose_holder_fails_while_waited_for_says_so(
    tmp_path: Path, sqlite_url: str
) -> None:
    """A's attempt of HELD fails while B waits for it: B's copy does not retry it (Luigi's
    retry policy does) and fails, its line saying the holder ended failed, not that it holds
    the period until some time; NEXT is not attempted; both exit ``task_failed``."""
    control = tmp_path / "control"
    control.mkdir()
    (control / f"fail-{HELD}").touch()
    started, outputs, holder = run_a_then_b(tmp_path, sqlite_url, control, "1")
    assert [p.returncode for p in started] == [30, 30], [o[-3000:] for o in outputs]
    line = next(line for line in outputs[1].splitlines() if "LeaseHeld:" in line)
    assert line.endswith(
        f"LeaseHeld: GkChained {HELD} was held by run {holder.run_id} (attempt 1), which ended "
        "failed while this run waited for it; this run does not retry it"
    ), line
    with gk.open_ledger(sqlite_url) as ledger:
        assert [(a.attempt, a.state) for a in ledger.attempts("GkChained", HELD)] == [
            (1, gk.RunState.FAILED)
        ]
        assert ledger.attempts("GkChained", NEXT) == []
    assert runs(control)[HELD] == ["failed"] and NEXT not in runs(control)
