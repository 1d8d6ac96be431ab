"""Every use of Luigi's private internals, in one place.

Each private use says which Luigi internal it reads, why no public API serves, and since which
Luigi release the internal exists. tests/test_luigi_compat.py exercises each one against the
installed Luigi, so a release that renames or removes an internal fails that test with a
message naming it, instead of gatekeeper silently falling back. Nothing outside this module
touches a private Luigi name (``_x``) or reaches through a bound method's ``__self__``.

Also here: the one place gatekeeper leans on a documented Luigi behaviour in an unusual way
(instance_cache_token). Supported Luigi: the range declared in pyproject.toml; CI tests its
oldest and newest release.
"""

from __future__ import annotations

import logging
import os
import sys
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import luigi
import luigi.configuration
import luigi.rpc
import luigi.scheduler
import luigi.worker
from luigi.cmdline_parser import CmdlineParser

logger = logging.getLogger("luigi-interface.gatekeeper")


class LuigiInternalMissing(RuntimeError):
    """The installed Luigi no longer has an internal gatekeeper relies on."""

    def __init__(self, internal: str) -> None:
        super().__init__(
            f"this Luigi ({luigi.__version__}) has no {internal}, which gatekeeper relies on "
            "(gatekeeper/luigi/compat.py); use a Luigi release in the range pyproject.toml "
            "declares"
        )
        self.internal = internal


#: The attribute of luigi.worker.TaskStatusReporter holding the worker's scheduler client.
REPORTER_SCHEDULER = "luigi.worker.TaskStatusReporter._scheduler"


def worker_scheduler(task: luigi.Task) -> Any | None:
    """The scheduler client of the Luigi worker now running ``task``; None outside a worker.

    Private internal: ``luigi.worker.TaskStatusReporter._scheduler``, reached through
    ``task.set_status_message.__self__``. While a worker runs a task it binds the task's
    ``set_status_message`` to a TaskStatusReporter (``TaskProcess._run_get_new_deps``/
    ``run``), whose ``_scheduler`` is the worker's scheduler: a ``luigi.rpc.RemoteScheduler``
    under luigid, a ``luigi.scheduler.Scheduler`` under ``--local-scheduler``. Luigi has no
    public way for running task code to learn which scheduler it runs under
    (``luigi.interface.core()`` is only right inside the ``luigi`` command; ``luigi.build``
    passes its choice to the worker alone). Exists since Luigi 2.6 at least
    (TaskStatusReporter), unchanged through 3.x. Raises LuigiInternalMissing when a reporter
    is bound but has no ``_scheduler``.
    """
    bound = getattr(task, "set_status_message", None)
    reporter = getattr(bound, "__self__", None)
    if not isinstance(reporter, luigi.worker.TaskStatusReporter):
        return None
    try:
        return reporter._scheduler
    except AttributeError:
        raise LuigiInternalMissing(REPORTER_SCHEDULER) from None


def under_remote_scheduler(task: luigi.Task) -> bool:
    """True when the worker running ``task`` talks to a central scheduler (luigid)."""
    return isinstance(worker_scheduler(task), luigi.rpc.RemoteScheduler)


class GatekeeperInstanceCacheProbe(luigi.Config):
    """A parameterless Config whose instance is Luigi's instance cache generation.

    Luigi documents instance caching: instantiating a task class with the same parameters
    returns the same object until ``Register.clear_instance_cache()`` (or a disabled cache,
    ``Register.disable_instance_cache()``, gives a new object every time). The overrides
    return what Luigi's would for a class without parameters, without Luigi's ``dir()`` scan
    and config walk: ~1 µs a call instead of ~80 µs.
    """

    @classmethod
    def get_params(cls) -> list[tuple[str, luigi.Parameter]]:
        return []

    @classmethod
    def get_param_values(
        cls, params: list[tuple[str, luigi.Parameter]], args: Any, kwargs: Any
    ) -> list[tuple[str, Any]]:
        return []


def instance_cache_token() -> object:
    """An object that stays the same until Luigi's task instance cache is cleared.

    Public behaviour only (no private internal): the cached instance of a parameterless
    Config. Callers that cache values Luigi reads from luigi.cfg and the command line (as
    ``config.settings()`` does) compare it by identity, and so re-read exactly when Luigi's
    own cached Config instances would be rebuilt. Replaces reading
    ``Register._Register__instance_cache``. Instance caching and ``clear_instance_cache``
    exist since Luigi 2.6 at least.
    """
    return GatekeeperInstanceCacheProbe()


