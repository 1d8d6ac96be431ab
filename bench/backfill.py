"""End-to-end backfill: gatekeeper's RangeBusinessDaily vs luigi's RangeDaily, real `luigi` command.

Fills dates from 2016-01-01 of a trivial task through Luigi's local scheduler, at two sizes
(``--days`` N, default 3,653, and N/2), each run in a fresh temporary folder (new ledger, new
output folder, new luigi.cfg, used as the working directory):

- gatekeeper: ``luigi --module gk_bench_tasks RangeBusinessDaily --of GkDaily ...``; GkDaily's
  run() does nothing, each date is one recorded attempt (running, then succeeded) in SQLite;
- luigi: ``luigi --module gk_bench_tasks RangeDaily --of LuigiDaily --days-back ...``;
  LuigiDaily writes a 3-byte LocalTarget file per date;
- floor: the bare SQL of gatekeeper's ledger work on a raw sqlite3 connection with the
  ledger's own pragmas (WAL, ``synchronous=FULL``): per date one read and two write
  transactions (``_common.ledger_floor``), in this process.

Both commands with ``--task-limit`` at least the dates, a fixed ``--now`` (the day after the
last date) and ``--local-scheduler``; Luigi's default logging (DEBUG) sent to a file unless
``--log-level``. Wall clock of the whole command, process start-up included. Every timed run is
checked: the command exited 0 and every date is complete (gatekeeper: one succeeded attempt
per date and nothing else; luigi: one file per date; floor: one succeeded row per date), or the
script stops with the command's last output lines. Each of ``--runs`` rounds runs every slow
job (luigi at each size, gatekeeper at 36,525 dates) once, with a sweep of the quick ones
(gatekeeper at N/2 and N, the floor) before and after each, so every tool alternates with
every other and the quick ones are sampled often; odd rounds run backwards, so a drift of the
machine's load hits all of them; medians. Printed side by side: wall times, luigi/gatekeeper
at N, and the marginal cost per date, ``(t(N) - t(N/2)) / (N - N/2)``, of gatekeeper and of the
floor (start-up and planning cancel out), with the load average before and after.
``--linearity`` adds 36,525 dates (100 years) for gatekeeper and the floor, to show the cost
per date stays flat; luigi's RangeDaily is not run there (its local scheduler revisits every
task it knows on each request for work: its time grows faster than linearly, and the script
prints what its own two sizes extrapolate to). Not a test.

    python bench/backfill.py                 # 1,826 and 3,653 dates, 3 rounds (~5 minutes)
    python bench/backfill.py --days 366 --runs 1
    python bench/backfill.py --linearity     # also 36,525 dates, gatekeeper and floor
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import math
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
    load_line,
    luigi_command,
    print_table,
    sqlite_url,
    subprocess_env,
    write_luigi_config,
    write_task_module,
)

START = dt.date(2016, 1, 1)
TARGET_RATIO = 25.0  # luigi / gatekeeper at N dates (issue 21)
TARGET_MARGINAL = 3.0  # gatekeeper's marginal cost per date / the floor's (issue 21)
LINEARITY_DAYS = 36525


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


GATEKEEPER = Tool("gatekeeper", gatekeeper_args, verify_ledger)
LUIGI = Tool("luigi", luigi_args, verify_files)
SCHEDULED = Tool("gatekeeper --inline false", scheduled_args, verify_ledger)
FLOOR = "floor"


def run_once(tool: Tool, fill: Backfill) -> float:
    """Run ``tool``'s backfill in a fresh temporary folder; returns wall seconds (verified)."""
    with tempfile.TemporaryDirectory(prefix=f"gk-bench-backfill-{tool.name[:10]}-") as tmp:
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


def run_floor(fill: Backfill) -> float:
    """The floor's seconds for ``fill``'s dates (checked by ``ledger_floor``)."""
    with tempfile.TemporaryDirectory(prefix="gk-bench-backfill-floor-") as folder:
        return ledger_floor(fill.days, Path(folder))


