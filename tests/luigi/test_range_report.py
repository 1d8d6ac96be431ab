"""What a range run says: its closing line, live status per period, the terminal progress bar.

The formatting is pure (``gatekeeper.core.progress``) and tested by tables; the hooks are tested
through the real ``luigi`` command (local scheduler, a pseudo-terminal, and a real luigid).
"""

from __future__ import annotations

import datetime as dt
import os
import pty
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.core.causes import Cause
from gatekeeper.core.progress import (
    Blocked,
    Failure,
    Held,
    Throttle,
    chunk_status,
    closing_line,
    duration,
    fill_over,
    first_obstacle,
    percent,
    progress_bar,
    range_status,
)
from tests.helpers.ledgers import T0, snapshot
from tests.helpers.luigi_support import luigi_command, luigi_env, run_luigi, write_config
from tests.helpers.luigid_support import HOST, Luigid, stop_all

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 30, tzinfo=UTC)
DAYS = [f"2026-10-{d:02d}" for d in range(1, 11)]


def plan(done: list[str], **kw: Any) -> gk.RangePlan:
    request: dict[str, Any] = {"start": "2026-10-01", "stop": "2026-10-11", "now": NOW}
    request.update(kw)
    return gk.plan_range(done, **request)


# -- the closing line (pure) -------------------------------------------------------------------
BOOM = Failure("2026-10-04", "RuntimeError", "injected failure for 2026-10-04")
HEAD = "gatekeeper: RangeBusinessDaily Controlled: "


@pytest.mark.parametrize(
    ("done", "kw", "filled_now", "failure", "expected"),
    [
        (DAYS, {}, 0, None, "filled 10/10 due (0 this run)"),
        (DAYS, {}, 10, None, "filled 10/10 due (10 this run)"),
        (
            DAYS[:3],
            {},
            3,
            BOOM,
            "filled 3/10 due (3 this run); failed at 2026-10-04 "
            "(RuntimeError: injected failure for 2026-10-04); 7 gaps remain",
        ),
        (
            DAYS[:4],
            {"task_limit": 4},
            4,
            None,
            "filled 4/10 due (4 this run); task_limit reached: 6 gaps left for the next invocation",
        ),
        (
            DAYS[-1:],
            {"catchup": "none"},
            1,
            None,
            "filled 1/10 due (1 this run); 9 skipped by policy",
        ),
        (
            DAYS,
            {"stop": None, "now": dt.datetime(2026, 10, 11, 1, tzinfo=UTC), "lateness": "2h"},
            0,
            None,
            "filled 9/9 due (0 this run); next due at 2026-10-11T02:00:00+00:00",
        ),
        (
            [],
            {"now": dt.datetime(2026, 9, 1, tzinfo=UTC)},
            0,
            None,
            "filled 0/0 due (0 this run); next due at 2026-10-02T00:00:00+00:00",
        ),
    ],
)
def test_closing_line_shows_only_the_parts_that_apply(
    done: list[str], kw: dict[str, Any], filled_now: int, failure: Failure | None, expected: str
) -> None:
    line = closing_line(
        "RangeBusinessDaily",
        "Controlled",
        plan(done, **kw),
        filled_now=filled_now,
        obstacle=failure,
    )
    assert line == HEAD + expected


def test_closing_line_of_hourly_range_names_hours() -> None:
    hourly = gk.plan_range(
        [],
        start="2026-10-01T00:00:00+00:00",
        stop="2026-10-01T03:00:00+00:00",
        now=NOW,
        period="hourly",
    )
    failure = Failure.from_error("2026-10-01T00:00Z", "ValueError: bad row")
    line = closing_line("RangeBusinessHourly", "HourlyLoad", hourly, filled_now=0, obstacle=failure)
    assert line == (
        "gatekeeper: RangeBusinessHourly HourlyLoad: filled 0/3 due (0 this run); "
        "failed at 2026-10-01T00:00Z (ValueError: bad row); 3 gaps remain"
    )


