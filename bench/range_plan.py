"""Range planning: gatekeeper's RangeBusiness* vs luigi's Range* vs a bare SELECT of the rows.

Builds, in a temporary folder, one SQLite ledger holding a 10-year daily job (3,653 dates,
2016-01-01..2025-12-31) and a 1-year hourly job (8,760 hours of 2025), plus the output files of
an equivalent luigi LocalTarget task for every complete period. Every 97th period is missing
(alternately no attempt at all, or a failed one); every 10th complete period took two attempts
(failed, then succeeded), so the latest-attempt rule matters. Then, in this process, it times

- gatekeeper: ``RangeBusinessDaily/Hourly(of=T, start, stop, now, task_limit=100000)``'s
  session plan (``.session.plan``: what one invocation plans when Luigi first checks it)
  (instance built inside the timing; one ledger query, then ``plan_range``);
- luigi: ``RangeDaily/Hourly(of=L, start, stop, days_back/hours_back, now,
  task_limit=100000).requires()`` (builds every period's task, lists the output folder);
- the floor, a bare SELECT on a raw sqlite3 connection: the exact query a plan runs, the
  read of the job's runs of complete periods overlapping the window (``ledger/runs.py``;
  built here by the migration's own step after the attempts are bulk-inserted), rows fetched,
  nothing else; the script checks, by tracing both connections, that the ledger ran the same
  statement with the same values (``bench/plan_cost.py`` has the plain SELECT of every key);

each the median of ``--runs`` rounds after one warm-up round; a round runs gatekeeper, luigi,
the SELECT and the simplest SELECT once each in turn, so a change of load hits all alike.
Luigi's instance cache is cleared before every run (which also makes gatekeeper re-read its
``[gatekeeper]`` config). The gatekeeper ledger connection stays open between runs (warm); a
cold figure is printed too. Every run of every tool must report exactly the missing periods
(the SELECT: exactly the complete ones); the script fails otherwise. The load average is
printed before and after. Not a test.

    python bench/range_plan.py
    python bench/range_plan.py --runs 15 --profile
"""

from __future__ import annotations

import argparse
import cProfile
import datetime as dt
import importlib
import pstats
import sqlite3
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import luigi
import luigi.configuration
import luigi.tools.range
from _common import (
    alternating_ms,
    environment_line,
    load_line,
    median_ms,
    print_table,
    runs_option,
    sqlite_url,
    write_task_module,
)
from luigi.task_register import Register

import gatekeeper as gk
from gatekeeper.core.planning import plan_range
from gatekeeper.core.spans import PeriodRuns
from gatekeeper.ledger.runs import BETWEEN as RUNS_SQL
from gatekeeper.ledger.runs import CompleteRuns
from gatekeeper.luigi import tasks as gk_tasks
from gatekeeper.luigi.completeness import completed_between

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 1, 2, tzinfo=UTC)  # every period of both cases is due
GAP_EVERY = 97
RETRY_EVERY = 10
TASK_LIMIT = 100_000
SELECT_SQL = RUNS_SQL  # what a plan reads for a job that does not publish: its runs
SIMPLE_SQL = "SELECT period FROM gk_attempts WHERE job = ?"
TARGET_LUIGI_RATIO = 50.0


@dataclass(frozen=True)
class Case:
    """One range: ``count`` periods of ``step`` from ``first`` (naive UTC)."""

    name: str
    period: str  # daily | hourly
    first: dt.datetime
    count: int
    gk_task: str
    luigi_task: str

    @property
    def step(self) -> dt.timedelta:
        return dt.timedelta(days=1) if self.period == "daily" else dt.timedelta(hours=1)

    def at(self, i: int) -> dt.datetime:
        return self.first + i * self.step

    def param(self, i: int) -> Any:
        """The value of the tasks' period parameter: a date, or a naive UTC hour."""
        return self.at(i).date() if self.period == "daily" else self.at(i)

    def key(self, when: dt.datetime) -> str:
        return f"{when:%Y-%m-%d}" if self.period == "daily" else f"{when:%Y-%m-%dT%H}:00Z"

    def is_gap(self, i: int) -> bool:
        return i % GAP_EVERY == GAP_EVERY - 1

    def gap_keys(self) -> set[str]:
        return {self.key(self.at(i)) for i in range(self.count) if self.is_gap(i)}


