"""A nemesis soak of a publishing pipeline, runnable against one's own ledger (issue 48).

Starts its own ``luigid`` on a free loopback port and runs ``--processes`` ``luigi`` processes
(each ``--workers 2``, ``--no-lock``) filling a window of ``soak_pipeline``'s pipeline on the
ledger given by ``--ledger`` (PostgreSQL, or a throwaway SQLite file by default): even-numbered
processes ``RangeBusinessMonthly --of SoakMonthly`` (the months, their days and upstreams as
Luigi tasks), odd ones ``RangeBusinessDaily --of SoakPublish`` (the days, filled inline). Each
process that exits is logged with its exit code and the due gaps of its window at that moment,
and started again. Every 2-6 s a nemesis acts, at random among ``--faults``:

- ``kill``: SIGKILL a ``luigi`` process or one of its forked task processes;
- ``stop``: SIGSTOP one for 5-20 s, then SIGCONT (the lease is ``--lease-seconds``);
- ``db``: run ``--db-restart-cmd`` (the script never guesses how to restart a database);
- ``luigid``: kill -9 luigid and start it again on its port.

After ``--minutes`` every process is killed, the leases are left to run out, and one clean run
(no faults, no injected failures or slow bodies) must fill the window and exit 0. Then it prints
the counts (attempts, takeovers, faults by kind, exit codes by value, exits 0 with due gaps),
checks the pipeline's own tables (every row was written by its day's succeeded attempt, every
total by its publication's producer) and runs ``gatekeeper verify``. Every action, exit and
verdict goes to ``--log`` (JSON lines). Exit 1 on any violation, any exit 0 with due gaps or a
clean run that did not fill the window.

    python bench/soak.py --minutes 1 --faults kill,stop,luigid
    python bench/soak.py --ledger 'postgresql://u@host/db?schema=soak' --faults kill,stop,db \\
        --db-restart-cmd 'sudo systemctl restart postgresql'
"""

from __future__ import annotations

import argparse
import datetime as dt
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import RETCODES, free_port, luigi_command, sqlite_url, subprocess_env
from soak_checks import counts, print_counts, run_verify, table_violations
from soak_nemesis import Fleet, JsonLog, Luigid, Nemesis, Slot, kill_group
from soak_pipeline import TABLES

import gatekeeper as gk

FAULTS = ("kill", "stop", "db", "luigid")
JOBS = {
    "daily": ("SoakUpstream", "SoakPublish"),
    "monthly": ("SoakUpstream", "SoakPublish", "SoakMonthly"),
}

CONFIG = """\
[gatekeeper]
ledger_url = {url}
lease_seconds = {lease}
lateness = 0s
timezone = UTC

[core]
scheduler_host = 127.0.0.1
scheduler_port = {port}
rpc-retry-attempts = 30
rpc-retry-wait = 1
lock_pid_dir = {folder}/luigi-lock

[worker]
keep_alive = true
wait_interval = 0.5

[soak]
seed = {seed}
fail_rate = {fail_rate}
slow_rate = {slow_rate}

[retcode]
{retcodes}
"""

# luigid's own: retry a failed task after 5 s (its default is 15 minutes), so a kept-alive
# worker retries it while the soak runs.
LUIGID_CONFIG = "[scheduler]\nretry_delay = 5\nworker_disconnect_delay = 10\n"


class Window:
    """The months ``[start, start + months)`` and their days, as period keys."""

    def __init__(self, start: str, months: int):
        first = dt.date.fromisoformat(f"{start}-01")
        self.months = [_add_months(first, n) for n in range(months)]
        stop = _add_months(first, months)
        self.days = [first + dt.timedelta(n) for n in range((stop - first).days)]
        self.stop = stop

    def periods(self, job: str) -> list[str]:
        if job == "SoakMonthly":
            return [m.strftime("%Y-%m") for m in self.months]
        return [d.isoformat() for d in self.days]


def _add_months(day: dt.date, n: int) -> dt.date:
    y, m = divmod(day.month - 1 + n, 12)
    return dt.date(day.year + y, m + 1, 1)


def window_past_today(start: str, months: int, today: dt.date) -> str | None:
    """Why a window reaching past ``today`` is refused, or None: its periods after today are
    not due, so a range run rightly leaves them, and ``due_gaps`` would count them."""
    stop = Window(start, months).stop
    if stop <= today:
        return None
    latest = _add_months(today.replace(day=1), -months).strftime("%Y-%m")
    return (
        f"--start {start} --months {months} runs to {stop - dt.timedelta(days=1)}, past "
        f"today ({today}): periods not yet due would count as gaps; start at {latest} or earlier"
    )


