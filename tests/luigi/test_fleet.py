"""A range is a good Luigi citizen: differential tests against luigi's own RangeDaily.

Each case runs the same body with the same Luigi settings twice, with the real ``luigi``
command: luigi's ``RangeDaily`` over a plain Luigi task, and ``RangeBusinessDaily`` over its
gatekeeper twin (``tests/helpers/fleet_tasks.py``), under the local scheduler and a real ``luigid``;
then compares the runs of each date, the events, the exit code and luigid's statuses.
"""

from __future__ import annotations

import collections
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
from tests.helpers.fleet import (
    BAD,
    DATES,
    KEEP_ALIVE,
    LUIGID_NO_RETRY_IN_RUN,
    LUIGID_RETRY,
    range_args,
    recipe_config,
    run,
    scheduler_args,
    start,
    start_forward_fill,
)
from tests.helpers.luigi_support import (
    inline_by_default,
    luigi_command,
    luigi_env,
    write_config,
)
from tests.helpers.luigid_support import Luigid, stop_all

# a fleet of real workers on one luigid; its waits end on events, so it shares the machine
# with other tests under xdist
pytestmark = [pytest.mark.luigi, pytest.mark.slow]


def runs(control: Path) -> dict[str, list[str]]:
    """Date -> the outcomes of its runs of the body, in order."""
    found: dict[str, list[str]] = collections.defaultdict(list)
    path = control / "runs"
    for line in path.read_text().splitlines() if path.exists() else []:
        date, *_, outcome = line.split()
        found[date].append(outcome)
    return dict(found)


#: Events counted once per date: DEPENDENCY_DISCOVERED (a chunk announces its periods each time
#: it runs), and TIMEOUT (Luigi's worker fires it again, and terminates again, each time it
#: finds a terminated process still alive: a race on a loaded machine, RangeDaily's too).
ONCE = ("event.core.dependency.discovered", "event.core.timeout")


def events(control: Path) -> collections.Counter[tuple[str, str]]:
    """(event, date) -> how often it fired (the ONCE events: whether it fired)."""
    path = control / "events"
    lines = path.read_text().splitlines() if path.exists() else []
    counted = collections.Counter(tuple(line.split()) for line in lines)
    for key in counted:
        if key[0] in ONCE:
            counted[key] = 1
    return counted  # type: ignore[return-value]


def statuses(server: Luigid, family: str) -> dict[str, str]:
    """Date -> the status luigid shows for the ``family`` task of that date."""
    found: dict[str, str] = {}
    for status in ("PENDING", "RUNNING", "DONE", "FAILED", "DISABLED"):
        for task in server.rpc("task_list", status=status, search=family).values():
            if task["name"] == family:
                params = task["params"]
                found[params.get("date") or params["business_date"]] = status
    return found


def twin_folders(tmp_path: Path) -> tuple[Path, Path]:
    plain, gk_ = tmp_path / "plain-control", tmp_path / "gk-control"
    plain.mkdir()
    gk_.mkdir()
    return plain, gk_


# -- retry policy ------------------------------------------------------------------------------
CASES = {
    # name: (plain class, gatekeeper class, file made for BAD, extra flags, runs of BAD, exit)
    "always-failing": ("PlainRetry2", "GkRetry2", "fail", (), ["failed"], 30),
    "always-failing-keep-alive": (
        "PlainRetry2",
        "GkRetry2",
        "fail",
        KEEP_ALIVE,
        ["failed", "failed"],
        30,
    ),
    "flaky-keep-alive": ("PlainRetry3", "GkRetry3", "flaky", KEEP_ALIVE, ["failed", "ok"], 0),
}


