"""The readers at fleet scale (issue 49): serve, ``/metrics``, ``check`` and ``report`` beside
their floor, on ledgers of thousands of jobs, SQLite or PostgreSQL.

Builds, in bulk SQL (one ``INSERT ... SELECT``, then the complete runs rebuilt by
``CompleteRuns.rebuild``, as the migration builds them), a ledger of ``--jobs`` daily jobs
(``Job0000``...) over the ``--days`` (365) days ending yesterday and 5 hourly jobs
(``Hourly0``...) over the same days; or, with ``--hourly N``, N hourly jobs over the
``--hourly-days`` (30) days ending an hour ago and no daily job. Every 211th period of a job has
no attempt, every 97th is failed (with an error). Each job's profile is recorded as its range
records it (``Ledger.record_profile`` for the first, the same row copied for the others:
UTC, lateness 2h, its window from its first period). On PostgreSQL the ledger is a schema of
its own (``--pg-dsn``), dropped at the end; on SQLite a file in a temporary folder.

Then it starts the real ``gatekeeper serve --window 90d`` and measures, each a median of
``--runs`` rounds that alternate with the floor (``_common.alternating_ms``):

- ``/metrics`` warm (a pause of 1.1 s before each request, past serve's 1 s reuse of a
  judgement, so each request judges), and ``/api/jobs``;
- ``GET /``: its size in bytes; serve's peak RSS (``VmHWM`` of /proc/<pid>/status) after all;
- ``gatekeeper check`` of the first 500 daily jobs (a 6h deadline each, ``[gatekeeper.freshness]``
  in a luigi.cfg of the bench's), the real command, beside the start-up of the same process
  (``gatekeeper check --help``): check's own work is the difference;
- ``gatekeeper report`` of 50 daily jobs x 10 years (``--report-days``; a second ledger of that
  shape): the real command's time and the file's size.

The floor of each: the latest attempt of every cell it reads, one statement on a raw
connection (``sqlite3``, ``psycopg``): for serve the cells of the 90-day window of every job,
for ``check`` the whole history of its 500 jobs, for ``report`` the 10 years of its 50. Every
result is checked (status 200, every job in ``/metrics``, ``check`` naming breaches, the report
written, each floor's row count), and item 1's and item 2's targets are printed met or MISSED
(a miss is reported, not an error). The load average is printed before and after. Not a test.

    python bench/fleet_readers.py --jobs 500
    python bench/fleet_readers.py --jobs 5000 --runs 3
    python bench/fleet_readers.py --jobs 5000 --backend postgresql --runs 3
    python bench/fleet_readers.py --hourly 1000 --backend postgresql --runs 3
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _common import (
    alternating_ms,
    environment_line,
    load_line,
    print_table,
    runs_option,
    serve_process,
    sqlite_url,
)

import gatekeeper as gk
from gatekeeper.core.causes import profile
from gatekeeper.ledger.runs import CompleteRuns

PG_DSN = os.environ.get("GATEKEEPER_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
WINDOW_DAYS = 90
CHECK_JOBS, REPORT_JOBS, REPORT_DAYS = 500, 50, 3653
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))

#: the attempts of one shape: ``{name}`` || the job's ordinal, one period per ``{step}`` from
#: ``{first}``, every 211th missing and every 97th failed (the ordinals shifted per job)
SQLITE_FILL = """
INSERT INTO gk_attempts
    (job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {top})
SELECT '{name}' || printf('{digits}', j.i), p.key, 1, '{name}-' || j.i || '-' || p.key,
       CASE WHEN (p.i + j.i) % 97 = 0 THEN 'failed' ELSE 'succeeded' END,
       strftime('%Y-%m-%dT%H:%M:%S.000000+00:00', p.at, '+10 minutes'),
       strftime('%Y-%m-%dT%H:%M:%S.000000+00:00', p.at, '+40 minutes'),
       NULL, CASE WHEN (p.i + j.i) % 97 = 0 THEN 'bench: rejected rows' END
FROM n j, (SELECT i, strftime('{key}', '{first}', '+' || i || ' {step}') AS key,
                  datetime('{first}', '+' || i || ' {step}') AS at
           FROM n WHERE i < {periods}) p
WHERE j.i < {jobs} AND (p.i + 3 * j.i) % 211 != 0
"""
PG_FILL = """
INSERT INTO gk_attempts
    (job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error)
SELECT '{name}' || to_char(j, 'FM{pg_digits}'), p.key, 1, '{name}-' || j || '-' || p.key,
       CASE WHEN (p.i + j) % 97 = 0 THEN 'failed' ELSE 'succeeded' END,
       p.at + interval '10 minutes', p.at + interval '40 minutes',
       NULL, CASE WHEN (p.i + j) % 97 = 0 THEN 'bench: rejected rows' END
