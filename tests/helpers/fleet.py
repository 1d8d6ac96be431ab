"""Running the differential twins of tests/helpers/fleet_tasks.py: luigi's RangeDaily over
plain tasks beside RangeBusinessDaily over gatekeeper ones, locally or under a luigid."""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tests.helpers.luigi_support import luigi_command, luigi_env, write_config
from tests.helpers.luigid_support import HOST, Luigid

START, STOP = "2026-10-01", "2026-10-06"
DATES = ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04", "2026-10-05"]
BAD = "2026-10-03"
NOW = str(int(time.mktime((2026, 11, 1, 0, 0, 0, 0, 0, 0))))
KEEP_ALIVE = ("--worker-keep-alive",)
#: luigid retrying a failed task after 1 s (it looks at its failures when asked for work, as
#: the local scheduler does, instead of once a minute)
LUIGID_RETRY = "[scheduler]\nretry_delay = 1\nprune_on_get_work = true\n"
#: A retry delay longer than any run here: a worker without keep-alive never sees a retry,
#: however long its other tasks keep it alive (with 1 s, whether a failed task is offered
#: again before the worker leaves is a race, for Luigi's own tasks as for gatekeeper's).
LUIGID_NO_RETRY_IN_RUN = "[scheduler]\nretry_delay = 600\nprune_on_get_work = true\n"


# -- running the twins -------------------------------------------------------------------------
def range_args(
    twin: str, of: str, control: Path, *extra: str, start: str = START, stop: str = STOP
) -> list[str]:
    """The command line filling ``of`` from ``start`` to ``stop``: luigi's RangeDaily for the
    plain twin, RangeBusinessDaily for the gatekeeper one."""
    family = "RangeDaily" if twin == "plain" else "RangeBusinessDaily"
    window = ["--days-back", "100000"] if twin == "plain" else ["--now", NOW]
    return [
        "--module",
        "tests.helpers.fleet_tasks",
        family,
        "--of",
        of,
        "--of-params",
        json.dumps({"control": str(control)}),
        "--start",
        start,
        "--stop",
        stop,
        *window,
        *extra,
    ]


def scheduler_args(server: Luigid | None, retry_delay: float = 1) -> list[str]:
    if server is None:
        return ["--local-scheduler", "--scheduler-retry-delay", str(retry_delay)]
    return ["--scheduler-host", HOST, "--scheduler-port", str(server.port)]


def run(
    cfg: Path,
    cwd: Path,
    args: list[str],
    timeout: float = 60,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        luigi_command(*args, "--no-lock"),
        cwd=cwd,
        env=luigi_env(cfg),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def recipe_config(folder: Path, ledger_url: str, *, luigi_polling: bool = False) -> Path:
    """The test luigi.cfg with the README recipe's keep-alive (its [retcode] is already in);
    ``luigi_polling``: the worker polls on Luigi's defaults, not the tests' short ones."""
    return write_config(folder, ledger_url, keep_alive=True, luigi_polling=luigi_polling)


def start(
    cfg: Path,
    cwd: Path,
    args: list[str],
    count: int = 1,
) -> list[subprocess.Popen[str]]:
    """``count`` ``luigi`` processes of ``args`` (a whole command line), started at once."""
    return [
        subprocess.Popen(
            args,
            cwd=cwd,
            env=luigi_env(cfg),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for _ in range(count)
    ]


def start_forward_fill(
    cfg: Path,
    cwd: Path,
    control: Path,
    server: Luigid,
    count: int,
    window: tuple[str, str],
    task_limit: int,
) -> list[subprocess.Popen[str]]:
    """``count`` ``luigi`` processes started at once, each adding the same forward fill of the
    gatekeeper twin ``GkDay`` over ``window`` (start, stop; ``--workers 2``) to ``server``."""
    first, stop = window
    return start(
        cfg,
        cwd,
        luigi_command(
            *range_args(
                "gk",
                "GkDay",
                control,
                "--strategy",
                "forward",
                "--workers",
                "2",
                "--task-limit",
                str(task_limit),
                start=first,
                stop=stop,
            ),
            *scheduler_args(server),
            "--no-lock",
        ),
        count,
    )
