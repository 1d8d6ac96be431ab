"""A fill under a real ``luigid``: gatekeeper's RangeBusinessDaily vs luigi's RangeDaily.

Fills ``--days`` trivial dates (default 1,000) from 2016-01-01 with each tool, alternating,
``--runs`` times each (median), in three set-ups:

- (a) contiguous, 1 worker process with ``--workers 1``, on luigid (target: gatekeeper at least
  3x faster than luigi);
- (b) forward, 2 worker processes started together, each with ``--workers 2 --no-lock``, on
  luigid (target: at least 4x); luigi's RangeDaily has no strategy and runs as it always does;
- (c) both again with ``--local-scheduler`` instead of luigid, for comparison (two local
  schedulers do not share work: luigi's two processes may both write a date's file, while
  gatekeeper's leases still run each date once).

Every timed run gets a fresh temporary folder (new SQLite ledger, new output folder, new
luigi.cfg) and, on luigid, a fresh ``luigid`` on a free loopback port (started and stopped
outside the timing; luigid keeps finished tasks, which would make a second run skip them).
Wall clock from starting the worker processes until the last exits, process start-up
included. Both tools run with Luigi's real exit codes (the bench's luigi.cfg sets every
[retcode]; nothing is overridden to 0): a lone process must exit 0; each of two processes
sharing a fill 0, ``already_running`` (its peer ran some of the tasks) or ``not_run`` (luigid
gave its peer the range's root); any other code (``missing_data``, ``task_failed``,
``scheduling_error``, ...) stops the script. Then, untimed, the same command once more as a
lone process must exit 0: Luigi's own verdict that the fill is complete. After each run every
date must be complete (gatekeeper: one succeeded attempt per date and nothing else; luigi:
one file per date), and on luigid its task list must show every gatekeeper date DONE (inline
periods are reported to luigid). Prints the load average before and after, medians, runs and
ratios, and the floor. Not a test.

    python bench/luigid_fill.py                       # 1,000 dates, 3 runs each (minutes)
    python bench/luigid_fill.py --days 200 --runs 1
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path

from _common import (
    RETCODES,
    TASK_MODULE,
    environment_line,
    free_port,
    ledger_floor,
    load_line,
    luigi_command,
    print_table,
    retcode_name,
    sqlite_url,
    subprocess_env,
    write_luigi_config,
    write_task_module,
)
from backfill import Backfill, verify_files, verify_ledger

HOST = "127.0.0.1"
TARGETS = {"a": 3.0, "b": 4.0}


def complete_codes(processes: int) -> set[int]:
    """The exit codes a process may give when the fill it took part in is complete: 0 alone;
    with a peer sharing the fill also ``already_running`` (tasks the peer ran) and
    ``not_run`` (tasks luigid gave the peer)."""
    if processes == 1:
        return {0}
    return {0, RETCODES["already_running"], RETCODES["not_run"]}


@dataclass(frozen=True)
class Setup:
    """One way of running both tools: processes x --workers, strategy, scheduler."""

    name: str
    processes: int
    workers: int
    strategy: str
    luigid: bool

    def scheduler_args(self, port: int | None) -> list[str]:
        if not self.luigid:
            return ["--local-scheduler"]
        return ["--scheduler-host", HOST, "--scheduler-port", str(port)]

    def worker_args(self) -> list[str]:
        if self.processes == 1:
            return ["--workers", str(self.workers)]
        return ["--workers", str(self.workers), "--no-lock"]


SETUPS = (
    Setup("a", 1, 1, "contiguous", True),
    Setup("b", 2, 2, "forward", True),
    Setup("a local", 1, 1, "contiguous", False),
    Setup("b local", 2, 2, "forward", False),
)


def tool_args(tool: str, setup: Setup, fill: Backfill, port: int | None) -> list[str]:
    common = [
        *Backfill(fill.days, None).common()[:-1],
        *setup.scheduler_args(port),
        *setup.worker_args(),
    ]
    if fill.log_level is not None:
        common += ["--log-level", fill.log_level]
    if tool == "gatekeeper":
        return [
            "RangeBusinessDaily",
            "--of",
            "GkDaily",
            "--strategy",
            setup.strategy,
            "--no-progress",
            *common,
        ]
    return [
        "RangeDaily",
        "--of",
        "LuigiDaily",
        "--days-back",
        str(max(5000, fill.days + 2)),
        *common,
    ]


class Luigid:
    """A ``luigid`` on a free loopback port in ``folder``; ``stop()`` ends it.

    The port is free when picked; should another process take it before luigid binds it, this
    luigid exits and a new port is tried (up to 3); a server answering on the port while our
    luigid has exited is never taken for ours."""

    def __init__(self, folder: Path):
        logs = folder / "luigid-logs"
        logs.mkdir()
        for _ in range(3):
            self.port = free_port(HOST)
            if self._start(folder, logs):
                return
        raise SystemExit("luigid did not start on any of 3 free ports")

    def _start(self, folder: Path, logs: Path) -> bool:
        script = Path(sys.executable).parent / "luigid"
        self.process = subprocess.Popen(
            [
                str(script),
                "--address",
                HOST,
                "--port",
                str(self.port),
                "--state-path",
                str(folder / "luigid.pickle"),
                "--logdir",
                str(logs),
            ],
            cwd=folder,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 30
        while self.process.poll() is None:
            try:
                self.rpc("task_list")
            except OSError:
                if time.monotonic() > deadline:
                    self.stop()
                    raise SystemExit("luigid did not answer within 30 s") from None
                time.sleep(0.1)
                continue
            if self.process.poll() is None:  # the answer came from our luigid
                return True
        self.process.wait()
        return False

    def rpc(self, method: str, **arguments: object) -> dict:
        query = urllib.parse.urlencode({"data": json.dumps(arguments)})
        url = f"http://{HOST}:{self.port}/api/{method}?{query}"
        with urllib.request.urlopen(url, timeout=30) as page:
            return json.loads(page.read())["response"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


def verify_luigid(server: Luigid, fill: Backfill) -> None:
    """Every gatekeeper date is DONE in luigid's task list; raises SystemExit otherwise."""
    listed = server.rpc("task_list", status="DONE", search="GkDaily")
    dates = sorted(
        task["params"]["business_date"] for task in listed.values() if task["name"] == "GkDaily"
    )
    if dates != fill.dates():
        raise SystemExit(f"luigid lists {len(dates)} GkDaily dates DONE of {fill.days}")


