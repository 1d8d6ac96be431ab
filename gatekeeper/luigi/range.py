"""Luigi range wrappers: fill the missing business periods of a job, oldest first by default.

Thin adapters over ``core.planning.plan_from_ledger``. A period is complete as the ``of`` class's
``bulk_complete`` says (``completeness.py``: one ledger query for PeriodTask's own without
outputs beyond the ledger; declared output files and a user's override honoured), so a range
and ``complete()`` agree; complete periods are never instantiated as Luigi tasks. Each
invocation is one frozen ``FillSession`` (``range_session.py``), built at Luigi's first
``complete()`` check, where bad parameters are refused as a scheduling error naming them.

- ``contiguous`` (default): the scheduled periods are filled in order, in ContiguousChunks of
  ``CHUNK`` periods yielded one at a time as dynamic dependencies; inside a chunk a period
  whose requirements are complete runs in the chunk's process, as the same Luigi task to its
  code and reported to the scheduler and the summary (``inline.py``), any other is yielded to
  Luigi's scheduler with its requirements (every period, with ``[gatekeeper] inline = false``
  or ``--inline false``: ``fill/filler.py``). A failure at P leaves the chunk, and the range,
  pending: no later period starts. Luigi's scheduler never holds more than one chunk's worth of
  periods, so the fill stays linear in the periods it fills. Under a central scheduler (luigid)
  too: chunks are named by their block of due periods, so every worker that adds the range
  names a chunk alike and luigid runs it once; leases run a period once whichever chunk has it.
- ``forward`` / ``reverse``: every chunk is yielded at once, ranked so Luigi takes the oldest
  (or newest) first, in parallel with ``--workers N``; inside an IndependentChunk a failed
  period is recorded and passed over, so a failure does not stop the others, and the chunk
  fails at the end. Cost is linear here too.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import logging
from collections.abc import Iterator
from typing import Any

import luigi

from gatekeeper.core.clock import epoch_seconds
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import HOURLY
from gatekeeper.core.planning import RangePlan, plan_from_ledger
from gatekeeper.core.progress import cursor_status, range_status
from gatekeeper.core.schedule import Schedule, ScheduleInput, Strategy, resolve_schedule
from gatekeeper.ledger import Ledger
from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi import config, first_run, own_schedule
from gatekeeper.luigi.attempt_run import is_own_run
from gatekeeper.luigi.cascade import layers, pending, walk
from gatekeeper.luigi.completeness import completeness
from gatekeeper.luigi.fill import filler as fill_filler
from gatekeeper.luigi.fill import marks
from gatekeeper.luigi.fill import watch as range_watch
from gatekeeper.luigi.fill.chunks import ContiguousChunk, show_status
from gatekeeper.luigi.fill.policy import refuse_batching
from gatekeeper.luigi.fill.watch import Invocation
from gatekeeper.luigi.plan_steps import plan_steps
from gatekeeper.luigi.range_params import RangeParameters
from gatekeeper.luigi.range_session import (
    FillSession,
    check_of_params,
    chunk_blocks,
    chunk_params,
    clock_at,
    emit_metrics,
    independent_chunks,
    job_profile,
    sample_task,
    upstream_tasks,
)
from gatekeeper.luigi.reprocess import all_done, choose, in_order, only_planned
from gatekeeper.luigi.tasks import PeriodTask, shared_ledger

logger = logging.getLogger("luigi-interface.gatekeeper")


class RangeBusinessBase(RangeParameters):
    """Common parameters and behaviour of RangeBusinessDaily and RangeBusinessHourly."""

    gatekeeper_summary = marks.RANGE  # an inline fill's summary judges it by its chunks

    _fill_cursor = 0  # contiguous run(): periods passed so far (Luigi resumes run() anew)

    # -- the fill session ----------------------------------------------------------------------
    @functools.cached_property
    def session(self) -> FillSession:
        """This invocation's fill session, built at first use (Luigi's first ``complete()``):
        the parameters are checked, the clock and settings fixed, the window planned (one
        ledger query). A bad parameter is then a Luigi scheduling error naming it, before
        anything is recorded, whether or not the window is complete. Luigi keeps one range
        instance per parameters in a process, so this is once per invocation."""
        return self._open_session()

    @functools.cached_property
    def invocation(self) -> Invocation:
        """What this invocation has done in this process: announced, checked, watched, closed
        (``fill/watch.py``)."""
        return Invocation()

    def _open_session(self) -> FillSession:
        of = self.of_class()
        schedule = self.schedule()
        check_of_params(of, self.of_params, self.label_to_param(self.first_business_label()))
        now = clock_at(epoch_seconds() if self.now is None else self.now)
        started = epoch_seconds()  # before Luigi forks a worker to run the range
        ledger = self.ledger()
        chosen = choose(self, ledger, self._plan(ledger, now, schedule), now)
        plan = chosen.fill
        cascade = None
        if chosen.cascade_left is not None or chosen.cascade_only:  # from every due period down
            roots = [self.task_for(label) for label in plan.due]
            cascade = walk(roots, chosen.cascade_left or (), ledger)
            if chosen.cascade_only:  # an applied plan's: exactly its pairs
                cascade = dataclasses.replace(
                    cascade, eligible=only_planned(cascade, chosen, str(self.plan_file))
                )
        keys = tuple(plan.key(label) for label in plan.scheduled)
        # forward/reverse gaps wait for a cascade with something to do (else they are required)
        first = bool(keys) and schedule.strategy is not Strategy.CONTIGUOUS
        return FillSession(
            now=now,
            schedule=schedule,
            started=started,
            plan=plan,
            keys=keys,
            chunks=chunk_blocks(plan),
            refreshes=chosen.tasks,
            filler=fill_filler.choose(self.inline),
            policy=chosen.policy,
            in_order=chosen.in_order,
            cascade=cascade,
            cascade_first=first and pending(cascade, ledger),
        )

    def schedule(self) -> Schedule:
        """The range's Schedule: its parameters, then the ``[gatekeeper]`` settings (the
        environment over luigi.cfg) for the zone and lateness, on the ``of`` class's kind
        and calendar. Raises InvalidInput naming the parameter."""
        given = ScheduleInput(
            start=self.start_label(),
            stop=self.stop_label(),
            period=self.of_class().period_kind,  # the range's kind on the class's calendar
            timezone=self.timezone,
            lateness=self.lateness,
            catchup=self.catchup,
            strategy=self.effective_strategy(),
        )
        return resolve_schedule(given, config.schedule_settings())

    def of_class(self) -> type[PeriodTask]:
        of = self.of
        if not (isinstance(of, type) and issubclass(of, PeriodTask)):
            raise InvalidInput("of", of, "expected a gatekeeper PeriodTask class")
        if of.period_kind != self.period_kind:
            raise InvalidInput(
                "of", of.get_task_family(), f"is {of.period_kind}; use the {of.period_kind} range"
            )
        refuse_batching(of)
        return of

    def job(self) -> str:
        return self.of_class().job_id_for(**dict(self.of_params))

    def effective_strategy(self) -> str:
        if self.reverse and self.strategy not in ("contiguous", "reverse"):
            raise InvalidInput("reverse", True, f"contradicts --strategy {self.strategy}")
        return "reverse" if self.reverse else str(self.strategy)

    # -- planning ------------------------------------------------------------------------------
    def plan(self, ledger: Ledger | None = None) -> RangePlan:
        """The window at the session's ``now`` as the ledger (default: this process's) and the
        ``of`` class's ``bulk_complete`` hold it now (one ledger query by default; the plan the
        session started from is ``session.plan``). On a fresh instance it is the session's
        own plan, made by this call: one query, not two."""
        fresh = "session" not in self.__dict__
        session = self.session
        if fresh and ledger is None:
            return session.plan
        return self._plan(ledger or self.ledger(), session.now, session.schedule)

    def _plan(self, ledger: Ledger, now: dt.datetime, schedule: Schedule) -> RangePlan:
        of, job = self.of_class(), self.job()
        return plan_from_ledger(
            ledger,
            job,
            schedule=schedule,
            now=now,
            task_limit=self.task_limit,
            complete=completeness(of, self.of_params, ledger, job),
        )

    # -- Luigi ---------------------------------------------------------------------------------
    def complete(self) -> bool:
        """True when no gap is left under the catch-up policy and every period the session
        reprocesses (``--reprocess``) is done (each task's own ``complete()``). Answered from
        what the invocation knows: the session's plan (made at the first check), or the plan
        made after its fill (the closing line's); only a range that had work and whose fill
        ran elsewhere (a forked worker, a process sharing it) plans again."""
        if luigi_compat.new_build(self):  # the same instance, built again: a new invocation
            for name in ("session", "invocation"):
                self.__dict__.pop(name, None)
            self._fill_cursor = 0
        session, known = self.session, self.invocation
        busy = session.plan.gaps or session.refreshes or session.cascade is not None
        if not known.checked or not busy:
            known.checked = True
            plan = session.plan
        else:
            plan = self.plan() if known.final is None else known.final
        if plan.gaps or not all_done(session.refreshes):
            return False
        return not pending(session.cascade, self.ledger())

    def final_plan(self, ledger: Ledger | None = None) -> RangePlan:
        """The plan after this invocation's fill, made once (its closing line and progress
        report, and later ``complete()`` checks, share it)."""
        known = self.invocation
        if known.final is None:
            known.final = self.plan(ledger)
        return known.final

    def requires(self) -> list[luigi.Task]:
        """The periods reprocessed beyond the gaps (``--reprocess``), and for ``forward`` and
        ``reverse`` every chunk of the fill: every process that adds the range to a scheduler
        adds its chunks, so all their workers share them. ``contiguous`` gaps, and the periods
        of an applied plan (``--plan-file``), are filled in ``run()``, in order; under
        ``forward`` and ``reverse`` an applied plan's periods are required through PlanSteps,
        which rank them in its order (``plan_steps.py``); and when ``--reprocess stale`` found
        something stale below, the chunks are yielded by ``run()`` after its cascade (a gap
        filled first would publish on what the cascade then republishes).
        Declares only (Luigi's tools call it too); what taking the range up does is ``deps``.
        """
        session = self.session
        if session.schedule.strategy is Strategy.CONTIGUOUS:
            return [] if session.in_order else list(session.refreshes)
        if session.in_order:  # after its cascade, if it has one (run())
            return [] if session.cascade is not None else list(plan_steps(session.refreshes))
        if session.cascade_first:  # the chunks after the cascade (run())
            return list(session.refreshes)
        return [*session.refreshes, *self._independent_chunks()]

    def deps(self) -> list[luigi.Task]:
        """Luigi's worker takes the range up: it calls ``deps()`` (its scheduler's method) as it
        schedules the range, and again in the process that runs it. Here, once per
        invocation, the range announces itself (``_announced``: the RangeEvent metrics, fired
        once as luigi's RangeBase fires them, the plan in the log, the watch) and, for an
        inline fill, opens the summary channel for the task processes the worker may fork
        (``Filler.taken_up``)."""
        self._announced().filler.taken_up()
        return list(super().deps())

    def _announced(self) -> FillSession:
        """The session; at the first call in the process that schedules the range, also record
        its job's profile (``range_session.job_profile``; written only when it changed), fire
        the RangeEvent metrics, log the plan and start the range's watch."""
        session = self.session
        if self.invocation.watch is None:
            first_run.warn_if_failures_exit_zero()
            profile = job_profile(self, session)
            self.ledger().record_profile(profile)
            for dep in upstream_tasks(sample_task(self, session)):  # each on its own calendar
                own_schedule.record(self.ledger(), dep)
            self.invocation.requires = profile.requires
            self.fire_metrics()
            logger.info(
                "gatekeeper: %s %s: %s", self.task_family, self.job(), session.plan.describe()
            )
            range_watch.watch(self)
        return session

    def fire_metrics(self) -> None:
        """Fire the RangeEvent figures of the session's plan, once per invocation: where the
        worker takes the range up (``deps``), or finds it complete (as luigi's RangeBase fires
        them from the ``requires()`` its ``complete()`` calls)."""
        if not self.invocation.metrics:
            self.invocation.metrics = True
            emit_metrics(self, self.session.plan)

    def run(self) -> Iterator[Any]:
        session = self._announced()
        since = dt.datetime.fromtimestamp(session.started, dt.timezone.utc)
        yield from layers(session.cascade, self.ledger, since, is_own_run)  # lowest first
        if session.schedule.strategy is Strategy.CONTIGUOUS:
            yield from (in_order(self) if self.session.in_order else self._fill_in_order())
        elif session.in_order and session.cascade is not None:  # an applied plan's periods
            yield plan_steps(session.refreshes)
        elif session.cascade_first:  # forward/reverse gaps, once the cascade below is done
            yield self._independent_chunks()
        self.report(self.final_plan())
        range_watch.close_after_run(self)

    def _independent_chunks(self) -> list[ContiguousChunk]:
        """Every chunk of a forward or reverse fill (``range_session.independent_chunks``)."""
        return list(independent_chunks(self, self.session))

    def chunk_tasks(self) -> list[ContiguousChunk]:
        """Every chunk this invocation fills (complete or not), as ``run()`` yields them."""
        if self.session.schedule.strategy is not Strategy.CONTIGUOUS:
            return self._independent_chunks()
        return [self._contiguous_chunk(block, keys) for block, keys in self.session.chunks]

    def _contiguous_chunk(self, block: str, keys: tuple[str, ...]) -> ContiguousChunk:
        return ContiguousChunk(**chunk_params(self, self.session, block, keys))

    def _fill_in_order(self) -> Iterator[luigi.Task]:
        """Yield the scheduled periods as consecutive chunks, one chunk at a time.

        Each ContiguousChunk fills its periods one at a time; a failure leaves its chunk, and
        so the range, pending, and every later period untouched. Chunks keep the dependencies
        Luigi's scheduler accumulates per task short, so the fill stays linear. Luigi runs
        ``run()`` anew after each chunk: ``_fill_cursor`` says where it was.
        """
        resume, cursor = self._fill_cursor, 0
        for block, keys in self.session.chunks:
            if cursor >= resume:  # chunks before the cursor were filled (no task built)
                chunk = self._contiguous_chunk(block, keys)
                if chunk.missing_now():
                    self._fill_cursor = cursor
                    self.report_cursor(cursor)
                    yield chunk
            cursor += len(keys)
        self._fill_cursor = cursor

    def report_cursor(self, cursor: int) -> None:
        """Progress while filling in order, without re-planning (no ledger query)."""
        status = cursor_status(self.session.plan, cursor)
        if status is not None:
            self.show(*status)

    def report(self, plan: RangePlan) -> None:
        """Show progress in the scheduler: filled/total, contiguous-through, next, skipped."""
        self.show(*range_status(plan))
        if plan.gaps:
            logger.warning(
                "gatekeeper: %s: %d gaps remain after this invocation (task_limit "
                "%s); run it again or raise --task-limit",
                self.job(),
                len(plan.gaps),
                plan.task_limit,
            )

    def show(self, message: str, percentage: int) -> None:
        """Set the range's status in the scheduler, unless its watch does it (under luigid,
        per period, from the process that added the range)."""
        if not range_watch.reports_remotely(self):
            show_status(self, message, percentage)

    def ledger(self) -> Ledger:
        """This process's ledger. Not cached on the task: ``--workers N`` runs the range in a
        child forked after scheduling, which must not reuse its parent's connection."""
        return shared_ledger()

    def task_for(self, label: Any) -> PeriodTask:
        of = self.of_class()
        return of(**{**dict(self.of_params), of.period_param: self.label_to_param(label)})

    # -- period conversions (the period kind's) -----------------------------------------------
    def first_business_label(self) -> Any:
        """The first business period of the ``of`` class's calendar at or after ``start``."""
        kind = self.of_class().period_kind
        return kind.at(kind.rank(self.start_label(), "start"))


@RangeBusinessBase.event_handler(luigi.Event.DEPENDENCY_PRESENT)
def _complete_when_checked(task: RangeBusinessBase) -> None:
    """Luigi found the range complete while scheduling (so it will not run): its RangeEvent
    figures fire as Luigi's own range fires them, and an idempotent rerun still ends with its
    closing line."""
    task.fire_metrics()
    range_watch.close_complete(task)


class RangeBusinessDaily(RangeBusinessBase):
    """Fill the missing business dates of ``--of`` from ``--start`` to ``now - lateness``.

    ``luigi --module example_pipelines.sales RangeBusinessDaily --of DailySalesLoad
    --start 2026-10-01 --lateness 2h --local-scheduler``
    """

    start = luigi.DateParameter(description="First business date (inclusive)")
    stop = luigi.DateParameter(
        default=None,  # type: ignore[arg-type]
        description="End business date (exclusive)",
    )


class RangeBusinessHourly(RangeBusinessBase):
    """Fill the missing business hours of ``--of`` (a BusinessHourTask); hours are UTC."""

    start = luigi.DateHourParameter(description="First hour (inclusive), e.g. 2026-10-01T00")
    stop = luigi.DateHourParameter(
        default=None,  # type: ignore[arg-type]
        description="End hour (exclusive)",
    )
    period_kind = HOURLY
