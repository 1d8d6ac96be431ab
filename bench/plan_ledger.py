"""The planning benchmarks' ledger: five jobs in one SQLite ledger, built in a temporary
folder and Luigi configured on it (``built``), and how to plan them and read their floor.

The jobs (each job's profile recorded as its range records it, attempts bulk-inserted, then
the ledger's runs built by the migration's own step, checked against the full scan):

- ``Gappy``: 10 years daily (3,653 dates from 2016-01-01), 7 gaps (every 500th date missing,
  alternately no attempt and a failed one), every 10th date succeeded on its second attempt;
- ``Flat``: 100 years daily (36,525 dates to 2025-12-31), complete but the last 7 dates;
- ``Hours``: 5 years hourly (43,824 hours from 2021-01-01), 7 gaps (every 6,000th hour);
- ``Weekdays``: 10 years of weekdays (``calendar = "weekdays"``, 2,609 from 2016-01-01), 5
  gaps (every 500th business day);
- ``Months``: 10 years monthly (120 months from 2016-01), 2 gaps (every 50th month).

What it offers:

- ``built(prefix)``: (folder, ledger URL, the jobs' task module, a raw connection), undone on
  leaving;
- ``planned(job, tasks)``: a call returning the gaps of the plan one range invocation makes;
  ``floor(job, conn)``: the plain ``FLOOR_SQL`` SELECT of the job's keys;
- ``configure(url)``: Luigi's ``[gatekeeper]`` section for ``url``; ``check``: a result, or exit
  naming it.

Used by ``plan_cost.py``, ``plan_review.py`` and ``cascade_walk.py``. Not a test.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import itertools
import sqlite3
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import luigi.configuration
from _common import sqlite_url
from luigi.task_register import Register

import gatekeeper as gk
from gatekeeper.core.causes import JobProfile
from gatekeeper.core.periods import DAILY, HOURLY, MONTHLY, Period
from gatekeeper.ledger.runs import CompleteRuns
from gatekeeper.luigi import tasks as gk_tasks

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 1, 2, tzinfo=UTC)  # every period of every job is due
FLOOR_SQL = "SELECT period FROM gk_attempts WHERE job = ?"
SECONDS = itertools.count()  # each plan is a new range instance (its own ``now``, all due)

TASKS = """
import gatekeeper as gk


class Gappy(gk.BusinessDateTask):
    def run(self):
        pass


class Flat(gk.BusinessDateTask):
    def run(self):
        pass


class Hours(gk.BusinessHourTask):
    def run(self):
        pass


class Weekdays(gk.BusinessDateTask):
    calendar = "weekdays"

    def run(self):
        pass


class Months(gk.BusinessMonthTask):
    def run(self):
        pass
"""


@dataclass(frozen=True)
class Job:
    """``count`` periods of ``kind`` from ``first``; ``missing(i)`` says which are gaps."""

    name: str
    kind: Period
    first: str
    count: int
    every: int  # a gap every ``every`` periods (0: the last 7 are the gaps)

    def key(self, i: int) -> str:
        return self.kind.key(self.kind.at(self.kind.ordinal(self.first) + i))

    def missing(self, i: int) -> bool:
        if self.every == 0:
            return i >= self.count - 7
        return i % self.every == self.every - 1

    def gaps(self, start: int = 0) -> set[str]:
        return {self.key(i) for i in range(start, self.count) if self.missing(i)}


GAPPY = Job("Gappy", DAILY, "2016-01-01", 3653, 500)
FLAT = Job("Flat", DAILY, "1926-01-01", 36525, 0)
HOURS = Job("Hours", HOURLY, "2021-01-01T00:00Z", 43824, 6000)
WEEKDAYS = Job("Weekdays", DAILY.on("weekdays"), "2016-01-01", 2609, 500)
MONTHS = Job("Months", MONTHLY, "2016-01", 120, 50)
JOBS = (GAPPY, FLAT, HOURS, WEEKDAYS, MONTHS)
RANGES = {"daily": gk.RangeBusinessDaily, "hourly": gk.RangeBusinessHourly}
RANGES["monthly"] = gk.RangeBusinessMonthly


def states(job: Job, i: int) -> list[str]:
    """The states of period ``i``'s attempts, oldest first."""
    if job.missing(i):
        return ["failed"] if i % 2 else []
    return ["failed", "succeeded"] if i % 10 == 3 else ["succeeded"]