def run_once(tool: str, setup: Setup, fill: Backfill) -> float:
    """One verified run of ``tool`` in ``setup``; returns wall seconds."""
    with tempfile.TemporaryDirectory(prefix=f"gk-bench-luigid-{tool}-") as tmp:
        folder = Path(tmp)
        write_task_module(folder, folder / "out")
        config = write_luigi_config(folder, sqlite_url(folder / "ledger.db"))
        server = Luigid(folder) if setup.luigid else None
        try:
            took = _timed(folder, config, tool, setup, fill, server)
            _complete_again(folder, config, tool, setup, fill, server)
            if server is not None and tool == "gatekeeper":
                verify_luigid(server, fill)
        finally:
            if server is not None:
                server.stop()
        (verify_ledger if tool == "gatekeeper" else verify_files)(folder, fill)
    return took


def _timed(
    folder: Path, config: Path, tool: str, setup: Setup, fill: Backfill, server: Luigid | None
) -> float:
    command = luigi_command(
        "--module", TASK_MODULE, *tool_args(tool, setup, fill, server and server.port)
    )
    logs = [folder / f"worker-{n}.log" for n in range(setup.processes)]
    began = time.perf_counter()
    processes = []
    for log in logs:
        with log.open("w") as output:
            processes.append(
                subprocess.Popen(
                    command,
                    cwd=folder,
                    env=subprocess_env(config, folder),
                    stdout=output,
                    stderr=subprocess.STDOUT,
                )
            )
    codes = [process.wait() for process in processes]
    took = time.perf_counter() - began
    for code, log in zip(codes, logs, strict=True):
        if code not in complete_codes(setup.processes):
            tail = "\n".join(log.read_text().splitlines()[-30:])
            raise SystemExit(
                f"{tool} ({setup.name}): luigi exited {code} ({retcode_name(code)}), not what "
                f"a complete fill gives {sorted(complete_codes(setup.processes))}:\n{tail}"
            )
    return took