FROM generate_series(0, {jobs} - 1) j,
     (SELECT i, to_char(at, '{pg_key}') AS key, at
      FROM (SELECT i, TIMESTAMPTZ '{first}+00' + i * interval '1 {unit}' AS at
            FROM generate_series(0, {periods} - 1) i) s) p
WHERE (p.i + 3 * j) % 211 != 0
"""
#: the floor: the latest attempt of every cell of the jobs from one name to another (both
#: included), from a period key on
LATEST = """
SELECT a.job, a.period, a.state FROM gk_attempts a
WHERE a.job >= {p} AND a.job <= {p} AND a.period >= {p}
  AND a.attempt = (SELECT MAX(b.attempt) FROM gk_attempts b
                   WHERE b.job = a.job AND b.period = a.period)
"""


@dataclass(frozen=True)
class Shape:
    """``jobs`` jobs named ``name`` + ordinal (``width`` digits, 0: as many as it takes),
    ``periods`` periods each from ``first``."""

    name: str
    jobs: int
    periods: int
    first: dt.datetime
    hourly: bool
    width: int = 0

    def job(self, j: int) -> str:
        return f"{self.name}{j:0{self.width}d}" if self.width else f"{self.name}{j}"

    def cells(self, jobs: int | None = None, since: str = "") -> int:
        """Cells with an attempt of the first ``jobs`` jobs at keys >= ``since``."""
        count = 0
        for j in range(self.jobs if jobs is None else jobs):
            for i in range(self.periods):
                if (i + 3 * j) % 211 and self.key(i) >= since:
                    count += 1
        return count

    def key(self, i: int) -> str:
        if self.hourly:
            return (self.first + dt.timedelta(hours=i)).strftime("%Y-%m-%dT%H:00Z")
        return (self.first + dt.timedelta(days=i)).strftime("%Y-%m-%d")


def fill(ledger: gk.Ledger, shape: Shape) -> None:
    """Insert ``shape``'s attempts and record its jobs' profiles (module docstring)."""
    first = shape.first.strftime("%Y-%m-%d %H:%M:%S")
    if ledger.dialect == "sqlite":
        digits = f"%0{shape.width}d" if shape.width else "%d"
        key = "%Y-%m-%dT%H:00Z" if shape.hourly else "%Y-%m-%d"
        step = "hours" if shape.hourly else "days"
        text = SQLITE_FILL.format(
            top=max(shape.jobs, shape.periods), name=shape.name, digits=digits, key=key,
            first=first, step=step, periods=shape.periods, jobs=shape.jobs,
        )  # fmt: skip
    else:
        text = PG_FILL.format(
            name=shape.name, pg_digits="0" * shape.width if shape.width else "9999999",
            pg_key='YYYY-MM-DD"T"HH24:"00Z"' if shape.hourly else "YYYY-MM-DD",
            unit="hour" if shape.hourly else "day", first=first, periods=shape.periods,
            jobs=shape.jobs,
        )  # fmt: skip
    with ledger.transaction():
        ledger.connection.execute(text)
    sample = profile(
        shape.job(0),
        "hourly" if shape.hourly else "daily",
        "UTC",
        lateness="2h",
        catchup="all",
        strategy="contiguous",
        start=shape.key(0),
    )
    ledger.record_profile(sample)
    columns = "job, period_kind, timezone, lateness, catchup, strategy, window_start, requires"
    columns += ", freshness, calendar, updated_at"
    (row,) = ledger.sql.read(f"SELECT {columns} FROM gk_jobs WHERE job = ?", (sample.job,))
    marks = ", ".join("?" * len(row))
    with ledger.transaction():
        ledger.executemany(
            f"INSERT INTO gk_jobs ({columns}) VALUES ({marks})",
            [(shape.job(j), *row[1:]) for j in range(1, shape.jobs)],
        )


def build(url: str, shapes: list[Shape]) -> None:
    """Fill a fresh ledger at ``url`` with ``shapes`` and rebuild its runs; print what was
    built, where (the password masked) and how long it took."""
    began = time.perf_counter()
    with gk.open_ledger(url) as ledger:
        for shape in shapes:
            fill(ledger, shape)
        with ledger.transaction():
            CompleteRuns(ledger.sql).rebuild()
        if ledger.dialect == "postgresql":
            ledger.connection.execute("ANALYZE")
        where = ledger.describe()
    attempts = sum(s.cells() for s in shapes)
    print(f"built in {time.perf_counter() - began:.1f} s ({attempts:,} attempts): {where}")


# -- the backends: a ledger URL and a raw connection ---------------------------------------------
class Backend:
    """Ledgers on one backend: ``ledger(name)`` yields a fresh one's URL and a raw read-only
    connection's ``query(sql, params) -> rows`` (placeholders ``{p}``)."""

    def __init__(self, kind: str, dsn: str, folder: Path):
        self.kind, self.dsn, self.folder = kind, dsn, folder

    @contextmanager
    def ledger(self, name: str) -> Iterator[tuple[str, Callable[[str, tuple[Any, ...]], list]]]:
        if self.kind == "sqlite":
            path = self.folder / f"{name}.db"
            url = sqlite_url(path)
            gk.open_ledger(url).close()
            conn = sqlite3.connect(path)
            conn.execute("PRAGMA query_only = 1")
            try:
                yield url, lambda sql, params: conn.execute(sql.format(p="?"), params).fetchall()
            finally:
                conn.close()
            return
        import psycopg

        schema = f"gk_bench_fleet_{name}_{uuid.uuid4().hex[:8]}"
        admin = psycopg.connect(self.dsn, autocommit=True)
        admin.execute(f'CREATE SCHEMA "{schema}"')
        try:
            url = f"{self.dsn}{'&' if '?' in self.dsn else '?'}schema={schema}"
            gk.open_ledger(url).close()
            with psycopg.connect(self.dsn, autocommit=True) as conn:
                conn.execute(f'SET search_path TO "{schema}"')
                conn.execute("SET default_transaction_read_only = on")

                def query(sql: str, params: tuple[Any, ...]) -> list:
                    return conn.execute(sql.format(p="%s"), params).fetchall()

                yield url, query
        finally:
            admin.execute(f'DROP SCHEMA "{schema}" CASCADE')
            admin.close()