@pytest.mark.parametrize(
    ("error", "kind", "message", "shown"),
    [
        ("RuntimeError: boom", "RuntimeError", "boom", "(RuntimeError: boom)"),
        (
            "gatekeeper.core.errors.LeaseLost: taken: by x",
            "gatekeeper.core.errors.LeaseLost",
            "taken: by x",
            "(gatekeeper.core.errors.LeaseLost: taken: by x)",
        ),
        ("lease expired", "", "lease expired", "(lease expired)"),
        (None, "", "no error recorded", "(no error recorded)"),
        ("KeyError: 'a'\n  line two", "KeyError", "'a'\n  line two", "(KeyError: 'a' line two)"),
        ("E: " + "x" * 300, "E", "x" * 300, "(E: " + "x" * 197 + "...)"),
    ],
)
def test_failure_from_error_splits_type_and_message(
    error: str | None, kind: str, message: str, shown: str
) -> None:
    failure = Failure.from_error("2026-10-04", error)
    assert (failure.error_type, failure.message) == (kind, message)
    assert failure.describe() == f"failed at 2026-10-04 {shown}"


def test_first_obstacle_is_the_first_in_period_order_whatever_it_is(ledger: gk.Ledger) -> None:
    """A failure since the run started, another run's live lease, an upstream cause: the
    first key that has one is named; an old failure, this run's own lease and a key with an
    attempt of its own (its cause is not looked at) are no obstacle."""
    since = T0 + dt.timedelta(hours=1)
    now = ledger.db_now()
    ledger.record("J", "2026-10-02", 1, "old", "failed", T0, error="OSError: before the run")
    ledger.begin_attempt("J", "2026-10-03", "mine", lease_seconds=3600)
    ledger.record("J", "2026-10-05", 1, "r5", "failed", since, error="KeyError: five")
    ledger.begin_attempt("J", "2026-10-07", "theirs", lease_seconds=3600)
    latest = ledger.latest_between("J", "2026-10-01", "2026-10-10")
    held = latest["2026-10-07"]
    missing = Cause("Up", "2026-10-04", "missing")
    waiting = Cause("Up", "2026-10-06", "held", 1, "up-run", until=held.lease_expires_at)
    causes = {"2026-10-04": missing, "2026-10-05": missing, "2026-10-06": waiting}

    def mine(run_id: str) -> bool:
        return run_id == "mine"

    def first(order: list[str]) -> object:
        return first_obstacle(order, latest, since, now, mine, causes)

    assert first(DAYS) == Blocked("2026-10-04", missing)
    assert first(DAYS[4:]) == Failure("2026-10-05", "KeyError", "five")  # not its upstream
    assert first(DAYS[5:]) == Blocked("2026-10-06", waiting)
    assert first(DAYS[6:]) == Held(held)
    assert first(DAYS[:3] + DAYS[7:]) is None  # old failure, own lease, nothing after
    assert first_obstacle(DAYS[4:], latest, T0 + dt.timedelta(days=9), now, mine, {}) == Held(held)
    assert Blocked("2026-10-06", waiting).describe() == (
        f"2026-10-06 waiting on Up, held by run up-run until {held.lease_expires_at.isoformat()}"
    )
    assert Blocked("2026-10-04", missing).describe() == "2026-10-04 blocked: Up missing"
    assert Held(held).describe() == (
        f"2026-10-07 held by run theirs until {held.lease_expires_at.isoformat()}"
    )


# -- status messages and the end of a fill (pure) ----------------------------------------------
@pytest.mark.parametrize(
    ("done", "kw", "message", "percent"),
    [
        (
            [],
            {},
            "filled 0/10, contiguous through nothing, next 2026-10-01, 0 skipped by policy",
            0,
        ),
        (
            DAYS[:3] + DAYS[5:6],
            {},
            "filled 4/10, contiguous through 2026-10-03, next 2026-10-04, 0 skipped by policy",
            40,
        ),
        (
            DAYS[9:],
            {"strategy": "reverse"},
            "filled 1/10, contiguous through nothing, next 2026-10-09, 0 skipped by policy",
            10,
        ),
        (
            DAYS,
            {},
            "filled 10/10, contiguous through 2026-10-10, next due at never, 0 skipped by policy",
            100,
        ),
    ],
)
def test_range_status_per_period(
    done: list[str], kw: dict[str, Any], message: str, percent: int
) -> None:
    assert range_status(plan(done, **kw)) == (message, percent)


