"""A period retried to success by Luigi's retry policy (issue 48, item 3): the run's exit code
is the one Luigi gives the same case over plain tasks, and its last closing line says the
window is filled.

Each case runs the real ``luigi`` command (exit codes as the shell sees them): luigi's
``RangeDaily`` over a plain task beside a contiguous ``RangeBusinessDaily`` (the default
strategy) over its gatekeeper twin (``tests/helpers/fleet_tasks.py``), one date failing on its
first run only, with Luigi's retry policy (``retry_count = 3``, a retry delay of 1 s) and a
worker kept alive to see the retry; and the same retry run to success by another process on
one luigid, where the process that saw the failure exits ``task_failed`` as Luigi's does.
"""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import luigi
import pytest

import gatekeeper as gk
from tests.helpers.fleet import (
    BAD,
    DATES,
    KEEP_ALIVE,
    LUIGID_NO_RETRY_IN_RUN,
    LUIGID_RETRY,
    range_args,
    run,
    scheduler_args,
    start,
)
from tests.helpers.luigi_support import luigi_command, luigi_env, write_config
from tests.helpers.luigid_support import Luigid, stop_all
from tests.luigi.test_fleet import events, runs, twin_folders

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


# -- a retry another process ran to success --------------------------------------------------
#: the date process A runs after its failure of BAD, until BAD has succeeded (at most 60 s),
#: so that A is still in it when luigid offers BAD's retry (after 1 s): the retry can only go
#: to process B
BUSY = "2026-10-04"


def ran(control: Path) -> list[tuple[str, float, float, set[str], str]]:
    """The runs of the body in the order they ended: (date, start, end, {its process id and
    its parent's}, outcome)."""
    path = control / "runs"
    lines = path.read_text().splitlines() if path.exists() else []
    return [(d, float(s), float(e), {p, pp}, o) for d, s, e, p, pp, o in map(str.split, lines)]


def retried_elsewhere(
    cfg: Path, twin: str, cls: str, control: Path, extra: tuple[str, ...]
) -> tuple[list[int], list[str]]:
    """Process A fills the window on a luigid that retries after 1 s (``--workers 1``,
    keep-alive): BAD fails in A, which then sleeps in BUSY until BAD has succeeded. BAD's
    priority is 2 and BUSY's 1 (the other dates 0), so A's worker takes them in that order:
    among tasks of one priority luigid's order is that of a set of task ids, random per luigid
    process. Process B fills
    BAD's day alone, started once A's failure is in the runs notes, and runs BAD's retry to
    success. Returns A's and B's exit codes and outputs."""
    (control / f"flaky-{BAD}").touch()
    (control / f"until-{BUSY}").write_text(BAD)
    (control / f"priority-{BAD}").write_text("2")
    (control / f"priority-{BUSY}").write_text("1")
    server = Luigid(control / "luigid", LUIGID_RETRY)
    server.start()
    started: list[subprocess.Popen[str]] = []
    try:
        command = [*KEEP_ALIVE, "--workers", "1", *extra, *scheduler_args(server), "--no-lock"]
        started = start(cfg, control, luigi_command(*range_args(twin, cls, control, *command)))
        deadline = time.monotonic() + 60
        while not any(run[0] == BAD for run in ran(control)):  # A's failure is recorded
            assert started[0].poll() is None, started[0].communicate()[0][-3000:]
            assert time.monotonic() < deadline, "A did not run BAD"
            time.sleep(0.02)
        b_args = range_args(twin, cls, control, *command, start=BAD, stop=BUSY)
        started += start(cfg, control, luigi_command(*b_args))
        outputs = [p.communicate(timeout=90)[0] for p in started]
    finally:
        stop_all(started)
        server.stop()
    a, b = (str(p.pid) for p in started)
    by = {
        (date, pid): (start_, end, out)
        for date, start_, end, pids, out in ran(control)
        for pid in pids
    }
    failed = next(  # A's first run of BAD (``by`` keeps the last)
        ((s, e, o) for d, s, e, pids, o in ran(control) if d == BAD and a in pids), None
    )
    busy, retried = by.get((BUSY, a)), by.get((BAD, b))
    assert failed and busy and retried, (ran(control), outputs)
    assert failed[2] == "failed" and retried[2] == "ok", ran(control)
    assert failed[1] <= busy[0], ("A's worker took BUSY before BAD", ran(control), outputs)
    # A was in BUSY from its failure until after B's retry: the retry could only be B's
    assert retried[1] < busy[1], (ran(control), outputs)
    return [p.returncode for p in started], outputs