# -- serve ----------------------------------------------------------------------------------------
def get(url: str) -> tuple[int, bytes]:
    with _OPENER.open(url, timeout=600) as response:
        return response.status, response.read()


def peak_rss_mb(pid: int) -> float:
    """``VmHWM`` of ``pid`` (its peak resident set) in MB (10^6 bytes)."""
    status = Path(f"/proc/{pid}/status").read_text()
    found = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
    if not found:
        raise SystemExit(f"no VmHWM in /proc/{pid}/status")
    return int(found.group(1)) * 1024 / 1e6


@contextmanager
def serve(url: str, cfg: Path) -> Iterator[tuple[str, int]]:
    """The real ``gatekeeper serve --window 90d`` on a free port (``cfg`` its luigi.cfg):
    its base URL and pid."""
    env = {k: v for k, v in os.environ.items() if k != "GATEKEEPER_LEDGER_URL"}
    env["LUIGI_CONFIG_PATH"] = str(cfg)
    with serve_process(url, f"{WINDOW_DAYS}d", env) as served:
        yield served


def metrics_jobs(body: bytes) -> set[str]:
    """The jobs ``gatekeeper_periods`` names in a /metrics exposition."""
    return {j.decode() for j in re.findall(rb'^gatekeeper_periods\{job="([^"]+)"', body, re.M)}


def measure_serve(
    url: str, query: Any, names: list[str], since: str, cells: int, cfg: Path, runs: int
) -> dict:
    """/metrics and /api/jobs (medians, alternating with the floor), / size, peak RSS."""
    floor_params = ("", "~", since)

    def floor() -> int:
        return len(query(LATEST, floor_params))

    with serve(url, cfg) as (base, pid):
        status, page = get(base + "/")
        if status != 200 or not all(n.encode() in page for n in (names[0], names[-1])):
            raise SystemExit(f"GET /: status {status}, {len(page)} bytes without the jobs")
        pause = {"metrics": lambda: time.sleep(1.1), "api": lambda: time.sleep(1.1)}
        medians, results = alternating_ms(
            {
                "metrics": lambda: get(base + "/metrics"),
                "api": lambda: get(base + "/api/jobs"),
                "floor": floor,
            },
            runs,
            pause,
        )
        rss = peak_rss_mb(pid)
    for status, body in results["metrics"]:
        found = metrics_jobs(body)
        if status != 200 or found != set(names):
            raise SystemExit(f"/metrics: status {status}, {len(found)} of {len(names)} jobs")
    for status, body in results["api"]:
        if status != 200 or not all(f'"{n}"'.encode() in body for n in (names[0], names[-1])):
            raise SystemExit(f"/api/jobs: status {status}, the jobs missing")
    if set(results["floor"]) != {cells}:
        raise SystemExit(f"floor: {set(results['floor'])} rows, not {cells}")
    return {**medians, "page": len(page), "rss": rss}