def attempt_rows(job: Job, ledger: gk.Ledger) -> Iterator[tuple[Any, ...]]:
    """gk_attempts rows: a gap has no attempt or a failed one; every 10th period two."""
    at = ledger.sql.ts_in(NOW - dt.timedelta(days=1))
    for i in range(job.count):
        key = job.key(i)
        for number, state in enumerate(states(job, i), start=1):
            yield (job.name, key, number, f"{job.name}-{key}-{number}", state, at, at, None, None)


def fill(url: str) -> None:
    """The jobs' attempts, bulk-inserted; the runs built as the migration to schema 6 builds
    them; checked equal to the full scan."""
    with gk.open_ledger(url) as ledger:
        for job in JOBS:  # as the job's range records it as it takes its first fill up
            calendar = job.kind.calendar.name
            ledger.record_profile(JobProfile(job.name, job.kind, "UTC", calendar=calendar))
        with ledger.transaction():
            for job in JOBS:
                ledger.connection.executemany(
                    "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, "
                    "updated_at, lease_expires_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    attempt_rows(job, ledger),
                )
            CompleteRuns(ledger.sql).rebuild()
        ledger.connection.execute("ANALYZE")
        for job in JOBS:
            first, last = job.key(0), job.key(job.count - 1)
            runs = set(ledger.complete_runs(job.name, first, last).keys())
            if runs != ledger.completed_periods(job.name, first, last):
                raise SystemExit(f"{job.name}: the runs differ from the full scan")


def range_of(job: Job, tasks: ModuleType, start: int = 0, **extra: Any) -> Any:
    cls = RANGES[job.kind.name]
    first, stop = (
        job.kind.at(job.kind.ordinal(job.first) + start),
        job.kind.at(job.kind.ordinal(job.first) + job.count),
    )
    if job.kind is HOURLY:
        first, stop = first.replace(tzinfo=None), stop.replace(tzinfo=None)
    return cls(
        of=getattr(tasks, job.name),
        start=first,
        stop=stop,
        now=int(NOW.timestamp()) + next(SECONDS),  # a new instance: a new invocation's
        task_limit=100_000,
        **extra,
    )


def planned(
    job: Job, tasks: ModuleType, start: int = 0, fresh: bool = False
) -> Callable[[], set[str]]:
    def run() -> set[str]:
        rng = range_of(job, tasks, start)
        plan = rng.plan() if fresh else rng.session.plan
        return {plan.key(label) for label in plan.gaps}

    return run


def floor(job: Job, conn: sqlite3.Connection) -> Callable[[], list[Any]]:
    return lambda: conn.execute(FLOOR_SQL, (job.name,)).fetchall()


def check(what: str, found: Any, expected: Any) -> None:
    if found != expected:
        raise SystemExit(f"{what}: got {str(found)[:200]}, expected {str(expected)[:200]}")


def configure(url: str) -> None:
    """Luigi's [gatekeeper] section for ``url``; this process's ledgers forgotten."""
    cfg = luigi.configuration.get_config()
    if not cfg.has_section("gatekeeper"):
        cfg.add_section("gatekeeper")
    for key, value in {"ledger_url": url, "lateness": "0s", "timezone": "UTC"}.items():
        cfg.set("gatekeeper", key, value)
    for ledger in gk_tasks._ledgers.values():
        ledger.close()
    gk_tasks._ledgers.clear()
    Register.clear_instance_cache()


@contextlib.contextmanager
def built(prefix: str) -> Iterator[tuple[Path, str, ModuleType, sqlite3.Connection]]:
    """(folder, ledger URL, the jobs' task module, a raw connection) of the ledger above,
    built in a temporary folder, Luigi configured on it; undone on leaving."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        folder = Path(tmp)
        url = sqlite_url(folder / "ledger.db")
        fill(url)
        (folder / "gk_plan_cost_tasks.py").write_text(textwrap.dedent(TASKS))
        sys.path.insert(0, str(folder))
        tasks = importlib.import_module("gk_plan_cost_tasks")
        configure(url)
        conn = sqlite3.connect(url[len("sqlite:///") :])
        try:
            yield folder, url, tasks, conn
        finally:
            conn.close()
            configure(url)
            sys.path.remove(str(folder))
