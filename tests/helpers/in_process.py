"""A command run in this process as a fresh process would run it: the ``gatekeeper`` command
(``gatekeeper.cli.main``).

What a new process starts without, the command gets here too, and whatever it changes is put
back afterwards: the working directory and the environment (``cwd``, ``env``); Luigi's
process-wide configuration, read anew from the ``luigi.cfg`` in ``cwd`` and
``$LUIGI_CONFIG_PATH`` as Luigi reads them at start-up; Luigi's instance cache and logging set-up;
the loggers' handlers (a command's warnings reach its own stderr, as Python's last-resort
handler prints them in a process without logging configured); the ledgers tasks share. Its
standard output and error are captured and its exit code returned, in the
``subprocess.CompletedProcess`` a subprocess gives, so a test reads the same either way.

A process costs about 0.4 s of CPU (the interpreter, then importing Luigi); this costs
milliseconds. Tests whose subject is the process itself (start-up imports, exit codes as the
shell sees them, closed pipes, signals, console scripts, luigid fleets, faults) start one
(``tests/helpers/cli.py``, ``luigi_support.run_luigi``).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import luigi.configuration
from luigi.configuration.cfg_parser import LuigiConfigParser
from luigi.task_register import Register

from tests.helpers.luigi_support import close_shared_ledgers

Completed = subprocess.CompletedProcess


@contextlib.contextmanager
def _environment(cwd: Path | None, env: dict[str, str] | None) -> Iterator[None]:
    """``cwd`` and ``env`` in force, and ``$PYTHONPATH``'s folders first on ``sys.path``."""
    saved_env, saved_cwd, saved_path = dict(os.environ), os.getcwd(), sys.path[:]
    if env is not None:
        os.environ.clear()
        os.environ.update(env)
    if cwd is not None:
        os.chdir(cwd)
    extra = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    sys.path[:0] = [p for p in extra if p not in sys.path]
    try:
        yield
    finally:
        sys.path[:] = saved_path
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


@contextlib.contextmanager
def _fresh_luigi_config() -> Iterator[None]:
    """Luigi's configuration as a new process reads it: the config files (a relative
    ``luigi.cfg`` found in the working directory) and ``$LUIGI_CONFIG_PATH``."""
    saved_instance, saved_paths = LuigiConfigParser._instance, list(LuigiConfigParser._config_paths)
    if os.environ.get("LUIGI_CONFIG_PATH"):
        LuigiConfigParser._config_paths.append(os.environ["LUIGI_CONFIG_PATH"])
    LuigiConfigParser._instance = None
    Register.clear_instance_cache()
    try:
        luigi.configuration.get_config()
        yield
    finally:
        LuigiConfigParser._instance = saved_instance
        LuigiConfigParser._config_paths[:] = saved_paths
        Register.clear_instance_cache()


@contextlib.contextmanager
def _fresh_logging() -> Iterator[None]:
    """No handler on any logger, as in a new process (Python's last-resort handler prints a
    warning to the current stderr), and Luigi's logging not yet set up; all put back after."""
    from luigi.setup_logging import InterfaceLogging

    loggers = [logging.getLogger()] + [
        found
        for found in logging.Logger.manager.loggerDict.values()
        if isinstance(found, logging.Logger)
    ]
    saved = [(lg, lg.handlers[:], lg.level, lg.propagate, lg.disabled) for lg in loggers]
    configured = InterfaceLogging._configured
    for lg in loggers:
        lg.handlers[:] = []
        lg.setLevel(logging.WARNING if lg is logging.getLogger() else logging.NOTSET)
        lg.propagate, lg.disabled = True, False
    InterfaceLogging._configured = False
    try:
        yield
    finally:
        InterfaceLogging._configured = configured
        for lg, handlers, level, propagate, disabled in saved:
            for handler in lg.handlers:
                if handler not in handlers:
                    handler.close()
            lg.handlers[:] = handlers
            lg.setLevel(level)
            lg.propagate, lg.disabled = propagate, disabled


def run_in_process(
    call: Callable[[], int | None],
    argv: Sequence[str],
    *,
    cwd: Path | None = None,
    env: dict[str, str] | None = None,
) -> Completed[str]:
    """``call()`` as a fresh process would run it (module docstring); its ``SystemExit`` is
    its exit code, as the interpreter makes it one."""
    out, err = io.StringIO(), io.StringIO()
    with _environment(cwd, env), _fresh_luigi_config(), _fresh_logging():
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = call()
            except SystemExit as exc:
                code = _exit_status(exc.code, err)
            finally:
                close_shared_ledgers()  # a process closes them at exit
    return Completed(list(argv), int(code or 0), out.getvalue(), err.getvalue())


def _exit_status(code: object, err: io.StringIO) -> int:
    """The status the interpreter exits with for ``SystemExit(code)``: a text is printed to
    stderr and gives 1."""
    if code is None or isinstance(code, int):
        return int(code or 0)
    print(code, file=err)
    return 1


def gatekeeper_in_process(
    *args: str, cwd: Path | None = None, env: dict[str, str] | None = None
) -> Completed[str]:
    """``gatekeeper ARGS`` through ``gatekeeper.cli.main``, as a fresh process runs it."""
    from gatekeeper.cli import main

    return run_in_process(lambda: main(list(args)), ["gatekeeper", *args], cwd=cwd, env=env)