# -- the luigi command line: which [section] options it gives --------------------------------
#: Internals read to learn which Config options the luigi command line gives.
COMMAND_LINE_ARGS = "luigi.cmdline_parser.CmdlineParser.known_args"
GLOBAL_DEST = "luigi.parameter.Parameter._parser_global_dest"


def command_line_parser() -> object | None:
    """The ``CmdlineParser`` of the luigi command line in force (set by ``luigi.interface`` for
    the whole run, inherited by forked workers); None in ``luigi.build`` and outside Luigi."""
    return CmdlineParser.get_instance()


def command_line_options(section: str, names: Iterable[str]) -> frozenset[str]:
    """The options of the Config ``section`` given on the luigi command line now in force
    (``--gatekeeper-ledger-url URL`` gives ``ledger_url``); empty outside one.

    Private internals: ``CmdlineParser.known_args`` (the namespace Luigi parsed; the module is
    documented as internal) and ``Parameter._parser_global_dest`` (its attribute for
    ``--section-option``, None when not given), which ``Parameter._value_iterator`` reads first.
    gatekeeper puts ``$GATEKEEPER_*`` between the command line and luigi.cfg, so it must know
    what the command line gives. Both unchanged since Luigi 2.x (3.2.0 included).
    """
    parser = CmdlineParser.get_instance()
    if parser is None:
        return frozenset()
    try:
        known = parser.known_args
    except AttributeError:
        raise LuigiInternalMissing(COMMAND_LINE_ARGS) from None
    dest = getattr(luigi.Parameter, "_parser_global_dest", None)
    if not callable(dest):
        raise LuigiInternalMissing(GLOBAL_DEST)
    return frozenset(
        name for name in names if getattr(known, dest(name, section), None) is not None
    )


# -- the environment, read on hot paths (a Python internal, not Luigi's) ---------------------
def environment_probe(names: tuple[str, ...]) -> Callable[[], tuple[object, ...]]:
    """A function returning what the environment variables ``names`` hold now, fit only for
    comparison (``config.resolve``'s cache keys on it). ``os.environ.get`` of an unset variable
    costs microseconds (a KeyError inside); the dict of encoded contents ``os.environ`` keeps
    (private ``os._Environ._data``, CPython 3.2+) answers in nanoseconds. Falls back to
    ``os.environ.get`` without it."""
    data = getattr(os.environ, "_data", None)
    encode = getattr(os.environ, "encodekey", None)
    if not isinstance(data, dict) or not callable(encode):
        return lambda: tuple(map(os.environ.get, names))
    keys = tuple(encode(name) for name in names)
    return lambda: tuple(map(data.get, keys))


# -- inline periods: a chunk runs a period as Luigi's worker would ----------------------------
#: Internals read to run a period inside a chunk the way Luigi's worker runs a task.
REPORTER_WORKER_ID = "luigi.worker.TaskStatusReporter._worker_id"
FORWARDED_ATTRIBUTES = "luigi.worker.TaskProcess.forward_reporter_attributes"
WORKER_HISTORY = "luigi.worker.Worker._add_task_history"
WORKER_RUNNING = "luigi.worker.Worker._running_tasks"


def worker_id(task: luigi.Task) -> str | None:
    """The id of the Luigi worker now running ``task``; None outside a worker.

    Private internal: ``luigi.worker.TaskStatusReporter._worker_id``, reached like
    ``worker_scheduler``. A chunk reports the periods it runs inline to the scheduler in the
    name of the worker running it (``add_task(worker=...)``), as the worker reports the tasks
    it runs; no public API gives running task code its worker's id. Exists since Luigi 2.6
    at least.
    """
    reporter = getattr(getattr(task, "set_status_message", None), "__self__", None)
    if not isinstance(reporter, luigi.worker.TaskStatusReporter):
        return None
    try:
        return str(reporter._worker_id)
    except AttributeError:
        raise LuigiInternalMissing(REPORTER_WORKER_ID) from None


def forwarded_attributes() -> dict[str, str]:
    """Luigi's map of TaskStatusReporter methods to the task attributes bound to them while
    a task runs (``update_status_message`` -> ``set_status_message``, ...).

    Undocumented internal: ``luigi.worker.TaskProcess.forward_reporter_attributes`` (a class
    attribute; Luigi 2.8.0 onwards, absent from 2.7). An inline period gets the same
    attributes, bound to a reporter of its own, for exactly as long as Luigi binds them
    (around ``run()``).
    """
    found = getattr(luigi.worker.TaskProcess, "forward_reporter_attributes", None)
    if not isinstance(found, dict):
        raise LuigiInternalMissing(FORWARDED_ATTRIBUTES)
    return dict(found)


