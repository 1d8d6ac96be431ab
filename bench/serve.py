"""``gatekeeper serve``: median response of ``/`` and ``/metrics`` on a 50-job x 10-year ledger.

Builds, in a temporary folder, one SQLite ledger of 50 daily jobs over the 3,653 days ending
yesterday (182,650 attempts in one bulk INSERT, then the complete runs rebuilt as the
migration builds them): every 97th period failed, every 211th has no attempt. Then it starts
the real ``gatekeeper serve`` (``--window 90d``) and times, each the median of ``--runs``
requests over HTTP (urllib, one connection per request):

- ``/``: the page (every job's window judged, the grid rendered);
- ``/metrics``: the Prometheus exposition of the same judgement;
- ``/api/jobs``: the JSON summaries;
- ``/metrics`` again within the server's 1 s reuse of a judgement (several viewers);

beside the floor: the bare SQL of the same reads on a raw sqlite3 connection (per job the
latest attempt of every period of its window and its complete runs, plus the running
attempts of the whole ledger), no planning, no rendering. Not a test.

    python bench/serve.py
    python bench/serve.py --runs 21 --window 365d
    python bench/serve.py --freshness 6h   # every job with a deadline
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sqlite3
import statistics
import sys
import tempfile
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from _common import serve_process

import gatekeeper as gk
from gatekeeper.core.periods.intervals import parse_lateness
from gatekeeper.ledger.runs import CompleteRuns

JOBS, DAYS = 50, 3653
FILL = """
INSERT INTO gk_attempts
    (job, period, attempt, run_id, state, started_at, updated_at, lease_expires_at, error)
WITH RECURSIVE n(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM n WHERE i + 1 < {days})
SELECT 'Job' || printf('%02d', j.i), day, 1, 'r-' || j.i || '-' || day,
       CASE WHEN (d.i + j.i) % 97 = 0 THEN 'failed' ELSE 'succeeded' END,
       day || 'T02:00:00.000000+00:00', day || 'T02:30:00.000000+00:00', NULL,
       CASE WHEN (d.i + j.i) % 97 = 0 THEN 'bench: rejected rows' END
FROM n j, (SELECT i, date('{first}', '+' || i || ' days') AS day FROM n) d
WHERE j.i < {jobs} AND (d.i + 3 * j.i) % 211 != 0
"""
#: the floor's reads, per job: the latest attempt of each period of the window, the runs
FLOOR_LATEST = """
SELECT a.period, a.state, a.error FROM gk_attempts a
WHERE a.job = ? AND a.period >= ? AND a.period <= ?
  AND a.attempt = (SELECT MAX(b.attempt) FROM gk_attempts b
                   WHERE b.job = a.job AND b.period = a.period)
"""
FLOOR_RUNS = "SELECT * FROM gk_complete_runs WHERE job = ? AND last_period >= ?"
FLOOR_RUNNING = "SELECT job, COUNT(*) FROM gk_attempts WHERE state = 'running' GROUP BY job"
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def build_ledger(url: str, first: dt.date) -> None:
    with gk.open_ledger(url) as ledger, ledger.transaction():
        ledger.connection.execute(FILL.format(days=DAYS, first=first, jobs=JOBS))
        CompleteRuns(ledger.sql).rebuild()


def median_seconds(fn: Callable[[], object], runs: int, pause: float = 0.0) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        time.sleep(pause)
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def get(url: str) -> int:
    with _OPENER.open(url, timeout=120) as response:
        return len(response.read())


def floor(path: Path, first: str, last: str) -> Callable[[], int]:
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA query_only = 1")

    def reads() -> int:
        rows = conn.execute(FLOOR_RUNNING).fetchall()
        for j in range(JOBS):
            job = f"Job{j:02d}"
            rows += conn.execute(FLOOR_LATEST, (job, first, last)).fetchall()
            rows += conn.execute(FLOOR_RUNS, (job, first)).fetchall()
        return len(rows)

    return reads


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--window", default="90d")
    parser.add_argument(
        "--freshness",
        default=None,
        help="a deadline such as 6h for every job ([gatekeeper.freshness]): /metrics and / "
        "then judge each job's deadlines over the window too",
    )
    args = parser.parse_args()
    today = dt.datetime.now(dt.timezone.utc).date()
    first = today - dt.timedelta(days=DAYS)
    window = parse_lateness(args.window, "window")
    with tempfile.TemporaryDirectory(prefix="gk-serve-bench-") as tmp:
        path = Path(tmp) / "ledger.db"
        url = f"sqlite:///{path}"
        began = time.perf_counter()
        build_ledger(url, first)
        print(
            f"ledger built in {time.perf_counter() - began:.1f} s "
            f"({path.stat().st_size / 1e6:.0f} MB)"
        )
        env = dict(os.environ)
        if args.freshness:
            cfg = Path(tmp) / "luigi.cfg"
            lines = [f"Job{j:02d} = {args.freshness}" for j in range(JOBS)]
            cfg.write_text("[gatekeeper.freshness]\n" + "\n".join(lines) + "\n")
            env["LUIGI_CONFIG_PATH"] = str(cfg)
        with serve_process(url, args.window, env) as (base, _):
            sizes = {p: get(base + p) for p in ("/", "/metrics", "/api/jobs")}
            # past the server's 1 s reuse of a judgement (app.py _Recent): each request judges
            times = {p: median_seconds(lambda p=p: get(base + p), args.runs, 1.1) for p in sizes}
            cached = median_seconds(lambda: get(base + "/metrics"), args.runs)
        start = str(today - window)
        bare = median_seconds(floor(path, start, str(today)), args.runs)
    print(
        f"{JOBS} daily jobs x {DAYS} days, window {args.window}, freshness "
        f"{args.freshness or 'none'}, Python "
        f"{sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    print(f"| request | median of {args.runs} | size |\n|---|---|---|")
    for p, took in times.items():
        print(f"| `GET {p}` | {took * 1000:.0f} ms | {sizes[p] / 1e3:.0f} kB |")
    print(
        "| `GET /metrics` within 1 s of another request (judgement reused) | "
        f"{cached * 1000:.0f} ms | |"
    )
    print(f"| floor: the bare SQL of the same reads (sqlite3) | {bare * 1000:.1f} ms | |")


if __name__ == "__main__":
    main()
