"""Chunks of a contiguous range fill: consecutive periods filled one at a time, in order.

A period whose requirements are complete runs inside the chunk (``inline.InlineRuns``: the
same Luigi task to its code, reported to the scheduler and the execution summary), which saves
a scheduler round trip per period, under the local scheduler and luigid alike; the others are
yielded to the scheduler with their requirements. Luigi (or luigid) runs each chunk once; the
ledger's leases make sure a period is attempted once whichever chunk or worker reaches it.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Collection, Iterator
from typing import Any

import luigi

from gatekeeper import luigi_compat
from gatekeeper.completeness import complete_keys
from gatekeeper.errors import GatekeeperError
from gatekeeper.inline import InlineRuns
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
        """Those of ``keys`` that are complete as the range judges them (the ``of`` class's
        ``bulk_complete``: one ledger query by default, declared outputs honoured)."""
        return complete_keys(self.of, self.of_params, shared_ledger(), keys)

    def complete(self) -> bool:
        return not set(self.keys) - self._done(list(self.keys))

    def requires(self) -> list[Any]:
        """Nothing (periods are yielded from ``run()``). Luigi's worker asks while it schedules
        the chunk, in its own process: the moment to let the task process it may fork for the
        chunk count inline periods in its execution summary."""
        luigi_compat.open_summary_channel()
        return []

    inline: Any = luigi.BoolParameter(
        default=True, significant=False,
        description="Run a period whose requirements are complete inside this task",
    )

    def run(self) -> Iterator[Any]:
        keys = list(self.keys)
        cursor = self.__dict__.get("_cursor", 0)
        done = self._done(keys[cursor:]) | set(keys[:cursor])  # filled in order up to cursor
        runs = InlineRuns(self)
        try:
            for index in range(cursor, len(keys)):
                if keys[index] in done:
                    continue
                self._cursor = index
                self.progress(done, runs=runs)
                task = self._task(keys[index])
                if self._may_run_inline(task):
                    runs.run(task)
                else:
                    runs.flush()
                    yield task  # resumed here only once the period is complete
                done.add(keys[index])
            self.progress(done, runs=runs, last=True)
        finally:
            runs.flush()

    def progress(self, done: Collection[str], failed: Collection[str] = (),
                 runs: InlineRuns | None = None, *, last: bool = False) -> None:
        """Show ``filled D/N[, F failed (first P)], next K`` and the percentage. Not per
        period under luigid (``runs`` remote): the range's watch sets every chunk's status
        there per period, from the ledger, without a round trip per period here; the
        ``last`` one goes with the periods' reports, without waiting for a round trip."""
        status = chunk_status(list(self.keys), done, failed)
        if runs is not None and runs.remote:
            if last:
                runs.show(self, *status)
            return
        show_status(self, *status)

    def _may_run_inline(self, task: PeriodTask) -> bool:
        """Inline once the period's requirements are complete, under any scheduler.

        Under luigid too: luigid runs each chunk once (chunks are named by their block), and
        a period a worker of another chunk or range runs meanwhile is deduplicated by its
        lease (``InlineRuns.run`` waits for it, then finds it complete).
        """
        return bool(self.inline) and all(
            r.complete() for r in luigi.task.flatten(task.requires()))

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
        runs = InlineRuns(self)
        try:
            for key in [key for key in keys if key not in done | failed_now]:
                task = self._task(key)
                if not self._may_run_inline(task):
                    deferred.append(task)
                    continue
                self.progress(done, failed_now, runs=runs)
                try:
                    runs.run(task)
                    done.add(key)
                except Exception as exc:  # recorded failed by the attempt; the others go on
                    logger.error("gatekeeper: %s %s failed: %s", self._job(), key, exc)
                    failed_now.add(key)
        finally:
            runs.flush()
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
