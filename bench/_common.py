"""Shared pieces of the range benchmarks: the task module they run, Luigi config, timing, tables.

Not a benchmark itself. ``range_plan.py`` and ``backfill.py`` import it from this folder (Python
puts a script's folder first on ``sys.path``).
"""

from __future__ import annotations

import os
import platform
import re
import sqlite3
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib.metadata import version
from pathlib import Path
from typing import Any

TASK_MODULE = "gk_bench_tasks"

# The trivial tasks both tools fill. Written into a temporary folder (with OUT baked in) and
# imported from there, in-process or by ``luigi --module gk_bench_tasks``.
TASK_SOURCE = '''\
"""Benchmark tasks written by bench/_common.py; deleted with their temporary folder."""

import os

import luigi

import gatekeeper as gk

OUT = {out!r}


class GkDaily(gk.BusinessDateTask):
    """Does nothing: complete once its attempt is recorded succeeded in the ledger."""

    def run(self):
        pass


class GkHourly(gk.BusinessHourTask):
    def run(self):
        pass


class LuigiDaily(luigi.Task):
    """Writes a tiny file; complete once the file exists."""

    date = luigi.DateParameter()

    def output(self):
        return luigi.LocalTarget(os.path.join(OUT, "daily", self.date.strftime("%Y-%m-%d.txt")))

    def run(self):
        with self.output().open("w") as out:
            out.write("ok\\n")


class LuigiHourly(luigi.Task):
    hour = luigi.DateHourParameter()

    def output(self):
        return luigi.LocalTarget(os.path.join(OUT, "hourly", self.hour.strftime("%Y-%m-%dT%H.txt")))

    def run(self):
        with self.output().open("w") as out:
            out.write("ok\\n")
'''

LUIGI_CFG = """\
[gatekeeper]
ledger_url = {url}
lateness = 0s
timezone = UTC

[core]
lock_pid_dir = {lock_dir}

[retcode]
{retcodes}
"""

# Luigi's exit codes as every bench's luigi.cfg sets them (Luigi's defaults are 0 for most).
RETCODES = {
    "already_running": 10,
    "missing_data": 20,
    "not_run": 25,
    "task_failed": 30,
    "scheduling_error": 35,
    "unhandled_exception": 40,
}


def retcode_name(code: int) -> str:
    """The [retcode] name of an exit code of a bench's ``luigi`` command (``0`` is success)."""
    names = [name for name, value in RETCODES.items() if value == code]
    return names[0] if names else ("success" if code == 0 else f"exit {code}")


def write_task_module(folder: Path, out: Path) -> str:
    """Write the benchmark task module into ``folder`` (luigi tasks write under ``out``).

    Returns the module name; ``folder`` must be on ``sys.path`` / PYTHONPATH to import it.
    """
    (folder / f"{TASK_MODULE}.py").write_text(TASK_SOURCE.format(out=str(out)))
    return TASK_MODULE


def sqlite_url(path: Path) -> str:
    """The ledger URL of a SQLite file: ``sqlite:////abs/path.db``."""
    return f"sqlite:///{path.resolve()}"


def write_luigi_config(folder: Path, ledger_url: str) -> Path:
    """Write ``folder/luigi.cfg``: the ledger, lateness 0s, UTC, non-zero exit codes and
    Luigi's process-lock pid files kept in ``folder`` (so nothing is left in /tmp/luigi)."""
    path = folder / "luigi.cfg"
    retcodes = "\n".join(f"{name} = {code}" for name, code in RETCODES.items())
    path.write_text(
        LUIGI_CFG.format(url=ledger_url, lock_dir=folder / "luigi-lock", retcodes=retcodes)
    )
    return path


def luigi_command(*args: str) -> list[str]:
    """The real ``luigi`` command installed beside this interpreter, with ``args``."""
    script = Path(sys.executable).parent / "luigi"
    if not script.exists():
        raise SystemExit(f"the luigi command is not installed at {script}")
    return [str(script), *args]