def running_worker(task: luigi.Task) -> Any | None:
    """The ``luigi.worker.Worker`` running ``task`` in this very process, or None.

    Luigi builds its execution summary from the worker's own bookkeeping, so a period run
    inline appears there only if it is added to that worker. Found by walking the call stack
    to the ``Worker._run_task`` frame that runs ``task`` (``--workers 1``: Luigi runs the task
    in the worker's process). Under ``--workers N`` Luigi forks a child per task: the stack
    still shows the (copied) Worker, but the summary is the parent's, so this returns None
    (the TaskProcess running ``task`` says ``use_multiprocessing``). Private internals:
    ``Worker._running_tasks`` and the TaskProcess's ``task``/``use_multiprocessing``.
    """
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, luigi.worker.TaskProcess) and owner.task is task:
            if getattr(owner, "use_multiprocessing", True):
                return None
        if isinstance(owner, luigi.worker.Worker):
            try:
                running = owner._running_tasks
            except AttributeError:
                raise LuigiInternalMissing(WORKER_RUNNING) from None
            return owner if task.task_id in running else None
        frame = frame.f_back  # type: ignore[assignment]
    return None


def add_to_summary(worker: Any, task: luigi.Task, status: str, *, ran: bool) -> None:
    """Count ``task`` in ``worker``'s execution summary with its final ``status``.

    Private internal: ``luigi.worker.Worker._add_task_history``, the (task, status, runnable)
    list ``luigi.execution_summary`` partitions (Luigi 2.x-3.x): a task listed PENDING then
    DONE "ran successfully", DONE alone "was already complete", FAILED "failed". Appended as
    ``Worker._add_task`` does for the tasks the worker schedules itself.
    """
    try:
        history = worker._add_task_history
    except AttributeError:
        raise LuigiInternalMissing(WORKER_HISTORY) from None
    if ran:
        history.append((task, luigi.scheduler.PENDING, True))
    history.append((task, status, ran))


# -- the execution summary of a worker whose tasks run in forked processes (--workers N) ------
#: Further internals read to count, in the parent's summary, the periods a forked child runs.
WORKER_ID = "luigi.worker.Worker._id"
WORKER_SCHEDULER = "luigi.worker.Worker._scheduler"
WORKER_SCHEDULED = "luigi.worker.Worker._scheduled_tasks"
WORKER_RESPONSES = "luigi.worker.Worker._get_work_response_history"
PROCESS_MULTI = "luigi.worker.TaskProcess.use_multiprocessing"


def scheduling_worker() -> Any | None:
    """The ``luigi.worker.Worker`` scheduling or running tasks in *its own* process, found
    on the call stack; None elsewhere, and None in a task process Luigi forked (whose stack
    still shows the copied Worker). Private internal: ``TaskProcess.use_multiprocessing``.
    """
    frame = sys._getframe(1)
    while frame is not None:
        owner = frame.f_locals.get("self")
        if isinstance(owner, luigi.worker.TaskProcess):
            try:
                if owner.use_multiprocessing:
                    return None
            except AttributeError:
                raise LuigiInternalMissing(PROCESS_MULTI) from None
        if isinstance(owner, luigi.worker.Worker):
            return owner
        frame = frame.f_back  # type: ignore[assignment]
    return None


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


@dataclass(frozen=True, slots=True)
class WorkerBookkeeping:
    """What a worker keeps that its execution summary is made of (all private to Luigi)."""

    worker_key: str  # Worker._id
    history: Any  # Worker._add_task_history: (task, status, runnable) entries
    responses: Any  # Worker._get_work_response_history: get_work answers
    scheduler: Any  # Worker._scheduler
    scheduled: dict[str, Any]  # Worker._scheduled_tasks: task id -> task