# -- check and report -----------------------------------------------------------------------------
def command(*args: str, cfg: Path) -> subprocess.CompletedProcess[str]:
    """The real ``gatekeeper`` command with ``args``, ``cfg`` its luigi.cfg."""
    env = {k: v for k, v in os.environ.items() if k != "GATEKEEPER_LEDGER_URL"}
    env["LUIGI_CONFIG_PATH"] = str(cfg)
    return subprocess.run(
        [sys.executable, "-m", "gatekeeper.cli", *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )


def measure_check(url: str, query: Any, shape: Shape, folder: Path, runs: int) -> dict:
    """``gatekeeper check`` of the first CHECK_JOBS jobs, its start-up, the floor."""
    jobs = [shape.job(j) for j in range(min(CHECK_JOBS, shape.jobs))]
    cfg = folder / "check.cfg"
    cfg.write_text("[gatekeeper.freshness]\n" + "".join(f"{j} = 6h\n" for j in jobs))
    cells = shape.cells(len(jobs))

    def floor() -> int:
        return len(query(LATEST, (jobs[0], jobs[-1], "")))

    medians, results = alternating_ms(
        {
            "check": lambda: command("check", "--ledger", url, *jobs, cfg=cfg),
            "startup": lambda: command("check", "--help", cfg=cfg),
            "floor": floor,
        },
        runs,
    )
    for done in results["check"]:
        # every job breaches: its missing and failed periods are overdue (exit 1 names them)
        if done.returncode != 1 or jobs[0] not in done.stdout or jobs[-1] not in done.stdout:
            raise SystemExit(f"check: exit {done.returncode}\n{done.stdout[-500:]}{done.stderr}")
    if {d.returncode for d in results["startup"]} != {0}:
        raise SystemExit("gatekeeper check --help failed")
    if set(results["floor"]) != {cells}:
        raise SystemExit(f"check floor: {set(results['floor'])} rows, not {cells}")
    return {**medians, "jobs": len(jobs)}


def measure_report(backend: Backend, cfg: Path, today: dt.date, days: int, runs: int) -> dict:
    """``gatekeeper report`` of REPORT_JOBS daily jobs x ``days``, beside the floor."""
    folder = cfg.parent
    shape = Shape("Rep", REPORT_JOBS, days, start_of(today, days), False)
    out = folder / "report.html"
    jobs = [shape.job(j) for j in range(shape.jobs)]
    with backend.ledger("report") as (url, query):
        build(url, [shape])
        medians, results = alternating_ms(
            {
                "report": lambda: command(
                    "report", "--ledger", url, "-o", str(out), *jobs, cfg=cfg
                ),
                "floor": lambda: len(query(LATEST, ("", "~", ""))),
            },
            runs,
            {"report": lambda: out.unlink(missing_ok=True)},
        )
    for done in results["report"]:
        if done.returncode != 0:
            raise SystemExit(f"report: exit {done.returncode}\n{done.stderr}")
    text = out.read_text()
    if not all(j in text for j in (jobs[0], jobs[-1])):
        raise SystemExit("report: the jobs are not in the file")
    if set(results["floor"]) != {shape.cells()}:
        raise SystemExit(f"report floor: {set(results['floor'])} rows, not {shape.cells()}")
    return {**medians, "size": out.stat().st_size, "days": days}


def start_of(today: dt.date, days: int) -> dt.datetime:
    """Midnight UTC ``days`` days before ``today``: the first of ``days`` ending yesterday."""
    first = today - dt.timedelta(days=days)
    return dt.datetime(first.year, first.month, first.day, tzinfo=dt.timezone.utc)


# -- the run --------------------------------------------------------------------------------------
def seconds(ms: float) -> str:
    return f"{ms / 1000:.3f} s"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=500, help="daily jobs (default 500)")
    parser.add_argument("--days", type=int, default=365, help="days per job (default 365)")
    parser.add_argument(
        "--hourly", type=int, default=0, help="N hourly jobs x --hourly-days instead of daily"
    )
    parser.add_argument("--hourly-days", type=int, default=30, help="(default 30)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-dsn", default=PG_DSN, help="default $GATEKEEPER_TEST_PG_DSN")
    parser.add_argument(
        "--report-days", type=int, default=REPORT_DAYS, help="the report's days (default 3653)"
    )
    parser.add_argument("--no-commands", action="store_true", help="skip check and report")
    args = runs_option(parser, argv, 5)
    # a SIGTERM (``timeout``) unwinds as an exit does: serve stopped, the schema dropped
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    today = dt.datetime.now(dt.timezone.utc).date()
    if args.hourly:
        hour = dt.datetime.now(dt.timezone.utc).replace(minute=0, second=0, microsecond=0)
        hours = args.hourly_days * 24
        shapes = [Shape("Hour", args.hourly, hours, hour - dt.timedelta(hours=hours), True)]
        what = f"{args.hourly:,} hourly jobs x {args.hourly_days} days"
    else:
        first = start_of(today, args.days)
        shapes = [
            Shape("Job", args.jobs, args.days, first, False, width=4),
            Shape("Hourly", 5, args.days * 24, first, True),
        ]
        what = f"{args.jobs:,} daily jobs x {args.days} days + 5 hourly jobs"
    names = sorted(shape.job(j) for shape in shapes for j in range(shape.jobs))
    since = str(today - dt.timedelta(days=WINDOW_DAYS))
    print(environment_line())
    print(f"{what}, {args.backend}, window {WINDOW_DAYS}d, medians of {args.runs}")
    print(load_line("before"))
    with tempfile.TemporaryDirectory(prefix="gk-bench-fleet-") as tmp:
        backend = Backend(args.backend, args.pg_dsn, Path(tmp))
        cfg = Path(tmp) / "luigi.cfg"  # none of the checkout's: the defaults, the ledger given
        cfg.write_text("[gatekeeper]\n")
        with backend.ledger("fleet") as (url, query):
            build(url, shapes)
            cells = sum(s.cells(since=since) for s in shapes)
            served = measure_serve(url, query, names, since, cells, cfg, args.runs)
            checked = None
            if not args.no_commands and not args.hourly:
                checked = measure_check(url, query, shapes[0], Path(tmp), args.runs)
        reported = None
        if not args.no_commands and not args.hourly:
            reported = measure_report(backend, cfg, today, args.report_days, args.runs)
    print_results(args, served, checked, reported)
    print(load_line("after"))