@pytest.mark.parametrize(
    ("done", "failed", "expected"),
    [
        (set(), set(), ("filled 0/4, next a", 0)),
        ({"a"}, set(), ("filled 1/4, next b", 25)),
        ({"a", "c"}, {"b"}, ("filled 2/4, 1 failed (first b), next d", 50)),
        ({"a", "b", "c", "d"}, set(), ("filled 4/4", 100)),
        ({"a", "b", "c"}, {"d"}, ("filled 3/4, 1 failed (first d)", 75)),
    ],
)
def test_chunk_status_per_period(
    done: set[str], failed: set[str], expected: tuple[str, int]
) -> None:
    assert chunk_status(["a", "b", "c", "d"], done, failed) == expected


@pytest.mark.parametrize(
    ("strategy", "done", "failed", "over"),
    [
        ("contiguous", {"a", "b", "c"}, set(), True),
        ("contiguous", {"a"}, set(), False),
        ("contiguous", {"a"}, {"b"}, True),  # nothing after a failure starts
        ("forward", {"a"}, {"b"}, False),  # the others still run
        ("forward", {"a", "c"}, {"b"}, True),
        ("reverse", set(), {"a", "b", "c"}, True),
        ("forward", set(), set(), False),
    ],
)
def test_fill_over(strategy: str, done: set[str], failed: set[str], over: bool) -> None:
    assert fill_over(strategy, ["a", "b", "c"], done, failed) is over


# -- the progress bar (pure, fake clock) -------------------------------------------------------
@pytest.mark.parametrize(
    ("done", "total", "elapsed", "failed", "expected"),
    [
        (0, 40, 0.0, 0, "[....................] 0/40 periods 0.0/s ETA ?"),
        (10, 40, 5.0, 0, "[#####...............] 10/40 periods 2.0/s ETA 15s"),
        (10, 40, 5.0, 2, "[######..............] 10/40 periods 2.4/s ETA 12s, 2 failed"),
        (40, 40, 8.0, 0, "[####################] 40/40 periods 5.0/s ETA 0s"),
        (1, 4000, 2.0, 0, "[....................] 1/4000 periods 0.5/s ETA 2h13m"),
        (0, 0, 1.0, 0, "[####################] 0/0 periods 0.0/s ETA ?"),
    ],
)
def test_progress_bar(done: int, total: int, elapsed: float, failed: int, expected: str) -> None:
    assert progress_bar(done, total, elapsed, failed=failed) == expected


@pytest.mark.parametrize(
    ("seconds", "shown"), [(0, "0s"), (9.4, "9s"), (65, "1m05s"), (3600, "1h00m"), (7620, "2h07m")]
)
def test_duration(seconds: float, shown: str) -> None:
    assert duration(seconds) == shown


def test_throttle_allows_ten_redraws_a_second() -> None:
    throttle = Throttle(0.1)
    clock = [100 + i / 64 for i in range(129)]  # 2 s of ticks every 1/64 s (exact floats)
    drawn = [t for t in clock if throttle.ready(t)]
    assert drawn == clock[::7]  # the first tick at least 0.1 s after the last redraw
    assert all(sum(1 for t in drawn if s <= t < s + 1) <= 10 for s in clock)


# -- the closing line through the real luigi command --------------------------------------------
NOW_S = str(int(NOW.timestamp()))


def range_cmd(folder: Path, *extra: str) -> tuple[str, ...]:
    return (
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        "--of",
        "Controlled",
        "--of-params",
        f'{{"control": "{folder}"}}',
        "--start",
        "2026-10-01",
        "--stop",
        "2026-10-11",
        "--now",
        NOW_S,
        *extra,
    )


def closing_lines(done: subprocess.CompletedProcess[str]) -> list[str]:
    return re.findall(
        r"gatekeeper: RangeBusinessDaily Controlled: filled \d+/\d+ due.*",
        done.stdout + done.stderr,
    )