def subprocess_env(config: Path, module_dir: Path) -> dict[str, str]:
    """The environment of a ``luigi`` subprocess: its config file and the task module's folder."""
    env = {k: v for k, v in os.environ.items() if k != "GATEKEEPER_LEDGER_URL"}
    env["LUIGI_CONFIG_PATH"] = str(config)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(module_dir), env.get("PYTHONPATH")]))
    return env


def environment_line() -> str:
    """Python, luigi and SQLite versions, CPUs, load average and platform, on one line."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
    return (
        f"Python {platform.python_version()}, luigi {version('luigi')}, "
        f"gatekeeper {version('luigi-gatekeeper')}, SQLite {sqlite3.sqlite_version}, "
        f"{os.cpu_count()} CPUs (load average {load}), {platform.platform()}"
    )


def load_line(when: str) -> str:
    """``load average (1, 5, 15 min) <when>: a, b, c`` for the lines printed around a bench."""
    return f"load average (1, 5, 15 min) {when}: " + ", ".join(f"{x:.2f}" for x in os.getloadavg())


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port nobody listens on at the moment on ``host`` (the kernel's pick)."""
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def alternating_ms(
    calls: dict[str, Callable[[], Any]],
    runs: int,
    before: dict[str, Callable[[], None]] | None = None,
) -> tuple[dict[str, float], dict[str, list[Any]]]:
    """Median wall time in milliseconds of each of ``calls``, timed round by round.

    One untimed warm-up round, then ``runs`` rounds each running every call once in turn
    (A, B, C, A, B, C, ...), so a change of load hits every tool alike. ``before[name]()`` runs
    untimed before each run of ``name``. Returns the medians and, per call, the results of
    every run (warm-up first) so the caller can check what each timed run produced.
    """
    before = before or {}
    times: dict[str, list[float]] = {name: [] for name in calls}
    results: dict[str, list[Any]] = {name: [] for name in calls}
    for round_ in range(runs + 1):
        for name, run in calls.items():
            before.get(name, lambda: None)()
            began = time.perf_counter()
            results[name].append(run())
            if round_:
                times[name].append(time.perf_counter() - began)
    return {name: statistics.median(t) * 1000 for name, t in times.items()}, results


def median_ms(
    run: Callable[[], Any], runs: int, before: Callable[[], None] = lambda: None
) -> tuple[float, Any]:
    """Median wall time of ``run()`` over ``runs`` timed runs, in milliseconds.

    ``before()`` runs untimed before each run; one untimed warm-up run comes first, and its
    result is returned with the median so the caller can check what was measured.
    """
    before()
    result = run()
    times = []
    for _ in range(runs):
        before()
        began = time.perf_counter()
        run()
        times.append(time.perf_counter() - began)
    return statistics.median(times) * 1000, result


def print_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """Print ``rows`` under ``header``: first column left-aligned, the others right-aligned."""
    widths = [max(len(h), *(len(row[i]) for row in rows)) for i, h in enumerate(header)]

    def line(cells: Sequence[str]) -> str:
        first, *rest = (
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(cells, widths, strict=True))
        )
        return "  ".join([first, *rest])

    print(line(header))
    for row in rows:
        print(line(row))


