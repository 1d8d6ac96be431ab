"""End-to-end backfill: gatekeeper's RangeBusinessDaily vs luigi's RangeDaily, real `luigi` command.

Fills ``--days`` dates from 2016-01-01 (default 3,653: up to 2026-01-01 exclusive) of a trivial
task through Luigi's local scheduler, once with each tool per run, each time in a fresh
temporary folder (new ledger, new output folder, new luigi.cfg, used as the working directory):

- gatekeeper: ``luigi --module gk_bench_tasks RangeBusinessDaily --of GkDaily ...``; GkDaily's
  run() does nothing, each date is one recorded attempt (running, then succeeded) in SQLite;
- luigi: ``luigi --module gk_bench_tasks RangeDaily --of LuigiDaily --days-back ...``;
  LuigiDaily writes a 3-byte LocalTarget file per date.

Both with ``--task-limit 5000``, a fixed ``--now`` (the day after the last date) and
``--local-scheduler``; Luigi's default logging (DEBUG), sent to a file, unless ``--log-level``.
Wall clock of the whole command, process start-up included. After each run every date must be
complete (gatekeeper: one succeeded attempt per date and nothing else; luigi: one file per
date) and the command must exit 0, or the script stops with the command's last output lines.
Prints the median wall time of ``--runs`` runs per tool and their ratio. Not a test.

    python bench/backfill.py                 # 3,653 dates, 3 runs (several minutes)
    python bench/backfill.py --days 366 --runs 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from _common import (
    TASK_MODULE,
    environment_line,
    ledger_floor,
    luigi_command,
    print_table,
    sqlite_url,
    subprocess_env,
    write_luigi_config,
    write_task_module,
)

START = dt.date(2016, 1, 1)
TARGET_RATIO = 10.0


@dataclass(frozen=True)
class Backfill:
    """The dates to fill: ``days`` dates from START, planned at ``now``."""

    days: int
    log_level: str | None

    @property
    def stop(self) -> dt.date:
        return START + dt.timedelta(days=self.days)

    @property
    def now(self) -> int:
        midnight = dt.datetime.combine(self.stop, dt.time(), tzinfo=dt.timezone.utc)
        return int(midnight.timestamp()) + 86400

    @property
    def task_limit(self) -> int:
        return max(5000, self.days)

    def dates(self) -> list[str]:
        return [(START + dt.timedelta(days=i)).isoformat() for i in range(self.days)]

    def common(self) -> list[str]:
        level = [] if self.log_level is None else ["--log-level", self.log_level]
        return [
            "--start",
            START.isoformat(),
            "--stop",
            self.stop.isoformat(),
            "--task-limit",
            str(self.task_limit),
            "--now",
            str(self.now),
            "--local-scheduler",
            *level,
        ]


@dataclass(frozen=True)
class Tool:
    """One way of filling the range: its command-line arguments and its completeness check."""

    name: str
    arguments: Callable[[Backfill], list[str]]
    verify: Callable[[Path, Backfill], None]


def gatekeeper_args(fill: Backfill) -> list[str]:
    return ["RangeBusinessDaily", "--of", "GkDaily", *fill.common()]


def scheduled_args(fill: Backfill) -> list[str]:
    return [*gatekeeper_args(fill), "--inline", "false"]


def luigi_args(fill: Backfill) -> list[str]:
    return [
        "RangeDaily",
        "--of",
        "LuigiDaily",
        "--days-back",
        str(max(5000, fill.days + 2)),
        *fill.common(),
    ]


def verify_ledger(folder: Path, fill: Backfill) -> None:
    """Every date has exactly one attempt, succeeded; raises SystemExit otherwise."""
    conn = sqlite3.connect(folder / "ledger.db")
    try:
        rows = conn.execute(
            "SELECT period, state FROM gk_attempts WHERE job = 'GkDaily' ORDER BY period"
        ).fetchall()
    finally:
        conn.close()
    succeeded = [period for period, state in rows if state == "succeeded"]
    if succeeded != fill.dates() or len(rows) != fill.days:
        raise SystemExit(
            f"gatekeeper: {len(succeeded)} succeeded attempts of {len(rows)} for "
            f"{fill.days} dates; missing {sorted(set(fill.dates()) - set(succeeded))[:5]}"
        )


def verify_files(folder: Path, fill: Backfill) -> None:
    """Every date has its output file; raises SystemExit otherwise."""
    out = folder / "out" / "daily"
    found = sorted(p.name for p in out.iterdir()) if out.is_dir() else []
    wanted = [f"{d}.txt" for d in fill.dates()]
    if found != wanted:
        raise SystemExit(
            f"luigi: {len(found)} output files for {fill.days} dates; missing "
            f"{sorted(set(wanted) - set(found))[:5]}"
        )


TOOLS = (
    Tool("gatekeeper", gatekeeper_args, verify_ledger),
    Tool("luigi", luigi_args, verify_files),
)
SCHEDULED = Tool("gatekeeper --inline false", scheduled_args, verify_ledger)


def run_once(tool: Tool, fill: Backfill) -> float:
    """Run ``tool``'s backfill in a fresh temporary folder; returns wall seconds (verified)."""
    with tempfile.TemporaryDirectory(prefix=f"gk-bench-backfill-{tool.name}-") as tmp:
        folder = Path(tmp)
        write_task_module(folder, folder / "out")
        config = write_luigi_config(folder, sqlite_url(folder / "ledger.db"))
        command = luigi_command("--module", TASK_MODULE, *tool.arguments(fill))
        log = folder / "luigi.log"
        with log.open("w") as output:
            began = time.perf_counter()
            done = subprocess.run(
                command,
                cwd=folder,
                env=subprocess_env(config, folder),
                stdout=output,
                stderr=subprocess.STDOUT,
                check=False,
            )
            took = time.perf_counter() - began
        if done.returncode != 0:
            tail = "\n".join(log.read_text().splitlines()[-30:])
            raise SystemExit(f"{tool.name}: luigi exited {done.returncode}:\n{tail}")
        tool.verify(folder, fill)
    return took


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per tool (median)")
    parser.add_argument(
        "--days", type=int, default=3653, help="dates to fill from 2016-01-01 (default %(default)s)"
    )
    parser.add_argument(
        "--with-scheduled",
        action="store_true",
        help="also run gatekeeper with --inline false (every date a task of "
        "Luigi's scheduler, as luigi's are)",
    )
    parser.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="passed to both luigi commands (default: Luigi's, DEBUG)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.days < 1:
        parser.error("--runs and --days must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fill = Backfill(args.days, args.log_level)
    print(environment_line())
    print(f"{fill.days:,} dates {START}..{fill.stop} (exclusive), {args.runs} run(s) per tool")
    tools = (*TOOLS, SCHEDULED) if args.with_scheduled else TOOLS
    for tool in tools:
        shown = " ".join(luigi_command("--module", TASK_MODULE, *tool.arguments(fill)))
        print(f"  {tool.name}: {shown}")
    times: dict[str, list[float]] = {tool.name: [] for tool in tools}
    for run in range(args.runs):
        for tool in tools:  # alternate, so slow drifts of the machine hit both
            times[tool.name].append(run_once(tool, fill))
            print(
                f"  run {run + 1}/{args.runs} {tool.name}: {times[tool.name][-1]:.2f} s (verified)",
                file=sys.stderr,
                flush=True,
            )
    medians = {name: statistics.median(values) for name, values in times.items()}
    print()
    print_table(
        ("tool", "median wall s", "runs (s)", "per date ms"),
        [
            (
                name,
                f"{medians[name]:.2f}",
                " ".join(f"{t:.2f}" for t in values),
                f"{1000 * medians[name] / fill.days:.2f}",
            )
            for name, values in times.items()
        ],
    )
    ratio = medians["luigi"] / medians["gatekeeper"]
    verdict = "met" if ratio >= TARGET_RATIO else "MISSED"
    print(f"\nluigi/gatekeeper: {ratio:.2f}x (target >= {TARGET_RATIO:g}x: {verdict})")
    if SCHEDULED.name in medians:
        print(f"luigi/{SCHEDULED.name}: {medians['luigi'] / medians[SCHEDULED.name]:.2f}x")
    with tempfile.TemporaryDirectory() as folder:
        floor = ledger_floor(fill.days, Path(folder))
    print(
        f"floor: the bare SQL of the fill's ledger work on a raw sqlite3 connection "
        f"({fill.days:,} x 2 write transactions): {floor:.2f} s; gatekeeper/floor "
        f"{medians['gatekeeper'] / floor:.1f}x"
    )
    print(f"load average (1, 5, 15 min) at the end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
