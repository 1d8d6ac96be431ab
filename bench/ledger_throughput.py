"""Ledger throughput: gate checks/s and attempt records/s on SQLite and PostgreSQL.

For each backend and ledger size this opens a fresh ledger (a SQLite file in a temporary
directory, or a dedicated PostgreSQL schema dropped at the end), fills ``gk_attempts`` in bulk
with valid rows (per job and date: attempt 1 failed, attempt 2 succeeded), then measures

- gate checks/s: ``gk.check_ready(ledger, <3 random jobs>, <random date>)``, one query each;
- records/s: ``ledger.record(...)`` calls, alternately ``running`` and ``succeeded`` for a new
  (job, date) key, one write transaction each (an attempt's lifecycle is two records);

each as the median of ``--runs`` timed runs of ``--seconds`` seconds. Not a test: it prints.

    python bench/ledger_throughput.py --sizes 10000,1000000
    python bench/ledger_throughput.py --skip-pg
"""

from __future__ import annotations

import argparse
import contextlib
import datetime as dt
import os
import platform
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import gatekeeper as gk

DEFAULT_DSN = os.environ.get("GATEKEEPER_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
GATE_JOBS = 3
MAX_DATES = 5000
FIRST_DAY = dt.date(2000, 1, 1)
UTC = dt.timezone.utc


@dataclass(frozen=True)
class Shape:
    """How a ledger of ``size`` attempts is laid out: jobs x dates x 2 attempts."""

    jobs: int
    dates: int

    @classmethod
    def for_size(cls, size: int) -> Shape:
        pairs = max(1, size // 2)
        dates = min(MAX_DATES, max(1, pairs // 10))
        jobs = max(GATE_JOBS, -(-pairs // dates))
        return cls(jobs, dates)

    @property
    def attempts(self) -> int:
        return self.jobs * self.dates * 2

    def date(self, index: int) -> str:
        return str(FIRST_DAY + dt.timedelta(days=index))


@dataclass(frozen=True)
class Result:
    backend: str
    size: int
    build_seconds: float
    gate_per_second: float
    records_per_second: float


# -- bulk fill -------------------------------------------------------------------------------
SQLITE_FILL = """
INSERT INTO gk_attempts
    (job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {top})
SELECT 'BenchJob' || j.i, day, a.i, 'bench-' || j.i || '-' || day || '-' || a.i,
       CASE a.i WHEN 1 THEN 'failed' ELSE 'succeeded' END,
       strftime('%Y-%m-%dT%H:%M:%S', day, '+' || a.i || ' hours') || '.000000+00:00',
       strftime('%Y-%m-%dT%H:%M:%S', day, '+' || (a.i * 60 + 30) || ' minutes')
           || '.000000+00:00',
       NULL, CASE a.i WHEN 1 THEN 'bench: first try failed' END
FROM n j,
     (SELECT date('{first}', '+' || i || ' days') AS day FROM n WHERE i < {dates}),
     (SELECT 1 AS i UNION ALL SELECT 2) a
WHERE j.i < {jobs}
"""

PG_FILL = """
INSERT INTO gk_attempts
    (job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error)
SELECT 'BenchJob' || j, to_char(day, 'YYYY-MM-DD'), a,
       'bench-' || j || '-' || to_char(day, 'YYYY-MM-DD') || '-' || a,
       CASE a WHEN 1 THEN 'failed' ELSE 'succeeded' END,
       day::timestamptz + make_interval(hours => a),
       day::timestamptz + make_interval(mins => a * 60 + 30),
       NULL, CASE a WHEN 1 THEN 'bench: first try failed' END
FROM generate_series(0, {jobs} - 1) j,
     (SELECT DATE '{first}' + d AS day FROM generate_series(0, {dates} - 1) d) days,
     generate_series(1, 2) a
"""


def fill(ledger: gk.Ledger, shape: Shape) -> float:
    """Insert ``shape.attempts`` valid attempt rows in one transaction; returns seconds taken."""
    template = SQLITE_FILL if ledger.dialect == "sqlite" else PG_FILL
    sql = template.format(
        top=max(shape.jobs, shape.dates), jobs=shape.jobs, dates=shape.dates, first=FIRST_DAY
    )
    began = time.perf_counter()
    with ledger.transaction():
        ledger.connection.execute(sql)
    if ledger.dialect == "postgresql":
        ledger.connection.execute("ANALYZE gk_attempts")  # what autovacuum would soon do
    took = time.perf_counter() - began
    found = int(ledger.read("SELECT COUNT(*) FROM gk_attempts")[0][0])
    if found != shape.attempts:
        raise SystemExit(f"bulk fill wrote {found} attempts, expected {shape.attempts}")
    return took


# -- measurements ----------------------------------------------------------------------------
def rate(operation: Callable[[], int], seconds: float) -> float:
    """Operations per second of ``operation`` (which returns how many it did) over a run."""
    done = 0
    began = time.perf_counter()
    while (elapsed := time.perf_counter() - began) < seconds:
        done += operation()
    return done / elapsed


def gate_checks(ledger: gk.Ledger, shape: Shape, rng: random.Random) -> Callable[[], int]:
    jobs = [f"BenchJob{i}" for i in range(shape.jobs)]
    sample = gk.check_ready(ledger, jobs[:GATE_JOBS], shape.date(0))
    if not sample:
        raise SystemExit(f"bulk-filled ledger is not ready: {sample}")

    def check() -> int:
        date = shape.date(rng.randrange(shape.dates))
        gk.check_ready(ledger, rng.sample(jobs, GATE_JOBS), date)
        return 1

    return check


def records(ledger: gk.Ledger, shape: Shape) -> Callable[[], int]:
    counter = iter(range(sys.maxsize))
    prefix = uuid.uuid4().hex[:8]

    def record_attempt() -> int:
        k = next(counter)
        job, date = f"Recorder{k // shape.dates}", shape.date(k % shape.dates)
        run_id = f"rec-{prefix}-{k}"
        started = dt.datetime.now(UTC)
        ledger.record(job, date, 1, run_id, "running", started)
        ledger.record(job, date, 1, run_id, "succeeded", started)
        return 2

    return record_attempt


def measure(
    backend: str, url: str, size: int, runs: int, seconds: float, rng: random.Random
) -> Result:
    shape = Shape.for_size(size)
    with gk.open_ledger(url) as ledger:
        build = fill(ledger, shape)
        check = gate_checks(ledger, shape, rng)
        gate = statistics.median(rate(check, seconds) for _ in range(runs))
        record = records(ledger, shape)
        writes = statistics.median(rate(record, seconds) for _ in range(runs))
    return Result(backend, shape.attempts, build, gate, writes)


# -- backends --------------------------------------------------------------------------------
@contextlib.contextmanager
def sqlite_url() -> Iterator[str]:
    with tempfile.TemporaryDirectory(prefix="gk-bench-") as folder:
        yield f"sqlite:///{os.path.join(folder, 'ledger.db')}"


@contextlib.contextmanager
def pg_url(dsn: str) -> Iterator[str]:
    import psycopg

    schema = f"gk_bench_{uuid.uuid4().hex[:12]}"
    sep = "&" if "?" in dsn else "?"
    try:
        yield f"{dsn}{sep}schema={schema}"
    finally:
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def pg_version(dsn: str) -> str:
    import psycopg

    try:
        with psycopg.connect(dsn, connect_timeout=5) as conn:
            row = conn.execute("SHOW server_version").fetchone()
            sync = conn.execute("SHOW synchronous_commit").fetchone()
    except psycopg.Error as exc:
        raise SystemExit(f"PostgreSQL not reachable at {dsn}: {exc}\n(use --skip-pg)") from exc
    return f"PostgreSQL {row[0] if row else '?'} (synchronous_commit={sync[0] if sync else '?'})"


# -- command line ----------------------------------------------------------------------------
def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default="10000,1000000",
        help="comma-separated ledger sizes in attempts (default %(default)s)",
    )
    parser.add_argument(
        "--pg-dsn",
        default=DEFAULT_DSN,
        help="PostgreSQL DSN (default $GATEKEEPER_TEST_PG_DSN or the local one)",
    )
    parser.add_argument("--skip-pg", action="store_true", help="measure SQLite only")
    parser.add_argument("--runs", type=int, default=5, help="timed runs per figure (median)")
    parser.add_argument("--seconds", type=float, default=1.0, help="length of one timed run")
    parser.add_argument("--seed", type=int, default=0, help="random seed for dates and jobs")
    args = parser.parse_args(argv)
    try:
        args.sizes = [int(s) for s in args.sizes.split(",") if s.strip()]
    except ValueError:
        parser.error(f"--sizes: expected integers, got {args.sizes!r}")
    if not args.sizes or min(args.sizes) < 2 or args.runs < 1 or args.seconds <= 0:
        parser.error("--sizes must be >= 2, --runs >= 1, --seconds > 0")
    return args


def print_table(results: list[Result]) -> None:
    header = ("backend", "ledger size", "build s", "gate checks/s", "records/s")
    rows = [
        (
            r.backend,
            f"{r.size:,}",
            f"{r.build_seconds:.1f}",
            f"{r.gate_per_second:,.0f}",
            f"{r.records_per_second:,.0f}",
        )
        for r in results
    ]
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    print("  ".join(h.rjust(w) for h, w in zip(header, widths, strict=True)))
    for row in rows:
        print("  ".join(c.rjust(w) for c, w in zip(row, widths, strict=True)))


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    backends: list[tuple[str, Callable[[], contextlib.AbstractContextManager[str]]]] = [
        ("sqlite", sqlite_url)
    ]
    print(
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs; median of {args.runs} runs x {args.seconds:g}s"
    )
    if not args.skip_pg:
        print(pg_version(args.pg_dsn))
        backends.append(("postgresql", lambda: pg_url(args.pg_dsn)))
    rng = random.Random(args.seed)
    results = []
    for name, make_url in backends:
        for size in args.sizes:
            with make_url() as url:
                result = measure(name, url, size, args.runs, args.seconds, rng)
            print(f"  {name} {result.size:,} attempts done", file=sys.stderr, flush=True)
            results.append(result)
    print_table(results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
