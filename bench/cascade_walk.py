"""The stale cascade's cost: ``--reprocess stale`` over 10 years daily beside the range without
it, the bare SQL of the same facts and Luigi's own range over the same window (issue 50).

Builds, through the Ledger API (attempts recorded, publications published with their
evidence, all in one transaction), a ledger of three jobs over 3,653 days from 2016-01-01:
``Producer`` (a BusinessDateTask) succeeded every day; ``Consumer`` (a GatedTask requiring it)
published every day; ``Rollup`` (a GatedMonthTask on the month's consumer days) published
every month; then one producer day repaired (attempt 2), so one consumer day is stale. Then
times, in this process, alternating round by round (median of ``--runs`` after a warm-up
round), Luigi's instance cache cleared before each run (a fresh range instance, every task
built anew), each result checked:

- ``stale daily``: ``RangeBusinessDaily(of=Consumer, ..., reprocess="stale")``: its session
  (the plan and the cascade's walk of the graph below the window) and its first
  ``complete()`` (the graph's stale publications read): False, one consumer day stale;
- ``missing daily``: the same range with ``reprocess="missing"`` (no cascade): True;
- ``stale monthly`` / ``missing monthly``: ``RangeBusinessMonthly(of=Rollup)`` over the 120
  months, whose graph holds every consumer and producer day below them;
- ``floor daily`` / ``floor monthly``: the bare SQL of the same facts on a raw connection
  (sqlite3 or psycopg): the job's keys (the plan's scan), the latest attempt of every pair
  of each job below (one statement a job), and the stale statement over the publishing jobs'
  publications, joined to their evidence, to the newer succeeded upstream attempts and to
  the upstream pair's newest revision;
- ``Luigi RangeDaily``: ``luigi.tools.range.RangeDaily(of=Consumer, ...).requires()`` over
  the same window (Consumer's ``bulk_complete``: one ledger query; nothing missing);
- ``Luigi tasks``: every consumer day's task built and its ``requires()`` flattened (what
  Luigi's worker does to a graph it is handed, without its scheduler): the Python floor of
  a walk from every due period;
- ``Luigi worker``: a ``luigi.WrapperTask`` over every consumer day added to a ``Worker`` on a
  fresh local scheduler (what ``luigi`` does before it runs anything: each day's
  ``complete()`` asked, each scheduled): Luigi handed the window's every period.

Prints the load average before and after. Not a test.

    python bench/cascade_walk.py
    python bench/cascade_walk.py --runs 9 --backend postgresql
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import importlib
import io
import json
import sys
import tempfile
import textwrap
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import luigi.scheduler
import luigi.task
import luigi.tools.range
import luigi.worker
from _common import alternating_ms, environment_line, load_line, print_table, runs_option
from fleet_readers import PG_DSN, Backend
from luigi.task_register import Register
from plan_ledger import FLOOR_SQL, check, configure

import gatekeeper as gk
from gatekeeper.cli import main as cli_main
from gatekeeper.core.causes import JobProfile
from gatekeeper.core.periods import DAILY, MONTHLY

UTC = dt.timezone.utc
FIRST, DAYS = dt.date(2016, 1, 1), 3653  # to 2025-12-31
STOP = FIRST + dt.timedelta(days=DAYS)
NOW = dt.datetime(2026, 1, 2, tzinfo=UTC)  # every period due
REPAIRED = "2021-06-15"
TASK_MODULE = "gk_cascade_walk_tasks"

TASKS = """
import datetime as dt

import luigi

import gatekeeper as gk


class Producer(gk.BusinessDateTask):
    def run(self):
        pass


class Consumer(gk.GatedTask):
    def requires(self):
        return Producer(business_date=self.business_date)

    def build(self):
        return {"day": self.period_key}


class Rollup(gk.GatedMonthTask):
    def requires(self):
        days = Consumer.period_kind
        stop = self.period_kind.shift(self.business_month, 1)
        return [Consumer(business_date=d) for d in days.between(self.business_month, stop)]

    def build(self):
        return {"month": self.period_key}


