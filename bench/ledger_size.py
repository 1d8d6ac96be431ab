"""The ledger's size per attempt, beside its floor, and a year's growth for hourly jobs.

For each backend (SQLite; PostgreSQL unless ``--no-pg``) and each of two name sets (``short``:
``J0042``; ``realistic``: ``IngestEvents(region=eu-west-1, source=J0042)``), builds a fresh
ledger (schema made by ``open_ledger``), then writes ``--jobs`` hourly jobs x ``--hours``
hours from 2026-01-01T00:00Z, one finished attempt each as gatekeeper leaves it (``succeeded``,
started and updated stamps in the dialect's own format through ``ts_in``, no lease, no error,
a run ID as the Luigi adapter makes one: 12 + 20 hex digits), by bare ``executemany`` in one
transaction, and builds the runs of complete periods with the migration's own step
(``CompleteRuns.rebuild``). Then it measures what the ledger grew by:

- PostgreSQL: ``VACUUM ANALYZE``, then the sum of ``pg_total_relation_size`` (heap, TOAST,
  indexes: the primary key and the unique run ID) of every ``gk_`` table, minus the same sum
  before the rows;
- SQLite: the file's size after ``PRAGMA wal_checkpoint(TRUNCATE)``, minus the empty ledger's.

The floor: the same attempt rows in a bare table (``CREATE TABLE ... AS SELECT``: no key, no
index, no constraint), measured the same way: what storing the values costs on that backend
at all. A year's growth is bytes per attempt x 8,760 hours x jobs, one attempt per period
(retries add theirs, until ``gatekeeper compact`` removes them). Not a test.

    python bench/ledger_size.py
    python bench/ledger_size.py --jobs 50 --hours 1000 --no-pg
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import secrets
import sqlite3
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from _common import environment_line, load_line, print_table, sqlite_url

import gatekeeper as gk
from gatekeeper.ledger.runs import CompleteRuns

PG_DSN = os.environ.get("GATEKEEPER_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
HOURS_A_YEAR = 8760
NAMES = {
    "short": "J{:04d}",
    "realistic": "IngestEvents(region=eu-west-1, source=J{:04d})",
}


def fill(ledger: gk.Ledger, jobs: int, hours: int, names: str) -> int:
    """Write the attempts (module docstring) and the runs; returns how many attempts."""
    invocation = secrets.token_hex(6)
    rows = []
    for j in range(jobs):
        job = NAMES[names].format(j)
        for h in range(hours):
            at = START + dt.timedelta(hours=h)
            key = at.strftime("%Y-%m-%dT%H:00Z")
            done = ledger.sql.ts_in(at + dt.timedelta(minutes=7))
            run = invocation + uuid.uuid4().hex[12:]
            rows.append((job, key, 1, run, "succeeded", ledger.sql.ts_in(at), done))
    with ledger.transaction():
        ledger.executemany(
            "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, "
            "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            rows,
        )
        CompleteRuns(ledger.sql).rebuild()
    return len(rows)


def sqlite_bytes(path: Path) -> int:
    """The file's size with every committed transaction in it (the WAL checkpointed)."""
    with sqlite3.connect(path) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return path.stat().st_size


def measure_sqlite(folder: Path, jobs: int, hours: int, names: str) -> tuple[int, int, int]:
    """(attempts, bytes the ledger grew by, bytes of the bare table) on SQLite."""
    path, bare = folder / f"ledger-{names}.db", folder / f"floor-{names}.db"
    with gk.open_ledger(sqlite_url(path)) as ledger:
        empty = sqlite_bytes(path)
        count = fill(ledger, jobs, hours, names)
    grown = sqlite_bytes(path) - empty
    conn = sqlite3.connect(bare)
    conn.execute("ATTACH DATABASE ? AS l", (str(path),))
    conn.execute("CREATE TABLE floor AS SELECT * FROM l.gk_attempts")
    conn.commit()
    conn.close()
    return count, grown, bare.stat().st_size


@contextmanager
def pg_schema() -> Iterator[tuple[str, Any]]:
    """A fresh schema: its ledger URL and an autocommit connection to it; dropped after."""
    import psycopg

    schema = f"gk_bench_size_{uuid.uuid4().hex[:8]}"
    conn = psycopg.connect(PG_DSN, autocommit=True)
    conn.execute(f'CREATE SCHEMA "{schema}"')
    conn.execute(f'SET search_path TO "{schema}"')
    try:
        yield f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}schema={schema}", conn
    finally:
        conn.execute(f'DROP SCHEMA "{schema}" CASCADE')
        conn.close()


def pg_bytes(conn: Any, like: str) -> int:
    """``pg_total_relation_size`` summed over the schema's tables named ``like``."""
    for table in conn.execute(
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() AND tablename LIKE %s",
        (like,),
    ).fetchall():
        conn.execute(f"VACUUM ANALYZE {table[0]}")
    row = conn.execute(
        "SELECT COALESCE(SUM(pg_total_relation_size(c.oid)), 0) FROM pg_class c JOIN "
        "pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND "
        "c.relkind = 'r' AND c.relname LIKE %s",
        (like,),
    ).fetchone()
    return int(row[0])


def measure_pg(jobs: int, hours: int, names: str) -> tuple[int, int, int]:
    """(attempts, bytes the ledger grew by, bytes of the bare table) on PostgreSQL."""
    with pg_schema() as (url, conn):
        with gk.open_ledger(url) as ledger:
            empty = pg_bytes(conn, "gk\\_%")
            count = fill(ledger, jobs, hours, names)
        grown = pg_bytes(conn, "gk\\_%") - empty
        conn.execute("CREATE TABLE floor AS SELECT * FROM gk_attempts")
        return count, grown, pg_bytes(conn, "floor")


def growth(per_attempt: float, jobs: int) -> str:
    """A year of ``jobs`` hourly jobs at ``per_attempt`` bytes, in GB (10^9)."""
    return f"{per_attempt * HOURS_A_YEAR * jobs / 1e9:.1f} GB"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=100, help="hourly jobs (default 100)")
    parser.add_argument("--hours", type=int, default=2000, help="hours per job (default 2000)")
    parser.add_argument("--no-pg", action="store_true", help="SQLite only")
    args = parser.parse_args(argv)
    print(environment_line())
    print(load_line("before"))
    found = []
    with tempfile.TemporaryDirectory(prefix="gk-bench-size-") as folder:
        for names in NAMES:
            found.append(
                ("SQLite", names, *measure_sqlite(Path(folder), args.jobs, args.hours, names))
            )
            if not args.no_pg:
                found.append(("PostgreSQL", names, *measure_pg(args.jobs, args.hours, names)))
    rows = []
    for backend, names, count, grown, bare in found:
        per, floor = grown / count, bare / count
        rows.append(
            [
                f"{backend}, {names} names",
                f"{count:,}",
                f"{per:.0f} B",
                f"{floor:.0f} B",
                f"{per / floor:.2f}x",
                growth(per, 1000),
                growth(per, 10000),
            ]
        )
    header = ["ledger", "attempts", "per attempt", "floor: bare rows", "ratio"]
    print_table([*header, "a year: 1,000 hourly jobs", "10,000 hourly jobs"], rows)
    print(load_line("after"))


if __name__ == "__main__":
    main()