@pytest.mark.slow
def test_luigi_range_ends_with_one_closing_line_in_every_outcome(
    ledger_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, ledger_url)
    (tmp_path / "fail-2026-10-04").touch()
    failed = run_luigi(cfg, *range_cmd(tmp_path), cwd=tmp_path)
    assert failed.returncode == 30, failed.stderr
    assert closing_lines(failed) == [
        "gatekeeper: RangeBusinessDaily Controlled: filled 3/10 due (3 this run); failed at "
        "2026-10-04 (RuntimeError: injected failure for 2026-10-04); 7 gaps remain"
    ]

    (tmp_path / "fail-2026-10-04").unlink()
    limited = run_luigi(cfg, *range_cmd(tmp_path, "--task-limit", "3"), cwd=tmp_path)
    assert limited.returncode == 0, limited.stderr
    assert closing_lines(limited) == [
        "gatekeeper: RangeBusinessDaily Controlled: filled 6/10 due (3 this run); "
        "task_limit reached: 4 gaps left for the next invocation"
    ]

    filled = run_luigi(cfg, *range_cmd(tmp_path), cwd=tmp_path)
    assert filled.returncode == 0, filled.stderr
    assert closing_lines(filled) == [
        "gatekeeper: RangeBusinessDaily Controlled: filled 10/10 due (4 this run)"
    ]

    with gk.open_ledger(ledger_url) as ledger:
        rows = snapshot(ledger)
    again = run_luigi(cfg, *range_cmd(tmp_path), cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "Did not run any tasks" in again.stdout + again.stderr
    assert closing_lines(again) == [
        "gatekeeper: RangeBusinessDaily Controlled: filled 10/10 due (0 this run)"
    ]
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == rows


@pytest.mark.parametrize("strategy", ["forward", "reverse"])
@pytest.mark.process
def test_luigi_parallel_range_failure_closing_line_from_the_main_process(
    sqlite_url: str, tmp_path: Path, strategy: str
) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    (tmp_path / "fail-2026-10-04").touch()
    (tmp_path / "fail-2026-10-07").touch()
    done = run_luigi(
        cfg, *range_cmd(tmp_path, "--strategy", strategy, "--workers", "2"), cwd=tmp_path
    )
    assert done.returncode == 30, done.stderr
    first = "2026-10-04" if strategy == "forward" else "2026-10-07"
    assert closing_lines(done) == [
        f"gatekeeper: RangeBusinessDaily Controlled: filled 8/10 due (8 this run); failed at "
        f"{first} (RuntimeError: injected failure for {first}); 2 gaps remain"
    ]


@pytest.mark.process
def test_luigi_open_ended_range_says_when_the_next_period_is_due(
    sqlite_url: str, tmp_path: Path
) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    now = str(int(dt.datetime(2026, 10, 3, 1, tzinfo=UTC).timestamp()))
    args = (
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        "--of",
        "Trivial",
        "--start",
        "2026-10-01",
        "--now",
        now,
        "--lateness",
        "2h",
    )
    lines = []
    for _ in range(2):
        done = run_luigi(cfg, *args, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        lines += re.findall(
            r"gatekeeper: RangeBusinessDaily Trivial: filled \d+/\d+ due.*", done.stderr
        )
    assert lines == [
        "gatekeeper: RangeBusinessDaily Trivial: filled 1/1 due (1 this run); next due at "
        "2026-10-03T02:00:00+00:00",
        "gatekeeper: RangeBusinessDaily Trivial: filled 1/1 due (0 this run); next due at "
        "2026-10-03T02:00:00+00:00",
    ]


# -- the terminal progress bar -----------------------------------------------------------------
def run_with_tty_stderr(cfg: Path, cwd: Path, *args: str) -> tuple[int, str]:
    """The luigi command with stderr on a pseudo-terminal; its exit code and what it wrote."""
    master, slave = pty.openpty()
    try:
        process = subprocess.Popen(
            luigi_command(*args, "--local-scheduler"),
            cwd=cwd,
            env=luigi_env(cfg),
            stdout=subprocess.DEVNULL,
            stderr=slave,
            stdin=subprocess.DEVNULL,
        )
    finally:
        os.close(slave)
    chunks: list[bytes] = []
    deadline = time.monotonic() + 120
    try:
        while True:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every writer closed the terminal
                break
            if not data or time.monotonic() > deadline:
                break
            chunks.append(data)
        code = process.wait(timeout=30)
    finally:
        os.close(master)
        stop_all([process])
    return code, b"".join(chunks).decode(errors="replace")


BAR = re.compile(r"\rControlled \[[#.]{20}\] (\d+)/10 periods [0-9.]+/s ETA \S+\x1b\[K")


@pytest.mark.process
def test_progress_bar_on_a_terminal_only(sqlite_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    code, shown = run_with_tty_stderr(cfg, tmp_path, *range_cmd(tmp_path))
    assert code == 0, shown
    frames = BAR.findall(shown)
    assert frames and frames[-1] == "10" and frames == sorted(frames, key=int), shown
    last = shown.rindex("\x1b[K")
    closing = shown.index("gatekeeper: RangeBusinessDaily Controlled: filled 10/10 due")
    assert shown[last:closing].startswith("\x1b[K\r\n") and closing > last  # ended by a newline

    quiet, _ = run_with_tty_stderr(cfg, tmp_path, *range_cmd(tmp_path))  # complete: no bar
    code, shown = run_with_tty_stderr(
        cfg, tmp_path, *range_cmd(tmp_path, "--stop", "2026-10-21", "--no-progress")
    )
    assert (quiet, code) == (0, 0) and "periods" not in shown and "filled 20/20 due" in shown

    piped = run_luigi(cfg, *range_cmd(tmp_path, "--stop", "2026-10-31"), cwd=tmp_path)
    assert piped.returncode == 0 and "filled 30/30 due (10 this run)" in piped.stderr
    assert "periods" not in piped.stderr + piped.stdout and "\r" not in piped.stderr


# -- live status under luigid ------------------------------------------------------------------
STATUS = re.compile(r"^filled (\d+)/(\d+)")


def statuses(server: Luigid, family: str) -> dict[str, tuple[str, int | None]]:
    """Task ID -> (status message, percentage) of every ``family`` task luigid knows."""
    found: dict[str, tuple[str, int | None]] = {}
    for status in ("PENDING", "RUNNING", "DONE", "FAILED"):
        for task_id, task in server.rpc("task_list", status=status, search=family).items():
            if task["name"] == family:
                found[task_id] = (task["status_message"], task["progress_percentage"])
    return found


@pytest.mark.slow
def test_luigid_forward_fill_shows_range_and_chunk_status_per_period(
    sqlite_url: str, tmp_path: Path
) -> None:
    """A forward fill's chunks wait on all their periods at once (scheduled: ``--inline
    false``); one period hangs until released, so the status luigid shows mid-fill is known
    exactly."""
    server = Luigid(tmp_path / "luigid")
    cfg = write_config(tmp_path, sqlite_url)
    (tmp_path / "hang").write_text("")
    server.start()
    log = tmp_path / "worker.log"
    try:
        with open(log, "wb") as out:
            worker = subprocess.Popen(
                luigi_command(
                    "--module",
                    "tests.helpers.luigi_tasks",
                    "RangeBusinessDaily",
                    "--of",
                    "Hanging",
                    "--of-params",
                    f'{{"control": "{tmp_path}"}}',
                    "--start",
                    "2026-09-01",
                    "--stop",
                    "2026-10-11",
                    "--now",
                    NOW_S,
                    "--strategy",
                    "forward",
                    "--inline",
                    "false",
                    "--scheduler-host",
                    HOST,
                    "--scheduler-port",
                    str(server.port),
                    "--workers",
                    "2",
                    "--no-lock",
                ),
                cwd=tmp_path,
                env=luigi_env(cfg),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            mid = wait_for_status(server, worker, log, "filled 39/40,")
            (tmp_path / "release").write_text("")
            assert worker.wait(timeout=120) == 0, log.read_text()
        finally:
            stop_all([worker])
        (ranged,) = mid["RangeBusinessDaily"].values()
        hung = (tmp_path / "started").read_text().split()  # pid attempt run_id
        with gk.open_ledger(sqlite_url) as ledger:
            (key,) = [a.business_date for a in ledger.history("Hanging") if a.run_id == hung[2]]
        assert ranged[1] == 97 and ranged[0].endswith(f"next {key}, 0 skipped by policy")
        chunks = [
            STATUS.match(m).groups()
            for m, _ in mid["IndependentChunk"].values()  # type: ignore[union-attr]
        ]
        # 40 due dates make 14 chunks (of 3, the last of 1), so both processes' workers share
        assert sorted(int(n) for _, n in chunks) == [1] + [3] * 13
        assert sorted(int(n) - int(k) for k, n in chunks) == [0] * 13 + [1]
        assert [m for m, _ in mid["IndependentChunk"].values() if m.endswith(f"next {key}")]
        final = {
            family: statuses(server, family)
            for family in ("RangeBusinessDaily", "IndependentChunk")
        }
    finally:
        server.stop()
    assert list(final["RangeBusinessDaily"].values()) == [
        ("filled 40/40, contiguous through 2026-10-10, next due at never, 0 skipped by policy", 100)
    ]
    assert (
        sorted(final["IndependentChunk"].values())
        == [("filled 1/1", 100)] + [("filled 3/3", 100)] * 13
    )
    assert "gatekeeper: RangeBusinessDaily Hanging: filled 40/40 due (40 this run)" in (
        log.read_text()
    )


def wait_for_status(
    server: Luigid, worker: subprocess.Popen[bytes], log: Path, prefix: str
) -> dict[str, dict[str, tuple[str, int | None]]]:
    """Poll luigid until the range's status starts with ``prefix`` (``filled N/M,``), its
    progress percentage has caught up with it (Luigi sets message and percentage in two calls)
    and its chunks' add up to N; every status then."""
    done, total = (int(n) for n in prefix.split()[1].rstrip(",").split("/"))
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if worker.poll() is not None:
            raise AssertionError(f"worker exited early: {log.read_text()[-3000:]}")
        shown = {
            family: statuses(server, family)
            for family in ("RangeBusinessDaily", "IndependentChunk")
        }
        chunks = [STATUS.match(m or "") for m, _ in shown["IndependentChunk"].values()]
        filled = sum(int(c.group(1)) for c in chunks if c is not None)
        if filled == done and any(
            m and m.startswith(prefix) and p == percent(done, total)
            for m, p in shown["RangeBusinessDaily"].values()
        ):
            return shown
        time.sleep(0.1)
    raise AssertionError(f"no range status {prefix!r} within 120 s: {log.read_text()[-3000:]}")


def test_exit_waits_for_the_closing_line_the_watcher_thread_is_writing(sqlite_url: str) -> None:
    """The watcher thread decides the fill is over and starts its closing line as the
    ``luigi`` process exits: the exit handler waits for the line (a daemon thread dies at
    interpreter shutdown, and the line was lost once in a three-process fleet on CI)."""
    import logging
    import threading

    from luigi.task_register import Register

    from gatekeeper.luigi.fill import watch as fill_watch
    from tests.helpers.luigi_support import configure
    from tests.helpers.luigi_tasks import Trivial

    class Held(logging.Handler):
        """Holds the thread that logs the closing line until released."""

        def __init__(self) -> None:
            super().__init__()
            self.entered, self.go, self.lines = threading.Event(), threading.Event(), []

        def emit(self, record: logging.LogRecord) -> None:
            if "filled" in record.getMessage():
                self.entered.set()
                self.go.wait(timeout=30)
                self.lines.append(record.getMessage())

    held = Held()
    logger = logging.getLogger("luigi-interface.gatekeeper")
    logger.addHandler(held)
    level = logger.level
    logger.setLevel(logging.INFO)
    try:
        for _ in configure({"ledger_url": sqlite_url, "lateness": "0s", "timezone": "UTC"}):
            Register.clear_instance_cache()
            start = dt.date(2026, 9, 1)
            rng = gk.RangeBusinessDaily(
                of=Trivial, start=start, stop=start + dt.timedelta(days=3), now=int(T0.timestamp())
            )
            found = fill_watch.RangeWatch(rng, bar=False, remote=None)
            earlier = list(fill_watch._open)  # an earlier test's, in this worker process
            for other in earlier:
                fill_watch._open.discard(other)
            fill_watch._open.add(found)
            rng.invocation.watch = found

            def watcher(watch: Any) -> None:
                with gk.open_ledger(sqlite_url) as ledger:
                    watch.close(ledger)

            found._thread = threading.Thread(target=watcher, args=(found,), daemon=True)
            found._thread.start()
            assert held.entered.wait(timeout=10)
            exited = threading.Event()

            def exit_handler(done: threading.Event) -> None:
                fill_watch._close_at_exit()
                done.set()

            at_exit = threading.Thread(target=exit_handler, args=(exited,), daemon=True)
            at_exit.start()
            assert not exited.wait(timeout=0.5)  # the exit handler waits for the line ...
            held.go.set()
            assert exited.wait(timeout=10)  # ... and returns once it is written, once
            assert len(held.lines) == 1
            assert "filled 0/3 due (0 this run)" in held.lines[0]
            for other in earlier:
                fill_watch._open.add(other)
    finally:
        logger.removeHandler(held)
        logger.setLevel(level)