@pytest.mark.timeout(240)
@pytest.mark.parametrize("where", ["local", "luigid"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_fleet_retry_policy_is_the_periods_as_range_daily_gives_it(
    tmp_path: Path, sqlite_url: str, case: str, where: str
) -> None:
    """One date fails (always, or on its first run only); RangeDaily over the plain task and a
    forward RangeBusinessDaily over its twin, ``--workers 2``: the same runs of every date,
    the same events, the same exit code and, under luigid, the same final statuses (DISABLED
    where Luigi disables). Each ends well within 60 s."""
    plain_cls, gk_cls, marker, extra, bad_runs, code = CASES[case]
    plain, mine = twin_folders(tmp_path)
    cfg = write_config(tmp_path, sqlite_url)
    retry = LUIGID_RETRY if extra == KEEP_ALIVE else LUIGID_NO_RETRY_IN_RUN
    server = Luigid(tmp_path / "luigid", retry) if (where == "luigid") else None
    if server is not None:
        server.start()
    try:
        results, shown = {}, {}
        for twin, cls, control in (("plain", plain_cls, plain), ("gk", gk_cls, mine)):
            (control / f"{marker}-{BAD}").touch()
            results[twin] = run(
                cfg,
                tmp_path,
                range_args(
                    twin,
                    cls,
                    control,
                    "--workers",
                    "2",
                    *(("--strategy", "forward") if twin == "gk" else ()),
                    *extra,
                    *scheduler_args(server),
                ),
            )
            if server is not None:  # read at once: the next run's requests prune it
                shown[twin] = statuses(server, cls)
    finally:
        if server is not None:
            server.stop()
    for twin, result in results.items():
        assert result.returncode == code, (twin, result.stderr[-3000:])
    expected = {date: ["ok"] for date in DATES} | {BAD: bad_runs}
    assert runs(plain) == expected
    assert runs(mine) == expected
    assert events(mine) == events(plain)
    if server is not None:
        assert shown["gk"] == shown["plain"]
        assert shown["gk"][BAD] == (
            "DISABLED" if case == "always-failing-keep-alive" else "FAILED" if code else "DONE"
        )
    with gk.open_ledger(sqlite_url) as ledger:
        states = [a.state.value for a in ledger.attempts(gk_cls, BAD)]
    assert states == ["failed" if outcome == "failed" else "succeeded" for outcome in bad_runs]


def messages(server: Luigid, family: str) -> dict[str, str]:
    """Date -> the status message luigid shows for the ``family`` task of that date."""
    found: dict[str, str] = {}
    for status in ("PENDING", "RUNNING", "DONE", "FAILED", "DISABLED"):
        for task in server.rpc("task_list", status=status, search=family).values():
            if task["name"] == family and task["status_message"]:
                params = task["params"]
                found[params.get("date") or params["business_date"]] = task["status_message"]
    return found


@pytest.mark.timeout(120)
@pytest.mark.parametrize("outcome", ["failing", "ok"])
def test_fleet_period_showing_a_status_message_runs_once_as_range_daily_runs_it(
    tmp_path: Path, sqlite_url: str, outcome: str
) -> None:
    """Under luigid, ``--workers 2``: one date's run sets a status message, then works 2 s
    (and fails, or not). luigid hands a task it has RUNNING on a worker back to that worker's
    next ``get_work`` when the worker does not list it among its current tasks; a forward
    range's chunk, in a task process of its own, once told luigid its inline period was
    RUNNING on the worker, so the worker, asking for work every 0.1 s meanwhile, was given the
    period and ran it again (two STARTs, two failures counted: DISABLED where Luigi shows
    FAILED; or the body itself twice, when the inline run had ended by then). RangeDaily over
    the plain twin runs it once: the same runs, events, exit code, statuses and message."""
    plain, mine = twin_folders(tmp_path)
    cfg = write_config(tmp_path, sqlite_url)
    server = Luigid(tmp_path / "luigid", LUIGID_NO_RETRY_IN_RUN)
    server.start()
    try:
        results, shown, said = {}, {}, {}
        for twin, cls, control in (("plain", "PlainRetry2", plain), ("gk", "GkRetry2", mine)):
            (control / f"message-{BAD}").write_text(f"working on {BAD}")
            (control / f"sleep-{BAD}").write_text("2")
            if outcome == "failing":
                (control / f"fail-{BAD}").touch()
            results[twin] = run(
                cfg,
                tmp_path,
                range_args(
                    twin,
                    cls,
                    control,
                    "--workers",
                    "2",
                    *(("--strategy", "forward") if twin == "gk" else ()),
                    *scheduler_args(server),
                ),
            )
            shown[twin], said[twin] = statuses(server, cls), messages(server, cls)
    finally:
        server.stop()
    code = 30 if outcome == "failing" else 0
    for twin, result in results.items():
        assert result.returncode == code, (twin, result.stderr[-3000:])
    expected = {date: ["ok"] for date in DATES} | {BAD: ["failed" if code else "ok"]}
    assert runs(plain) == expected
    assert runs(mine) == expected
    assert events(mine) == events(plain)
    assert shown["gk"] == shown["plain"]
    assert shown["gk"][BAD] == ("FAILED" if code else "DONE")
    assert said["gk"] == said["plain"] == {BAD: f"working on {BAD}"}
    with gk.open_ledger(sqlite_url) as ledger:
        states = [a.state.value for a in ledger.attempts("GkRetry2", BAD)]
    assert states == ["failed" if code else "succeeded"]


@pytest.mark.timeout(120)
def test_fleet_contiguous_failure_is_retried_by_the_scheduler_then_disabled(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Contiguous (the default): the failing date is retried as Luigi retries a task
    (retry_count = 2, then DISABLED in luigid) and no later date starts; the run ends
    task_failed, never missing_data (exit 30 with the [retcode] section)."""
    mine = tmp_path / "gk-control"
    mine.mkdir()
    (mine / f"fail-{BAD}").touch()
    cfg = write_config(tmp_path, sqlite_url)
    server = Luigid(tmp_path / "luigid", LUIGID_RETRY)
    server.start()
    try:
        result = run(
            cfg, tmp_path, range_args("gk", "GkRetry2", mine, *KEEP_ALIVE, *scheduler_args(server))
        )
        shown = statuses(server, "GkRetry2")
    finally:
        server.stop()
    assert result.returncode == 30, result.stderr[-3000:]
    assert runs(mine) == {"2026-10-01": ["ok"], "2026-10-02": ["ok"], BAD: ["failed", "failed"]}
    assert shown == {"2026-10-01": "DONE", "2026-10-02": "DONE", BAD: "DISABLED"}
    if inline_by_default():
        assert "were missing external dependencies" not in result.stderr
    else:  # Luigi's own reading of tasks pending on dynamic dependencies (docs/inline.md)
        missing = result.stderr.split("were missing external dependencies:\n")[1]
        listed = [line.split("(")[0] for line in missing.splitlines()[:2]]
        assert listed == ["        - 1 ContiguousChunk", "        - 1 RangeBusinessDaily"]


# -- worker timeout ----------------------------------------------------------------------------
@pytest.mark.timeout(120)
@pytest.mark.parametrize("inline", ["true", "false"])
def test_fleet_worker_timeout_kills_the_period_as_range_daily_does(
    tmp_path: Path, sqlite_url: str, inline: str
) -> None:
    """``worker_timeout = 2``, a 4 s body, ``--workers 2``: every period is terminated at its
    timeout, TIMEOUT fires, the run exits task_failed, as RangeDaily's do; each attempt is
    recorded failed with Luigi's reason. ``--inline true`` or not: such a class is scheduled."""
    plain, mine = twin_folders(tmp_path)
    cfg = write_config(tmp_path, sqlite_url)
    results = {}
    for twin, cls, control in (("plain", "PlainTimeout", plain), ("gk", "GkTimeout", mine)):
        (control / "sleep").write_text("4")
        extra = ("--inline", inline, "--strategy", "forward") if twin == "gk" else ()
        results[twin] = run(
            cfg,
            tmp_path,
            range_args(
                twin,
                cls,
                control,
                "--workers",
                "2",
                *extra,
                *scheduler_args(None),
                stop="2026-10-03",
            ),
        )
    for twin, result in results.items():
        assert result.returncode == 30, (twin, result.stderr[-3000:])
    assert runs(plain) == runs(mine) == {}  # no body ran to its end
    assert events(mine) == events(plain)
    assert events(mine)[("event.core.timeout", "2026-10-01")] == 1
    with gk.open_ledger(sqlite_url) as ledger:
        for date in ("2026-10-01", "2026-10-02"):
            (attempt,) = ledger.attempts("GkTimeout", date)
            assert attempt.state.value == "failed"
            assert "timed out after 2 seconds" in (attempt.error or "")
    said = "GkTimeout periods are scheduled, not run inline: it has a worker timeout"
    assert (said in results["gk"].stderr) == (inline == "true")


# -- resources ---------------------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_fleet_resources_are_never_exceeded_across_ranges_and_plain_tasks(
    tmp_path: Path, sqlite_url: str
) -> None:
    """``[resources] db=1`` in luigid: two forward ranges of a class needing ``db`` and a
    plain Luigi task needing it too, started together: at most one body holds it at any
    instant (read from the bodies' own start and end times)."""
    control = tmp_path / "control"
    control.mkdir()
    (control / "sleep").write_text("0.3")
    cfg = write_config(tmp_path, sqlite_url, keep_alive=True)  # wait for db, as Luigi
    server = Luigid(tmp_path / "luigid", "[resources]\ndb = 1\n")
    server.start()
    processes: list[subprocess.Popen[str]] = []
    try:
        commands = [
            range_args(
                "gk", "GkDb", control, "--strategy", "forward", "--workers", "3", stop="2026-10-04"
            )
            + ["--of-params", json.dumps({"control": str(control), "lane": lane})]
            for lane in ("a", "b")
        ] + [
            [
                "--module",
                "tests.helpers.fleet_tasks",
                "PlainDb",
                "--date",
                "2026-10-01",
                "--control",
                str(control),
                "--workers",
                "3",
            ]
        ]
        for args in commands:
            processes.append(
                subprocess.Popen(
                    luigi_command(*args, *scheduler_args(server), "--no-lock"),
                    cwd=tmp_path,
                    env=luigi_env(cfg),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    text=True,
                    start_new_session=True,
                )
            )
        outputs = [p.communicate(timeout=90)[0] for p in processes]
    finally:
        stop_all(processes)
        server.stop()
    assert [p.returncode for p in processes] == [0, 0, 0], outputs
    spans = sorted(
        tuple(map(float, line.split()[1:3])) for line in (control / "runs").read_text().splitlines()
    )
    assert len(spans) == 7  # 3 dates x 2 lanes + the plain task
    for (_, end), (begin, _) in zip(spans, spans[1:], strict=False):
        assert begin >= end, spans  # never two holders at once


# -- priority and batch_method ------------------------------------------------------------------
@pytest.mark.timeout(120)
def test_fleet_priority_is_sent_to_luigid_for_inline_periods(
    tmp_path: Path, sqlite_url: str
) -> None:
    """A class's priority (10) is what luigid lists for its periods, inline or under
    RangeDaily, with the worker that ran each."""
    plain, mine = twin_folders(tmp_path)
    cfg = write_config(tmp_path, sqlite_url)
    server = Luigid(tmp_path / "luigid")
    server.start()
    try:
        for twin, cls, control in (("plain", "PlainPriority", plain), ("gk", "GkPriority", mine)):
            result = run(cfg, tmp_path, range_args(twin, cls, control, *scheduler_args(server)))
            assert result.returncode == 0, result.stderr[-3000:]
        listed = {
            cls: [
                task
                for task in server.rpc("task_list", status="DONE", search=cls).values()
                if task["name"] == cls
            ]
            for cls in ("PlainPriority", "GkPriority")
        }
    finally:
        server.stop()
    assert {cls: sorted(t["priority"] for t in tasks) for cls, tasks in listed.items()} == {
        "PlainPriority": [10] * 5,
        "GkPriority": [10] * 5,
    }
    for cls, tasks in listed.items():  # each lists the worker that ran it
        assert all(len(t["workers"]) == 1 for t in tasks), (cls, tasks)


def test_fleet_batched_class_is_refused_naming_why_and_nothing_is_written(
    tmp_path: Path, sqlite_url: str
) -> None:
    control = tmp_path / "control"
    control.mkdir()
    cfg = write_config(tmp_path, sqlite_url)
    result = run(cfg, tmp_path, range_args("gk", "GkBatched", control, *scheduler_args(None)))
    assert result.returncode == 35, result.stderr[-3000:]
    assert "batches region (batch_method)" in result.stderr
    assert "cannot record per period" in result.stderr
    assert not (control / "runs").exists()
    with gk.open_ledger(sqlite_url) as ledger:
        assert ledger.history("GkBatched") == []


# -- workers share a range ----------------------------------------------------------------------
@pytest.mark.timeout(180)
@pytest.mark.parametrize("processes", [2, 3, 4])
def test_fleet_processes_started_together_share_a_forward_fill(
    tmp_path: Path, pg_ledger_url: str, processes: int
) -> None:
    """2, 3 and 4 ``luigi`` processes started at the same instant on one luigid (forward,
    ``--workers 2``, 40 dates, a 0.2 s body, the README recipe's [retcode] and keep-alive):
    each process runs at least one period, every date is attempted once, each exits 0. The
    two-process case polls on Luigi's defaults (1 s plus up to 5 s of jitter), the others on
    the tests' short polling: a race the jitter would show is still seen."""
    control = tmp_path / "control"
    control.mkdir()
    (control / "sleep").write_text("0.2")
    cfg = recipe_config(tmp_path, pg_ledger_url, luigi_polling=processes == 2)
    server = Luigid(tmp_path / "luigid")
    server.start()
    started: list[subprocess.Popen[str]] = []
    try:
        started = start_forward_fill(
            cfg, tmp_path, control, server, processes, ("2026-09-22", "2026-11-01"), task_limit=100
        )
        outputs = [p.communicate(timeout=120)[0] for p in started]
    finally:
        stop_all(started)
        server.stop()
    codes = [p.returncode for p in started]
    if inline_by_default():
        assert codes == [0] * processes, [o[-2000:] for o in outputs]
    else:  # Luigi's own summary: a share another process ran is not this one's (docs/inline.md)
        assert set(codes) <= {0, 10, 25}, [o[-2000:] for o in outputs]
    lines = [line.split() for line in (control / "runs").read_text().splitlines()]
    forty = [str(dt.date(2026, 9, 22) + dt.timedelta(days=n)) for n in range(40)]
    assert sorted(line[0] for line in lines) == forty  # every date once
    ran_by = collections.Counter(
        next(p.pid for p in started if str(p.pid) in (line[3], line[4])) for line in lines
    )
    assert len(ran_by) == processes, ran_by  # each process ran a share
    # each closing line counts its own process's share, so they sum to the window
    claimed = [
        int(re.findall(r"filled \d+/40 due \((\d+) this run\)", output)[-1]) for output in outputs
    ]
    assert claimed == [ran_by[p.pid] for p in started], (claimed, ran_by)
    assert sum(claimed) == 40
    with gk.open_ledger(pg_ledger_url) as ledger:
        assert all(len(ledger.attempts("GkDay", date)) == 1 for date in {line[0] for line in lines})


# -- exit codes tell the truth ---------------------------------------------------------------
@pytest.mark.timeout(240)
def test_fleet_luigid_killed_and_restarted_mid_fill_never_exits_0_with_gaps(
    tmp_path: Path, sqlite_url: str
) -> None:
    """luigid is SIGKILLed mid-fill (two processes x ``--workers 2``, forward, 200 dates) and
    restarted on its port: each process either finishes the fill against the new luigid and
    exits 0, or exits non-zero; none exits 0 with a due period unfilled, and no date is
    attempted twice."""
    control = tmp_path / "control"
    control.mkdir()
    (control / "sleep").write_text("0.05")
    cfg = recipe_config(tmp_path, sqlite_url)
    cfg.write_text(cfg.read_text().replace("[core]\n", "[core]\nrpc_retry_wait = 1\n"))
    server = Luigid(tmp_path / "luigid")
    server.start()
    started: list[subprocess.Popen[str]] = []
    try:
        started = start_forward_fill(
            cfg, tmp_path, control, server, 2, ("2026-04-15", "2026-11-01"), task_limit=300
        )
        deadline = time.monotonic() + 60
        while len(runs(control)) < 20:
            assert time.monotonic() < deadline, "the fill did not start"
            time.sleep(0.02)
        assert server.process is not None
        os.killpg(server.process.pid, signal.SIGKILL)
        server.process.wait()
        time.sleep(1)
        server.start()
        outputs = [p.communicate(timeout=180)[0] for p in started]
    finally:
        stop_all(started)
        server.stop()
    assert all(outcomes == ["ok"] for outcomes in runs(control).values())  # none twice
    for process, output in zip(started, outputs, strict=True):
        closing = [
            line for line in output.splitlines() if "gatekeeper: RangeBusinessDaily GkDay:" in line
        ][-1]
        if process.returncode == 0:
            assert "filled 200/200 due" in closing, output[-3000:]
        else:
            assert "gaps remain" in closing or "filled 200/200" not in closing, closing
    with gk.open_ledger(sqlite_url) as ledger:
        assert all(len(ledger.attempts("GkDay", date)) == 1 for date in runs(control))


@pytest.mark.timeout(120)
def test_fleet_contiguous_second_process_says_who_fills_it_and_exits_non_zero(
    tmp_path: Path, sqlite_url: str
) -> None:
    """Contiguous fills stay in order: of two processes started together on one luigid, the
    one that cannot help says the range is being filled by the other's worker (not "N gaps
    remain") and, leaving with the window unfilled, exits non-zero; the other fills it all
    and exits 0."""
    control = tmp_path / "control"
    control.mkdir()
    (control / "sleep").write_text("0.1")
    cfg = write_config(tmp_path, sqlite_url)
    server = Luigid(tmp_path / "luigid")
    server.start()
    started: list[subprocess.Popen[str]] = []
    try:
        args = luigi_command(
            *range_args("gk", "GkDay", control, start="2026-10-02", stop="2026-11-01"),
            *scheduler_args(server),
            "--no-lock",
        )
        started = start(cfg, tmp_path, args)
        while not (control / "runs").exists():
            assert started[0].poll() is None, started[0].communicate()[0][-3000:]
            time.sleep(0.02)
        started += start(cfg, tmp_path, args)
        outputs = [p.communicate(timeout=90)[0] for p in started]
    finally:
        stop_all(started)
        server.stop()
    codes = [p.returncode for p in started]
    if inline_by_default():
        assert codes == [0, 10], [o[-3000:] for o in outputs]
    else:  # Luigi's own summary of a task another worker runs (docs/inline.md)
        assert codes[0] == 0 and codes[1] in (10, 25), [o[-3000:] for o in outputs]
    assert "filled 30/30 due (30 this run)" in outputs[0]
    # a scheduled fill has no task running between two of its periods: the closing line may
    # catch the other worker there, and then says the gaps remain
    filling = r"being filled by Worker\(salt=" if inline_by_default() else r"(being filled|remain)"
    assert re.search(  # the other process's work is not this one's (a period it holds named)
        r"RangeBusinessDaily GkDay: filled \d+/30 due \(0 this run\); "
        r"(\d{4}-\d\d-\d\d held by run \w+ until \S+; )?\d+ gaps " + filling,
        outputs[1],
    ), outputs[1][-3000:]
    assert all(outcomes == ["ok"] for outcomes in runs(control).values())
