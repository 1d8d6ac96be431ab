"""The HTML coverage report: render time and size for 10 years x 3 daily jobs.

Builds, in a temporary folder, one SQLite ledger holding three daily jobs over 2016-01-01 ..
2025-12-31 (3,653 dates each, 10,959 cells): most periods succeeded, every 97th failed (with
an error), every 211th has no attempt (missing), every 10th took two attempts; the last two
weeks are not yet due at ``--now``. Then it times, each the median of ``--runs`` runs:

- render: ``report.render_report`` alone (pure: plans and states fetched once beforehand);
- fetch + render: ``report.coverage.coverages`` of the jobs on an open ledger (each window's
  long runs of complete periods read as runs, the other periods judged one by one), then
  render;
- the real ``gatekeeper report`` command in a subprocess (interpreter start-up included);

and prints the file size. Not a test.

    python bench/report_render.py
    python bench/report_render.py --runs 15 --keep report.html
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import gatekeeper as gk
from gatekeeper.core.schedule import Schedule
from gatekeeper.report.coverage import coverages
from gatekeeper.report.html import JobCoverage, render_report
from gatekeeper.report.windows import JobWindow

UTC = dt.timezone.utc
JOBS = ("DimCustomer", "DimProduct", "DailySalesLoad")
START, STOP = dt.date(2016, 1, 1), dt.date(2026, 1, 1)
NOW = dt.datetime(2025, 12, 18, 7, 0, tzinfo=UTC)
REQUEST = {
    "start": START.isoformat(),
    "stop": STOP.isoformat(),
    "lateness": "2h",
    "timezone": "UTC",
    "catchup": "all",
}
WINDOW = JobWindow(Schedule.parse(**REQUEST))


def build_ledger(url: str) -> None:
    """Write the three jobs' attempts (one transaction per attempt, as workers do)."""
    started = dt.datetime(2016, 1, 2, tzinfo=UTC)
    with gk.open_ledger(url) as ledger:
        for j, job in enumerate(JOBS):
            day = START
            n = 0
            while day < STOP and day < NOW.date() - dt.timedelta(days=1):
                n += 1
                date = day.isoformat()
                day += dt.timedelta(days=1)
                if (n + j) % 211 == 0:
                    continue
                attempt = 1
                if n % 10 == 0:
                    ledger.record(
                        job,
                        date,
                        1,
                        f"{job}-{date}-1",
                        "failed",
                        started,
                        error="transient: connection reset by peer",
                    )
                    attempt = 2
                failed = (n + 3 * j) % 97 == 0
                ledger.record(
                    job,
                    date,
                    attempt,
                    f"{job}-{date}-{attempt}",
                    "failed" if failed else "succeeded",
                    started,
                    error=f"<row {n}> rejected: amount & currency disagree" if failed else None,
                )


def median_seconds(fn: Callable[[], object], runs: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        fn()
        times.append(time.perf_counter() - began)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--keep", help="also copy the rendered report to this path")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="gk-report-bench-") as tmp:
        url = f"sqlite:///{Path(tmp) / 'ledger.db'}"
        began = time.perf_counter()
        build_ledger(url)
        print(f"ledger built in {time.perf_counter() - began:.1f} s")
        with gk.open_ledger(url) as ledger:

            def fetch() -> list[JobCoverage]:
                found = coverages(ledger, dict.fromkeys(JOBS, WINDOW), NOW)
                return [JobCoverage(job, *found[job]) for job in JOBS]

            jobs = fetch()
            html = render_report(jobs, generated_at=NOW)
            cells = sum(sum(j.counts().values()) for j in jobs)
            drawn = sum(len(j.states) for j in jobs)
            render = median_seconds(lambda: render_report(jobs, generated_at=NOW), args.runs)
            both = median_seconds(lambda: render_report(fetch(), generated_at=NOW), args.runs)
        out = Path(tmp) / "report.html"
        command = [
            sys.executable,
            "-m",
            "gatekeeper.cli",
            "--ledger",
            url,
            "report",
            *JOBS,
            "--start",
            REQUEST["start"],
            "--stop",
            REQUEST["stop"],
            "--now",
            NOW.isoformat(),
            "--lateness",
            "2h",
            "--timezone",
            "UTC",
            "-o",
            str(out),
        ]
        cli = median_seconds(
            lambda: subprocess.run(command, check=True, capture_output=True), max(3, args.runs // 2)
        )
        if args.keep:
            Path(args.keep).write_text(html, encoding="utf-8")
    size = len(html.encode("utf-8"))
    print(
        f"{len(JOBS)} daily jobs x 10 years = {cells:,} periods drawn as {drawn:,} cells and "
        f"bars, report {size / 1e6:.2f} MB ({size / cells:.0f} bytes per period), "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs"
    )
    print(f"| step | median of {args.runs} runs |\n|---|---|")
    print(f"| render_report (pure) | {render * 1000:.1f} ms |")
    print(f"| coverages of the 3 jobs + render | {both * 1000:.1f} ms |")
    print(f"| `gatekeeper report` command (new process) | {cli * 1000:.0f} ms |")


if __name__ == "__main__":
    main()
