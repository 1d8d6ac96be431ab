"""A period another run holds is one line with the way out, and the range's closing line names
it: after a real ``luigi`` worker is killed with SIGKILL holding a period's lease, the next
``luigi`` run of that task logs one line (job, period, the holder's run, its lease's expiry,
``gatekeeper abandon JOB PERIOD --reason ...``), no traceback; a range over the window ends
naming that period and its holder, not a later period; and the command the line gives lets
the next run fill it."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.core.causes import Cause
from gatekeeper.core.progress import Blocked, Held, first_obstacle
from tests.helpers.luigi_support import luigi_command, luigi_env, run_luigi, write_config
from tests.helpers.luigid_support import HOST, Luigid

T0 = dt.datetime(2026, 11, 28, 6, tzinfo=dt.timezone.utc)
HELD = "2026-11-28"


def test_first_obstacle_names_a_lapsed_lease_before_a_later_cause(ledger: gk.Ledger) -> None:
    """A dead worker's attempt still running on a lease that expired (no run took the period
    over yet) is the first obstacle, said to be expired; a later period's missing upstream
    never stands in for it. An attempt running without a lease is held, not expired."""
    ledger.begin_attempt("J", HELD, "dead", lease_seconds=60, now=T0)
    ledger.record("J", "2026-11-30", 1, "observed", "running", T0, now=T0)  # no lease
    latest = ledger.latest_between("J", "2026-11-27", "2026-12-01")
    later = {"2026-11-29": Cause("Up", "2026-11-29", "missing")}
    since, now = T0 + dt.timedelta(hours=1), T0 + dt.timedelta(hours=2)

    found = first_obstacle([HELD, "2026-11-29"], latest, since, now, lambda r: False, later)
    assert found == Held(latest[HELD], expired=True)
    until = latest[HELD].lease_expires_at
    assert until is not None
    assert found.describe() == (
        f"{HELD} held by run dead until {until.isoformat()} (expired: the next run abandons it)"
    )
    live = first_obstacle([HELD], latest, since, T0, lambda r: False, later)
    assert live == Held(latest[HELD]) and "expired" not in live.describe()
    assert first_obstacle(["2026-11-29"], latest, since, now, lambda r: False, later) == Blocked(
        "2026-11-29", later["2026-11-29"]
    )
    unleased = first_obstacle(["2026-11-30"], latest, since, now, lambda r: False, later)
    assert unleased == Held(latest["2026-11-30"])
    assert unleased.describe() == "2026-11-30 held by run observed"


def hanging(folder: Path, *args: str) -> list[str]:
    return [
        "--module",
        "tests.helpers.luigi_tasks",
        *args,
        "--gatekeeper-inline",
        "false",  # the range schedules the held period: it fails at once, as a task does
    ]


def killed_holding(cfg: Path, folder: Path, *command: str) -> str:
    """A real ``luigi`` worker (of ``command``; by default Hanging for HELD under a local
    scheduler) that starts Hanging for HELD, then is killed with SIGKILL while it holds the
    lease: the holder's run ID."""
    (folder / "hang").write_text("")
    default = (
        *hanging(folder, "Hanging", "--business-date", HELD, "--control", str(folder)),
        "--local-scheduler",
    )
    worker = subprocess.Popen(
        luigi_command(*(command or default)),
        cwd=folder,
        env=luigi_env(cfg),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not (folder / "started").exists():
            assert worker.poll() is None and time.monotonic() < deadline, "Hanging never started"
            time.sleep(0.05)
    finally:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)
    return (folder / "started").read_text().split()[2]


