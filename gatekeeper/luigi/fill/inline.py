"""Running a period inside a chunk exactly as Luigi's worker runs a task (an adapter over Luigi).

A chunk that finds a period's requirements complete runs it in its own process instead of
sending it through the scheduler (no scheduler round trip per period). To the period's code
it is the same Luigi task as a scheduled one, in Luigi's order (Luigi's ``TaskProcess``):

1. ``complete()`` is checked first, as Luigi checks a yielded task (no event fires there
   either); a period complete by then is not run, and counts as already done;
2. ``set_status_message``, ``set_progress_percentage``, ``set_tracking_url`` and
   ``decrease_running_resources`` are bound around ``run()`` (to a reporter for the period's
   own task id), then unbound;
3. ``Event.START``, ``run()``, then ``Event.PROCESSING_TIME``, ``on_success()`` and
   ``Event.SUCCESS``; or ``Event.FAILURE`` and ``on_failure(exc)``. Their return values are
   the explanation sent to the scheduler, as Luigi sends them (``json.dumps``).

Every period is visible where Luigi's would be: the scheduler (luigid's task list, or the local
scheduler) gets an ``add_task`` with the worker's id and the final status (DONE/FAILED, and
RUNNING first if the code sets a status message, progress or tracking URL; PENDING, not
runnable, from a forked task process of a worker on luigid: ``InlineRuns.announce_as``); Luigi's
execution summary counts it as ran successfully / failed / already done when the chunk runs in
the worker's process (``--workers 1``), and when Luigi runs the chunk in a forked child
(``--workers N``), through the channel the worker opened when it scheduled the chunk
(``channel.open_summary_channel``), read back when the summary is written. A local scheduler
under ``--workers N`` is the parent's object: the child relays its reports through the same
channel, and the parent hands them to its scheduler before the chunk's own result. Each report
carries the period's priority and retry policy, and a failure is reported RUNNING (or PENDING,
as above) then FAILED, so the scheduler counts it under the period's ``retry_count``
(``policy.py``): its first ``add_task`` sets the policy, the second counts.

Reports to luigid go through one background thread per chunk run, in order, on one keep-alive
connection (``wire.py``), and are flushed before the chunk yields or ends, so the fill never
waits for a round trip per period.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from typing import Any

import luigi
from luigi.scheduler import DONE, FAILED, PENDING, RUNNING

from gatekeeper.core.errors import LeaseHeld
from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi.fill import channel
from gatekeeper.luigi.fill.local import LocalReports
from gatekeeper.luigi.fill.policy import retry_policy
from gatekeeper.luigi.fill.wire import SchedulerWire
from gatekeeper.luigi.lease import outwait
from gatekeeper.luigi.tasks import PeriodTask

logger = logging.getLogger("luigi-interface.gatekeeper")


class InlineRuns:
    """Where one run of a chunk reports the periods it runs inline; see the module docstring.

    Outside a Luigi worker (a chunk's ``run()`` called directly) nothing is reported.
    """

    def __init__(self, chunk: luigi.Task):
        self.scheduler = luigi_compat.worker_scheduler(chunk)
        self.worker_id = luigi_compat.worker_id(chunk)
        self.worker = luigi_compat.running_worker(chunk)
        self.channel = None if self.worker else channel.summary_channel(self.worker_id)
        self.forwarded = luigi_compat.forwarded_attributes()
        self.remote = luigi_compat.is_remote(self.scheduler)
        #: a local scheduler is reached from a forked task process through the channel only
        self.relayed = not self.remote and self.worker is None and self.channel is not None
        self.wire = SchedulerWire(self.scheduler) if self.remote else None
        #: how a period is announced before it settles: RUNNING on this worker, as Luigi's
        #: worker tells the scheduler of a task it runs; but PENDING (not runnable) in a forked
        #: task process of a worker on luigid (``--workers N``). luigid hands a task it has
        #: RUNNING on a worker back to that worker's next ``get_work`` whenever the worker does
        #: not list it among its current tasks (its recovery of a task the worker lost), and the
        #: worker, this process's parent, asking every ``wait_interval`` while its task
        #: processes run, never lists an inline period: a RUNNING claim made it run the period
        #: again in a task process of its own, beside or right after the inline run (two
        #: STARTs, two failures counted, or the body run twice in one ``luigi`` process). In
        #: the worker's own process (``--workers 1``) nothing asks for work while the chunk
        #: runs; a local scheduler takes a forked child's reports when the chunk has ended.
        self.announce_as = PENDING if self.remote and self.worker is None else RUNNING
        self.tracking: dict[str, str] = {}  # task id -> the tracking URL its code set
        #: calls on a local scheduler in this process: settled periods leave its task table
        self.local = (
            LocalReports(self.scheduler)
            if not self.relayed and luigi_compat.is_local(self.scheduler)
            else None
        )
        self._queue: queue.Queue[tuple[str, dict[str, Any]] | None] = queue.Queue()
        self._thread: threading.Thread | None = None

    @property
    def reaches_scheduler(self) -> bool:
        """False where a period's outcome could not reach the scheduler (a forked task process
        of a local scheduler whose worker opened no channel): such a chunk runs none inline."""
        return self.scheduler is None or self.worker is not None or self.remote or self.relayed

    # -- reporting -----------------------------------------------------------------------------
    def send(self, method: str, **arguments: Any) -> None:
        """Call the scheduler's ``method``: in order on a background thread under luigid, at
        once under a local scheduler; nothing outside a worker."""
        if self.scheduler is None or self.worker_id is None:
            return
        if self.relayed and self.channel is not None:
            channel.relay_to_scheduler(self.channel, method, arguments)
            return
        if not self.remote:
            self._call(method, arguments)
            return
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._drain, daemon=True, name="gatekeeper-inline-report"
            )
            self._thread.start()
        self._queue.put((method, arguments))

    def flush(self) -> None:
        """Wait until every report is sent (before the chunk yields or ends)."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join()
            self._thread = None

    def _drain(self) -> None:
        try:
            while (item := self._queue.get()) is not None:
                self._call(*item)
        finally:
            if self.wire is not None:
                self.wire.close()

    def _call(self, method: str, arguments: dict[str, Any]) -> None:
        try:
            if self.wire is not None:
                self.wire.call(method, arguments)
            elif self.local is not None:
                self.local.call(method, arguments)
            else:
                getattr(self.scheduler, method)(**arguments)
        except Exception as exc:  # a report lost is not a period failed
            logger.warning(
                "gatekeeper: could not report %s to the scheduler: %s",
                arguments.get("task_id"),
                exc,
            )

    def settled(self, task: luigi.Task, status: str, *, ran: bool, expl: Any = None) -> None:
        """Tell the scheduler, and the worker's execution summary, how ``task`` ended. DONE
        goes as runnable by this worker, so the scheduler lists the worker with the period as
        with a scheduled one (a failure is not: only the chunk retries it)."""
        tracking = self.tracking.pop(task.task_id, None)
        self.send(
            "add_task",
            **self.task_fields(task),
            status=status,
            runnable=status == DONE,
            expl="null" if expl is None else json.dumps(expl),
            # luigid keeps a tracking URL across the final report only of a RUNNING task
            **({} if tracking is None else {"tracking_url": tracking}),
        )
        if self.worker is not None:
            luigi_compat.add_to_summary(self.worker, task, status, ran=ran)
        elif self.channel is not None:
            channel.send_to_summary(self.channel, task, status, ran=ran)

    def show(self, task: luigi.Task, message: str, percentage: int) -> None:
        """Set the status message and progress of ``task`` (running on this worker) as its
        own ``set_status_message``/``set_progress_percentage`` would, in order with the
        reports."""
        self.send("set_task_status_message", task_id=task.task_id, status_message=message)
        self.send(
            "set_task_progress_percentage", task_id=task.task_id, progress_percentage=percentage
        )

    def task_fields(self, task: luigi.Task) -> dict[str, Any]:
        """What Luigi's worker tells the scheduler about a task, in this worker's name."""
        return {
            "task_id": task.task_id,
            "worker": self.worker_id,
            "family": task.task_family,
            "module": task.task_module,
            "params": task.to_str_params(),
            "resources": task.process_resources(),
            "priority": task.priority,
            "retry_policy_dict": retry_policy(task),
            "accepts_messages": task.accepts_messages,
        }

    # -- running -------------------------------------------------------------------------------
    def run(self, task: PeriodTask) -> bool:
        """Run ``task`` as Luigi's worker would; False when it was complete already (not run).

        A period another worker's live lease holds is waited for (its ``run()`` recorded
        nothing and fired START only), then decided by ``lease.outwait``, the rule a scheduled
        run waiting for it follows too: complete by then, it is not run; ended failed under
        luigid, it is refused as the scheduled run refuses it (``LeaseHeld`` from its
        ``run()``: FAILURE after its START, reported FAILED, the body not run again); under a
        local scheduler (no coordination between processes, as in Luigi) this process runs
        its own attempt, its START not fired twice. Raises what ``run()`` raises, after
        ``on_failure``.
        """
        started = False  # START fired (before a held lease was found)
        while True:
            try:
                return self._run_once(task, started)
            except LeaseHeld as held:
                started = True
                self._outwait(task, held)

    def _outwait(self, task: PeriodTask, held: LeaseHeld) -> None:
        """Wait until ``held``'s holder no longer runs ``task``'s period (on the database's
        clock, like the ledger's own judgement of the lease), then return to run it again or
        fail it as ``lease.outwait`` decides (luigid is a scheduler shared with the holder)."""
        try:
            if held.holder.lease_expires_at is None:
                raise held
            outwait(task.ledger(), held.holder, " of another worker", shared=self.remote)
        except LeaseHeld as refused:
            self._failed(task, refused)
            raise

    def _run_once(self, task: luigi.Task, started: bool) -> bool:
        if task.complete():  # as Luigi checks a yielded task before scheduling it
            self.settled(task, DONE, ran=False)
            return False
        if not started:
            for dep in luigi.task.flatten(task.requires()):  # as Luigi's worker adds it
                task.trigger_event(luigi.Event.DEPENDENCY_DISCOVERED, task, dep)
            task.trigger_event(luigi.Event.START, task)
        began = time.monotonic()
        try:
            self._run_bound(task)
        except KeyboardInterrupt:
            raise
        except LeaseHeld:
            raise  # nothing recorded: another worker runs it (see run)
        except BaseException as exc:
            self._failed(task, exc)
            raise
        task.trigger_event(luigi.Event.PROCESSING_TIME, task, time.monotonic() - began)
        expl = task.on_success()
        task.trigger_event(luigi.Event.SUCCESS, task)
        self.settled(task, DONE, ran=True, expl=expl)
        return True

    def _failed(self, task: luigi.Task, exc: BaseException) -> None:
        """``task`` failed with ``exc`` after its START: as Luigi's worker ends a failed task."""
        logger.error("gatekeeper: inline %s failed", task, exc_info=exc)
        task.trigger_event(luigi.Event.FAILURE, task, exc)
        expl = task.on_failure(exc)
        # RUNNING on this worker first (``announce_as``), as for a scheduled task: the
        # scheduler then counts the failure under the period's own retry policy (DISABLED
        # past retry_count)
        self.send("add_task", **self.task_fields(task), status=self.announce_as, runnable=False)
        self.settled(task, FAILED, ran=True, expl=expl)

    def _run_bound(self, task: luigi.Task) -> None:
        """``task.run()`` with Luigi's reporter attributes bound to a PeriodReporter."""
        reporter = PeriodReporter(self, task)
        for reporter_attr, task_attr in self.forwarded.items():
            setattr(task, task_attr, getattr(reporter, reporter_attr, None))
        try:
            task.run()
        finally:
            for task_attr in self.forwarded.values():
                setattr(task, task_attr, None)


