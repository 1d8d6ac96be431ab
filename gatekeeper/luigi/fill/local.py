"""Reports of inline periods to a local scheduler (``--local-scheduler``), kept out of its way.

Luigi's local scheduler walks its whole task table on every ``get_work`` (its ``prune``): a
fill that left each period it ran inline in that table would cost in the square of its
periods. A period settled DONE that only its own reports put in the table (no task depends on
it: a dependent puts its dependencies there when it is added) is removed once the scheduler
has taken the report in, as Luigi's prune removes a settled task after ``remove_delay``. The
scheduler has seen every status the period went through (its metrics and task history too);
the execution summary is the worker's and is not touched. A FAILED period stays, so the
scheduler counts it under the period's retry policy. Under luigid nothing is removed: it
prunes on its own timer, and its users see its task list.
"""

from __future__ import annotations

from typing import Any

from luigi.scheduler import DONE, RUNNING

from gatekeeper.luigi import compat as luigi_compat


class LocalReports:
    """Scheduler calls on one local ``luigi.scheduler.Scheduler``, made in order.

    Only for calls made with nothing else reaching the scheduler in between (the thread of a
    chunk running its periods while its worker waits, or one batch of a forked chunk's relayed
    calls): a period this object saw absent at its first report is then no task's dependency
    when its DONE arrives.
    """

    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self._introduced: set[str] = set()  # periods absent from the table at their first report

    def call(self, method: str, arguments: dict[str, Any]) -> None:
        """``scheduler.<method>(**arguments)``; then forget a DONE period this object put in."""
        found = arguments.get("task_id")
        task_id = found if method == "add_task" and isinstance(found, str) else None
        if task_id is not None and task_id not in self._introduced:
            if not luigi_compat.scheduler_has_task(self.scheduler, task_id):
                self._introduced.add(task_id)
        getattr(self.scheduler, method)(**arguments)
        status = arguments.get("status")
        if task_id is not None and status != RUNNING and task_id in self._introduced:
            self._introduced.discard(task_id)  # settled: a FAILED period stays in the table
            if status == DONE:
                luigi_compat.forget_done_task(self.scheduler, task_id)