class EveryDay(luigi.WrapperTask):
    def requires(self):
        first = dt.date(2016, 1, 1)
        return [Consumer(business_date=first + dt.timedelta(days=n)) for n in range(3653)]
"""

# The same facts as the cascade reads them, on a raw connection ({p}: the placeholder).
LATEST_SQL = (
    "SELECT a.period, a.attempt, a.state FROM gk_attempts a WHERE a.job = {p} "
    "AND a.attempt = (SELECT MAX(b.attempt) FROM gk_attempts b "
    "WHERE b.job = a.job AND b.period = a.period)"
)
UPSTREAM_REVISION = (
    "(SELECT MAX(u.revision) FROM gk_publications u "
    "WHERE u.consumer = e.job AND u.period = e.job_period)"
)
STALE_SQL = (  # stale: a newer succeeded upstream attempt, or a newer upstream revision
    "SELECT p.consumer, p.period, e.job, e.job_period, e.attempt, a.attempt "
    "FROM gk_publications p JOIN gk_evidence e ON e.consumer = p.consumer "
    "AND e.period = p.period AND e.revision = p.revision "
    "LEFT JOIN gk_attempts a ON a.job = e.job AND a.period = e.job_period "
    "AND a.state = 'succeeded' AND a.attempt > e.attempt "
    "WHERE p.consumer IN ({p}, {p}) AND p.revision = (SELECT MAX(q.revision) "
    "FROM gk_publications q WHERE q.consumer = p.consumer AND q.period = p.period) "
    f"AND (a.attempt IS NOT NULL OR {UPSTREAM_REVISION} > e.job_revision)"
)


def days() -> list[str]:
    return [str(FIRST + dt.timedelta(days=n)) for n in range(DAYS)]


def months() -> list[str]:
    first = MONTHLY.ordinal("2016-01")
    return [MONTHLY.key(MONTHLY.at(first + n)) for n in range(120)]


def build_history(url: str) -> None:
    """The three jobs' history through the Ledger API, in one transaction; then the repair."""
    at = NOW - dt.timedelta(days=1)
    with gk.open_ledger(url) as ledger:
        for job, kind in (("Producer", DAILY), ("Consumer", DAILY), ("Rollup", MONTHLY)):
            ledger.record_profile(JobProfile(job, kind, "UTC", calendar=kind.calendar.name))
        with ledger.transaction():
            for key in days():
                ledger.record("Producer", key, 1, f"Producer-{key}-1", "succeeded", at, now=at)
                publish(ledger, "Consumer", key, ["Producer"], at)
            for month in months():
                first = MONTHLY.at(MONTHLY.ordinal(month))
                below = DAILY.between(first, MONTHLY.shift(first, 1))
                publish(ledger, "Rollup", month, [("Consumer", d) for d in below], at)
            ledger.record("Producer", REPAIRED, 2, f"Producer-{REPAIRED}-2", "succeeded", at)
        if ledger.dialect == "postgresql":
            ledger.connection.execute("ANALYZE")
        stale = [(s.consumer, s.business_date) for s in ledger.stale("Consumer")]
        check("stale consumer days", stale, [("Consumer", REPAIRED)])


def publish(ledger: gk.Ledger, job: str, key: str, upstream: list[Any], at: dt.datetime) -> None:
    """Attempt 1 of ``job`` for ``key``: begun, published on ``upstream``, succeeded."""
    run_id = f"{job}-{key}-1"
    ledger.begin_attempt(job, key, run_id, lease_seconds=3600, attempt=1, now=at)
    ledger.publish(job, key, upstream, "fp", producer=run_id, now=at)
    ledger.record(job, key, 1, run_id, "succeeded", at, now=at)