class PeriodReporter:
    """What Luigi's TaskStatusReporter does for a scheduled task, for an inline period: its
    first call also tells the scheduler the period is RUNNING on this worker (so luigid,
    which ignores status messages of tasks it does not know, shows them; PENDING from a
    forked task process on luigid: ``InlineRuns.announce_as``)."""

    scheduler_messages = None  # an inline period accepts no scheduler messages

    def __init__(self, runs: InlineRuns, task: luigi.Task):
        self.runs, self.task = runs, task
        self.announced = False

    def _running(self, **extra: Any) -> None:
        if not self.announced or extra:
            self.runs.send(
                "add_task",
                **self.runs.task_fields(self.task),
                status=self.runs.announce_as,
                runnable=False,
                **extra,
            )
            self.announced = True

    def update_tracking_url(self, tracking_url: str) -> None:
        self.runs.tracking[self.task.task_id] = tracking_url
        self._running(tracking_url=tracking_url)

    def update_status_message(self, message: str) -> None:
        self._running()
        self.runs.send("set_task_status_message", task_id=self.task.task_id, status_message=message)

    def update_progress_percentage(self, percentage: int) -> None:
        self._running()
        self.runs.send(
            "set_task_progress_percentage",
            task_id=self.task.task_id,
            progress_percentage=percentage,
        )

    def decrease_running_resources(self, decrease_resources: dict[str, int]) -> None:
        self._running()
        self.runs.send(
            "decrease_running_task_resources",
            task_id=self.task.task_id,
            decrease_resources=decrease_resources,
        )
