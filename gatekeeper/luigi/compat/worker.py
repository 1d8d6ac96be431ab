"""The Luigi worker running or scheduling a task, and what it tells the task it runs.

- **The reporter** a worker binds to a running task (``task.set_status_message`` and the
  other attributes of ``TaskProcess.forward_reporter_attributes``) carries the worker's
  scheduler client and id: ``worker_scheduler``, ``worker_id``, ``forwarded_attributes``.
- **The active worker**: ``Worker.__enter__``/``__exit__`` are wrapped (once, at import) to
  keep a per-thread stack of the workers inside their ``with`` block, each with the process
  it was entered in (``luigi.build`` and the ``luigi`` command both run their worker in one).
  ``scheduling_worker`` and ``running_worker`` read that stack; a task process Luigi forks
  (``--workers N``) inherits the stack of another process and so finds none. No stack frames
  are walked.
- **Worker and scheduler configuration** read through Luigi's own Config classes.
"""

from __future__ import annotations

import functools
import os
import threading
import weakref
from typing import Any

import luigi
import luigi.rpc
import luigi.scheduler
import luigi.worker

from gatekeeper.luigi.compat.internals import LuigiInternalMissing, probe, require

#: The attributes of luigi.worker.TaskStatusReporter read while a worker runs a task.
REPORTER_SCHEDULER = "luigi.worker.TaskStatusReporter._scheduler"
REPORTER_WORKER_ID = "luigi.worker.TaskStatusReporter._worker_id"
FORWARDED_ATTRIBUTES = "luigi.worker.TaskProcess.forward_reporter_attributes"
WORKER_CONTEXT = "luigi.worker.Worker.__enter__/__exit__"
WORKER_RUNNING = "luigi.worker.Worker._running_tasks"
WORKER_TIMEOUT = "luigi.worker.worker.timeout"
RETRY_COUNT = "luigi.scheduler.scheduler.retry_count"


def _reporter(task: luigi.Task) -> Any | None:
    """The TaskStatusReporter a worker bound to ``task`` while running it, or None.

    Luigi binds ``task.set_status_message`` (and the other forwarded attributes) to the
    reporter's methods around ``run()`` (``TaskProcess._run_get_new_deps``/``run``); a bound
    method's ``__self__`` is the reporter."""
    reporter = getattr(getattr(task, "set_status_message", None), "__self__", None)
    return reporter if isinstance(reporter, luigi.worker.TaskStatusReporter) else None


def worker_scheduler(task: luigi.Task) -> Any | None:
    """The scheduler client of the Luigi worker now running ``task``; None outside a worker.

    Private internal: ``TaskStatusReporter._scheduler`` (a ``luigi.rpc.RemoteScheduler``
    under luigid, a ``luigi.scheduler.Scheduler`` under ``--local-scheduler``). Luigi has no
    public way for running task code to learn which scheduler it runs under. Luigi 2.6-3.x.
    Raises LuigiInternalMissing when a reporter is bound but has no ``_scheduler``."""
    reporter = _reporter(task)
    return None if reporter is None else require(reporter, "_scheduler", REPORTER_SCHEDULER)


def worker_id(task: luigi.Task) -> str | None:
    """The id of the Luigi worker now running ``task``; None outside a worker.

    Private internal: ``TaskStatusReporter._worker_id``. A chunk reports the periods it runs
    inline in the name of the worker running it (``add_task(worker=...)``). Luigi 2.6-3.x."""
    reporter = _reporter(task)
    return None if reporter is None else str(require(reporter, "_worker_id", REPORTER_WORKER_ID))


@probe(REPORTER_SCHEDULER)
def _has_reporter_scheduler() -> bool:
    reporter = luigi.worker.TaskStatusReporter("scheduler", "task", "worker", None)
    return getattr(reporter, "_scheduler", None) == "scheduler"


@probe(REPORTER_WORKER_ID)
def _has_reporter_worker_id() -> bool:
    reporter = luigi.worker.TaskStatusReporter("scheduler", "task", "worker", None)
    return getattr(reporter, "_worker_id", None) == "worker"


def under_remote_scheduler(task: luigi.Task) -> bool:
    """True when the worker running ``task`` talks to a central scheduler (luigid)."""
    return is_remote(worker_scheduler(task))


def is_remote(scheduler: Any) -> bool:
    """True for luigid's client (``luigi.rpc.RemoteScheduler``)."""
    return isinstance(scheduler, luigi.rpc.RemoteScheduler)


def is_local(scheduler: Any) -> bool:
    """True for an in-process scheduler (``luigi.scheduler.Scheduler``, --local-scheduler)."""
    return isinstance(scheduler, luigi.scheduler.Scheduler)


