"""The ``luigi`` command run in a child forked from the test process, as a new process runs it.

A forked child is a process: its own pid, file descriptors and exit status, Luigi's
``--workers N`` forking from it as from the command, its output read from its own stdout and
stderr. What it skips is what every new process pays before it does anything: the interpreter
starting and importing Luigi and gatekeeper, about 0.4 s of CPU (a fork costs milliseconds).

What the test process holds that a new process would not is dropped in the child before the
command starts: every module outside the installed libraries and the gatekeeper package (the
tests' and the examples' modules: ``--module`` imports its module afresh, as the command does)
and the task classes they registered with Luigi; Luigi's configuration (read anew from the
``luigi.cfg`` the command finds and ``$LUIGI_CONFIG_PATH``), instance cache, command-line
parser and logging; gatekeeper's per-process memory (``PROCESS_STATE``; a test fails if a new
one is not listed there or in ``PER_PID``); the exit handlers (the child runs only those the
command registers, at its exit). Its working directory, environment and ``sys.argv`` are the
command's.

Where the process is what a test checks (start-up imports, signals sent to it, a fleet of
them, luigi.cfg found on the disk by a new interpreter), ``luigi_support.run_luigi(...,
process=True)`` starts the real command.
"""

from __future__ import annotations

import atexit
import os
import signal
import subprocess
import sys
import sysconfig
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NoReturn

import gatekeeper

#: gatekeeper's per-process memory, emptied in the child: (module, attribute)
PROCESS_STATE = (
    ("gatekeeper.luigi.first_run", "_said"),
    ("gatekeeper.luigi.fill.watch", "_atexit_registered"),
    ("gatekeeper.luigi.fill.channel", "_channels"),
    ("gatekeeper.luigi.fill.policy", "_said"),
    ("gatekeeper.luigi.fill.policy", "_config"),
    ("gatekeeper.luigi.own_schedule", "_recorded"),
    ("gatekeeper.luigi.config", "_checked"),
    ("gatekeeper.luigi.calendar_config", "_calendars"),
    ("gatekeeper.luigi.param_cache", "_defaults"),
)
#: module-level memory a forked child need not empty: (module, attribute) -> why
PER_PID = {
    ("gatekeeper.integrations.lineage.delivery", "_deliveries"): "keyed by pid",
    ("gatekeeper.integrations.lineage.delivery", "_finalized"): "holds pids",
    ("gatekeeper.luigi.lease", "_connections"): "keyed by (pid, URL)",
    ("gatekeeper.luigi.lease", "_service"): "its heartbeat service names its pid",
    ("gatekeeper.luigi.tasks", "_ledgers"): "keyed by (pid, URL)",
    ("gatekeeper.core.periods.calendars", "_imported"): "rebuilt when its module is imported anew",
    ("gatekeeper.core.periods.business", "_kinds"): "keyed by calendar object: pure values",
    ("gatekeeper.luigi.compat.internals", "PROBES"): "Luigi's internals, registered at import",
}

_LIBRARIES = tuple(
    str(Path(p).resolve()) + os.sep
    for p in {
        sysconfig.get_paths()["stdlib"],
        sysconfig.get_paths()["purelib"],
        sysconfig.get_paths()["platlib"],
        sys.prefix,
        sys.base_prefix,
    }
) + (str(Path(gatekeeper.__file__).resolve().parent) + os.sep,)


