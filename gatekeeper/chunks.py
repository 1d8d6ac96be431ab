"""Chunks of a contiguous range fill: consecutive periods filled one at a time, in order.

Running a period whose requirements are complete inside the chunk (``run_inline``) saves a trip
through Luigi's local scheduler, whose cost per step grows with every task it has seen; under a
central scheduler every period is yielded instead, so luigid deduplicates it.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Collection, Iterator
from typing import Any

import luigi

from gatekeeper.errors import GatekeeperError
from gatekeeper.luigi_compat import under_remote_scheduler
from gatekeeper.periods import period_from_key
from gatekeeper.progress import chunk_status, failed_keys
from gatekeeper.tasks import PeriodTask, shared_ledger

logger = logging.getLogger("luigi-interface.gatekeeper")

CHUNK = 32  # periods per ContiguousChunk
UTC = dt.timezone.utc


class ContiguousChunk(luigi.Task):
    """Consecutive periods of a contiguous fill, filled one at a time, oldest first.

    An implementation detail of the range wrappers; complete when all its periods are. A period
    that fails leaves the chunk pending, so no later period starts.
    """

    of: Any = luigi.TaskParameter(description="The PeriodTask class being filled")
    of_params: Any = luigi.DictParameter(default={}, description="Other parameters of 'of'")
    block: Any = luigi.Parameter(description="Ledger key of the first period of the block")
    last: Any = luigi.Parameter(description="Ledger key of the last period it fills")
    keys: Any = luigi.ListParameter(
        significant=False, description="Ledger keys of the periods it fills, oldest first; "
        "an invocation planned later lists fewer (the chunk's identity is block and last)",
    )

    def _job(self) -> str:
        return str(self.of.job_id_for(**dict(self.of_params)))

    def _done(self, keys: list[str]) -> set[str]:
        return set(self.of.completed_keys(shared_ledger(), self._job(), keys))

    def complete(self) -> bool:
        return not set(self.keys) - self._done(list(self.keys))

    inline: Any = luigi.BoolParameter(
        default=True, significant=False,
        description="Run a period whose requirements are complete inside this task",
    )

    def run(self) -> Iterator[Any]:
        keys = list(self.keys)
        cursor = self.__dict__.get("_cursor", 0)
        done = self._done(keys[cursor:]) | set(keys[:cursor])  # filled in order up to cursor
        for index in range(cursor, len(keys)):
            if keys[index] in done:
                continue
            self._cursor = index
            self.progress(done)
            task = self._task(keys[index])
            if self._may_run_inline(task):
                run_inline(task)
                done.add(keys[index])
            else:
                yield task
                done.add(keys[index])  # resumed here only once the period is complete
        self.progress(done)

    def progress(self, done: Collection[str], failed: Collection[str] = ()) -> None:
        """Show ``filled D/N[, F failed (first P)], next K`` and the percentage."""
        show_status(self, *chunk_status(list(self.keys), done, failed))

    def _may_run_inline(self, task: PeriodTask) -> bool:
        """Inline only under a worker's own scheduler, and once the requirements are complete.

        A central scheduler (luigid) dedupes a period only if it schedules it: another worker
        may schedule the same period (e.g. by adding the same range, which resets this chunk's
        dynamic dependencies there), and an inline run beside it would be a second attempt.
        """
        if not self.inline or under_central_scheduler(self):
            return False
        return all(r.complete() for r in luigi.task.flatten(task.requires()))

    @property
    def priority(self) -> int:  # type: ignore[override]
        """Luigi's priority: the fill order a range wrapper gave this chunk (default 0)."""
        return int(self.__dict__.get("_gk_priority", 0))

    def ranked(self, priority: int) -> ContiguousChunk:
        """Give this chunk a Luigi priority (higher runs first) and return it."""
        self.__dict__["_gk_priority"] = priority
        return self

    def _task(self, key: str) -> PeriodTask:
        label = period_from_key(key)
        if isinstance(label, dt.datetime):
            label = label.astimezone(UTC).replace(tzinfo=None)
        return self.of(**{**dict(self.of_params), self.of.period_param: label})


class IndependentChunk(ContiguousChunk):
    """Periods of a forward or reverse fill: each is attempted whatever happens to the others.

    Periods whose requirements are complete run here, in order, a failure recorded and passed
    over; the others are yielded together for Luigi to run in parallel. A period counts as
    settled once complete or failed since ``since`` (the fill's start), so a rerun of this
    chunk never attempts it twice; the chunk fails at the end if any of its periods did.
    """

    since: Any = luigi.FloatParameter(description="When the fill started (epoch seconds)")

    def run(self) -> Iterator[Any]:
        deferred: list[PeriodTask] = []
        keys = list(self.keys)
        done, failed_now = self._done(keys), self._failed()
        for key in [key for key in keys if key not in done | failed_now]:
            task = self._task(key)
            if not self._may_run_inline(task):
                deferred.append(task)
                continue
            self.progress(done, failed_now)
            try:
                run_inline(task)
                done.add(key)
            except Exception as exc:  # recorded failed by the attempt; the others go on
                logger.error("gatekeeper: %s %s failed: %s", self._job(), key, exc)
                failed_now.add(key)
        if deferred:
            self.progress(done, failed_now)
            yield deferred
        failed_since = self._failed()
        failed = [key for key in keys if key in failed_since]
        self.progress(self._done(keys), failed_since)
        if failed:
            raise GatekeeperError(f"{self._job()}: {len(failed)} period(s) failed in this "
                                  f"fill: {', '.join(failed)}")

    def _failed(self) -> set[str]:
        """Keys whose latest attempt failed or was abandoned since the fill started."""
        since = dt.datetime.fromtimestamp(self.since, UTC)
        return failed_keys(
            shared_ledger().latest_between(self._job(), min(self.keys), max(self.keys)), since)


def show_status(task: luigi.Task, message: str, percentage: int) -> None:
    """Set ``task``'s status message and progress percentage in its scheduler; nothing when
    it is not running under a Luigi worker (which binds these methods only while it runs)."""
    set_message = getattr(task, "set_status_message", None)
    set_percentage = getattr(task, "set_progress_percentage", None)
    if callable(set_message) and callable(set_percentage):
        set_message(message)
        set_percentage(percentage)


def under_central_scheduler(task: luigi.Task) -> bool:
    """True when a worker of a central scheduler (luigid) is running ``task``.

    Luigi's worker binds ``task.set_status_message`` to its TaskStatusReporter, which holds
    the scheduler; luigid's client is a RemoteScheduler. False outside a worker.
    """
    return under_remote_scheduler(task)


def run_inline(task: luigi.Task) -> None:
    """Run ``task`` in this process as Luigi's worker would, firing the same events.

    For a period whose requirements are already complete this saves a scheduler round trip,
    whose cost grows with every task Luigi's local scheduler has seen. Raises what run() raises.
    """
    task.trigger_event(luigi.Event.START, task)
    started = time.time()
    try:
        task.run()
    except BaseException as exc:
        task.trigger_event(luigi.Event.FAILURE, task, exc)
        raise
    task.trigger_event(luigi.Event.PROCESSING_TIME, task, time.time() - started)
    task.trigger_event(luigi.Event.SUCCESS, task)
