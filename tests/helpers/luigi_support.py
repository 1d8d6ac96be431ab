"""Helpers for running Luigi against a test ledger: in-process config and the real command."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import luigi
import luigi.configuration
from luigi.task_register import Register

from gatekeeper.luigi import tasks

ROOT = Path(__file__).resolve().parents[2]


ConfigState = dict[str, dict[str, str]]


def config_state() -> ConfigState:
    """Luigi's process-wide configuration as it stands: every section's raw options."""
    cfg = luigi.configuration.get_config()
    return {section: dict(cfg._sections[section]) for section in cfg.sections()}


def restore_config(state: ConfigState) -> None:
    """Put Luigi's process-wide configuration back to ``state`` (from ``config_state``)."""
    cfg = luigi.configuration.get_config()
    for section in cfg.sections():
        if section not in state:
            cfg.remove_section(section)
    for section, options in state.items():
        if not cfg.has_section(section):
            cfg.add_section(section)
        for option in list(cfg._sections[section]):
            if option not in options:
                cfg.remove_option(section, option)
        cfg._sections[section].update(options)
    Register.clear_instance_cache()


def configure(options: dict[str, str]) -> Iterator[None]:
    """Set ``[gatekeeper]`` options in Luigi's live config, restoring them afterwards."""
    cfg = luigi.configuration.get_config()
    added = not cfg.has_section("gatekeeper")  # none in a folder without luigi.cfg
    if added:
        cfg.add_section("gatekeeper")
    saved = {k: cfg.get("gatekeeper", k, None) for k in options}
    for key, value in options.items():
        cfg.set("gatekeeper", key, value)
    Register.clear_instance_cache()
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                cfg.remove_option("gatekeeper", key)
            else:
                cfg.set("gatekeeper", key, value)
        if added and not cfg.options("gatekeeper"):
            cfg.remove_section("gatekeeper")
        Register.clear_instance_cache()
        close_shared_ledgers()


def close_shared_ledgers() -> None:
    for ledger in tasks._ledgers.values():
        ledger.close()
    tasks._ledgers.clear()


def build(*task_list: luigi.Task, workers: int = 1) -> Any:
    """luigi.build with the local scheduler; returns the LuigiRunResult."""
    Register.clear_instance_cache()
    return luigi.build(
        list(task_list),
        local_scheduler=True,
        detailed_summary=True,
        workers=workers,
        log_level="WARNING",
    )


#: Luigi's worker asks the scheduler for work every ``wait_interval`` (1 s) plus a random
#: ``wait_jitter`` of up to 5 s while it waits on tasks other workers run; the tests' workers
#: ask every 0.1 s without jitter (a fleet test took 99.5 s on Luigi's defaults, 64.3 s so).
#: One fleet case keeps Luigi's defaults (``luigi_polling=True``), so that a race the jitter
#: would show is still seen.
SHORT_POLLING = "wait_interval = 0.1\nwait_jitter = 0\n"


def write_config(
    folder: Path,
    ledger_url: str,
    lease_seconds: float = 300,
    *,
    keep_alive: bool = False,
    luigi_polling: bool = False,
) -> Path:
    """A luigi.cfg for subprocesses: the test ledger, a lease and non-zero exit codes; Luigi's
    process lock (one run of a command line at a time) kept in a folder of its own, so tests
    running in parallel (pytest-xdist) never see each other's runs; the worker polling short
    (``SHORT_POLLING``) unless ``luigi_polling``, and ``keep_alive`` as the README's recipe."""
    path = folder / "luigi.cfg"
    locks = tempfile.mkdtemp(prefix="luigi-locks-")
    worker = ("" if luigi_polling else SHORT_POLLING) + (
        "keep_alive = true\n" if keep_alive else ""
    )
    path.write_text(
        f"[gatekeeper]\nledger_url = {ledger_url}\nlease_seconds = {lease_seconds}\n"
        "[retcode]\nalready_running = 10\nmissing_data = 20\nnot_run = 25\n"
        "task_failed = 30\nscheduling_error = 35\nunhandled_exception = 40\n"
        f"[core]\nno_configure_logging = false\nlock_pid_dir = {locks}\n"
        + (f"[worker]\n{worker}" if worker else "")
    )
    return path


#: the lease of the worker a fault test needs alive (``live_config``)
LIVE_LEASE = 300.0


def live_config(cfg: Path) -> Path:
    """``cfg`` with a long lease (``LIVE_LEASE``), written beside it, for the worker a fault
    test needs alive: the short lease is the frozen or killed worker's, which must run out;
    the live one's must never run out, however loaded the machine (at a load average of 15
    a 3 s lease ran out before ``luigi`` had started its run)."""
    folder = cfg.parent / "live-worker"
    folder.mkdir(exist_ok=True)
    text = re.sub(
        r"^lease_seconds = .*$", f"lease_seconds = {LIVE_LEASE}", cfg.read_text(), flags=re.M
    )
    path = folder / "luigi.cfg"
    path.write_text(text)
    return path


def luigi_env(config_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "GATEKEEPER_LEDGER_URL"}
    env["LUIGI_CONFIG_PATH"] = str(config_path)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def inline_by_default() -> bool:
    """What ``[gatekeeper] inline`` is for the test run: ``$GATEKEEPER_INLINE`` (the
    ``fidelity_scheduled`` session sets it false), else true (write_config sets no value)."""
    from gatekeeper.core.validation import parse_flag

    return parse_flag(os.environ.get("GATEKEEPER_INLINE") or "true", "GATEKEEPER_INLINE")


def luigi_command(*args: str) -> list[str]:
    """The real `luigi` command installed beside this interpreter."""
    script = Path(sys.executable).parent / "luigi"
    if not script.exists():
        raise RuntimeError(f"the luigi command is not installed at {script}")
    return [str(script), *args]


def run_luigi(
    config_path: Path,
    *args: str,
    cwd: Path,
    timeout: float = 120,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``luigi ARGS --local-scheduler`` with ``config_path`` as its luigi.cfg (``run_command``)."""
    return run_command(
        luigi_command(*args, "--local-scheduler"),
        cwd=cwd,
        env=luigi_env(config_path),
        timeout=timeout,
        process=process,
    )


def run_command(
    command: list[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float = 120,
    process: bool = False,
) -> subprocess.CompletedProcess[str]:
    """The ``luigi`` command line ``command`` (``luigi_command``'s) in a child forked from this
    process (``tests/helpers/forked.py``: a process without the interpreter's start and
    imports), or as the real command when ``process``."""
    if process:
        return subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )
    from luigi.cmdline import luigi_run

    from tests.helpers.forked import run_forked

    return run_forked(lambda: luigi_run(command[1:]), command, cwd=cwd, env=env, timeout=timeout)


def failures_of(*task_list: luigi.Task) -> list[str]:
    """Run the tasks and return the messages of the exceptions their failures raised."""
    messages: list[str] = []

    def on_failure(task: luigi.Task, exc: BaseException) -> None:
        messages.append(f"{type(exc).__name__}: {exc}")

    luigi.Task.event_handler(luigi.Event.FAILURE)(on_failure)
    try:
        build(*task_list)
    finally:
        luigi.Task._event_callbacks[luigi.Task][luigi.Event.FAILURE].discard(on_failure)
    return messages
