"""A period a range runs inline is the same Luigi task, to its code and to whoever watches.

The real ``luigi`` command fills a window of ``tests.helpers.inline_tasks.Hooked`` twice: with
periods run inline by the range's chunk (the default) and scheduled one by one (``--inline false``),
under the local scheduler and under a real luigid. What the task's code saw (reporter methods
bound, hooks and their arguments, events and user handlers), what luigid lists for each period
(status, status message, progress, tracking URL, error explanation) and Luigi's execution
summary must be the same. Then two worker processes fill one range on luigid with inline
periods: one attempt per period, and luigid lists every period DONE.
"""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.luigi_support import luigi_command, luigi_env, write_config
from tests.helpers.luigid_support import HOST, PEER_RETCODES, Luigid, stop_all

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

UTC = dt.timezone.utc
NOW = str(int(dt.datetime(2026, 12, 1, tzinfo=UTC).timestamp()))  # every date below is due
WINDOWS = {"inline": dt.date(2026, 9, 1), "scheduled": dt.date(2026, 10, 1)}
DAYS = 5
TASK_FAILED = 30  # write_config's [retcode] task_failed


def day(start: dt.date, offset: int) -> str:
    return (start + dt.timedelta(days=offset)).isoformat()


def fill(
    folder: Path, cfg: Path, mode: str, strategy: str, *scheduler: str, workers: str = "1"
) -> subprocess.CompletedProcess[str]:
    """Fill the mode's window of Hooked (date 1 complete by then, date 2 failing)."""
    start, control = WINDOWS[mode], folder / mode
    control.mkdir()
    (control / f"done-{day(start, 1)}").write_text("")
    (control / f"fail-{day(start, 2)}").write_text("")
    return subprocess.run(
        luigi_command(
            "--module",
            "tests.helpers.inline_tasks",
            "RangeBusinessDaily",
            "--of",
            "Hooked",
            "--of-params",
            json.dumps({"control": str(control)}),
            "--start",
            start.isoformat(),
            "--stop",
            day(start, DAYS),
            "--now",
            NOW,
            "--strategy",
            strategy,
            "--inline",
            "true" if mode == "inline" else "false",
            "--no-progress",
            "--workers",
            workers,
            *scheduler,
        ),
        cwd=folder,
        env=luigi_env(cfg),
        capture_output=True,
        text=True,
        timeout=180,
    )


def seen(folder: Path, mode: str) -> dict[int, list[dict[str, Any]]]:
    """Hooked's observations by day of its window (dates replaced by ``D<offset>``)."""
    start, found = WINDOWS[mode], {}
    path = folder / mode / "seen.jsonl"
    for line in path.read_text().splitlines() if path.exists() else []:
        note = json.loads(line)
        offset = (dt.date.fromisoformat(note.pop("date")) - start).days
        note.pop("pid")
        found.setdefault(offset, []).append(
            json.loads(json.dumps(note).replace(day(start, offset), f"D{offset}"))
        )
    return found


def expected_seen() -> dict[int, list[dict[str, Any]]]:
    bound = {"set_status_message": True, "set_progress_percentage": True, "set_tracking_url": True}
    return {
        0: [
            {"what": "event START"},
            {"what": "run", "bound": bound, "attempt": 1},
            {"what": "event PROCESSING_TIME"},
            {"what": "on_success", "bound": False},
            # class by class, in the order the classes first registered a handler (as plain
            # Luigi does): Hooked's own, then luigi.Task's
            {"what": "event SUCCESS"},
            {"what": "user handler SUCCESS"},
        ],
        # 1: complete() true by then: not run, no hook, no event
        2: [
            {"what": "event START"},
            {"what": "run", "bound": bound, "attempt": 1},
            {"what": "event FAILURE"},
            {"what": "on_failure", "error": "injected failure for D2"},
        ],
        # 3, 4: a contiguous fill stops at its first failure
    }


def summary(output: str, mode: str) -> dict[str, list[str]]:
    """Luigi's execution summary: section -> its Hooked lines (dates as ``D<offset>``)."""
    sections: dict[str, list[str]] = {}
    text = output.split("===== Luigi Execution Summary =====")[1]
    current = ""
    for line in text.splitlines():
        header = re.match(r"^\* \d+ (.*):$", line)
        if header:
            current = header.group(1)
        elif "Hooked(" in line:
            sections.setdefault(current, []).append(normalize(line.strip(), mode))
    return sections


def normalize(text: str, mode: str) -> str:
    start = WINDOWS[mode]
    for offset in range(DAYS):
        text = text.replace(day(start, offset), f"D{offset}")
    return text