# -- what is timed -------------------------------------------------------------------------------
def opened(tasks: ModuleType, monthly: bool, reprocess: str) -> Callable[[], tuple[bool, int]]:
    """A fresh range's session and first ``complete()``: (complete, pairs in its graph)."""

    def run() -> tuple[bool, int]:
        at = int(NOW.timestamp())
        if monthly:
            rng: Any = gk.RangeBusinessMonthly(
                of=tasks.Rollup, start=FIRST, stop=dt.date(2026, 1, 1), now=at, reprocess=reprocess
            )
        else:
            rng = gk.RangeBusinessDaily(
                of=tasks.Consumer, start=FIRST, stop=STOP, now=at, reprocess=reprocess
            )
        rng.session  # noqa: B018  the session opens here (the plan, and the walk under stale)
        cascade = rng.session.cascade
        return rng.complete(), 0 if cascade is None else len(cascade.tasks)

    return run


def planned(url: str, reprocess: str) -> Callable[[], tuple[int, list[Any]]]:
    """``gatekeeper plan Rollup --json`` over the 120 months, in process: (exit code, its
    cascade as (job, period, layer))."""
    args = ["--ledger", url, "--json", "plan", "Rollup", "--start", "2016-01", "--stop"]
    args += ["2026-01", "--now", NOW.isoformat(), "--lateness", "0s", "--reprocess", reprocess]

    def run() -> tuple[int, list[Any]]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = cli_main(args)
        steps = json.loads(out.getvalue())["cascade"]
        return code, [(s["job"], s["period"], s["layer"]) for s in steps]

    return run


def luigi_range(tasks: ModuleType) -> Callable[[], list[Any]]:
    def run() -> list[Any]:
        rng = luigi.tools.range.RangeDaily(
            of=tasks.Consumer,
            start=dt.datetime.combine(FIRST, dt.time()),
            stop=dt.datetime.combine(STOP, dt.time()),
            now=int(NOW.timestamp()),
            days_back=DAYS + 10,
        )
        return list(rng.requires())

    return run


def luigi_tasks(tasks: ModuleType) -> Callable[[], int]:
    def run() -> int:
        built = [tasks.Consumer(business_date=FIRST + dt.timedelta(days=n)) for n in range(DAYS)]
        below = [dep for task in built for dep in luigi.task.flatten(task.requires())]
        below = [dep for task in below for dep in luigi.task.flatten(task.requires())] + below
        return len(built) + len(below)

    return run


def luigi_worker(tasks: ModuleType) -> Callable[[], bool]:
    def run() -> bool:
        scheduler = luigi.scheduler.Scheduler()
        with luigi.worker.Worker(scheduler=scheduler, worker_processes=1) as worker:
            return bool(worker.add(tasks.EveryDay()))

    return run


def floor(query: Callable[[str, tuple[Any, ...]], list], job: str, below: list[str]) -> Any:
    def run() -> tuple[int, int, list]:
        keys = query(FLOOR_SQL.replace("?", "{p}"), (job,))
        latest = sum(len(query(LATEST_SQL, (b,))) for b in below)
        return len(keys), latest, query(STALE_SQL, ("Consumer", "Rollup"))

    return run


