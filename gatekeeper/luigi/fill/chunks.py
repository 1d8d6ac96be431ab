"""The chunk tasks a range fills through: consecutive periods, each run once.

A period whose requirements are complete, and whose Luigi settings running inline honours
(``policy.py``), runs inside the chunk on its first try in the fill (``inline.InlineRuns``: the
same Luigi task to its code, reported to the scheduler and the execution summary), which saves
a scheduler round trip per period, under the local scheduler and luigid alike. Any other period
is yielded to the scheduler with its requirements: one whose settings inline running cannot
honour, one whose requirements are not complete, and one that already failed in this fill
(its retries are the scheduler's, under its own retry policy). A chunk that saw a period fail
inline fails itself, so the scheduler retries it (and with it that period) when, and only
when, it would retry the period. The ledger's leases make sure a period is attempted once
whichever chunk or worker reaches it.

Whether any period runs inline at all is the chunk's ``Filler`` (``filler.py``): with
``[gatekeeper] inline = false`` (or ``--inline false``) every period is yielded to the
scheduler, and the chunk is a plain Luigi task with dynamic dependencies.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Collection, Iterator
from typing import Any

import luigi

from gatekeeper.core.display import printable
from gatekeeper.core.errors import GatekeeperError
from gatekeeper.core.progress import chunk_status, failed_keys, filled_status
from gatekeeper.luigi.completeness import complete_keys
from gatekeeper.luigi.fill import policy
from gatekeeper.luigi.fill.filler import Filler, PeriodRuns, choose
from gatekeeper.luigi.tasks import PeriodTask, shared_ledger

logger = logging.getLogger("luigi-interface.gatekeeper")

CHUNK = 32  # periods per chunk at most
UTC = dt.timezone.utc


class ContiguousChunk(luigi.Task):
    """Consecutive periods of a contiguous fill, filled one at a time, oldest first.

    An implementation detail of the range wrappers; complete when all its periods are. A period
    that fails leaves the chunk pending (failed, when it failed inline), so no later period
    starts.
    """

    gatekeeper_summary = True  # an inline fill's summary judges it by the ledger (channel.py)

    of: Any = luigi.TaskParameter(description="The PeriodTask class being filled")
    of_params: Any = luigi.DictParameter(default={}, description="Other parameters of 'of'")
    block: Any = luigi.Parameter(description="Ledger key of the first period of the block")
    last: Any = luigi.Parameter(description="Ledger key of the last period it fills")
    keys: Any = luigi.ListParameter(
        significant=False,
        description="Ledger keys of the periods it fills, oldest first; "
        "an invocation planned later lists fewer (the chunk's identity is block and last)",
    )
    inline: Any = luigi.OptionalBoolParameter(  # type: ignore[call-arg]  # parsing: BoolParameter's
        default=None,
        significant=False,
        parsing=luigi.BoolParameter.EXPLICIT_PARSING,
        description="Run a period whose requirements are complete inside this task (default: "
        "[gatekeeper] inline; a range passes its own choice)",
    )
    since: Any = luigi.FloatParameter(
        default=0.0,
        significant=False,
        description="When the fill started (epoch seconds): a period that failed since then "
        "is retried by the scheduler, never inline",
    )
    order: Any = luigi.FloatParameter(
        default=0.0,
        significant=False,
        description="Place in the fill order, from 0 (first) to 1 (excluded)",
    )

    _cursor = 0  # periods of ``keys`` passed so far (Luigi runs run() anew after each yield)
    _seen_complete = False  # this instance saw all its periods complete, or filled them
    _just_missing = False  # missing_now() found one missing; complete() answers so once

    def fill_job(self) -> str:
        return str(self.of.job_id_for(**dict(self.of_params)))

    def _done(self, keys: list[str]) -> set[str]:
        """Those of ``keys`` that are complete as the range judges them (the ``of`` class's
        ``bulk_complete``: one ledger query by default, declared outputs honoured)."""
        return complete_keys(self.of, self.of_params, shared_ledger(), keys)

    def _failed(self) -> set[str]:
        """Keys whose latest attempt failed or was abandoned since the fill started."""
        since = dt.datetime.fromtimestamp(self.since, UTC)
        return failed_keys(
            shared_ledger().latest_between(self.fill_job(), min(self.keys), max(self.keys)), since
        )

    def complete(self) -> bool:
        """All its periods are complete: True, without a query, once this instance saw them
        complete or filled them; the answer ``missing_now`` just gave; else one query. (Each
        invocation of a range makes chunks of its own: ``since`` is its start.)"""
        if self._seen_complete:
            return True
        if self._just_missing:
            self._just_missing = False
            return False
        self._seen_complete = not set(self.keys) - self._done(list(self.keys))
        return self._seen_complete

    def missing_now(self) -> bool:
        """Not ``complete()``, asked by the range as it is about to yield the chunk: Luigi's
        check of the yielded chunk, which follows at once in this process, gets the same
        answer without asking the ledger again."""
        missing = not self.complete()
        self._just_missing = missing
        return missing

    def requires(self) -> list[Any]:
        """Nothing (periods are yielded from ``run()``)."""
        return []

    @property
    def filler(self) -> Filler:
        """How this chunk fills its periods (``filler.choose``: its ``inline``, else
        ``[gatekeeper] inline``)."""
        return choose(self.inline)

    def deps(self) -> list[Any]:
        """Luigi's worker schedules the chunk (it calls ``deps()``, its scheduler's method, in
        its own process): for an inline fill, the moment to let the task process it may fork
        for the chunk count inline periods in its execution summary (``Filler.taken_up``)."""
        self.filler.taken_up()
        return list(super().deps())

    # -- the periods' Luigi settings -----------------------------------------------------------

    @property
    def priority(self) -> float:  # type: ignore[override]
        """Its periods' priority, so the scheduler weighs the chunk as it would weigh them
        (and a period it yields keeps exactly its own: Luigi's scheduler raises a dependency's
        priority to its dependent's), plus ``rank``."""
        base = self._task(self.keys[0]).priority if self.keys else 0
        return float(base) + self.rank()

    def rank(self) -> float:
        """Nothing: a contiguous fill yields one chunk at a time, so no order to break."""
        return 0.0

    @property
    def retry_count(self) -> int:
        """Never disabled before its periods: the chunk fails once per period that failed on
        its inline try, on top of what the scheduler would allow any task."""
        return len(self.keys) + policy.scheduler_retry_count()

    def announce(self, task: PeriodTask) -> None:
        """The chunk depends on ``task``, as a range's ``requires()`` lists its periods."""
        self.trigger_event(luigi.Event.DEPENDENCY_DISCOVERED, self, task)

    def _may_run_inline(self, task: PeriodTask, runs: PeriodRuns, filler: Filler) -> bool:
        """Inline only for an inline fill (``filler.choose``), when the outcome reaches the
        scheduler, when running inline honours the period's settings (``policy.py``), and
        once its requirements are complete; under any scheduler (luigid runs each chunk once,
        and a period another chunk or range runs meanwhile is deduplicated by its lease:
        ``InlineRuns.run`` waits for it, then finds it complete)."""
        return filler.may_run_inline(task, runs)

    # -- running -------------------------------------------------------------------------------
    def run(self) -> Iterator[Any]:
        keys = list(self.keys)
        cursor = self._cursor
        done = self._done(keys[cursor:]) | set(keys[:cursor])  # filled in order up to cursor
        retried = self._failed()
        filler = self.filler
        runs = filler.runs(self)
        count = sum(1 for key in keys if key in done)  # kept as it grows: O(1) a period
        try:
            for index in range(cursor, len(keys)):
                if keys[index] in done:
                    continue
                self._cursor = index  # every key before it is done: it is the next
                self.show(filled_status(len(keys), count, (), keys[index]), runs)
                task = self._task(keys[index])
                self.announce(task)
                if keys[index] not in retried and self._may_run_inline(task, runs, filler):
                    runs.run(task)
                else:
                    runs.flush()
                    yield task  # resumed here only once the period is complete
                done.add(keys[index])
                count += 1
            self.show(filled_status(len(keys), count), runs, last=True)
            self._seen_complete = True
        finally:
            runs.flush()

    def progress(
        self,
        done: Collection[str],
        failed: Collection[str] = (),
        runs: PeriodRuns | None = None,
        *,
        last: bool = False,
    ) -> None:
        """Show ``filled D/N[, F failed (first P)], next K`` and the percentage. Not per
        period under luigid (``runs`` remote): the range's watch sets every chunk's status
        there per period, from the ledger, without a round trip per period here; the
        ``last`` one goes with the periods' reports, without waiting for a round trip."""
        self.show(chunk_status(list(self.keys), done, failed), runs, last=last)

    def show(
        self, status: tuple[str, int], runs: PeriodRuns | None = None, *, last: bool = False
    ) -> None:
        """Show ``status`` (a message and a percentage), as ``progress`` says."""
        if runs is not None and runs.remote:
            if last:
                runs.show(self, *status)
            return
        show_status(self, *status)

    def _task(self, key: str) -> PeriodTask:
        kind = self.of.period_kind
        value = kind.to_param(kind.label(key))
        return self.of(**{**dict(self.of_params), self.of.period_param: value})


class IndependentChunk(ContiguousChunk):
    """Periods of a forward or reverse fill: each is attempted whatever happens to the others.

    Periods that may run inline run here, in order, a failure recorded and passed over; the
    others are yielded together for Luigi to run in parallel. The chunk fails at the end if a
    period failed inline, so the scheduler retries it (its failed periods then scheduled).
    """

    def rank(self) -> float:
        """Less than a thousandth for its place in the fill order: every chunk of a forward or
        reverse fill is required at once, and the scheduler breaks ties by when it first heard
        of a task, which is not the order a range lists them in."""
        return (1.0 - float(self.order)) / 1000

    def run(self) -> Iterator[Any]:
        keys = list(self.keys)
        done, retried = self._done(keys), self._failed()
        deferred: list[PeriodTask] = []
        failed_now: list[str] = []
        filler = self.filler
        runs = filler.runs(self)
        try:
            for key in [key for key in keys if key not in done]:
                task = self._task(key)
                self.announce(task)
                if key in retried or not self._may_run_inline(task, runs, filler):
                    deferred.append(task)
                    continue
                self.progress(done, failed_now, runs=runs)
                try:
                    runs.run(task)
                    done.add(key)
                except Exception as exc:  # recorded failed by the attempt; the others go on
                    logger.error(
                        "gatekeeper: %s %s failed: %s", self.fill_job(), key, printable(exc)
                    )
                    failed_now.append(key)
        finally:
            runs.flush()
        if deferred:
            self.progress(done, failed_now)
            yield deferred
        self.progress(self._done(keys), failed_now)
        if failed_now:
            raise GatekeeperError(
                f"{self.fill_job()}: {len(failed_now)} period(s) failed in this "
                f"fill: {', '.join(failed_now)}"
            )


def show_status(task: luigi.Task, message: str, percentage: int) -> None:
    """Set ``task``'s status message and progress percentage in its scheduler; nothing when
    it is not running under a Luigi worker (which binds these methods only while it runs)."""
    set_message = getattr(task, "set_status_message", None)
    set_percentage = getattr(task, "set_progress_percentage", None)
    if callable(set_message) and callable(set_percentage):
        set_message(message)
        set_percentage(percentage)
