"""Ledger throughput: gate checks/s, attempts/s, records/s and publishes/s, beside floors.

For each backend (SQLite, PostgreSQL) and ledger size this opens a fresh ledger (a SQLite file
in a temporary directory, or a dedicated PostgreSQL schema dropped at the end), fills
``gk_attempts`` in bulk with valid rows (per job and date: attempt 1 failed, attempt 2
succeeded), then measures

- gate checks/s: ``gk.check_ready(ledger, <3 random jobs>, <random date>)``, one query each;
- attempts/s: a whole attempt of a new (job, date): ``ledger.begin_attempt(...)`` (``running``
  with a lease) then ``ledger.record(..., "succeeded", ...)``: two write transactions;
- records/s: single ``ledger.record(...)`` calls, alternately ``running`` and ``succeeded``
  for a new (job, date) key, one write transaction each;
- publishes/s: ``ledger.publish(consumer, <new date>, <3 jobs>, fingerprint)`` (readiness
  read, publication and evidence rows, in one transaction);

and beside each its floor: the bare SQL of the same work on a raw connection to the same
ledger (``sqlite3``; ``psycopg`` in autocommit, explicit BEGIN/COMMIT, psycopg's default
prepared statements), the least SQL that does the work (``FLOORS`` says what each executes):

- gate check: the ledger's own latest-attempt query (3 jobs, 1 date), one query per check;
- attempt: BEGIN; INSERT the attempt ``running`` with its lease; COMMIT; then BEGIN; UPDATE
  it to ``succeeded``; COMMIT; and again with each of the two transactions sent in one round
  trip (a psycopg pipeline: gatekeeper sends its own so on PostgreSQL), the stricter floor;
- record: BEGIN; the INSERT (``running``) or the UPDATE (``succeeded``); COMMIT;
- publish: BEGIN; the latest-attempt query of the 3 jobs; INSERT the publication; INSERT
  its 3 evidence rows (executemany); COMMIT.

Each figure is the median of ``--runs`` rounds; a round runs every operation for ``--seconds``
seconds, gatekeeper and its floor in turn one call each (each timed on its own), so a change
of load hits both alike; the ratio is the median of each round's ratio. Gate checks of
both draw the same (jobs, date) sequence and every answer must be "ready"; afterwards the rows
each writer wrote are counted and must be exactly what it reported doing, or the script stops.
The load average is printed before and after. Not a test: it prints.

    python bench/ledger_throughput.py --sizes 10000,1000000
    python bench/ledger_throughput.py --skip-pg
    python bench/ledger_throughput.py --skip-sqlite --sizes 10000
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
from typing import Any

from _common import load_line

import gatekeeper as gk
from gatekeeper.ledger.runs import CompleteRuns

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
    per_second: dict[str, float]  # "<operation> <gk|floor>" -> median operations per second
    ratio: dict[str, float]  # "<operation>" -> median over rounds of gk/s / floor/s that round


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
        CompleteRuns(ledger.sql).rebuild()  # the runs, as the migration to schema 6 builds
    if ledger.dialect == "postgresql":
        ledger.connection.execute("ANALYZE gk_attempts")  # what autovacuum would soon do
    took = time.perf_counter() - began
    found = int(ledger.read("SELECT COUNT(*) FROM gk_attempts")[0][0])
    if found != shape.attempts:
        raise SystemExit(f"bulk fill wrote {found} attempts, expected {shape.attempts}")
    return took


# -- measurements ----------------------------------------------------------------------------
def paired_rates(
    ours: Callable[[], int], floor: Callable[[], int], seconds: float
) -> tuple[float, float]:
    """Operations per second of ``ours`` and of ``floor`` (each returns how many it did), run
    in turn, one call each, for ``seconds`` in all: both see the same load, millisecond by
    millisecond (a COMMIT's fsync here swings 5x within a minute with other jobs' I/O)."""
    done, spent = [0, 0], [0.0, 0.0]
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        for side, operation in enumerate((ours, floor)):
            start = time.perf_counter()
            done[side] += operation()
            spent[side] += time.perf_counter() - start
    return done[0] / spent[0], done[1] / spent[1]


def gate_draws(shape: Shape, seed: int) -> Callable[[], tuple[list[str], str]]:
    """An endless sequence of (3 random jobs, random date); the same for every ``seed``."""
    rng = random.Random(seed)
    jobs = [f"BenchJob{i}" for i in range(shape.jobs)]

    def draw() -> tuple[list[str], str]:
        return rng.sample(jobs, GATE_JOBS), shape.date(rng.randrange(shape.dates))

    return draw


def gate_checks(ledger: gk.Ledger, draw: Callable[[], tuple[list[str], str]]) -> Callable[[], int]:
    def check() -> int:
        jobs, date = draw()
        readiness = gk.check_ready(ledger, jobs, date)
        if not readiness:
            raise SystemExit(f"gate check {jobs} {date}: not ready: {readiness}")
        return 1

    return check


# The latest-attempt query gatekeeper's gate check sends (AttemptStore.latest_many).
LATEST = (
    "SELECT a.job, a.period, a.attempt, a.run_id, a.state, a.started_at, a.updated_at, "
    "a.lease_expires_at, a.error FROM gk_attempts a WHERE a.job IN ({jobs}) AND a.period IN (?) "
    "AND a.attempt = (SELECT MAX(b.attempt) FROM gk_attempts b WHERE b.job = a.job "
    "AND b.period = a.period)"
)


def floor_gate_checks(raw: Raw, draw: Callable[[], tuple[list[str], str]]) -> Callable[[], int]:
    sql = LATEST.format(jobs=", ".join("?" * GATE_JOBS))

    def check() -> int:
        jobs, date = draw()
        rows = raw.run(sql, (*sorted(jobs), date)).fetchall()
        if len(rows) != GATE_JOBS or any(r[4] != "succeeded" for r in rows):
            raise SystemExit(f"floor gate check {jobs} {date}: not ready: {rows}")
        return 1

    return check


OPERATIONS = ("gate checks", "attempts", "piped attempts", "records", "publishes")
WRITES = OPERATIONS[1:]
FLOORS = {
    "gate checks": "the ledger's latest-attempt query, one per check",
    "attempts": "BEGIN; INSERT running with lease; COMMIT; BEGIN; UPDATE to succeeded; COMMIT",
    "piped attempts": "the same, each transaction sent in one round trip (a psycopg pipeline; "
    "SQLite: as attempts)",
    "records": "BEGIN; INSERT running or UPDATE to succeeded; COMMIT",
    "publishes": "BEGIN; latest-attempt query (with each pair's newest revision); "
    "INSERT publication; INSERT 3 evidence; COMMIT",
}


class Raw:
    """A raw driver connection to the same ledger, for the floors: ``?`` placeholders, explicit
    transactions (``BEGIN IMMEDIATE`` on SQLite, as the ledger's writers take)."""

    def __init__(self, ledger: gk.Ledger, url: str):
        self.sqlite = ledger.dialect == "sqlite"
        if self.sqlite:
            self.conn: Any = sqlite3.connect(url[len("sqlite:///") :], isolation_level=None)
            self.conn.execute("PRAGMA busy_timeout = 5000")
            self.conn.execute("PRAGMA journal_mode = WAL")
            self.conn.execute("PRAGMA synchronous = FULL")  # what the ledger sets
            self.conn.execute("PRAGMA foreign_keys = ON")
        else:
            import psycopg

            dsn, _, schema = url.rpartition("schema=")
            self.conn = psycopg.connect(dsn.rstrip("?&"), autocommit=True)
            self.conn.execute(f'SET search_path TO "{schema}"')

    def ts(self, when: dt.datetime) -> Any:
        return when.isoformat(timespec="microseconds") if self.sqlite else when

    def run(self, sql: str, params: tuple[Any, ...] = ()) -> Any:
        return self.conn.execute(sql if self.sqlite else sql.replace("?", "%s"), params)

    def many(self, sql: str, rows: list[tuple[Any, ...]]) -> None:
        if self.sqlite:
            self.conn.executemany(sql, rows)
        else:
            self.conn.cursor().executemany(sql.replace("?", "%s"), rows)

    def begin(self) -> None:
        self.run("BEGIN IMMEDIATE" if self.sqlite else "BEGIN")

    def close(self) -> None:
        self.conn.close()


class Keys:
    """New (job, date) keys for one operation: job ``<prefix><k // dates>``, date k % dates."""

    def __init__(self, prefix: str, shape: Shape):
        self.prefix, self.shape, self.done = prefix, shape, 0

    def next(self) -> tuple[str, str, str]:
        k, self.done = self.done, self.done + 1
        job = f"{self.prefix}{k // self.shape.dates}"
        return job, self.shape.date(k % self.shape.dates), f"{self.prefix}-{RUN}-{k}"


RUN = uuid.uuid4().hex[:8]
INSERT_RUNNING = (
    "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, updated_at, "
    "lease_expires_at) VALUES (?, ?, 1, ?, 'running', ?, ?, ?)"
)
SET_SUCCEEDED = (
    "UPDATE gk_attempts SET state = 'succeeded', updated_at = ?, lease_expires_at = NULL "
    "WHERE job = ? AND period = ? AND attempt = 1"
)


def gk_attempt(ledger: gk.Ledger, keys: Keys) -> Callable[[], int]:
    def run() -> int:
        job, date, run_id = keys.next()
        started = ledger.begin_attempt(job, date, run_id, lease_seconds=300)
        ledger.record(job, date, started.attempt, run_id, "succeeded", started.started_at)
        return 1

    return run


def floor_attempt(raw: Raw, keys: Keys) -> Callable[[], int]:
    def run() -> int:
        job, date, run_id = keys.next()
        now = dt.datetime.now(UTC)
        lease = now + dt.timedelta(seconds=300)
        raw.begin()
        raw.run(INSERT_RUNNING, (job, date, run_id, raw.ts(now), raw.ts(now), raw.ts(lease)))
        raw.run("COMMIT")
        raw.begin()
        raw.run(SET_SUCCEEDED, (raw.ts(dt.datetime.now(UTC)), job, date))
        raw.run("COMMIT")
        return 1

    return run


def floor_piped_attempt(raw: Raw, keys: Keys) -> Callable[[], int]:
    """``floor_attempt`` with each transaction in one round trip, as gatekeeper sends its own
    on PostgreSQL (the fewest round trips the same work can take); SQLite has none to save."""
    if raw.sqlite:
        return floor_attempt(raw, keys)

    def run() -> int:
        job, date, run_id = keys.next()
        now = dt.datetime.now(UTC)
        lease = now + dt.timedelta(seconds=300)
        with raw.conn.pipeline():
            raw.begin()
            raw.run(INSERT_RUNNING, (job, date, run_id, now, now, lease))
            raw.run("COMMIT")
        with raw.conn.pipeline():
            raw.begin()
            raw.run(SET_SUCCEEDED, (dt.datetime.now(UTC), job, date))
            raw.run("COMMIT")
        return 1

    return run


def gk_record(ledger: gk.Ledger, keys: Keys) -> Callable[[], int]:
    current: list[tuple[str, str, str, dt.datetime]] = []

    def run() -> int:
        if current:  # the second record of the key: succeeded
            job, date, run_id, started = current.pop()
            ledger.record(job, date, 1, run_id, "succeeded", started)
        else:
            job, date, run_id = keys.next()
            started = dt.datetime.now(UTC)
            ledger.record(job, date, 1, run_id, "running", started)
            current.append((job, date, run_id, started))
        return 1

    return run


def floor_record(raw: Raw, keys: Keys) -> Callable[[], int]:
    current: list[tuple[str, str]] = []

    def run() -> int:
        raw.begin()
        if current:
            job, date = current.pop()
            raw.run(SET_SUCCEEDED, (raw.ts(dt.datetime.now(UTC)), job, date))
        else:
            job, date, run_id = keys.next()
            now = raw.ts(dt.datetime.now(UTC))
            raw.run(INSERT_RUNNING, (job, date, run_id, now, now, None))
            current.append((job, date))
        raw.run("COMMIT")
        return 1

    return run


def gk_publish(ledger: gk.Ledger, keys: Keys, required: list[str]) -> Callable[[], int]:
    def run() -> int:
        consumer, date, _ = keys.next()
        if not ledger.publish(consumer, date, required, f"sha256:{consumer}-{date}"):
            raise SystemExit(f"publish of {consumer} {date} was not the first")
        return 1

    return run


# ... and, to publish, with each upstream pair's newest publication revision as a column (the
# evidence records the revision it read: AttemptReads.latest_published)
LATEST_PUBLISHED = LATEST.replace(
    " FROM gk_attempts a",
    ", (SELECT MAX(u.revision) FROM gk_publications u WHERE u.consumer = a.job "
    "AND u.period = a.period) FROM gk_attempts a",
    1,
)


def floor_publish(raw: Raw, keys: Keys, required: list[str]) -> Callable[[], int]:
    latest = LATEST_PUBLISHED.format(jobs=", ".join("?" * len(required)))

    def run() -> int:
        consumer, date, _ = keys.next()
        raw.begin()
        rows = raw.run(latest, (*sorted(required), date)).fetchall()
        if len(rows) != len(required) or any(r[4] != "succeeded" for r in rows):
            raw.run("ROLLBACK")
            raise SystemExit(f"floor: {date} is not ready: {rows}")
        raw.run(
            "INSERT INTO gk_publications (consumer, period, revision, fingerprint, "
            "required_jobs, published_at) VALUES (?, ?, 1, ?, ?, ?)",
            (consumer, date, f"sha256:{consumer}-{date}", ",".join(required), raw.ts(now_utc())),
        )
        raw.many(
            "INSERT INTO gk_evidence (consumer, period, revision, job, job_period, run_id, "
            "attempt, job_revision) VALUES (?, ?, 1, ?, ?, ?, ?, ?)",
            [(consumer, date, r[0], date, r[3], r[2], r[9]) for r in rows],
        )
        raw.run("COMMIT")
        return 1

    return run


def now_utc() -> dt.datetime:
    return dt.datetime.now(UTC)


def verify(ledger: gk.Ledger, keys: dict[str, Keys], required: int) -> None:
    """The rows each operation wrote are exactly what it reported doing; SystemExit if not."""

    def count(sql: str, prefix: str) -> int:
        return int(ledger.read(sql, (f"{prefix}%",))[0][0])

    wanted: list[tuple[str, int, int]] = []
    for who in ("gk", "floor"):
        for op in ("attempts", "piped attempts"):
            done = keys[f"{op} {who}"]
            wanted.append(
                (
                    done.prefix,
                    done.done,
                    count(
                        "SELECT COUNT(*) FROM gk_attempts WHERE job LIKE ? AND state = 'succeeded'",
                        done.prefix,
                    ),
                )
            )
        rec = keys[f"records {who}"]  # one row per key, however many records it took
        wanted.append(
            (
                rec.prefix,
                rec.done,
                count("SELECT COUNT(*) FROM gk_attempts WHERE job LIKE ?", rec.prefix),
            )
        )
        pub = keys[f"publishes {who}"]
        wanted.append(
            (
                pub.prefix,
                pub.done,
                count("SELECT COUNT(*) FROM gk_publications WHERE consumer LIKE ?", pub.prefix),
            )
        )
        wanted.append(
            (
                pub.prefix + " evidence",
                pub.done * required,
                count("SELECT COUNT(*) FROM gk_evidence WHERE consumer LIKE ?", pub.prefix),
            )
        )
    for what, expected, found in wanted:
        if expected != found:
            raise SystemExit(f"{what}: {found} rows written, expected {expected}")


def measure(backend: str, url: str, size: int, runs: int, seconds: float, seed: int) -> Result:
    shape = Shape.for_size(size)
    with gk.open_ledger(url) as ledger:
        build = fill(ledger, shape)
        raw = Raw(ledger, url)
        required = [f"BenchJob{i}" for i in range(GATE_JOBS)]
        keys = {
            f"{op} {who}": Keys(f"{who.title()}{op.title().replace(' ', '')}", shape)
            for op in WRITES
            for who in ("gk", "floor")
        }
        operations = {
            "gate checks gk": gate_checks(ledger, gate_draws(shape, seed)),
            "gate checks floor": floor_gate_checks(raw, gate_draws(shape, seed)),
            "attempts gk": gk_attempt(ledger, keys["attempts gk"]),
            "attempts floor": floor_attempt(raw, keys["attempts floor"]),
            "piped attempts gk": gk_attempt(ledger, keys["piped attempts gk"]),
            "piped attempts floor": floor_piped_attempt(raw, keys["piped attempts floor"]),
            "records gk": gk_record(ledger, keys["records gk"]),
            "records floor": floor_record(raw, keys["records floor"]),
            "publishes gk": gk_publish(ledger, keys["publishes gk"], required),
            "publishes floor": floor_publish(raw, keys["publishes floor"], required),
        }
        rates: dict[str, list[float]] = {name: [] for name in operations}
        try:
            for _ in range(runs):  # rounds: every operation, gatekeeper and floor in turn
                for op in OPERATIONS:
                    ours, floor = operations[f"{op} gk"], operations[f"{op} floor"]
                    gk_rate, floor_rate = paired_rates(ours, floor, seconds)
                    rates[f"{op} gk"].append(gk_rate)
                    rates[f"{op} floor"].append(floor_rate)
        finally:
            raw.close()
        verify(ledger, keys, len(required))
    ratios = {  # each round's gatekeeper figure over its floor's, measured interleaved
        op: statistics.median(
            g / f for g, f in zip(rates[f"{op} gk"], rates[f"{op} floor"], strict=True)
        )
        for op in OPERATIONS
    }
    medians = {n: statistics.median(r) for n, r in rates.items()}
    return Result(backend, shape.attempts, build, medians, ratios)


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
    parser.add_argument("--skip-sqlite", action="store_true", help="measure PostgreSQL only")
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
    if args.skip_pg and args.skip_sqlite:
        parser.error("--skip-pg and --skip-sqlite leave nothing to measure")
    return args


def print_table(results: list[Result]) -> None:
    """One line per operation, the backends side by side: gatekeeper/s, floor/s, ratio."""
    columns = [(r.backend, r.size) for r in results]
    header = ["operation", *(f"{b} {size:,}: gk/s, floor/s, gk/floor" for b, size in columns)]
    rows = [
        [
            f"{op}/s",
            *(
                cells(r.per_second[f"{op} gk"], r.per_second[f"{op} floor"], r.ratio[op])
                for r in results
            ),
        ]
        for op in OPERATIONS
    ]
    rows.append(["build s", *(f"{r.build_seconds:.1f}" for r in results)])
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]
    for line in (header, *rows):
        first, *rest = line
        print(
            "  ".join(
                [
                    first.ljust(widths[0]),
                    *(c.rjust(w) for c, w in zip(rest, widths[1:], strict=True)),
                ]
            )
        )
    print("floors (bare SQL on a raw connection, same ledger):")
    for op in OPERATIONS:
        print(f"  {op}: {FLOORS[op]}")


