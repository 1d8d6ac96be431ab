"""The summary channel: how a worker's execution summary counts every period its chunks run,
also in the task processes it forks, and judges gatekeeper's tasks by the ledger.

A worker that schedules a range or a chunk opens the channel (``open_summary_channel``): an
unlinked temporary file its forked task processes inherit. A chunk running in such a child
appends one JSON line per period it runs inline (``send_to_summary``), and, under a local
scheduler the child cannot reach, each scheduler call it would make (``relay_to_scheduler``).
The worker's history (``ForkedHistory``) takes those lines in whenever it is appended to or
read. The Luigi internals (the worker's bookkeeping, the entries' shape) are reached through
``luigi_compat`` (``compat/summary.py``).
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import weakref
from collections.abc import Iterator
from typing import Any

import luigi
import luigi.task_register
from luigi.scheduler import DONE, PENDING

from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi.compat import SummaryEntry
from gatekeeper.luigi.fill.local import LocalReports
from gatekeeper.luigi.fill.marks import RANGE, SUMMARY_MARK

logger = logging.getLogger("luigi-interface.gatekeeper")
_channels: dict[str, int] = {}  # worker id -> the fd its forked task processes append to

__all__ = ["RANGE", "SUMMARY_MARK", "ForkedHistory", "SettledWorkHistory"]


class ForkedHistory(luigi_compat.WorkerHistory):
    """A worker's history (``luigi_compat.WorkerHistory``) that also takes in what its forked
    task processes appended to the channel (one JSON line each), and that the execution
    summary reads with gatekeeper's tasks judged by the ledger.

    Channel lines are read from where the last read ended, whole lines only (a child writes
    each line with one ``write`` to an ``O_APPEND`` file), whenever the history is appended to
    (before the worker tells the scheduler a task's result) or read: a period's summary entry
    joins the history; a scheduler call relayed by a child of a local-scheduler worker is
    made on that scheduler, so it learns a period's outcome before its chunk's.

    As the summary reads it, for tasks marked ``gatekeeper_summary``: an entry the worker made
    for a task left pending after yielding dynamic dependencies (runnable None) is not
    "missing external dependencies" (the chunk or range waits on its periods, Luigi's
    upstream rules judge it); a range left pending is judged by its chunks and periods; and a
    task whose last entry is PENDING but that is complete by then (another worker sharing the
    range did it) counts as already done, so the exit code says whether the window was filled.
    """

    def __init__(self, items: list[Any], fd: int, scheduler: Any) -> None:
        super().__init__(items)
        self.fd, self.offset, self.scheduler = fd, 0, scheduler
        self._judged: tuple[int, set[Any], set[Any]] = (-1, set(), set())

    def before_append(self) -> None:
        self.take_in()

    def before_read(self) -> None:
        self.take_in()

    def view(self, recorded: list[SummaryEntry]) -> Iterator[SummaryEntry]:
        settled, waiting = self.judged(recorded)
        for entry in recorded:
            if entry.task in settled or entry.task in waiting:
                continue
            if entry.runnable is None and entry.status == PENDING and marked(entry.task):
                entry = SummaryEntry(entry.task, entry.status, True)
            yield entry
        for task in settled:
            yield SummaryEntry(task, DONE, False)

    def judged(self, recorded: list[SummaryEntry]) -> tuple[set[Any], set[Any]]:
        """(settled, waiting), worked out once per length of the history:

        - settled: marked tasks whose last entry is PENDING and that are complete now;
        - waiting: ranges left pending (not settled) while the history holds chunks or
          periods: a range waits on the chunks it yields, which Luigi's summary cannot see
          (it follows static requirements), so the range is left to them: their failure, or
          another worker running them, says why it is pending.
        """
        if self._judged[0] != len(recorded):
            last: dict[Any, str] = {}
            for entry in recorded:
                last[entry.task] = entry.status
            pending = [task for task, status in last.items() if status == PENDING and marked(task)]
            settled = {task for task in pending if _complete(task)}
            parts = any(marked(task) and marked(task) != RANGE for task in last)
            waiting = {
                task for task in pending if parts and marked(task) == RANGE and task not in settled
            }
            self._judged = (len(recorded), settled, waiting)
        return self._judged[1], self._judged[2]

    def take_in(self) -> None:
        data = b""
        while chunk := os.pread(self.fd, 1 << 16, self.offset + len(data)):
            data += chunk
        whole = data[: data.rfind(b"\n") + 1]
        self.offset += len(whole)
        reports = self._reports()  # one batch: nothing else reaches the scheduler meanwhile
        for line in whole.splitlines():
            note = json.loads(line)
            if "call" in note:
                self._relayed(reports, note["call"], note["arguments"])
                continue
            try:
                task = luigi.task_register.load_task(note["module"], note["family"], note["params"])
            except Exception as exc:  # a summary line lost is not a period failed
                logger.warning("gatekeeper: cannot list %s in the summary: %s", note, exc)
                continue
            for entry in luigi_compat.ran_entries(task, note["status"], ran=note["ran"]):
                self.record(entry)

    def _reports(self) -> LocalReports | None:
        return LocalReports(self.scheduler) if luigi_compat.is_local(self.scheduler) else None

    def _relayed(
        self, reports: LocalReports | None, method: str, arguments: dict[str, Any]
    ) -> None:
        try:
            if reports is not None:
                reports.call(method, arguments)
            else:
                getattr(self.scheduler, method)(**arguments)
        except Exception as exc:  # a report lost is not a period failed
            logger.warning(
                "gatekeeper: could not report %s to the scheduler: %s",
                arguments.get("task_id"),
                exc,
            )


class SettledWorkHistory(luigi_compat.WorkResponses):
    """A worker's get_work answers as the execution summary reads them: a marked task
    another worker was running is not "run by another worker" once it is complete (the range
    this worker shares was filled), so the exit code says whether the window was."""

    def __init__(self, items: list[Any], scheduled: dict[str, Any]) -> None:
        super().__init__(items)
        self.scheduled = scheduled
        self.done: dict[str, bool] = {}

    def __iter__(self) -> Iterator[Any]:
        self.done = {}  # judged afresh at each read
        return super().__iter__()

    def still_running(self, task_id: str) -> bool:
        if task_id not in self.done:
            task = self.scheduled.get(task_id)
            self.done[task_id] = task is not None and bool(marked(task)) and _complete(task)
        return not self.done[task_id]


def marked(task: Any) -> Any:
    """The task's ``gatekeeper_summary`` mark: RANGE, True (a chunk or period) or False."""
    return getattr(task, SUMMARY_MARK, False)


def _complete(task: Any) -> bool:
    try:
        return bool(task.complete())
    except Exception:  # a task whose completeness cannot be told stays pending
        return False


def open_summary_channel() -> None:
    """Let the task processes the current worker forks count the periods they run inline in
    its execution summary (see ``summary_channel``), and have the summary judge gatekeeper's
    tasks by the ledger (ForkedHistory). Call it where the worker schedules a range or a task
    that may run periods inline (their ``deps()``, as the worker schedules them); idempotent
    per worker.

    The worker's history becomes a ForkedHistory and its get_work answers a
    SettledWorkHistory, holding the same entries (``luigi_compat.install_bookkeeping``).
    """
    worker = luigi_compat.scheduling_worker()
    if worker is None:
        return
    kept = luigi_compat.worker_bookkeeping(worker)
    if isinstance(kept.history, ForkedHistory):
        return
    fd, path = tempfile.mkstemp(prefix="gatekeeper-summary-")
    os.close(fd)
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    os.unlink(path)
    luigi_compat.install_bookkeeping(
        worker,
        lambda entries: ForkedHistory(entries, fd, kept.scheduler),
        lambda answers: SettledWorkHistory(answers, kept.scheduled),
    )
    _channels[kept.worker_key] = fd
    weakref.finalize(worker, _close_channel, kept.worker_key, fd)


def _close_channel(worker_key: str, fd: int) -> None:
    if _channels.get(worker_key) == fd:
        del _channels[worker_key]
    os.close(fd)


def summary_channel(worker_key: str | None) -> int | None:
    """The channel of the worker ``worker_key`` that forked this process, or None."""
    return None if worker_key is None else _channels.get(worker_key)


def send_to_summary(fd: int, task: luigi.Task, status: str, *, ran: bool) -> None:
    """Count ``task`` with its final ``status`` in the summary of the worker owning ``fd``
    (read back there by ForkedHistory), as ``add_to_summary`` does in the worker's process."""
    line = json.dumps(
        {
            "module": task.task_module,
            "family": task.task_family,
            "params": task.to_str_params(),
            "status": status,
            "ran": ran,
        }
    )
    os.write(fd, line.encode() + b"\n")


def relay_to_scheduler(fd: int, method: str, arguments: dict[str, Any]) -> None:
    """Have the worker owning ``fd`` call its (local) scheduler's ``method`` with
    ``arguments``: a forked task process cannot reach its parent's local scheduler, so the
    parent makes the call when it next reads the channel (ForkedHistory)."""
    line = json.dumps({"call": method, "arguments": arguments})
    os.write(fd, line.encode() + b"\n")