def forwarded_attributes() -> dict[str, str]:
    """Luigi's map of TaskStatusReporter methods to the task attributes bound to them while
    a task runs (``update_status_message`` -> ``set_status_message``, ...).

    Undocumented internal: ``TaskProcess.forward_reporter_attributes`` (Luigi 2.8.0 onwards).
    An inline period gets the same attributes, bound to a reporter of its own, for exactly as
    long as Luigi binds them (around ``run()``): the task process order."""
    found = getattr(luigi.worker.TaskProcess, "forward_reporter_attributes", None)
    if not isinstance(found, dict):
        raise LuigiInternalMissing(FORWARDED_ATTRIBUTES)
    return dict(found)


probe(FORWARDED_ATTRIBUTES)(lambda: forwarded_attributes().get("update_status_message"))


# -- the active worker -------------------------------------------------------------------------
class _Active(threading.local):
    def __init__(self) -> None:
        self.stack: list[tuple[int, weakref.ref[Any]]] = []


_active = _Active()


def _track(worker_class: Any) -> None:
    """Wrap ``worker_class.__enter__``/``__exit__`` (once) to keep ``_active``'s stack."""
    if getattr(worker_class, "__gatekeeper_tracked__", False):
        return
    enter, leave = worker_class.__enter__, worker_class.__exit__

    @functools.wraps(enter)
    def __enter__(self: Any) -> Any:
        entered = enter(self)
        _active.stack.append((os.getpid(), weakref.ref(self)))
        return entered

    @functools.wraps(leave)
    def __exit__(self: Any, *exc: Any) -> Any:
        try:
            return leave(self, *exc)
        finally:
            _active.stack[:] = [e for e in _active.stack if e[1]() is not self]

    worker_class.__enter__, worker_class.__exit__ = __enter__, __exit__
    worker_class.__gatekeeper_tracked__ = True


_track(luigi.worker.Worker)
probe(WORKER_CONTEXT)(
    lambda: (
        getattr(luigi.worker.Worker, "__gatekeeper_tracked__", False)
        and callable(getattr(luigi.worker.Worker, "__enter__", None))
    )
)


def scheduling_worker() -> Any | None:
    """The ``luigi.worker.Worker`` scheduling or running tasks in this thread of *its own*
    process (the innermost ``with worker:`` block), or None: outside any, and in a task
    process Luigi forked under ``--workers N`` (whose copy of the worker keeps no summary)."""
    pid = os.getpid()
    for entered_in, ref in reversed(_active.stack):
        if entered_in == pid and (worker := ref()) is not None:
            return worker
    return None


def running_worker(task: luigi.Task) -> Any | None:
    """The ``luigi.worker.Worker`` running ``task`` in this very process, or None (outside a
    worker, or in a forked task process under ``--workers N``: the summary is the parent's).

    Private internal: ``Worker._running_tasks`` (task id -> TaskProcess), Luigi 2.x-3.x."""
    worker = scheduling_worker()
    if worker is None:
        return None
    running = require(worker, "_running_tasks", WORKER_RUNNING)
    return worker if task.task_id in running else None  # type: ignore[operator]


@probe(WORKER_RUNNING)
def _has_running_tasks() -> bool:
    return isinstance(
        luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler())._running_tasks, dict
    )


def new_build(task: luigi.Task) -> bool:
    """True when a Luigi worker other than the last one to ask checks ``task`` in its own
    process (Luigi keeps one task instance per parameters in a process, across
    ``luigi.build`` calls: a new worker means a new build); records the worker. False in a
    task process Luigi forked and outside any worker."""
    worker = scheduling_worker()
    if worker is None:
        return False
    seen = task.__dict__.get("_gatekeeper_worker")
    task.__dict__["_gatekeeper_worker"] = weakref.ref(worker)
    return seen is not None and seen() is not worker


# -- configuration Luigi's worker and scheduler read -----------------------------------------
def worker_timeout() -> int:
    """``[worker] timeout``: the worker timeout of a task that sets none (0: none)."""
    return int(require(luigi.worker.worker(), "timeout", WORKER_TIMEOUT) or 0)  # type: ignore[call-overload]


def scheduler_retry_count() -> int:
    """``[scheduler] retry_count``: failures a task may have before it is disabled."""
    return int(require(luigi.scheduler.scheduler(), "retry_count", RETRY_COUNT) or 0)  # type: ignore[call-overload]


probe(WORKER_TIMEOUT)(lambda: worker_timeout() >= 0)
probe(RETRY_COUNT)(lambda: scheduler_retry_count() >= 0)
