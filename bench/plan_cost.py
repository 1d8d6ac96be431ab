"""Planning at its floor: a range's plan vs a plain SELECT of the job's keys, flat from 1 to 100
years, and the SQL work of one whole range invocation.

Builds, in a temporary folder, one SQLite ledger with five jobs (each job's profile recorded as
its range records it, attempts bulk-inserted, then the ledger's runs built by the migration's
own step, checked against the full scan):

- ``Gappy``: 10 years daily (3,653 dates from 2016-01-01), 7 gaps (every 500th date missing,
  alternately no attempt and a failed one), every 10th date succeeded on its second attempt;
- ``Flat``: 100 years daily (36,525 dates to 2025-12-31), complete but the last 7 dates;
- ``Hours``: 5 years hourly (43,824 hours from 2021-01-01), 7 gaps (every 6,000th hour);
- ``Weekdays``: 10 years of weekdays (``calendar = "weekdays"``, 2,609 from 2016-01-01), 5
  gaps (every 500th business day);
- ``Months``: 10 years monthly (120 months from 2016-01), 2 gaps (every 50th month).

Then it times, in this process, tools alternating round by round (median of ``--runs`` after a
warm-up round), each result checked:

- ``plan``: ``RangeBusinessDaily/Hourly(of=..., start, stop, now).session.plan``, the plan one
  range invocation makes, the range instance built inside the timing (a new one each time: its
  ``now`` differs by a second, every period still due; Luigi's configuration read once, as in
  one process), against the floor ``SELECT period FROM gk_attempts WHERE job = ?`` on a raw
  sqlite3 connection (every row fetched): the simplest read of the job's keys;
- ``fresh plan()``: ``RangeBusinessDaily(...).plan()`` on a new instance over ``Gappy``: the
  same one query as the session plan (it is the session's plan);
- ``Weekdays`` and ``Months`` planned the same way: a business calendar's plan costs what
  the all-days plan costs (ordinals count business days; no calendar day is walked);
- ``Flat`` planned over its last 1, 10, 50 and 100 years: the plan must not grow with the
  window when what is missing does not;
- the SQL work of one real range invocation (``luigi.build`` of RangeBusinessDaily over
  ``Gappy``, contiguous, local scheduler, on a copy of the ledger): SQLite virtual-machine
  steps on every connection the process opens (a progress handler called at every step),
  against the steps of one bare scan of the job's keys (the SELECT above). Its 7 gaps are
  filled, and the bench checks it.

Prints the load average before and after. Not a test.

    python bench/plan_cost.py
    python bench/plan_cost.py --runs 15
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import itertools
import shutil
import sqlite3
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import luigi
import luigi.configuration
from _common import (
    alternating_ms,
    environment_line,
    load_line,
    print_table,
    runs_option,
    sqlite_url,
)
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
TARGETS = {"gappy": 0.5, "flat": 1.5, "hours": 0.2, "steps": 2.0, "weekdays": 1.0}
TARGETS["fresh"] = TARGETS["gappy"]
#: the monthly plan against the daily one (Gappy's): its 120-row floor is below the fixed cost
#: of building a range instance, so its target is that it costs no more than a daily plan does
MONTHS_VS_DAILY = 1.5

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


# -- the measures ----------------------------------------------------------------------------
def against_floor(tasks: ModuleType, conn: sqlite3.Connection, runs: int) -> dict[str, float]:
    """Plan and floor of Gappy and Hours, and Flat over 1, 10, 50 and 100 years."""
    years = {"1y": 365, "10y": 3652, "50y": 18262, "100y": FLAT.count}
    calls: dict[str, Callable[[], Any]] = {
        "gappy plan": planned(GAPPY, tasks),
        "gappy floor": floor(GAPPY, conn),
        "hours plan": planned(HOURS, tasks),
        "hours floor": floor(HOURS, conn),
        "fresh plan": planned(GAPPY, tasks, fresh=True),
        "weekdays plan": planned(WEEKDAYS, tasks),
        "weekdays floor": floor(WEEKDAYS, conn),
        "months plan": planned(MONTHS, tasks),
        "months floor": floor(MONTHS, conn),
    }
    for name, days in years.items():
        calls[f"flat {name}"] = planned(FLAT, tasks, FLAT.count - days)
    ms, results = alternating_ms(calls, runs)
    for gaps in results["fresh plan"]:
        check("Gappy fresh plan() gaps", gaps, GAPPY.gaps())
    for job in (GAPPY, HOURS, WEEKDAYS, MONTHS):
        for gaps in results[f"{job.name.lower()} plan"]:
            check(f"{job.name} plan gaps", gaps, job.gaps())
        rows = sum(len(states(job, i)) for i in range(job.count))
        for found in results[f"{job.name.lower()} floor"]:
            check(f"{job.name} floor rows", len(found), rows)
    for name, days in years.items():
        for gaps in results[f"flat {name}"]:
            check(f"Flat {name} plan gaps", gaps, FLAT.gaps(FLAT.count - days))
    return ms


class Steps:
    """SQLite VM steps on every connection opened while counting."""

    def __init__(self) -> None:
        self.count = 0
        self.connections = 0
        self._connect = sqlite3.connect

    def _tick(self) -> int:
        self.count += 1
        return 0

    def __enter__(self) -> Steps:
        def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
            conn = self._connect(*args, **kwargs)
            conn.set_progress_handler(self._tick, 1)
            self.connections += 1
            return conn

        sqlite3.connect = connect  # type: ignore[assignment]
        return self

    def __exit__(self, *exc: Any) -> None:
        sqlite3.connect = self._connect  # type: ignore[assignment]


def invocation_steps(folder: Path, url: str, tasks: ModuleType) -> tuple[int, int, int, int]:
    """(VM steps of one range invocation over Gappy, connections it opened, VM steps of one
    bare scan of Gappy's keys, rows the scan read), on a copy of the ledger."""
    source = Path(url[len("sqlite:///") :])
    copy = folder / "invocation.db"
    shutil.copy(source, copy)
    scan = sqlite3.connect(copy)
    steps = Steps()
    scan.set_progress_handler(steps._tick, 1)
    rows = len(scan.execute(FLOOR_SQL, ("Gappy",)).fetchall())
    scan_steps, steps.count = steps.count, 0
    scan.close()
    configure(sqlite_url(copy))
    with steps:
        ok = luigi.build([range_of(GAPPY, tasks)], local_scheduler=True, log_level="WARNING")
    with gk.open_ledger(sqlite_url(copy)) as after:
        left = after.completed_periods("Gappy", GAPPY.key(0), GAPPY.key(GAPPY.count - 1))
    if not ok or len(left) != GAPPY.count:
        raise SystemExit(f"the range invocation left {GAPPY.count - len(left)} gaps (ok={ok})")
    configure(url)
    return steps.count, steps.connections, scan_steps, rows


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


def report(ms: dict[str, float], steps: tuple[int, int, int, int], runs: int) -> bool:
    print(
        f"\nmedian of {runs} rounds after a warm-up round, every call once per round in turn, "
        "milliseconds; every result checked; floor = "
        f"{FLOOR_SQL} (raw sqlite3, every row fetched)\n"
    )
    rows = [
        ("plan 10 y daily, 7 gaps", ms["gappy plan"], ms["gappy floor"], "gappy"),
        ("plan 5 y hourly, 7 gaps", ms["hours plan"], ms["hours floor"], "hours"),
        ("fresh plan() 10 y daily, 7 gaps", ms["fresh plan"], ms["gappy floor"], "fresh"),
        ("plan 10 y weekdays, 5 gaps", ms["weekdays plan"], ms["weekdays floor"], "weekdays"),
        ("plan 10 y monthly, 2 gaps", ms["months plan"], ms["months floor"], "months"),
    ]
    met = True
    table = []
    for what, ours, base, target in rows:
        ratio = ours / base
        if target == "months":
            versus = ours / ms["gappy plan"]
            met &= versus <= MONTHS_VS_DAILY
            limit = f"{versus:.2f}x the daily plan <= {MONTHS_VS_DAILY}x"
        else:
            met &= ratio <= TARGETS[target]
            limit = f"<= {TARGETS[target]}x"
        table.append((what, f"{ours:.3f}", f"{base:.3f}", f"{ratio:.2f}x", limit))
    print_table(("measure", "gatekeeper ms", "floor ms", "ratio", "target"), table)
    print("\nFlat: 100 years daily, complete but the last 7 days, planned over its last N years:\n")
    flat = [(n, ms[f"flat {n}"]) for n in ("1y", "10y", "50y", "100y")]
    print_table(
        ("window", "plan ms", "vs 1 y"),
        [(n, f"{v:.3f}", f"{v / ms['flat 1y']:.2f}x") for n, v in flat],
    )
    ratio = ms["flat 50y"] / ms["flat 1y"]
    met &= ratio <= TARGETS["flat"]
    print(f"plan 50 y / plan 1 y: {ratio:.2f}x (target <= {TARGETS['flat']}x)")
    count, connections, scan, scanned = steps
    ratio = count / scan
    met &= ratio <= TARGETS["steps"]
    print(
        f"\nSQL work of one range invocation over Gappy (10 y, 7 gaps filled), SQLite VM steps "
        f"on its {connections} connection(s): {count:,}; one bare scan of the job's "
        f"{scanned:,} keys: {scan:,}; ratio {ratio:.2f}x (target <= {TARGETS['steps']}x)"
    )
    print(f"\ntargets {'met' if met else 'MISSED'}")
    return met


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    return runs_option(parser, argv, default=9)


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


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(environment_line())
    print(load_line("before"))
    with built("gk-bench-plan-cost-") as (folder, url, tasks, conn):
        ms = against_floor(tasks, conn, args.runs)
        steps = invocation_steps(folder, url, tasks)
        report(ms, steps, args.runs)
    print(load_line("after"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