def measure(tasks: ModuleType, query: Any, runs: int, url: str) -> dict[str, float]:
    calls: dict[str, Callable[[], Any]] = {
        "plan stale monthly": planned(url, "stale"),
        "plan missing monthly": planned(url, "missing"),
        "stale daily": opened(tasks, False, "stale"),
        "missing daily": opened(tasks, False, "missing"),
        "floor daily": floor(query, "Consumer", ["Producer"]),
        "stale monthly": opened(tasks, True, "stale"),
        "missing monthly": opened(tasks, True, "missing"),
        "floor monthly": floor(query, "Rollup", ["Consumer", "Producer"]),
        "Luigi RangeDaily": luigi_range(tasks),
        "Luigi tasks": luigi_tasks(tasks),
        "Luigi worker": luigi_worker(tasks),
    }
    before = {name: Register.clear_instance_cache for name in calls}
    ms, results = alternating_ms(calls, runs, before)
    cascade = [("Consumer", REPAIRED, 1), ("Rollup", REPAIRED[:7], 2)]
    expected: dict[str, Any] = {
        "plan stale monthly": (1, cascade),
        "plan missing monthly": (0, []),
        "stale daily": (False, 2 * DAYS),
        "missing daily": (True, 0),
        "floor daily": (DAYS, DAYS),
        "stale monthly": (False, 120 + 2 * DAYS),
        "missing monthly": (True, 0),
        "floor monthly": (120, 2 * DAYS),
        "Luigi RangeDaily": [],
        "Luigi tasks": 2 * DAYS,
        "Luigi worker": True,
    }
    for name, want in expected.items():
        for found in results[name]:
            check(name, found[:2] if name.startswith("floor") else found, want)
    for found in results["floor daily"] + results["floor monthly"]:
        check("floor stale rows", [row[:2] for row in found[2]], [("Consumer", REPAIRED)])
    return ms


def report(ms: dict[str, float], runs: int, backend: str) -> None:
    print(
        f"\n{backend}: median of {runs} rounds after a warm-up round, every call once per round "
        "in turn, Luigi's instance cache cleared before each; milliseconds; every result "
        "checked\n"
    )

    def row(name: str, took: float, scope: str) -> tuple[str, str, str, str]:
        """A figure beside its scope's floor and the range without a cascade."""
        floor, missing = ms[f"floor {scope}"], ms[f"missing {scope}"]
        return name, f"{took:.1f}", f"{took / floor:.1f}x", f"{took / missing:.1f}x"

    rows = []
    for scope, what in (
        ("daily", "RangeBusinessDaily, 3,653 days"),
        ("monthly", "RangeBusinessMonthly, 120 months"),
    ):
        for policy in ("stale", "missing"):
            rows.append(row(f"{what}, --reprocess {policy}", ms[f"{policy} {scope}"], scope))
        base, missing = ms[f"floor {scope}"], ms[f"missing {scope}"]
        rows.append((f"  floor ({scope})", f"{base:.1f}", "1.0x", f"{base / missing:.2f}x"))
    luigi_figures = ("Luigi RangeDaily", "Luigi tasks", "Luigi worker")
    rows += [row(name, ms[name], "daily") for name in luigi_figures]
    for policy in ("stale", "missing"):
        name = f"gatekeeper plan Rollup --json (120 months), --reprocess {policy}"
        rows.append(row(name, ms[f"plan {policy} monthly"], "monthly"))
    print_table(("session + first complete()", "ms", "vs floor", "vs missing"), rows)
    stale = ms["stale daily"]
    print(
        f"\nstale daily / Luigi RangeDaily: {stale / ms['Luigi RangeDaily']:.1f}x; "
        f"/ Luigi tasks (every day's task and its requires()): {stale / ms['Luigi tasks']:.1f}x; "
        f"/ Luigi worker (every day's task scheduled): {stale / ms['Luigi worker']:.1f}x"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-dsn", default=PG_DSN, help="default $GATEKEEPER_TEST_PG_DSN")
    args = runs_option(parser, argv, default=5)
    print(environment_line())
    print(load_line("before"))
    with tempfile.TemporaryDirectory(prefix="gk-bench-cascade-") as tmp:
        folder = Path(tmp)
        with Backend(args.backend, args.pg_dsn, folder).ledger("cascade") as (url, query):
            build_history(url)
            (folder / f"{TASK_MODULE}.py").write_text(textwrap.dedent(TASKS))
            sys.path.insert(0, str(folder))
            try:
                tasks = importlib.import_module(TASK_MODULE)
                configure(url)
                report(measure(tasks, query, args.runs, url), args.runs, args.backend)
            finally:
                configure(url)
                sys.path.remove(str(folder))
    print(load_line("after"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
