"""Planning at its floor: a range's plan vs a plain SELECT of the job's keys, flat from 1 to 100
years, and the SQL work of one whole range invocation.

Builds, in a temporary folder, ``plan_ledger.py``'s SQLite ledger of five jobs: ``Gappy`` (10
years daily, 7 gaps), ``Flat`` (100 years daily, complete but the last 7 dates), ``Hours`` (5
years hourly, 7 gaps), ``Weekdays`` (10 years of weekdays, 5 gaps) and ``Months`` (10 years
monthly, 2 gaps).

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
import shutil
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import luigi
from _common import (
    alternating_ms,
    environment_line,
    load_line,
    print_table,
    runs_option,
    sqlite_url,
)
from plan_ledger import (
    FLAT,
    FLOOR_SQL,
    GAPPY,
    HOURS,
    MONTHS,
    WEEKDAYS,
    built,
    check,
    configure,
    floor,
    planned,
    range_of,
    states,
)

import gatekeeper as gk

TARGETS = {"gappy": 0.5, "flat": 1.5, "hours": 0.2, "steps": 2.0, "weekdays": 1.0}
TARGETS["fresh"] = TARGETS["gappy"]
#: the monthly plan against the daily one (Gappy's): its 120-row floor is below the fixed cost
#: of building a range instance, so its target is that it costs no more than a daily plan does
MONTHS_VS_DAILY = 1.5


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