def ledger_floor(days: int, folder: Path) -> float:
    """Seconds the bare SQL of a fill's ledger work takes on a raw ``sqlite3`` connection.

    After the planning SELECT, per date: one read (the period's latest attempt, as a period's
    ``complete()`` asks before it runs) and the attempt's two write transactions
    (``BEGIN IMMEDIATE``; INSERT ``running``; ``COMMIT``, then the same with the UPDATE to
    ``succeeded``), on a gatekeeper ledger file opened with the ledger's own pragmas
    (``gatekeeper/ledger/sqlite.py``: busy timeout, WAL, ``synchronous=FULL``, foreign
    keys). The floor every fill figure is printed beside: no Luigi, no gatekeeper Python.
    Checks that every date ends with one succeeded attempt (raises SystemExit otherwise)."""
    import datetime as dt

    import gatekeeper as gk

    path = folder / f"floor-{days}.db"
    gk.open_ledger(sqlite_url(path)).close()  # the schema, as a fill finds it
    conn = sqlite3.connect(path, timeout=30.0, isolation_level=None)
    for pragma in FLOOR_PRAGMAS:
        conn.execute(pragma)
    check_floor_pragmas(conn, path)
    first = dt.date(2016, 1, 1)
    keys = [str(first + dt.timedelta(days=n)) for n in range(days)]
    began = time.perf_counter()
    conn.execute(
        "SELECT period FROM gk_attempts WHERE job = ? AND state = 'succeeded'", ("GkDaily",)
    ).fetchall()
    for n, key in enumerate(keys):
        conn.execute(
            "SELECT attempt, state FROM gk_attempts WHERE job = ? AND period = ? "
            "ORDER BY attempt DESC LIMIT 1",
            ("GkDaily", key),
        ).fetchall()
        now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="microseconds")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at,"
            " updated_at, lease_expires_at) VALUES (?, ?, 1, ?, 'running', ?, ?, ?)",
            ("GkDaily", key, f"run-{n}", now, now, now),
        )
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "UPDATE gk_attempts SET state = 'succeeded', updated_at = ? WHERE job = ? "
            "AND period = ? AND attempt = 1",
            (now, "GkDaily", key),
        )
        conn.execute("COMMIT")
    took = time.perf_counter() - began
    (done,) = conn.execute(
        "SELECT count(*) FROM gk_attempts WHERE job = 'GkDaily' AND state = 'succeeded'"
    ).fetchone()
    conn.close()
    if done != days:
        raise SystemExit(f"floor: {done} succeeded attempts for {days} dates")
    return took


#: The pragmas gatekeeper's SQLite dialect sets on every connection (ledger/sqlite.py).
FLOOR_PRAGMAS = (
    "PRAGMA busy_timeout = 30000",
    "PRAGMA journal_mode = WAL",
    "PRAGMA synchronous = FULL",
    "PRAGMA foreign_keys = ON",
)


def check_floor_pragmas(conn: sqlite3.Connection, path: Path) -> None:
    """Raise SystemExit unless ``conn`` has the journal mode, ``synchronous`` and foreign-key
    setting of a connection gatekeeper's SQLite dialect opens on ``path``."""
    from gatekeeper.ledger.sqlite import SqliteDialect

    ledgers = SqliteDialect(str(path)).connect(30.0)
    try:
        for name in ("journal_mode", "synchronous", "foreign_keys"):
            floor, ledger = (c.execute(f"PRAGMA {name}").fetchone() for c in (conn, ledgers))
            if floor != ledger:
                raise SystemExit(f"floor: PRAGMA {name} is {floor}, the ledger's is {ledger}")
    finally:
        ledgers.close()


def runs_option(parser: Any, argv: list[str] | None, default: int) -> Any:
    """Add ``--runs`` (timed rounds, median; at least 1) to ``parser`` and parse ``argv``."""
    parser.add_argument("--runs", type=int, default=default, help="timed rounds (median)")
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error("--runs must be >= 1")
    return args


@contextmanager
def serve_process(url: str, window: str, env: dict[str, str]) -> Iterator[tuple[str, int]]:
    """The real ``gatekeeper serve --window WINDOW`` over ``url`` on a free port, started with
    ``env``: its base URL (no trailing slash) and pid; stopped on exit."""
    server = subprocess.Popen(
        [sys.executable, "-m", "gatekeeper.cli", "serve", "--ledger", url, "--port", "0"]
        + ["--window", window],
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stderr is not None
        line = server.stderr.readline()
        found = re.search(r"(http://\S+/) ", line)
        if not found:
            raise SystemExit(f"gatekeeper serve did not start: {line}")
        yield found.group(1).rstrip("/"), server.pid
    finally:
        server.terminate()
        server.wait(timeout=30)