def timed(name: str, ms: float, floor: float) -> list[str]:
    """A row of the table: a time beside its floor and the ratio."""
    return [name, seconds(ms), seconds(floor), f"{ms / floor:.1f}x"]


def print_results(args: Any, served: dict, checked: dict | None, reported: dict | None) -> None:
    """The table of figures, then the targets of items 1 and 2 that apply, met or MISSED."""
    floor = served["floor"]
    rows = [
        timed("/metrics warm", served["metrics"], floor),
        timed("/api/jobs", served["api"], floor),
        ["GET / size", f"{served['page'] / 1e6:.1f} MB", "", ""],
        ["serve peak RSS", f"{served['rss']:.0f} MB", "", ""],
    ]
    work = 0.0
    if checked:
        work = checked["check"] - checked["startup"]
        rows.append(timed(f"check of {checked['jobs']} jobs", checked["check"], checked["floor"]))
        rows.append(["  its start-up (check --help)", seconds(checked["startup"]), "", ""])
        rows.append(timed("  its work (the difference)", work, checked["floor"]))
    if reported:
        name = f"report of {REPORT_JOBS} jobs x {reported['days']:,} days"
        rows.append(timed(name, reported["report"], reported["floor"]))
        rows.append(["  its file", f"{reported['size'] / 1e6:.1f} MB", "", ""])
    print_table(["measure", "gatekeeper", "floor: latest attempt of every cell", "ratio"], rows)
    fleet = not args.hourly and args.jobs >= 5000
    goals = [("/metrics <= 1.0x its floor (item 1)", served["metrics"] <= floor)]
    if fleet and args.backend == "sqlite":
        goals.append(("/metrics < 1 s at 5,000 jobs on SQLite (item 1)", served["metrics"] < 1000))
    if args.backend == "postgresql" and args.hourly >= 1000:
        goals.append(
            ("/metrics < 2 s, 1,000 hourly jobs, PostgreSQL (item 1)", served["metrics"] < 2000)
        )
    if checked and checked["jobs"] >= CHECK_JOBS:
        goals.append(("check of 500 jobs < 0.5 s, its work (item 1)", work < 500))
    if fleet:
        goals.append(("GET / <= 5 MB at 5,000 jobs (item 2)", served["page"] <= 5e6))
        goals.append(("serve peak RSS <= 250 MB at 5,000 jobs (item 2)", served["rss"] <= 250))
    print_table(["target", "verdict"], [[name, "met" if met else "MISSED"] for name, met in goals])


if __name__ == "__main__":
    main()