@pytest.fixture
def sqlite_cfg(tmp_path: Path) -> Path:
    return write_config(tmp_path, f"sqlite:///{tmp_path / 'ledger.db'}")


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.parametrize("scheduler", ["local", "luigid"])
@pytest.mark.process
def test_inline_period_sees_what_a_scheduled_one_sees(
    tmp_path: Path, sqlite_cfg: Path, scheduler: str, workers: str, request: pytest.FixtureRequest
) -> None:
    """Every hook, inline and scheduled (``--inline false``), under each scheduler, the chunk
    in the worker's process or (``--workers 2``) in a task process of its own (on luigid, an
    inline period is then PENDING, not RUNNING, until it settles: ``InlineRuns``)."""
    server: Luigid | None = None
    where: tuple[str, ...] = ("--local-scheduler",)
    if scheduler == "luigid":
        server = request.getfixturevalue("luigid")
        where = ("--scheduler-host", HOST, "--scheduler-port", str(server.port))
    runs = {
        mode: fill(tmp_path, sqlite_cfg, mode, "contiguous", *where, workers=workers)
        for mode in WINDOWS
    }
    for mode, done in runs.items():
        assert done.returncode == TASK_FAILED, (mode, done.stderr[-3000:])
        assert seen(tmp_path, mode) == expected_seen(), mode
    shown = {mode: summary(done.stderr, mode) for mode, done in runs.items()}
    for section in ("ran successfully", "failed"):
        assert shown["inline"][section] == shown["scheduled"][section], section
    assert shown["inline"]["ran successfully"] == ["- 1 Hooked(business_date=D0)"]
    assert shown["inline"]["failed"] == ["- 1 Hooked(business_date=D2)"]
    # date 1: Luigi checks a yielded task's complete() without listing it; inline says so
    assert shown["inline"]["complete ones were encountered"] == ["- 1 Hooked(business_date=D1)"]
    assert "complete ones were encountered" not in shown["scheduled"]
    if server is not None:
        check_luigid_lists(server)


def listed(server: Luigid, mode: str) -> dict[int, tuple[Any, ...]]:
    """luigid's view of each Hooked period of the mode's window, dates as ``D<offset>``."""
    start, found = WINDOWS[mode], {}
    for status in ("DONE", "FAILED"):
        for task_id, task in server.rpc("task_list", status=status, search="Hooked").items():
            if task["name"] != "Hooked":
                continue
            offset = (dt.date.fromisoformat(task["params"]["business_date"]) - start).days
            if not 0 <= offset < DAYS:
                continue
            error = server.rpc("fetch_error", task_id=task_id)["error"]
            found[offset] = tuple(
                normalize(str(v), mode)
                for v in (
                    status,
                    task["status_message"],
                    task["progress_percentage"],
                    task["tracking_url"],
                    error,
                )
            )
    return found


def check_luigid_lists(server: Luigid) -> None:
    """luigid lists each period that ran alike, inline or scheduled."""
    views = {mode: listed(server, mode) for mode in WINDOWS}
    ran = {
        0: ("DONE", "working on D0", "50", "http://tracking.example/D0", '"filled D0"'),
        2: (
            "FAILED",
            "working on D2",
            "50",
            "http://tracking.example/D2",
            '"explained D2: injected failure for D2"',
        ),
    }
    assert {k: v for k, v in views["scheduled"].items() if k != 1} == ran
    assert {k: v for k, v in views["inline"].items() if k != 1} == ran
    assert views["inline"][1][0] == "DONE"  # reported already done (Luigi lists it not)


@pytest.mark.parametrize("workers", ["1", "2"])
@pytest.mark.process
def test_forward_summary_names_every_inline_period(
    tmp_path: Path, sqlite_cfg: Path, workers: str
) -> None:
    """With ``--workers 2`` Luigi runs the chunk in a forked child: the periods it ran
    inline still reach the parent's summary."""
    done = fill(tmp_path, sqlite_cfg, "inline", "forward", "--local-scheduler", workers=workers)
    assert done.returncode == TASK_FAILED, done.stderr[-3000:]
    shown = summary(done.stderr, "inline")
    assert shown["ran successfully"] == ["- 3 Hooked(business_date=D0) ..."]
    assert shown["failed"] == ["- 1 Hooked(business_date=D2)"]
    assert shown["complete ones were encountered"] == ["- 1 Hooked(business_date=D1)"]
    ran = seen(tmp_path, "inline")
    assert sorted(ran) == [0, 2, 3, 4]  # a forward fill passes over the failure
    # Luigi calls handlers class by class in the order the classes first registered one:
    # Hooked's own (tests/helpers/inline_tasks.py registers them first), then luigi.Task's
    last = ["event SUCCESS", "user handler SUCCESS"]
    assert all([n["what"] for n in notes[-2:]] == last for k, notes in ran.items() if k != 2)


@pytest.mark.process
def test_contiguous_summary_with_worker_processes(tmp_path: Path, sqlite_cfg: Path) -> None:
    """``--workers 2``: the summary says what ``--workers 1`` says (the test above it)."""
    done = fill(tmp_path, sqlite_cfg, "inline", "contiguous", "--local-scheduler", workers="2")
    assert done.returncode == TASK_FAILED, done.stderr[-3000:]
    shown = summary(done.stderr, "inline")
    assert shown["ran successfully"] == ["- 1 Hooked(business_date=D0)"]
    assert shown["failed"] == ["- 1 Hooked(business_date=D2)"]
    assert shown["complete ones were encountered"] == ["- 1 Hooked(business_date=D1)"]
    assert sorted(seen(tmp_path, "inline")) == [0, 2]