def cells(gk_rate: float, floor_rate: float, ratio: float) -> str:
    return f"{gk_rate:,.0f}  {floor_rate:,.0f}  {ratio:.2f}x"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    backends: list[tuple[str, Callable[[], contextlib.AbstractContextManager[str]]]] = []
    print(
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs; median of {args.runs} rounds x {args.seconds:g}s per figure"
    )
    print(load_line("before"))
    if not args.skip_sqlite:
        backends.append(("sqlite", sqlite_url))
    if not args.skip_pg:
        print(pg_version(args.pg_dsn))
        backends.append(("postgresql", lambda: pg_url(args.pg_dsn)))
    results = []
    for size in args.sizes:
        for name, make_url in backends:
            with make_url() as url:
                result = measure(name, url, size, args.runs, args.seconds, args.seed)
            sys.stdout.flush()
            print(f"  {name} {result.size:,} attempts done", file=sys.stderr, flush=True)
            results.append(result)
    print_table(results)
    print(
        "attempt = begin_attempt + record(succeeded), two write transactions; record = one "
        "record() call, one write transaction; publish = one publish() of 3 required jobs; "
        "gk/floor = the median over rounds of each round's ratio (gatekeeper and floor called "
        "in turn); every gate check answered ready and every row counted after"
    )
    print(load_line("after"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