@dataclass(frozen=True)
class Job:
    """One timed thing of a round: a tool (or the floor) at a size; ``slow`` jobs run once a
    round, the others once per sweep between them."""

    name: str
    days: int
    run: Callable[[], float]
    slow: bool


def plan_jobs(args: argparse.Namespace) -> list[Job]:
    """Every (tool, size) a round runs."""
    sizes = [args.days // 2, args.days] + ([LINEARITY_DAYS] if args.linearity else [])
    jobs: list[Job] = []
    for days in sizes:
        fill = Backfill(days, args.log_level)
        tools = [GATEKEEPER] + ([LUIGI] if days != LINEARITY_DAYS else [])
        if args.with_scheduled and days == args.days:
            tools.append(SCHEDULED)
        for tool in tools:
            slow = tool is not GATEKEEPER or days == LINEARITY_DAYS
            jobs.append(Job(tool.name, days, functools.partial(run_once, tool, fill), slow))
        jobs.append(Job(FLOOR, days, functools.partial(run_floor, fill), False))
    return jobs


def round_order(jobs: list[Job], round_: int) -> list[Job]:
    """One round: a sweep of the quick jobs (gatekeeper and the floor at N/2 and N, the floor
    at every size) before and after each slow one (luigi, gatekeeper at 36,525 dates), so the
    quick ones are sampled often and every tool alternates with every other; odd rounds run
    backwards."""
    quick = [job for job in jobs if not job.slow]
    order = list(quick)
    for job in (job for job in jobs if job.slow):
        order += [job, *quick]
    return order if round_ % 2 == 0 else order[::-1]


def run_rounds(jobs: list[Job], runs: int) -> dict[tuple[str, int], list[float]]:
    """Seconds of every run of every job, round by round (``round_order``)."""
    times: dict[tuple[str, int], list[float]] = {(j.name, j.days): [] for j in jobs}
    for round_ in range(runs):
        for job in round_order(jobs, round_):
            took = job.run()
            times[(job.name, job.days)].append(took)
            print(
                f"  round {round_ + 1}/{runs} {job.name} {job.days:,} dates: {took:.2f} s "
                "(verified)",
                file=sys.stderr,
                flush=True,
            )
    return times


def marginal_ms(median: dict[tuple[str, int], float], name: str, small: int, large: int) -> float:
    """Milliseconds per date between two sizes: (t(large) - t(small)) / (large - small)."""
    return 1000 * (median[(name, large)] - median[(name, small)]) / (large - small)


def seconds(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def verdict(met: bool) -> str:
    return "met" if met else "MISSED"


def print_results(args: argparse.Namespace, times: dict[tuple[str, int], list[float]]) -> None:
    median = {key: statistics.median(values) for key, values in times.items()}
    sizes = sorted({days for _, days in times})
    names = [GATEKEEPER.name, LUIGI.name, FLOOR] + ([SCHEDULED.name] if args.with_scheduled else [])

    def cell(name: str, days: int) -> str:
        if (name, days) not in median:
            return "not run"
        runs = times[(name, days)]
        spread = f"{seconds(min(runs))}-{seconds(max(runs))}"
        return f"{seconds(median[(name, days)])} ({spread}, {len(runs)})"

    rows = []
    for days in sizes:
        shown = (
            f"{median[(LUIGI.name, days)] / median[(GATEKEEPER.name, days)]:.1f}x"
            if (LUIGI.name, days) in median
            else "-"
        )
        rows.append((f"{days:,}", *(cell(name, days) for name in names), shown))
    print()
    print_table(("dates", *(f"{n} s" for n in names), "luigi/gatekeeper"), rows)
    print("(median s, then the range and number of runs)")
    small, large = args.days // 2, args.days
    gk_ms = marginal_ms(median, GATEKEEPER.name, small, large)
    floor_ms = marginal_ms(median, FLOOR, small, large)
    luigi_ms = marginal_ms(median, LUIGI.name, small, large)
    times_floor = gk_ms / floor_ms
    print(
        f"\nmarginal cost per date, {small:,} -> {large:,} dates (medians): gatekeeper "
        f"{gk_ms:.3f} ms, floor {floor_ms:.3f} ms (bare SQL at the ledger's synchronous=FULL): "
        f"{times_floor:.1f}x the floor (target <= {TARGET_MARGINAL:g}x: "
        f"{verdict(0 < times_floor <= TARGET_MARGINAL)}); luigi RangeDaily {luigi_ms:.3f} ms"
    )
    ratio = median[(LUIGI.name, large)] / median[(GATEKEEPER.name, large)]
    print(
        f"{large:,} dates: luigi/gatekeeper {ratio:.1f}x "
        f"(target >= {TARGET_RATIO:g}x: {verdict(ratio >= TARGET_RATIO)})"
    )
    if args.with_scheduled:
        scheduled = median[(LUIGI.name, large)] / median[(SCHEDULED.name, large)]
        print(f"{large:,} dates: luigi/{SCHEDULED.name} {scheduled:.1f}x")
    if args.linearity:
        print_linearity(median, small, large)


def print_linearity(median: dict[tuple[str, int], float], small: int, large: int) -> None:
    """gatekeeper's and the floor's marginal cost per date up to 36,525 dates, and what
    luigi's two sizes extrapolate to there (it is not run)."""
    for name in (GATEKEEPER.name, FLOOR):
        near = marginal_ms(median, name, small, large)
        far = marginal_ms(median, name, large, LINEARITY_DAYS)
        print(
            f"linearity, {name}: {far:.3f} ms per date from {large:,} to {LINEARITY_DAYS:,} "
            f"dates, {near:.3f} ms from {small:,} to {large:,} ({far / near:.2f}x)"
        )
    t_small, t_large = median[(LUIGI.name, small)], median[(LUIGI.name, large)]
    exponent = math.log(t_large / t_small) / math.log(large / small)
    guess = t_large * (LINEARITY_DAYS / large) ** exponent
    print(
        f"luigi RangeDaily not run at {LINEARITY_DAYS:,} dates: its time grows as dates^"
        f"{exponent:.2f} from {small:,} to {large:,}, which extrapolates to about "
        f"{guess / 60:.0f} min there ({guess / median[(GATEKEEPER.name, LINEARITY_DAYS)]:.0f}x "
        "gatekeeper)"
    )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="rounds (medians)")
    parser.add_argument(
        "--days",
        type=int,
        default=3653,
        help="dates to fill from 2016-01-01; half as many is the second size (default %(default)s)",
    )
    parser.add_argument(
        "--linearity",
        action="store_true",
        help=f"also {LINEARITY_DAYS:,} dates, gatekeeper and the floor only (luigi would take "
        "hours there)",
    )
    parser.add_argument(
        "--with-scheduled",
        action="store_true",
        help="also run gatekeeper with --inline false at --days (every date a task of "
        "Luigi's scheduler, as luigi's are)",
    )
    parser.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="passed to both luigi commands (default: Luigi's, DEBUG)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.days < 4:
        parser.error("--runs must be >= 1 and --days >= 4")
    if args.linearity and args.days >= LINEARITY_DAYS:
        parser.error(f"--linearity needs --days below {LINEARITY_DAYS:,}")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(environment_line())
    print(load_line("before"))
    jobs = plan_jobs(args)
    sizes = ", ".join(f"{days:,}" for days in sorted({j.days for j in jobs}))
    print(f"dates {sizes} from {START}, {args.runs} round(s), tools alternating; commands at")
    for tool in (GATEKEEPER, LUIGI, *([SCHEDULED] if args.with_scheduled else [])):
        fill = Backfill(args.days, args.log_level)
        shown = " ".join(luigi_command("--module", TASK_MODULE, *tool.arguments(fill)))
        print(f"  {tool.name}: {shown}")
    print(
        "  floor: raw sqlite3, the ledger's pragmas (WAL, synchronous=FULL), per date one "
        "read + two write transactions"
    )
    times = run_rounds(jobs, args.runs)
    print_results(args, times)
    print(load_line("after"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
