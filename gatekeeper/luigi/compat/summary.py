"""Luigi's execution summary: the worker bookkeeping it is made of, and how gatekeeper adds to it.

``luigi.execution_summary`` builds the summary (and the ``luigi`` command's exit code) from
two lists a worker keeps, both private (Luigi 2.x-3.x):

- ``Worker._add_task_history``: ``(task, status, runnable)`` entries, appended by
  ``Worker._add_task``; a task listed PENDING then DONE "ran successfully", DONE alone "was
  already complete", FAILED "failed", PENDING with ``runnable`` None "missing external
  dependencies";
- ``Worker._get_work_response_history``: the scheduler's ``get_work`` answers, whose
  ``running_tasks`` (dicts with a ``task_id``) are the tasks "run by another worker".

gatekeeper reads and extends them only here: ``SummaryEntry`` is an entry, ``WorkerHistory``
and ``WorkResponses`` are list subclasses with hooks that replace the two lists
(``install_bookkeeping``; Luigi's worker only appends to and iterates over them), and
``add_to_summary`` counts a period run inline.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import Any

import luigi
import luigi.scheduler
import luigi.worker

from gatekeeper.luigi.compat.internals import LuigiInternalMissing, probe

WORKER_HISTORY = "luigi.worker.Worker._add_task_history"
WORKER_ID = "luigi.worker.Worker._id"
WORKER_SCHEDULER = "luigi.worker.Worker._scheduler"
WORKER_SCHEDULED = "luigi.worker.Worker._scheduled_tasks"
WORKER_RESPONSES = "luigi.worker.Worker._get_work_response_history"
_ATTRIBUTES = {
    WORKER_HISTORY: "_add_task_history",
    WORKER_ID: "_id",
    WORKER_SCHEDULER: "_scheduler",
    WORKER_SCHEDULED: "_scheduled_tasks",
    WORKER_RESPONSES: "_get_work_response_history",
}


@dataclass(frozen=True, slots=True)
class SummaryEntry:
    """One entry of a worker's history: a task, the status it was added with, and whether it
    was runnable by the worker (None: pending on something no worker can run)."""

    task: Any
    status: str
    runnable: bool | None


def ran_entries(task: Any, status: str, *, ran: bool) -> list[SummaryEntry]:
    """The entries Luigi's worker makes for ``task`` ending ``status``: PENDING (runnable)
    first when it ran, so the summary says "ran successfully" or "failed", else "was already
    complete"."""
    final = SummaryEntry(task, status, ran)
    return [SummaryEntry(task, luigi.scheduler.PENDING, True), final] if ran else [final]


class WorkerHistory(list[Any]):
    """``Worker._add_task_history`` with hooks: ``before_append`` runs before the worker adds
    an entry, ``before_read`` before the summary reads the entries, ``view`` gives the entries
    it reads (default: as recorded)."""

    def append(self, item: Any) -> None:
        self.before_append()
        super().append(item)

    def __iter__(self) -> Iterator[Any]:
        self.before_read()
        for entry in self.view(self.recorded()):
            yield entry.task, entry.status, entry.runnable

    def recorded(self) -> list[SummaryEntry]:
        """The entries as recorded, oldest first (no hook runs)."""
        return [SummaryEntry(*item) for item in list.__iter__(self)]

    def record(self, entry: SummaryEntry) -> None:
        """Add ``entry`` as the worker would (no hook runs)."""
        super().append((entry.task, entry.status, entry.runnable))

    def before_append(self) -> None:
        """Called before the worker appends an entry."""

    def before_read(self) -> None:
        """Called before the entries are read."""

    def view(self, recorded: list[SummaryEntry]) -> Iterable[SummaryEntry]:
        """The entries the execution summary reads."""
        return recorded


class WorkResponses(list[Any]):
    """``Worker._get_work_response_history`` with a hook: a task ``still_running`` says is
    no longer is left out of each answer's ``running_tasks``."""

    def __iter__(self) -> Iterator[Any]:
        for response in list.__iter__(self):
            running = [
                r for r in response.get("running_tasks") or () if self.still_running(r["task_id"])
            ]
            yield {**response, "running_tasks": running}

    def still_running(self, task_id: str) -> bool:
        return True


@dataclass(frozen=True, slots=True)
class WorkerBookkeeping:
    """What a worker keeps that its execution summary is made of."""

    worker_key: str  # Worker._id
    history: list[Any]  # Worker._add_task_history
    responses: list[Any]  # Worker._get_work_response_history
    scheduler: Any  # Worker._scheduler
    scheduled: dict[str, Any]  # Worker._scheduled_tasks: task id -> task


def worker_bookkeeping(worker: Any) -> WorkerBookkeeping:
    """The bookkeeping of ``worker``; LuigiInternalMissing naming a missing internal."""
    found = {}
    for name, attribute in _ATTRIBUTES.items():
        try:
            found[name] = getattr(worker, attribute)
        except AttributeError:
            raise LuigiInternalMissing(name) from None
    return WorkerBookkeeping(
        str(found[WORKER_ID]),
        found[WORKER_HISTORY],
        found[WORKER_RESPONSES],
        found[WORKER_SCHEDULER],
        found[WORKER_SCHEDULED],
    )


def install_bookkeeping(
    worker: Any,
    history: Callable[[list[Any]], WorkerHistory],
    responses: Callable[[list[Any]], WorkResponses],
) -> WorkerBookkeeping | None:
    """Replace ``worker``'s two lists with ``history(entries)`` and ``responses(answers)``
    (made from the entries so far); None, changing nothing, when they already are
    WorkerHistory. Returns the bookkeeping as it was."""
    kept = worker_bookkeeping(worker)
    if isinstance(kept.history, WorkerHistory):
        return None
    worker._add_task_history = history(list(kept.history))
    worker._get_work_response_history = responses(list(kept.responses))
    return kept


def add_to_summary(worker: Any, task: luigi.Task, status: str, *, ran: bool) -> None:
    """Count ``task`` in ``worker``'s execution summary with its final ``status``, as
    ``Worker._add_task`` counts the tasks the worker schedules itself."""
    try:
        history = worker._add_task_history
    except AttributeError:
        raise LuigiInternalMissing(WORKER_HISTORY) from None
    for entry in ran_entries(task, status, ran=ran):
        history.append((entry.task, entry.status, entry.runnable))


def _fresh_worker() -> Any:
    return luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler())


def _probe_attribute(name: str, attribute: str) -> None:
    probe(name)(lambda: hasattr(_fresh_worker(), attribute))


for _name, _attribute in _ATTRIBUTES.items():
    _probe_attribute(_name, _attribute)