@pytest.mark.luigi
@pytest.mark.slow
def test_a_killed_workers_lease_is_one_line_with_the_way_out(
    tmp_path: Path, sqlite_url: str
) -> None:
    cfg = write_config(tmp_path, sqlite_url, lease_seconds=3600)
    holder = killed_holding(cfg, tmp_path)
    with gk.open_ledger(sqlite_url) as ledger:
        until = ledger.latest("Hanging", HELD).lease_expires_at
    assert until is not None

    again = run_luigi(
        cfg,
        *hanging(tmp_path, "Hanging", "--business-date", HELD, "--control", str(tmp_path)),
        cwd=tmp_path,
    )
    assert again.returncode == 30, again.stderr[-3000:]  # [retcode] task_failed
    assert "Traceback" not in again.stderr, again.stderr[-3000:]
    lines = [line for line in again.stderr.splitlines() if "LeaseHeld" in line]
    assert len(lines) == 1, again.stderr[-3000:]
    assert lines[0].endswith(
        f"failed    Hanging(business_date={HELD}): LeaseHeld: Hanging {HELD} is held by run "
        f"{holder} (attempt 1) until {until.isoformat()}; wait for it to finish or its lease "
        f'to expire, or, if its worker is dead: gatekeeper abandon Hanging {HELD} --reason "..."'
    ), lines[0]

    window = ["--start", "2026-11-27", "--stop", "2026-11-30"]
    of = ["--of", "Hanging", "--of-params", json.dumps({"control": str(tmp_path)})]
    ranged = run_luigi(cfg, *hanging(tmp_path, "RangeBusinessDaily", *of, *window), cwd=tmp_path)
    assert ranged.returncode == 30, ranged.stderr[-3000:]
    closing = re.findall(
        r"gatekeeper: RangeBusinessDaily Hanging: filled \d+/\d+ due .*", ranged.stderr
    )
    assert closing == [
        "gatekeeper: RangeBusinessDaily Hanging: filled 1/3 due (1 this run); "
        f"{HELD} held by run {holder} until {until.isoformat()}; 2 gaps remain"
    ], ranged.stderr[-3000:]
    assert "Traceback" not in ranged.stderr, ranged.stderr[-3000:]

    way_out = subprocess.run(  # the command the line gives, as given
        ["gatekeeper", "abandon", "Hanging", HELD, "--reason", "worker killed"],
        cwd=tmp_path,
        env={**luigi_env(cfg), "PATH": f"{Path(luigi_command()[0]).parent}:{os.environ['PATH']}"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert way_out.returncode == 0, way_out.stdout + way_out.stderr
    filled = run_luigi(cfg, *hanging(tmp_path, "RangeBusinessDaily", *of, *window), cwd=tmp_path)
    assert filled.returncode == 0, filled.stderr[-3000:]
    assert "filled 3/3 due (2 this run)" in filled.stderr, filled.stderr[-3000:]


@pytest.mark.luigi
@pytest.mark.slow
def test_closing_line_names_a_killed_workers_period_while_luigid_lists_it_filling(
    tmp_path: Path, sqlite_url: str
) -> None:
    """luigid lists a worker killed with -9 as running its range until it times the worker
    out; a second process adding the range meanwhile does not run it, and its closing line
    names the period the dead worker holds, with its holder, besides who luigid says fills."""
    cfg = write_config(tmp_path, sqlite_url, lease_seconds=3600)
    server = Luigid(tmp_path / "luigid")
    server.start()
    of = ["--of", "Hanging", "--of-params", json.dumps({"control": str(tmp_path)})]
    command = [
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        *of,
        "--start",
        HELD,
        "--stop",
        "2026-12-01",
        "--scheduler-host",
        HOST,
        "--scheduler-port",
        str(server.port),
        "--no-lock",
    ]
    try:
        holder = killed_holding(cfg, tmp_path, *command)
        second = subprocess.run(
            luigi_command(*command),
            cwd=tmp_path,
            env=luigi_env(cfg),
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        server.stop()
    with gk.open_ledger(sqlite_url) as ledger:
        until = ledger.latest("Hanging", HELD).lease_expires_at
    assert until is not None
    assert second.returncode != 0, second.stderr[-3000:]
    closing = re.findall(
        r"gatekeeper: RangeBusinessDaily Hanging: filled \d+/\d+ due .*", second.stderr
    )
    assert len(closing) == 1, second.stderr[-3000:]
    assert closing[0].startswith(
        "gatekeeper: RangeBusinessDaily Hanging: filled 0/3 due (0 this run); "
        f"{HELD} held by run {holder} until {until.isoformat()}; 3 gaps being filled by Worker("
    ), closing[0]