def due_gaps(ledger: gk.Ledger, window: Window, scope: str) -> int:
    """Periods of the scope's jobs whose latest attempt has not succeeded (all are due)."""
    gaps = 0
    for job in JOBS[scope]:
        periods = window.periods(job)
        latest = ledger.latest_of(job, periods)
        gaps += sum(
            1 for p in periods if p not in latest or latest[p].state != gk.RunState.SUCCEEDED
        )
    return gaps


def gap_reader(ledger: gk.Ledger, window: Window) -> Any:
    """``due_gaps`` for the fleet's exit records; None (with the error logged) if unreadable."""

    def read(scope: str) -> int | None:
        try:
            return due_gaps(ledger, window, scope)
        except gk.GatekeeperError as exc:
            print(f"soak: could not read the due gaps: {exc}", file=sys.stderr)
            return None

    return read


def commands(args: argparse.Namespace, window: Window) -> dict[str, list[str]]:
    # the whole window in each invocation: a range that stops at its task_limit (50, Luigi's
    # default) exits 0 with gaps left, as Luigi's RangeDaily does, which is no lie to count
    common = ["--workers", str(args.workers), "--no-lock", "--task-limit", str(len(window.days))]
    return {
        "monthly": luigi_command(
            "--module",
            "soak_pipeline",
            "RangeBusinessMonthly",
            "--of",
            "SoakMonthly",
            "--start",
            args.start,
            "--stop",
            window.stop.strftime("%Y-%m"),
            *common,
        ),
        "daily": luigi_command(
            "--module",
            "soak_pipeline",
            "RangeBusinessDaily",
            "--of",
            "SoakPublish",
            "--start",
            window.days[0].isoformat(),
            "--stop",
            window.stop.isoformat(),
            *common,
        ),
    }


def write_config(folder: Path, args: argparse.Namespace, url: str, port: int) -> Path:
    (folder / "luigid.cfg").write_text(LUIGID_CONFIG)
    retcodes = "\n".join(f"{name} = {code}" for name, code in RETCODES.items())
    path = folder / "luigi.cfg"
    path.write_text(
        CONFIG.format(
            url=url,
            lease=args.lease_seconds,
            port=port,
            folder=folder,
            seed=args.seed,
            fail_rate=args.fail_rate,
            slow_rate=args.slow_rate,
            retcodes=retcodes,
        )
    )
    return path


def soak(args: argparse.Namespace, folder: Path, url: str, log: JsonLog) -> list[str]:
    """The faulted part, then the clean run; returns the problems found by the clean run."""
    window = Window(args.start, args.months)
    port = free_port()
    env = subprocess_env(write_config(folder, args, url, port), Path(__file__).parent)
    luigid = Luigid(folder, port, env | {"LUIGI_CONFIG_PATH": str(folder / "luigid.cfg")})
    runs = commands(args, window)
    scopes = ["monthly" if n % 2 == 0 else "daily" for n in range(args.processes)]
    fleet = Fleet([Slot(n, runs[s], s) for n, s in enumerate(scopes)], env, folder, log)
    ledger = gk.open_ledger(url)
    try:
        with ledger.transaction():
            for statement in TABLES:
                ledger.execute(statement)
        gaps = gap_reader(ledger, window)
        luigid.start()
        nemesis = Nemesis(
            args.faults, random.Random(args.seed), fleet, luigid, args.db_restart_cmd, log
        )
        run_faults(args.minutes, fleet, nemesis, gaps)
        log("settle", seconds=args.lease_seconds + 2, due_gaps=gaps("monthly"))
        time.sleep(args.lease_seconds + 2)  # every lease a killed attempt held runs out
        luigid.kill()  # a fresh luigid: the old one lists the killed workers' tasks RUNNING
        (folder / "luigid.pickle").unlink(missing_ok=True)
        luigid.start()
        return clean_run(runs["monthly"], env, folder, gaps, log)
    finally:
        fleet.stop()
        ledger.close()
        luigid.kill()


def run_faults(minutes: float, fleet: Fleet, nemesis: Nemesis, gaps: Any) -> None:
    """Start the fleet, restart what exits and let the nemesis act for ``minutes``; then
    resume what is stopped and kill every process."""
    for slot in fleet.slots:
        fleet.start(slot)
    deadline = time.monotonic() + minutes * 60
    look_at = time.monotonic() + 5
    while time.monotonic() < deadline:
        fleet.reap(gaps, restart=True)
        nemesis.tick()
        if look_at and time.monotonic() >= look_at:
            look_at = 0 if gaps("monthly") == 0 else time.monotonic() + 5
            if not look_at:
                fleet.log("window_filled")
                print("soak: the window is filled; the faults now find nothing in flight")
        time.sleep(0.2)
    nemesis.resume_all()
    fleet.reap(gaps, restart=False)
    fleet.stop(gaps)