def run_forked(
    call: Callable[[], object],
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout: float = 120,
) -> subprocess.CompletedProcess[str]:
    """``call()`` in a forked child as the process ``argv`` would run it (module docstring):
    its exit status, stdout and stderr; raises ``subprocess.TimeoutExpired`` (the child killed)
    past ``timeout`` seconds."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        sys.stdout.flush()
        sys.stderr.flush()
        pid = os.fork()
        if pid == 0:
            _child(call, argv, cwd, env, out.fileno(), err.fileno())
        code = _wait(pid, timeout, argv)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(
            list(argv),
            code,
            out.read().decode(errors="replace"),
            err.read().decode(errors="replace"),
        )


def _wait(pid: int, timeout: float, argv: Sequence[str]) -> int:
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            raise subprocess.TimeoutExpired(list(argv), timeout)
        time.sleep(0.005)


def _child(
    call: Callable[[], object],
    argv: Sequence[str],
    cwd: Path,
    env: dict[str, str],
    out_fd: int,
    err_fd: int,
) -> NoReturn:
    """The child: never returns into the test process (``os._exit``)."""
    code = 1
    try:
        _streams(out_fd, err_fd)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.argv = list(argv)
        extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
        sys.path[:0] = [p for p in extra if p not in sys.path]
        _forget_the_test_process()
        _exit_handlers_of_a_new_process()
        try:
            call()
            code = 0
        except SystemExit as exc:
            code = _exit_status(exc.code)
        except BaseException:
            traceback.print_exc()
            code = 1
        threading._shutdown()  # type: ignore[attr-defined] # as the interpreter exits: joins
        atexit._run_exitfuncs()  # the threads that are not daemons, then the exit handlers
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def _exit_handlers_of_a_new_process() -> None:
    """Only the exit handlers a new process would have by now: those the libraries it imported
    register at import (logging's, then multiprocessing's, which runs its finalizers: Luigi's
    worker processes and gatekeeper's lineage delivery close there), not the test process's."""
    import logging

    atexit._clear()
    atexit.register(logging.shutdown)
    if "multiprocessing.util" in sys.modules:
        atexit.register(sys.modules["multiprocessing.util"]._exit_function)


def _streams(out_fd: int, err_fd: int) -> None:
    """Standard input from /dev/null, output and error to the files the parent reads, as
    Python sets them up for a new process writing to files (stderr line-buffered)."""
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    sys.stdin = sys.__stdin__ = open(0, closefd=False)  # noqa: SIM115 - the process's own
    sys.stdout = sys.__stdout__ = open(1, "w", closefd=False)  # noqa: SIM115
    sys.stderr = sys.__stderr__ = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115


def _exit_status(code: object) -> int:
    """The status the interpreter exits with for ``SystemExit(code)``."""
    if code is None or isinstance(code, int):
        return int(code or 0)
    print(code, file=sys.stderr)
    return 1


def _forget_the_test_process() -> None:
    """Drop what the test process holds that a new process would not (module docstring)."""
    import logging

    import luigi.configuration
    from luigi.cmdline_parser import CmdlineParser
    from luigi.configuration.cfg_parser import LuigiConfigParser
    from luigi.setup_logging import InterfaceLogging
    from luigi.task_register import Register

    for name, module in list(sys.modules.items()):
        where = getattr(module, "__file__", None)
        if where and not str(Path(where).resolve()).startswith(_LIBRARIES):
            del sys.modules[name]
    Register._reg = [cls for cls in Register._reg if cls.__module__ in sys.modules]
    Register.clear_instance_cache()
    CmdlineParser._instance = None
    for module_name, attribute in PROCESS_STATE:  # not imported yet: nothing held
        if module_name in sys.modules:
            getattr(sys.modules[module_name], attribute).clear()
    if "gatekeeper.luigi.config" in sys.modules:
        sys.modules["gatekeeper.luigi.config"]._cached = None
    if "gatekeeper.core.periods.registry" in sys.modules:  # no named calendars until a
        sys.modules["gatekeeper.core.periods.registry"].DEFINED.use(None)  # class binds one
    if os.environ.get("LUIGI_CONFIG_PATH"):
        LuigiConfigParser._config_paths.append(os.environ["LUIGI_CONFIG_PATH"])
    LuigiConfigParser._instance = None
    luigi.configuration.get_config()
    for found in [logging.getLogger(), *logging.Logger.manager.loggerDict.values()]:
        if isinstance(found, logging.Logger):
            found.handlers[:] = []
            found.setLevel(logging.WARNING if found is logging.getLogger() else logging.NOTSET)
            found.propagate, found.disabled = True, False
    InterfaceLogging._configured = False