@pytest.mark.timeout(300)
def test_fleet_retry_run_by_another_process_exits_as_range_daily_does(tmp_path: Path) -> None:
    """A period failed in process A and retried to success by Luigi's retry policy in process
    B (issue 48, item 3 (c)): A exits ``task_failed`` (30) as Luigi does over plain tasks,
    its summary counting a task failed unless this worker saw it done; B exits 0, as Luigi
    does. B fills BAD's day alone: a process sharing A's whole window would also find BUSY
    in A's hands, which Luigi judges ``already_running`` over plain tasks and, over a range's
    chunks, by what it finds of them (docs/inline.md, processes sharing a range on luigid).

    The gatekeeper range fills ``--strategy forward`` (independent periods, as ``RangeDaily``
    schedules them, so A goes on to BUSY after its failure of BAD; a contiguous fill stops at
    the failure, leaving A nothing to be busy with), inline (the default: BAD's first try
    inline, its retry scheduled) and scheduled (``--inline false``)."""
    codes, states = {}, {}
    for twin, cls, extra in (
        ("plain", "PlainRetry3", ()),
        ("gk-inline", "GkRetry3", ("--strategy", "forward", "--inline", "true")),
        ("gk-scheduled", "GkRetry3", ("--strategy", "forward", "--inline", "false")),
    ):
        control = tmp_path / twin
        control.mkdir()
        ledger_url = f"sqlite:///{control / 'ledger.db'}"  # each twin a ledger of its own
        cfg = write_config(control, ledger_url)
        codes[twin], outputs = retried_elsewhere(cfg, twin.split("-")[0], cls, control, extra)
        assert runs(control) == RETRIED, outputs
        if twin != "plain":
            with gk.open_ledger(ledger_url) as ledger:
                states[twin] = [a.state.value for a in ledger.attempts("GkRetry3", BAD)]
    assert codes == dict.fromkeys(("plain", "gk-inline", "gk-scheduled"), [30, 0]), codes
    assert states == dict.fromkeys(("gk-inline", "gk-scheduled"), ["failed", "succeeded"])


# -- a period another process's scheduled copy held, and failed, while a chunk waited ---------
#: the day after BAD: process B fills [BAD, AFTER_BAD)
AFTER_BAD = "2026-10-04"
#: what gatekeeper's process B logs when it finds BAD's lease held and waits for its holder
WAITING = "holds it; waiting for it"
START, FAILURE = luigi.Event.START, luigi.Event.FAILURE


def held_by_another(
    cfg: Path, twin: str, control: Path, server: Luigid | None
) -> tuple[list[int], str]:
    """Process A runs BAD alone (a scheduled copy: ``luigi PlainDay`` / ``luigi GkDay``), every
    run of it failing, its first run held in the body until ``release-<BAD>`` exists. Once A
    holds it, process B fills BAD's day through the range (RangeDaily / RangeBusinessDaily
    inline). Once B has reached BAD (gatekeeper: it logs that it waits for A; Luigi: over plain
    tasks under luigid it leaves BAD to A's worker and exits, under a local scheduler it runs
    BAD itself and exits), A is released and fails. Returns A's and B's exit codes and B's
    output."""
    (control / f"fail-{BAD}").touch()
    (control / f"hold-{BAD}").touch()
    sched = [*scheduler_args(server), "--no-lock"]
    if twin == "plain":
        a_args = ["PlainDay", "--date", BAD]
    else:
        a_args = ["GkDay", "--business-date", BAD]
    a_command = luigi_command(
        "--module", "tests.helpers.fleet_tasks", *a_args, "--control", str(control), *sched
    )
    of = "PlainDay" if twin == "plain" else "GkDay"
    inline = () if twin == "plain" else ("--inline", "true")
    b_command = luigi_command(
        *range_args(twin, of, control, "--workers", "1", *inline, *sched, start=BAD, stop=AFTER_BAD)
    )
    b_log = control / "b.log"
    started: list[subprocess.Popen[str]] = []
    try:
        started += start(cfg, control, a_command)
        deadline = time.monotonic() + 60
        while not (control / f"held-{BAD}").exists():  # A's run of BAD holds its lease
            assert started[0].poll() is None, started[0].communicate()[0][-3000:]
            assert time.monotonic() < deadline, "A did not run BAD"
            time.sleep(0.02)
        with b_log.open("w") as out:
            started.append(
                subprocess.Popen(
                    b_command,
                    cwd=control,
                    env=luigi_env(cfg),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                )
            )
        while started[1].poll() is None and WAITING not in b_log.read_text():
            assert time.monotonic() < deadline + 60, ("B did not reach BAD", b_log.read_text())
            time.sleep(0.02)
        (control / f"release-{BAD}").touch()
        a_output = started[0].communicate(timeout=90)[0]
        started[1].wait(timeout=90)
    finally:
        stop_all(started)
    assert (control / f"held-{BAD}").exists(), a_output[-3000:]
    return [p.returncode for p in started], b_log.read_text()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("where", ["luigid", "local"])
