"""A real `luigid` with real `luigi` workers sharing one PostgreSQL ledger.

Two workers fill the same RangeBusinessDaily: the central scheduler must run every task once,
and the range's status message and progress must be readable back from the scheduler.
"""

from __future__ import annotations

import datetime as dt
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad
from tests.helpers.ledgers import count_rows
from tests.helpers.luigi_support import luigi_command, luigi_env, write_config
from tests.helpers.luigid_support import HOST, PEER_RETCODES, Luigid, stop_all

# the Luigi adapter (run on every supported Luigi); its waits end on events (a file, a lease
# expired by the database's clock), so it shares the machine with other tests under xdist
pytestmark = pytest.mark.luigi

UTC = dt.timezone.utc
# forty days across a month's end: two chunks of the range (chunks.CHUNK, 32 periods at most)
# for two workers, the status line at every step (sixty days took half as long again)
START, STOP = dt.date(2026, 9, 20), dt.date(2026, 10, 30)
DATES = [(START + dt.timedelta(days=i)).isoformat() for i in range((STOP - START).days)]
NOW = int(dt.datetime(2026, 11, 15, tzinfo=UTC).timestamp())  # every date is due
DIMS = ("DimCustomer", "DimProduct")
JOBS = (*DIMS, "DailySalesLoad")
RUN_TIMEOUT = 120.0


def range_args(
    server: Luigid, start: dt.date = START, stop: dt.date = STOP, *extra: str
) -> list[str]:
    return luigi_command(
        "--module",
        "example_pipelines.sales",
        "RangeBusinessDaily",
        "--of",
        "DailySalesLoad",
        "--start",
        start.isoformat(),
        "--stop",
        stop.isoformat(),
        "--now",
        str(NOW),
        "--task-limit",
        "100",
        "--scheduler-host",
        HOST,
        "--scheduler-port",
        str(server.port),
        "--workers",
        "2",
        "--no-lock",
        *PEER_RETCODES,
        *extra,
    )


def range_id(start: dt.date = START, stop: dt.date = STOP, **params: object) -> str:
    """The task ID luigid knows the range by (the same parameters as range_args)."""
    return gk.RangeBusinessDaily(
        of=DailySalesLoad, start=start, stop=stop, now=NOW, task_limit=100, **params
    ).task_id


class Workers:
    """`luigi` worker processes writing to log files; all killed by ``stop()``."""

    def __init__(self, folder: Path, config: Path):
        self.folder, self.config = folder, config
        self.processes: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def start(self, command: list[str]) -> subprocess.Popen[bytes]:
        log = self.folder / f"worker-{len(self.processes) + 1}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                command,
                cwd=self.folder,
                env=luigi_env(self.config),
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.processes.append(process)
        self.logs.append(log)
        return process

    def wait(
        self,
        watch: Callable[[], None] = lambda: None,
        until: Callable[[], bool] | None = None,
        timeout: float = RUN_TIMEOUT,
    ) -> None:
        """Call ``watch`` every 50 ms until every worker exited (or ``until()`` holds)."""
        deadline = time.monotonic() + timeout
        while any(p.poll() is None for p in self.processes):
            watch()
            if until is not None and until():
                return
            if time.monotonic() > deadline:
                raise AssertionError(f"workers still running after {timeout}s:\n{self.tails()}")
            time.sleep(0.05)

    def codes(self) -> list[int | None]:
        return [p.returncode for p in self.processes]

    def output(self) -> str:
        return "\n".join(log.read_text(errors="replace") for log in self.logs)

    def tails(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')[-3000:]}" for log in self.logs
        )

    def stop(self) -> None:
        stop_all(self.processes)


@pytest.fixture
def workers(tmp_path: Path, pg_ledger_url: str) -> Iterator[Workers]:
    group = Workers(tmp_path, write_config(tmp_path, pg_ledger_url))
    try:
        yield group
    finally:
        group.stop()


def done_count(server: Luigid, family: str) -> int:
    found = server.rpc("task_list", status="DONE", search=family)
    return sum(1 for task in found.values() if task["name"] == family)


def worker_pids(names: list[str]) -> set[int]:
    return {int(m.group(1)) for name in names for m in [re.search(r"pid=(\d+)", name)] if m}