def clean_run(
    command: list[str], env: dict[str, str], folder: Path, gaps: Any, log: JsonLog
) -> list[str]:
    """One ``luigi`` process, no faults, no injected failures: must exit 0 with no gap left."""
    quiet = ["--soak-fail-rate", "0", "--soak-slow-rate", "0"]
    with (folder / "luigi-clean.log").open("ab") as out:
        process = subprocess.Popen(
            [*command, *quiet],
            cwd=folder,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            code = process.wait(timeout=900)
        except subprocess.TimeoutExpired:
            kill_group(process.pid)
            code = process.wait()
    left = gaps("monthly")
    log("clean_run", code=code, due_gaps=left)
    if code == 0 and left == 0:
        return []
    return [f"the clean run exited {code} with {left} due gaps left (see luigi-clean.log)"]


def verdict(url: str, folder: Path, problems: list[str], log: JsonLog) -> int:
    """Counts, the pipeline's tables and ``gatekeeper verify``: 0 when nothing is wrong."""
    with gk.open_ledger(url) as ledger:
        figures = counts(ledger, log.records, folder)
        problems += table_violations(ledger)
    code, violations = run_verify(url)
    log("verify", code=code, violations=violations)
    if code != 0 or violations:
        problems.append(f"gatekeeper verify exited {code}: {len(violations)} violations")
    if figures["exit_0_with_due_gaps"]:
        problems.append(f"{figures['exit_0_with_due_gaps']} exits 0 with due gaps")
    log("summary", **figures, problems=problems)
    print_counts(figures)
    print(f"{'gatekeeper verify':>22}: exit {code}, {len(violations)} violations")
    for problem in problems:
        print(f"soak: VIOLATION: {problem}")
    print("soak: " + ("FAILED" if problems else "passed"))
    return 1 if problems else 0


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--ledger", help="ledger URL (default: a throwaway SQLite file)")
    parser.add_argument("--minutes", type=float, default=5, help="how long the faults go on")
    parser.add_argument("--processes", type=int, default=3, help="luigi processes (3)")
    parser.add_argument("--workers", type=int, default=2, help="--workers of each (2)")
    parser.add_argument(
        "--faults",
        default="kill,stop,luigid",
        help="some of kill,stop,db,luigid (kill,stop,luigid)",
    )
    parser.add_argument("--db-restart-cmd", help="shell command restarting the database (db)")
    parser.add_argument("--fail-rate", type=float, default=0.05, help="bodies that fail (0.05)")
    parser.add_argument("--slow-rate", type=float, default=0.05, help="bodies of 3-8 s (0.05)")
    parser.add_argument("--lease-seconds", type=float, default=10, help="the lease (10)")
    parser.add_argument("--start", default="2026-01", help="first month of the window")
    parser.add_argument("--months", type=int, default=3, help="months in the window (3)")
    parser.add_argument("--seed", type=int, help="the randomness (default: a random one)")
    parser.add_argument("--log", type=Path, help="JSON-lines log (default: soak-<seed>.jsonl)")
    parser.add_argument("--keep", type=Path, help="keep the processes' logs in this folder")
    args = parser.parse_args(argv)
    args.faults = [f for f in args.faults.split(",") if f]
    unknown = sorted(set(args.faults) - set(FAULTS))
    if unknown or not args.faults:
        parser.error(f"--faults: {unknown or 'none'}; choose from {','.join(FAULTS)}")
    if "db" in args.faults and not args.db_restart_cmd:
        parser.error("the db fault needs --db-restart-cmd: how your database restarts")
    if args.processes < 1 or args.months < 1 or args.minutes < 0:
        parser.error("--processes and --months must be >= 1, --minutes >= 0")
    late = window_past_today(args.start, args.months, dt.datetime.now(dt.timezone.utc).date())
    if late:
        parser.error(late)
    args.seed = random.randrange(2**31) if args.seed is None else args.seed
    args.log = args.log or Path(f"soak-{args.seed}.jsonl")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # stop what it started, then exit
    with tempfile.TemporaryDirectory(prefix="gk-soak-") as tmp:
        folder = args.keep or Path(tmp)
        folder.mkdir(parents=True, exist_ok=True)
        folder = folder.resolve()
        url = args.ledger or sqlite_url(folder / "soak.db")
        log = JsonLog(args.log)
        try:
            with gk.open_ledger(url) as ledger:
                where = ledger.describe()
            log(
                "begin",
                ledger=where,
                seed=args.seed,
                faults=args.faults,
                minutes=args.minutes,
                processes=args.processes,
                workers=args.workers,
                fail_rate=args.fail_rate,
                slow_rate=args.slow_rate,
                lease_seconds=args.lease_seconds,
            )
            print(f"soak: seed {args.seed}, {where}, log {args.log}", flush=True)
            problems = soak(args, folder, url, log)
            return verdict(url, folder, problems, log)
        finally:
            log.close()


if __name__ == "__main__":
    sys.exit(main())