def test_fleet_period_failed_while_another_process_waited_is_not_rerun_as_range_daily_does(
    tmp_path: Path, sqlite_url: str, where: str
) -> None:
    """Process A's scheduled copy of BAD holds its lease while process B's inline chunk reaches
    it; A's run fails. Under luigid, B's wait ends in the refusal a scheduled copy of BAD
    waiting there gives (``lease.outwait``: ``LeaseHeld``, START then FAILURE, exit
    ``task_failed``), never in a second run of BAD's body: Luigi's second worker never gets a
    task another worker runs, nor one it failed before ``retry_delay``, so over plain tasks
    the body runs once, A's. Under local schedulers Luigi coordinates nothing: each process
    runs BAD, and so does B after its wait (its START fired once), so the runs of the body, the
    events and the exit codes are Luigi's.

    What Luigi's B does under luigid that B does not (pinned with both figures): it leaves at
    once, BAD being run by another worker (``already_running``, 10) and fires no event for
    BAD; gatekeeper's B, whose chunk fired START before the lease told it BAD was held, waits
    for A and pairs that START with a FAILURE (exit 30), as its scheduled copy would."""
    plain, mine = twin_folders(tmp_path)
    cfg = write_config(tmp_path, sqlite_url)
    server = Luigid(tmp_path / "luigid", LUIGID_NO_RETRY_IN_RUN) if where == "luigid" else None
    if server is not None:
        server.start()
    codes, outputs = {}, {}
    try:
        for twin, control in (("plain", plain), ("gk", mine)):
            codes[twin], outputs[twin] = held_by_another(cfg, twin, control, server)
    finally:
        if server is not None:
            server.stop()
    with gk.open_ledger(sqlite_url) as ledger:
        states = [a.state.value for a in ledger.attempts("GkDay", BAD)]
    assert WAITING in outputs["gk"], outputs["gk"][-3000:]
    found = {twin: (runs(c), events(c)) for twin, c in (("plain", plain), ("gk", mine))}
    if where == "local":  # each process runs BAD: Luigi's figures, all of them
        assert runs(plain) == runs(mine) == {BAD: ["failed", "failed"]}, outputs
        assert events(plain) == events(mine), found
        assert events(mine)[(START, BAD)] == events(mine)[(FAILURE, BAD)] == 2, found
        assert codes == {"plain": [30, 30], "gk": [30, 30]}, outputs
        assert states == ["failed", "failed"]
        return
    assert runs(plain) == runs(mine) == {BAD: ["failed"]}, (found, outputs["gk"][-3000:])
    assert "this run does not retry it" in outputs["gk"], outputs["gk"][-3000:]
    assert events(plain)[(START, BAD)] == events(plain)[(FAILURE, BAD)] == 1, found
    assert events(mine)[(START, BAD)] == events(mine)[(FAILURE, BAD)] == 2, found
    assert codes == {"plain": [30, 10], "gk": [30, 30]}, (codes, outputs)
    assert states == ["failed"]