@pytest.mark.slow
@pytest.mark.parametrize("second", ["together", "mid_fill"])
def test_luigid_two_workers_run_every_task_once(
    luigid: Luigid, workers: Workers, pg_ledger_url: str, second: str
) -> None:
    first = workers.start(range_args(luigid))
    if second == "mid_fill":  # join while the first worker's range waits on its first chunk
        workers.wait(until=lambda: done_count(luigid, "DailySalesLoad") > 0)
        assert first.poll() is None, workers.tails()
    workers.start(range_args(luigid))
    workers.wait()

    assert workers.codes() == [0, 0], workers.tails()
    assert "LeaseHeld" not in workers.output()
    assert luigid.rpc("task_list", status="FAILED") == {}
    ranges = luigid.rpc("task_list", status="DONE", search="RangeBusinessDaily")
    assert list(ranges) == [range_id()]
    (shown,) = ranges.values()
    both = {p.pid for p in workers.processes}
    assert worker_pids(shown["workers"]) == both  # one task in luigid for both workers
    assert worker_pids([shown["worker_running"]]) <= both

    with gk.open_ledger(pg_ledger_url) as ledger:
        assert count_rows(ledger, "sales_totals") == len(DATES)
        totals = ledger.read("SELECT business_date FROM sales_totals ORDER BY business_date")
        assert [row[0] for row in totals] == DATES
        per_date = ledger.read(
            "SELECT consumer, period, COUNT(*) FROM gk_publications "
            "GROUP BY consumer, period ORDER BY period"
        )
        assert [tuple(row) for row in per_date] == [("DailySalesLoad", d, 1) for d in DATES]
        for job in JOBS:  # no task ran twice: one attempt per (job, date), and it succeeded
            history = [(a.business_date, a.attempt, a.state) for a in ledger.history(job)]
            assert history == [(d, 1, gk.RunState.SUCCEEDED) for d in DATES], job
        for date in DATES:
            publication = ledger.publication("DailySalesLoad", date)
            assert publication is not None and publication.revision == 1
            evidence = {(i.job, i.business_date): (i.run_id, i.attempt) for i in publication.items}
            latest = {job: ledger.latest(job, date) for job in DIMS}
            assert evidence == {
                (job, date): (a.run_id, a.attempt) for job, a in latest.items() if a is not None
            }, date
            assert all(
                a is not None and a.state is gk.RunState.SUCCEEDED for a in latest.values()
            ), date


def expected_status(
    filled: int, through: str, then: str, skipped: int = 0, total: int = len(DATES)
) -> tuple[str, int]:
    return (
        f"filled {filled}/{total}, contiguous through {through}, {then}, "
        f"{skipped} skipped by policy",
        100 * filled // total,
    )


@pytest.mark.slow
def test_luigid_shows_range_status_and_progress(
    luigid: Luigid, workers: Workers, pg_ledger_url: str
) -> None:
    task_id = range_id()
    seen: list[tuple[str, int | None]] = []

    def watch() -> None:
        try:
            shown = luigid.status_of(task_id)
        except OSError:
            return
        if shown[0] and (not seen or seen[-1] != shown):
            seen.append(shown)

    workers.start(range_args(luigid))
    workers.wait(watch)
    assert workers.codes() == [0], workers.tails()

    final = expected_status(len(DATES), DATES[-1], "next due at never")
    steps = [  # while filling: the message as each date fills (the watcher), then the final
        *(
            expected_status(n, DATES[n - 1] if n else "nothing", f"next {DATES[n]}")
            for n in range(len(DATES))
        ),
        final,
    ]
    messages = [message for message, _ in steps]
    assert {message for message, _ in seen} <= set(messages), seen
    order = [messages.index(message) for message, _ in seen]
    assert order == sorted(order), seen
    assert any(message != final[0] for message, _ in seen), f"no progress observed: {seen}"
    percents = [percent for _, percent in seen if percent is not None]
    assert set(percents) <= {percent for _, percent in steps} and percents == sorted(percents)
    assert luigid.status_of(task_id) == final

    listed = luigid.rpc("task_list", status="DONE", search="RangeBusinessDaily")[task_id]
    assert (listed["status_message"], listed["progress_percentage"]) == final
    chunks = luigid.rpc("task_list", status="DONE", search="ContiguousChunk").values()
    assert sorted((chunk["status_message"], chunk["progress_percentage"]) for chunk in chunks) == [
        ("filled 32/32", 100),
        ("filled 8/8", 100),
    ]  # each chunk's last

    # a catch-up policy: August's 31 dates are due, only the last 3 are filled
    august = (dt.date(2026, 8, 1), dt.date(2026, 9, 1))
    workers.start(range_args(luigid, *august, "--catchup", "last:3"))
    workers.wait()
    assert workers.codes() == [0, 0], workers.tails()
    assert luigid.status_of(range_id(*august, catchup="last:3")) == expected_status(
        3, "nothing", "next due at never", skipped=28, total=31
    )
    with gk.open_ledger(pg_ledger_url) as ledger:
        published = ledger.read(
            "SELECT period FROM gk_publications WHERE period < ? ORDER BY period", (DATES[0],)
        )
        assert [row[0] for row in published] == ["2026-08-29", "2026-08-30", "2026-08-31"]