def _complete_again(
    folder: Path, config: Path, tool: str, setup: Setup, fill: Backfill, server: Luigid | None
) -> None:
    """Untimed: the same command as a lone process must now exit 0 (Luigi finds it complete)."""
    lone = Setup(setup.name, 1, 1, setup.strategy, setup.luigid)
    port = server.port if server is not None else None
    command = luigi_command("--module", TASK_MODULE, *tool_args(tool, lone, fill, port))
    done = subprocess.run(
        command,
        cwd=folder,
        env=subprocess_env(config, folder),
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = "\n".join((done.stdout + done.stderr).splitlines()[-30:])
        raise SystemExit(
            f"{tool} ({setup.name}): re-run after the fill exited {done.returncode} "
            f"({retcode_name(done.returncode)}), not 0:\n{tail}"
        )


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3, help="runs per tool and set-up (median)")
    parser.add_argument(
        "--days", type=int, default=1000, help="dates to fill from 2016-01-01 (default %(default)s)"
    )
    parser.add_argument(
        "--setups",
        default=",".join(s.name for s in SETUPS),
        help="comma-separated set-ups to run (default: all)",
    )
    parser.add_argument(
        "--log-level",
        choices=("DEBUG", "INFO", "WARNING", "ERROR"),
        help="passed to every luigi command (default: Luigi's, DEBUG)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.days < 1:
        parser.error("--runs and --days must be >= 1")
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    fill = Backfill(args.days, args.log_level)
    wanted = set(args.setups.split(","))
    setups = [s for s in SETUPS if s.name in wanted]
    print(environment_line())
    print(load_line("before"))
    print(f"{fill.days:,} dates from 2016-01-01, {args.runs} run(s) per tool and set-up")
    for setup in setups:
        for tool in ("gatekeeper", "luigi"):
            shown = " ".join(
                luigi_command("--module", TASK_MODULE, *tool_args(tool, setup, fill, 0))
            )
            print(f"  ({setup.name}) {setup.processes} x {tool}: {shown}")
    times = {(s.name, t): [] for s in setups for t in ("gatekeeper", "luigi")}
    for run in range(args.runs):
        for setup in setups:
            for tool in ("gatekeeper", "luigi"):  # alternate: slow drifts hit both
                times[(setup.name, tool)].append(run_once(tool, setup, fill))
                print(
                    f"  run {run + 1}/{args.runs} ({setup.name}) {tool}: "
                    f"{times[(setup.name, tool)][-1]:.2f} s (verified)",
                    file=sys.stderr,
                    flush=True,
                )
    print()
    rows = []
    for setup in setups:
        gk = statistics.median(times[(setup.name, "gatekeeper")])
        lu = statistics.median(times[(setup.name, "luigi")])
        target = TARGETS.get(setup.name)
        verdict = (
            ""
            if target is None
            else (f" (target >= {target:g}x: {'met' if lu / gk >= target else 'MISSED'})")
        )
        rows.append(
            (
                f"({setup.name}) {setup.strategy}, {setup.processes}x--workers {setup.workers}, "
                f"{'luigid' if setup.luigid else 'local'}",
                f"{gk:.2f}",
                f"{lu:.2f}",
                f"{lu / gk:.2f}x{verdict}",
                " ".join(f"{t:.2f}" for t in times[(setup.name, "gatekeeper")]),
                " ".join(f"{t:.2f}" for t in times[(setup.name, "luigi")]),
            )
        )
    print_table(
        ("set-up", "gatekeeper s", "luigi s", "luigi/gatekeeper", "gk runs", "luigi runs"), rows
    )
    with tempfile.TemporaryDirectory() as folder:
        floor = ledger_floor(fill.days, Path(folder))
    print(
        f"\nfloor: the bare SQL of the fill's ledger work on a raw sqlite3 connection "
        f"({fill.days:,} x 2 write transactions): {floor:.2f} s"
    )
    print(load_line("after"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