# -- two workers on luigid, periods inline -----------------------------------------------------
FLEET_START = dt.date(2026, 9, 1)
FLEET_DATES = [day(FLEET_START, n) for n in range(40)]


@pytest.fixture
def fleet(tmp_path: Path) -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    try:
        yield processes
    finally:
        stop_all(processes)


@pytest.mark.slow
@pytest.mark.parametrize("strategy", ["contiguous", "forward"])
def test_luigid_two_workers_run_each_inline_period_once(
    tmp_path: Path,
    luigid: Luigid,
    pg_ledger_url: str,  # noqa: F811 - fixtures
    fleet: list[subprocess.Popen[bytes]],
    strategy: str,
) -> None:
    cfg = write_config(tmp_path, pg_ledger_url)
    command = luigi_command(
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        "--of",
        "Controlled",
        "--of-params",
        json.dumps({"control": str(tmp_path)}),
        "--start",
        FLEET_DATES[0],
        "--stop",
        day(FLEET_START, len(FLEET_DATES)),
        "--now",
        NOW,
        "--strategy",
        strategy,
        "--scheduler-host",
        HOST,
        "--scheduler-port",
        str(luigid.port),
        "--workers",
        "2",
        "--no-lock",
        "--no-progress",
        *PEER_RETCODES,
    )
    logs = [tmp_path / f"worker-{n}.log" for n in (1, 2)]
    for log in logs:
        with open(log, "wb") as out:
            fleet.append(
                subprocess.Popen(
                    command,
                    cwd=tmp_path,
                    env=luigi_env(cfg),
                    stdout=out,
                    stderr=subprocess.STDOUT,
                    start_new_session=True,
                )
            )
    codes = [process.wait(timeout=240) for process in fleet]
    output = "\n".join(log.read_text(errors="replace") for log in logs)
    assert codes == [0, 0], output[-6000:]
    assert "running   Controlled(" not in output  # every period ran inline, in a chunk

    with gk.open_ledger(pg_ledger_url) as ledger:
        history = [(a.business_date, a.attempt, a.state) for a in ledger.history("Controlled")]
    assert history == [(d, 1, gk.RunState.SUCCEEDED) for d in FLEET_DATES]
    ran = sorted(line.split()[2] for line in (tmp_path / "ran").read_text().splitlines())
    assert ran == FLEET_DATES  # run() itself ran once per date
    listed_done = luigid.rpc("task_list", status="DONE", search="Controlled")
    assert (
        sorted(
            task["params"]["business_date"]
            for task in listed_done.values()
            if task["name"] == "Controlled"
        )
        == FLEET_DATES
    )
    assert luigid.rpc("task_list", status="FAILED") == {}


@pytest.mark.process
def test_inline_period_held_by_another_worker_is_waited_for_not_run_twice(
    tmp_path: Path, sqlite_cfg: Path
) -> None:
    """Another worker's live attempt holds date 1: the chunk waits, then finds it complete."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    held = day(FLEET_START, 1)
    with gk.open_ledger(url) as ledger:
        holder = ledger.begin_attempt("Controlled", held, "holder-run", lease_seconds=300)
    process = subprocess.Popen(
        luigi_command(
            "--module",
            "tests.helpers.luigi_tasks",
            "RangeBusinessDaily",
            "--of",
            "Controlled",
            "--of-params",
            json.dumps({"control": str(tmp_path)}),
            "--start",
            FLEET_DATES[0],
            "--stop",
            day(FLEET_START, 3),
            "--now",
            NOW,
            "--inline",  # the inline wait itself: whatever [gatekeeper] inline says
            "true",
            "--local-scheduler",
            "--no-progress",
        ),
        cwd=tmp_path,
        env=luigi_env(sqlite_cfg),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        waited = []
        assert process.stdout is not None
        for line in process.stdout:
            waited.append(line)
            if "of another worker holds it; waiting" in line:
                break
        assert process.poll() is None, "".join(waited)
        with gk.open_ledger(url) as ledger:
            ledger.record(
                "Controlled",
                held,
                holder.attempt,
                holder.run_id,
                gk.RunState.SUCCEEDED,
                holder.started_at,
            )
        rest, _ = process.communicate(timeout=120)
    finally:
        stop_all([process])
    assert process.returncode == 0, "".join(waited) + rest
    with gk.open_ledger(url) as ledger:
        history = [
            (a.business_date, a.attempt, a.run_id == "holder-run", a.state)
            for a in ledger.history("Controlled")
        ]
    assert history == [
        (FLEET_DATES[0], 1, False, gk.RunState.SUCCEEDED),
        (held, 1, True, gk.RunState.SUCCEEDED),
        (FLEET_DATES[2], 1, False, gk.RunState.SUCCEEDED),
    ]
    ran = [line.split()[2] for line in (tmp_path / "ran").read_text().splitlines()]
    assert ran == [FLEET_DATES[0], FLEET_DATES[2]]  # date 1's run() never ran here
    assert "complete ones were encountered:\n    - 1 Controlled(business_date=" + held in rest