CASES = (
    Case("daily 10y", "daily", dt.datetime(2016, 1, 1), 3653, "GkDaily", "LuigiDaily"),
    Case("hourly 1y", "hourly", dt.datetime(2025, 1, 1), 8760, "GkHourly", "LuigiHourly"),
)


# -- fixtures --------------------------------------------------------------------------------
def states_of(case: Case, i: int) -> list[str]:
    """The states of period ``i``'s attempts: gaps have none or a failed one."""
    if case.is_gap(i):
        return ["failed"] if (i // GAP_EVERY) % 2 else []
    return ["failed", "succeeded"] if i % RETRY_EVERY == 3 else ["succeeded"]


def attempt_rows(case: Case, ledger: gk.Ledger) -> Iterator[tuple[Any, ...]]:
    """gk_attempts rows of ``case``'s job: gaps have no attempt or a failed one."""
    for i in range(case.count):
        key = case.key(case.at(i))
        ended = ledger.sql.ts_in(case.at(i + 1).replace(tzinfo=UTC) + dt.timedelta(minutes=5))
        for number, state in enumerate(states_of(case, i), start=1):
            error = "bench: injected failure" if state == "failed" else None
            yield (
                case.gk_task,
                key,
                number,
                f"{case.gk_task}-{key}-{number}",
                state,
                ended,
                ended,
                None,
                error,
            )


def fill_ledger(url: str) -> int:
    """Create the ledger and bulk-insert every case's attempts; returns the row count."""
    with gk.open_ledger(url) as ledger:
        with ledger.transaction():
            for case in CASES:
                ledger.connection.executemany(
                    "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, "
                    "updated_at, lease_expires_at, error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    attempt_rows(case, ledger),
                )
            CompleteRuns(ledger.sql).rebuild()  # the runs, as the migration to schema 6 builds
        ledger.connection.execute("ANALYZE")
        return int(ledger.read("SELECT COUNT(*) FROM gk_attempts")[0][0])


def write_outputs(case: Case, out: Path) -> int:
    """Create the luigi task's output file of every complete period; returns how many."""
    folder = out / case.period
    folder.mkdir(parents=True)
    pattern = "%Y-%m-%d.txt" if case.period == "daily" else "%Y-%m-%dT%H.txt"
    made = 0
    for i in range(case.count):
        if not case.is_gap(i):
            (folder / case.at(i).strftime(pattern)).write_text("ok\n")
            made += 1
    return made


# -- the measured calls ----------------------------------------------------------------------
def gk_range(case: Case, tasks: ModuleType, **extra: Any) -> gk.RangeBusinessDaily:
    cls = gk.RangeBusinessDaily if case.period == "daily" else gk.RangeBusinessHourly
    return cls(
        of=getattr(tasks, case.gk_task),
        start=case.param(0),
        stop=case.param(case.count),
        now=int(NOW.timestamp()),
        task_limit=TASK_LIMIT,
        **extra,
    )


def gk_plan(case: Case, tasks: ModuleType) -> Callable[[], set[str]]:
    def run() -> set[str]:
        # the plan one range invocation makes: its session's (built at Luigi's first check)
        plan = gk_range(case, tasks).session.plan
        return {plan.key(label) for label in plan.gaps}

    return run


def gk_requires(case: Case, tasks: ModuleType, strategy: str) -> Callable[[], set[str]]:
    def run() -> set[str]:
        task = gk_range(case, tasks, strategy=strategy)
        task.requires()
        return set(task.session.keys)

    return run


def luigi_requires(case: Case, tasks: ModuleType) -> Callable[[], set[str]]:
    of = getattr(tasks, case.luigi_task)
    common = {
        "of": of,
        "start": case.param(0),
        "stop": case.param(case.count),
        "now": int(NOW.timestamp()),
        "task_limit": TASK_LIMIT,
    }

    def run() -> set[str]:
        if case.period == "daily":
            wrapper = luigi.tools.range.RangeDaily(days_back=5000, **common)
            return {case.key(dt.datetime.combine(t.date, dt.time())) for t in wrapper.requires()}
        wrapper = luigi.tools.range.RangeHourly(hours_back=100_000, **common)
        return {case.key(t.hour) for t in wrapper.requires()}

    return run


def bare_select(case: Case, conn: sqlite3.Connection, simple: bool = False) -> Callable[[], Any]:
    first, last = case.key(case.at(0)), case.key(case.at(case.count - 1))  # [first, last]

    def run() -> list[Any]:
        if simple:
            return conn.execute(SIMPLE_SQL, (case.gk_task,)).fetchall()
        return conn.execute(SELECT_SQL, (case.gk_task, 0, first, last, len(first))).fetchall()

    return run


def close_shared_ledgers() -> None:
    """Forget gatekeeper's per-process ledger connections (so the next plan opens one)."""
    for ledger in gk_tasks._ledgers.values():
        ledger.close()
    gk_tasks._ledgers.clear()
    Register.clear_instance_cache()


# -- measurement -----------------------------------------------------------------------------
@dataclass(frozen=True)
class Figures:
    """Median milliseconds of one case's calls, by label."""

    case: Case
    ms: dict[str, float]
    queries: int  # how many times one session plan ran the floor's SELECT

    def ratio(self, over: str, under: str) -> float:
        return self.ms[over] / self.ms[under]


def check(case: Case, what: str, found: set[str], expected: set[str]) -> None:
    if found != expected:
        raise SystemExit(
            f"{case.name}: {what} reported {len(found)} missing periods, expected "
            f"{len(expected)}; extra {sorted(found - expected)[:5]}, "
            f"lacking {sorted(expected - found)[:5]}"
        )


def traced(conn: sqlite3.Connection, run: Callable[[], Any]) -> list[str]:
    """The statements (values expanded) ``run()`` sends on ``conn`` that read the runs."""
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        run()
    finally:
        conn.set_trace_callback(None)
    return [sql for sql in seen if "FROM gk_complete_runs" in sql]


def check_same_query(case: Case, tasks: ModuleType, conn: sqlite3.Connection) -> int:
    """The floor's SELECT is, values included, the statement gatekeeper's session plan runs (the
    only one on gk_attempts); returns how many times the session plan ran it."""
    Register.clear_instance_cache()
    ledger_conn = gk_tasks.shared_ledger().connection
    if not isinstance(ledger_conn, sqlite3.Connection):
        raise SystemExit(f"cannot trace the ledger's connection ({type(ledger_conn)})")
    ours = traced(conn, bare_select(case, conn))
    theirs = traced(ledger_conn, gk_plan(case, tasks))
    if len(ours) != 1 or set(theirs) != set(ours):
        raise SystemExit(f"{case.name}: the floor ran {ours}, gatekeeper's plan ran {theirs}")
    return len(theirs)


def measure(case: Case, tasks: ModuleType, conn: sqlite3.Connection, runs: int) -> Figures:
    """Time every call of ``case``, tools alternating, and check every run's result."""
    clear = Register.clear_instance_cache
    queries = check_same_query(case, tasks, conn)
    expected = case.gap_keys()
    every = {case.key(case.at(i)) for i in range(case.count)}
    ms, results = alternating_ms(
        {
            "gk": gk_plan(case, tasks),
            "luigi": luigi_requires(case, tasks),
            "select": bare_select(case, conn),
            "simple": bare_select(case, conn, simple=True),
        },
        runs,
        before={"gk": clear, "luigi": clear},
    )
    for gaps in results["gk"]:
        check(case, "gatekeeper session.plan.gaps", gaps, expected)
    for gaps in results["luigi"]:
        check(case, "luigi requires()", gaps, expected)
    for rows in results["select"]:
        held = PeriodRuns.from_keys(case.period, [(a, b) for a, b in rows])
        check(case, "the bare SELECT", every - set(held.keys()), expected)
        if len(rows) > len(expected) + 1:
            raise SystemExit(f"{case.name}: the bare SELECT returned {len(rows)} runs")
    attempts = sum(len(states_of(case, i)) for i in range(case.count))
    for rows in results["simple"]:
        if len(rows) != attempts:
            raise SystemExit(f"{case.name}: the simplest SELECT returned {len(rows)} rows")
    ms.update(breakdown(case, tasks, runs))
    for strategy in ("contiguous", "forward"):
        ms[strategy], keys = median_ms(gk_requires(case, tasks, strategy), runs, clear)
        check(case, f"gatekeeper requires() ({strategy})", keys, expected)
    ms["cold"], gaps = median_ms(gk_plan(case, tasks), runs, close_shared_ledgers)
    check(case, "gatekeeper session.plan.gaps (cold ledger)", gaps, expected)
    return Figures(case, ms, queries)


def breakdown(case: Case, tasks: ModuleType, runs: int) -> dict[str, float]:
    """The parts of gatekeeper's session plan: the wrapper instance, the ledger query, plan_range
    (given the query's runs, as the session plan does, and given the same periods as labels)."""
    clear = Register.clear_instance_cache
    of = getattr(tasks, case.gk_task)
    first, last = case.key(case.at(0)), case.key(case.at(case.count - 1))
    done = completed_between(of, gk_tasks.shared_ledger(), case.gk_task, first, last)
    labels = set(done)  # the same periods as labels
    start = case.at(0).date() if case.period == "daily" else case.at(0).replace(tzinfo=UTC)
    stop = (
        case.at(case.count).date()
        if case.period == "daily"
        else case.at(case.count).replace(tzinfo=UTC)
    )
    parts = {
        "construct": lambda: gk_range(case, tasks),
        "query": lambda: completed_between(of, gk_tasks.shared_ledger(), case.gk_task, first, last),
        "plan_range": lambda: plan_range(  # given the runs
            done, start=start, stop=stop, now=NOW, period=case.period, task_limit=TASK_LIMIT
        ),
        "plan_labels": lambda: plan_range(
            labels, start=start, stop=stop, now=NOW, period=case.period, task_limit=TASK_LIMIT
        ),
    }
    return {name: median_ms(run, runs, clear)[0] for name, run in parts.items()}


def profile(case: Case, tasks: ModuleType, runs: int) -> None:
    """Print where gatekeeper's session plan spends its time (cProfile over ``runs`` runs)."""
    run = gk_plan(case, tasks)
    run()
    profiler = cProfile.Profile()
    for _ in range(runs):
        Register.clear_instance_cache()
        profiler.enable()
        run()
        profiler.disable()
    print(f"\ncProfile of gatekeeper's session plan, {case.name}, {runs} runs (by own time):")
    pstats.Stats(profiler, stream=sys.stdout).sort_stats("tottime").print_stats(15)


# -- setup and report ------------------------------------------------------------------------
def prepare(folder: Path) -> tuple[ModuleType, str]:
    """Write the task module, the ledger and the luigi outputs; configure Luigi in-process."""
    url = sqlite_url(folder / "ledger.db")
    began = time.perf_counter()
    rows = fill_ledger(url)
    files = sum(write_outputs(case, folder / "out") for case in CASES)
    print(
        f"fixtures: {rows:,} attempt rows, {files:,} luigi output files "
        f"in {time.perf_counter() - began:.1f} s"
    )
    cfg = luigi.configuration.get_config()
    if not cfg.has_section("gatekeeper"):
        cfg.add_section("gatekeeper")
    for key, value in {"ledger_url": url, "lateness": "0s", "timezone": "UTC"}.items():
        cfg.set("gatekeeper", key, value)
    Register.clear_instance_cache()
    sys.path.insert(0, str(folder))
    tasks = importlib.import_module(write_task_module(folder, folder / "out"))
    return tasks, url


def report(figures: list[Figures], runs: int) -> bool:
    """Print the tables and the targets; returns True when both targets are met."""
    print(
        f"\nmedian of {runs} rounds (after a warm-up round; each round runs gatekeeper, luigi "
        "and both SELECTs in turn), milliseconds; Luigi's instance cache cleared before each "
        "run; gatekeeper's ledger connection warm; every run's result checked"
    )
    print(f"SELECT = {SELECT_SQL} (raw sqlite3, fetchall; traced: what the plan runs)\n")
    print_table(
        (
            "case",
            "gatekeeper ms",
            "luigi ms",
            "bare SELECT ms",
            "luigi/gatekeeper",
            "gatekeeper/SELECT",
        ),
        [
            (
                f.case.name,
                f"{f.ms['gk']:.2f}",
                f"{f.ms['luigi']:.2f}",
                f"{f.ms['select']:.2f}",
                f"{f.ratio('luigi', 'gk'):.1f}x",
                f"{f.ratio('gk', 'select'):.2f}x",
            )
            for f in figures
        ],
    )
    for f in figures:
        if f.queries != 1:
            print(f"note: {f.case.name}: one session plan ran the floor's SELECT {f.queries} times")
    print("\ngatekeeper in parts and variants (ms):\n")
    print_table(
        (
            "case",
            "construct",
            "ledger query",
            "plan_range(runs)",
            "plan_range(labels)",
            "plan cold",
            "requires() contig.",
            "requires() forward",
            f"{SIMPLE_SQL.split(' FROM')[0]} WHERE job=?",
        ),
        [
            (
                f.case.name,
                *(
                    f"{f.ms[k]:.2f}"
                    for k in (
                        "construct",
                        "query",
                        "plan_range",
                        "plan_labels",
                        "cold",
                        "contiguous",
                        "forward",
                        "simple",
                    )
                ),
            )
            for f in figures
        ],
    )
    luigi_ok = all(f.ratio("luigi", "gk") >= TARGET_LUIGI_RATIO for f in figures)
    print(
        f"\ntarget: planning >= {TARGET_LUIGI_RATIO:g}x faster than luigi: "
        f"{'met' if luigi_ok else 'MISSED'} (the plan against a plain SELECT of every key, "
        "flat in the window: bench/plan_cost.py)"
    )
    return luigi_ok


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--profile",
        action="store_true",
        help="also print a cProfile of gatekeeper's session plan per case",
    )
    return runs_option(parser, argv, default=7)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    # luigi's own RangeDaily/RangeHourly warn about their param_name=None default on every build
    warnings.filterwarnings("ignore", message='Parameter "param_name"', category=UserWarning)
    print(environment_line())
    print(load_line("before"))
    with tempfile.TemporaryDirectory(prefix="gk-bench-plan-") as tmp:
        folder = Path(tmp)
        tasks, url = prepare(folder)
        conn = sqlite3.connect(url[len("sqlite:///") :])
        try:
            figures = [measure(case, tasks, conn, args.runs) for case in CASES]
            met = report(figures, args.runs)
            print(load_line("after"))
            if args.profile or not met:
                for case in CASES:
                    profile(case, tasks, max(args.runs, 20))
        finally:
            conn.close()
            close_shared_ledgers()
            sys.path.remove(str(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
