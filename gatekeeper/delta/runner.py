"""Where gatekeeper's Delta operations run: the one dispatcher of every deltalake call.

deltalake drives its I/O with a tokio runtime created in the process that first uses it, and a
forked copy of that process cannot use it (it panics: "Forked process detected"); nothing
resets it after a fork. Luigi forks one process per task with ``--workers N`` after its
scheduling already read the table (a completeness check), so the rule is: every Delta operation
gatekeeper performs is a module-level function with picklable arguments and results
(``table.py``, ``history.py``), called through ``run``. ``run`` calls it in this process,
unless this process is a fork of one where gatekeeper already used deltalake (the PID recorded
at that first use is not ours) or a call here panicked with "Forked process detected"
(deltalake was used before the fork by someone else); then it runs in a helper process started
with ``spawn`` (one per process, created when first needed, reused, shut down at exit). An
exception raised in the helper arrives as its own type (gatekeeper errors, deltalake errors).
"""

from __future__ import annotations

import importlib
import logging
import multiprocessing
import os
import pickle
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import util
from typing import Any, TypeVar

from gatekeeper.core.errors import GatekeeperError

T = TypeVar("T")
logger = logging.getLogger("luigi-interface.gatekeeper")

#: The PID of the process where gatekeeper first used deltalake (its runtime lives there).
_runtime_pid: int | None = None
#: The PID of a process where a call panicked because deltalake's runtime was forked.
_panicked_pid: int | None = None
#: (owner PID, executor) of the helper process; a forked child never uses its parent's.
_helper: tuple[int, ProcessPoolExecutor] | None = None


def delegating() -> bool:
    """True when this process runs Delta operations in the helper process (it is a fork of a
    process whose deltalake runtime was started)."""
    pid = os.getpid()
    return _panicked_pid == pid or (_runtime_pid is not None and _runtime_pid != pid)


def run(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` here, or in the helper process when this process is a fork of
    one that started deltalake's runtime (see the module docstring)."""
    global _runtime_pid, _panicked_pid
    if delegating():
        return in_helper(fn, *args, **kwargs)
    if _runtime_pid is None:
        _runtime_pid = os.getpid()
    try:
        return fn(*args, **kwargs)
    except BaseException as exc:  # pyo3's PanicException derives from BaseException
        if not is_fork_panic(exc):
            raise
        # the panic comes from the first runtime access of the call: nothing was done yet
        _panicked_pid = os.getpid()
    return in_helper(fn, *args, **kwargs)


def is_fork_panic(exc: BaseException) -> bool:
    """``exc`` is deltalake's panic at a runtime created by the process this one forked from."""
    return type(exc).__name__ == "PanicException" and "Forked process detected" in str(exc)


def in_helper(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in this process's helper process (started with ``spawn``)."""
    global _helper
    executor = _executor()
    try:
        return executor.submit(_call_carried, fn, args, kwargs).result()
    except _Carried as carried:
        raise carried.rebuild() from None
    except BrokenProcessPool:
        _helper = None  # the next call starts a new helper
        raise


def _executor() -> ProcessPoolExecutor:
    global _helper
    pid = os.getpid()
    if _helper is None or _helper[0] != pid:
        executor = ProcessPoolExecutor(
            max_workers=1, mp_context=multiprocessing.get_context("spawn")
        )
        _helper = (pid, executor)
        logger.info(
            "gatekeeper: process %d runs its Delta operations in a spawned helper "
            "process (deltalake's runtime was started by process %s before a fork)",
            pid,
            _runtime_pid if _panicked_pid != pid else "another",
        )
        # runs at interpreter exit and at the end of a multiprocessing child (Luigi's task
        # processes end with os._exit, after multiprocessing's finalizers): before the
        # finalizers of the executor's queues (priority 10), which would strand the helper
        util.Finalize(None, _shutdown, args=(pid, executor), exitpriority=100)
    return _helper[1]


def _shutdown(pid: int, executor: ProcessPoolExecutor) -> None:
    global _helper
    if os.getpid() == pid:
        executor.shutdown(wait=True, cancel_futures=True)
        if _helper is not None and _helper[1] is executor:
            _helper = None


class _Carried(Exception):
    """An exception of the helper that pickle cannot carry (deltalake's errors are classes of
    its native module): its class and message, rebuilt in the caller."""

    def rebuild(self) -> BaseException:
        module, name, message = self.args
        if module.split(".")[0] in ("deltalake", "_internal"):
            found = getattr(importlib.import_module("deltalake.exceptions"), name, None)
            if isinstance(found, type) and issubclass(found, BaseException):
                return found(message)
        return GatekeeperError(f"{module}.{name} in the Delta helper process: {message}")


def _call_carried(fn: Callable[..., T], args: tuple[Any, ...], kwargs: dict[str, Any]) -> T:
    """In the helper: ``fn``, its exception made picklable (else carried by class name)."""
    try:
        return fn(*args, **kwargs)
    except Exception as exc:
        try:
            pickle.loads(pickle.dumps(exc))
        except Exception:  # noqa: BLE001 - any failure to round-trip: carry it by name
            raise _Carried(type(exc).__module__, type(exc).__name__, str(exc)) from None
        raise