def worker_bookkeeping(worker: Any) -> WorkerBookkeeping:
    """The bookkeeping of ``worker``; LuigiInternalMissing naming a missing internal.

    Private internals (Luigi 2.x-3.x): ``Worker._id``, ``Worker._add_task_history`` (the
    entries ``luigi.execution_summary`` partitions), ``Worker._get_work_response_history``
    (where it finds tasks run by another worker), ``Worker._scheduler`` and
    ``Worker._scheduled_tasks``. Luigi's worker forks a ``TaskProcess`` per task under
    ``--workers N`` and keeps the summary in its own process; the child's results travel back
    on a queue that carries only the task's own status, so a period run inside the child is
    otherwise never counted (``gatekeeper/luigi/fill/channel.py``)."""
    try:
        return WorkerBookkeeping(
            str(worker._id),
            worker._add_task_history,
            worker._get_work_response_history,
            worker._scheduler,
            worker._scheduled_tasks,
        )
    except AttributeError as missing:
        raise LuigiInternalMissing(
            next(
                (
                    name
                    for name in (
                        WORKER_HISTORY,
                        WORKER_ID,
                        WORKER_SCHEDULER,
                        WORKER_SCHEDULED,
                        WORKER_RESPONSES,
                    )
                    if str(missing).endswith(f"'{name.rsplit('.', 1)[1]}'")
                ),
                WORKER_HISTORY,
            )
        ) from None


def replace_bookkeeping(worker: Any, history: Any, responses: Any) -> None:
    """Give ``worker`` these (same entries, subclassed) ``_add_task_history`` and
    ``_get_work_response_history``; Luigi's worker only appends to both."""
    worker._add_task_history = history
    worker._get_work_response_history = responses


# -- the scheduler's address, for reports sent over a keep-alive connection -------------------
REMOTE_URL = "luigi.rpc.RemoteScheduler._url"


def remote_scheduler_url(scheduler: Any) -> str | None:
    """The URL a ``luigi.rpc.RemoteScheduler`` talks to; None for any other scheduler.

    Private internal: ``RemoteScheduler._url`` (the ``url`` it was built with, without a
    trailing slash; Luigi 2.x-3.x). The worker builds its RemoteScheduler from ``[core]``
    options and the command line; the URL it settled on is not public. Used only to send a
    chunk's per-period reports over one keep-alive connection (``fill/wire.py``).
    """
    if not isinstance(scheduler, luigi.rpc.RemoteScheduler):
        return None
    try:
        return str(scheduler._url)
    except AttributeError:
        raise LuigiInternalMissing(REMOTE_URL) from None


# -- a local scheduler's task table: settled inline periods leave it as Luigi's prune does ----
LOCAL_STATE = "luigi.scheduler.Scheduler._state"


def _local_state(scheduler: Any) -> Any:
    """The ``SimpleTaskState`` of a local ``luigi.scheduler.Scheduler``."""
    try:
        state = scheduler._state
    except AttributeError:
        raise LuigiInternalMissing(LOCAL_STATE) from None
    for method in ("has_task", "get_task", "inactivate_tasks"):
        if not callable(getattr(state, method, None)):
            raise LuigiInternalMissing(f"luigi.scheduler.SimpleTaskState.{method}")
    return state


def scheduler_has_task(scheduler: Any, task_id: str) -> bool:
    """True when the local ``scheduler``'s task table holds ``task_id`` (in any status).

    Private internal: ``Scheduler._state`` and its ``SimpleTaskState.has_task`` (Luigi 2.x-3.x),
    an O(1) lookup; the public ``task_list`` filters the whole table. A task nobody has named
    is absent: a task added with dependencies puts each of them in the table at once
    (``Scheduler.add_task`` creates them UNKNOWN), so an absent task is no task's dependency.
    """
    return bool(_local_state(scheduler).has_task(task_id))


def forget_done_task(scheduler: Any, task_id: str) -> None:
    """Remove ``task_id`` from the local ``scheduler``'s task table if it is DONE.

    What Luigi's own prune does to a settled task once its ``remove_delay`` has passed
    (``Scheduler._prune_tasks`` -> ``SimpleTaskState.inactivate_tasks``), done at once. Luigi's
    local scheduler walks its whole table on every ``get_work`` (``prune``), so a fill that
    left each inline period there would cost in the square of its periods. Only for a task no
    other task depends on (the caller saw it absent before reporting it: scheduler_has_task).
    Private internals: ``Scheduler._state``, ``SimpleTaskState.get_task`` and
    ``inactivate_tasks`` (Luigi 2.x-3.x).
    """
    state = _local_state(scheduler)
    found = state.get_task(task_id)
    if found is not None and found.status == luigi.scheduler.DONE:
        state.inactivate_tasks([task_id])
