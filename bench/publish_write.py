"""Publications with a ``write`` callback: the cost of putting the session back (issue 23).

For each backend this opens a fresh ledger (a SQLite file in a temporary directory, or a
PostgreSQL schema dropped at the end), records the 3 upstream jobs succeeded for ``--dates``
dates, then publishes each date with a ``write`` that inserts one row into the caller's table
(``ledger.publish(..., write)``: the readiness read, the write, the settle of the session,
the publication and its evidence, one transaction). It prints the median time of one
publication, and of the settle alone (``SqlCore.settle_session`` in a transaction that ran
one statement: on PostgreSQL one round trip of RESET / SET / DISCARD TEMP / UNLISTEN /
CLOSE ALL and the prepared statements read; on SQLite one read of the pragmas and one of the
temporary objects).

To compare with the code before the settle, run the same script with ``PYTHONPATH`` set to a
checkout of that code (the settle figure is then absent). Not a test: it prints.

    python bench/publish_write.py --dates 500
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import gatekeeper as gk

JOBS = ("DimA", "DimB", "DimC")
T0 = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
PG_DSN = os.environ.get("GATEKEEPER_TEST_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")


@contextmanager
def ledger_url(backend: str) -> Iterator[str]:
    if backend == "sqlite":
        with tempfile.TemporaryDirectory() as folder:
            yield f"sqlite:///{folder}/ledger.db"
        return
    import psycopg

    schema = f"gk_bench_{uuid.uuid4().hex[:10]}"
    try:
        yield f"{PG_DSN}{'&' if '?' in PG_DSN else '?'}schema={schema}"
    finally:
        with psycopg.connect(PG_DSN, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')


def dates(count: int) -> list[str]:
    first = dt.date(2020, 1, 1)
    return [(first + dt.timedelta(days=i)).isoformat() for i in range(count)]


def publish_times(ledger: gk.Ledger, days: list[str]) -> list[float]:
    with ledger.transaction():
        ledger.execute("CREATE TABLE out_rows (d TEXT PRIMARY KEY, v INTEGER NOT NULL)")
    for day in days:
        for job in JOBS:
            ledger.record(job, day, 1, f"{job}-{day}", "succeeded", T0)
    times = []
    for day in days:

        def write(tx: Any, day: str = day) -> None:
            tx.execute("INSERT INTO out_rows (d, v) VALUES (?, ?)", (day, 1))

        started = time.perf_counter()
        ledger.publish("Consumer", day, JOBS, f"sha256:{day}", write)
        times.append(time.perf_counter() - started)
    return times


def settle_times(ledger: gk.Ledger, rounds: int) -> list[float] | None:
    sql: Any = ledger.sql  # type: ignore[attr-defined]
    if not hasattr(sql, "settle_session"):
        return None  # the code before the settle
    times = []
    for _ in range(rounds):
        with ledger.transaction():
            ledger.execute("SELECT 1")
            started = time.perf_counter()
            assert sql.settle_session() is None
            times.append(time.perf_counter() - started)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dates", type=int, default=500)
    parser.add_argument("--skip-pg", action="store_true")
    args = parser.parse_args()
    print(f"gatekeeper from {os.path.dirname(gk.__file__)}; load {os.getloadavg()[0]:.2f}")
    for backend in ("sqlite",) if args.skip_pg else ("sqlite", "postgresql"):
        with ledger_url(backend) as url, gk.open_ledger(url) as ledger:
            publish = statistics.median(publish_times(ledger, dates(args.dates))) * 1e3
            settle = settle_times(ledger, args.dates)
            shown = "-" if settle is None else f"{statistics.median(settle) * 1e3:.3f} ms"
            print(f"{backend:10} publish with write {publish:.3f} ms   settle {shown}")


if __name__ == "__main__":
    main()
