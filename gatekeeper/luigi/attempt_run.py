"""Recording a period task's run as an attempt (the part of ``PeriodTask`` around ``run()``).

``recorded`` wraps a task class's ``run`` wherever the class got it; ``RecordedRun`` is the
mixin that ``PeriodTask`` gets the attempt's lifecycle from: allocate the attempt (waiting for
a live copy of itself under luigid), run the user's code under a heartbeat, record the outcome,
and turn a lost lease into ``LeaseLost`` naming the attempt that took over.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import logging
import os
import secrets
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

import luigi

from gatekeeper.core.display import printable
from gatekeeper.core.errors import GatekeeperError, LeaseHeld, LeaseLost, StateConflict
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.validation import printable_text
from gatekeeper.integrations import lineage
from gatekeeper.integrations.lineage import LineageSettings
from gatekeeper.ledger import Ledger
from gatekeeper.ledger.outages import UnknownOutcome
from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi import config, integration_config, own_schedule
from gatekeeper.luigi.completeness import outputs_exist
from gatekeeper.luigi.lease import Heartbeat, outwait

logger = logging.getLogger("luigi-interface.gatekeeper")


#: This invocation's mark, the first 12 hex digits of every run ID it makes: a ``luigi``
#: process and the task processes its workers fork share it (they inherit the module), so
#: a range's closing line counts its own work and nobody else's. The rest of the ID is a
#: UUID4's (its version and variant digits included), so it is still a UUID.
INVOCATION = secrets.token_hex(6)


def _prepare_lineage_before_fork() -> None:
    """Before this process forks (Luigi's ``--workers N`` forks one task process per task),
    when OpenLineage events are on: load openlineage-python and create the invocation's shared
    lineage state here, once, so every child inherits both instead of importing the library
    again and learning again that the backend is down (``lineage.prepare``). A bad option is
    left for the attempt to report. Only in a process that read gatekeeper's options
    already (Luigi's scheduling process has, checking its tasks): any other fork must not be
    the first to read them (Luigi keeps what it read, and a child configured after the fork
    would find it)."""
    if not config.resolved_here():
        return
    try:
        settings = integration_config.lineage()
    except Exception:  # noqa: BLE001 - refused, with its message, by the attempt
        return
    lineage.prepare(settings)


os.register_at_fork(before=_prepare_lineage_before_fork)


def new_run_id() -> str:
    """A new run ID: this invocation's mark, then the last 20 hex digits of a UUID4."""
    return INVOCATION + uuid.uuid4().hex[12:]


def is_own_run(run_id: str) -> bool:
    """True for a run ID this invocation made (``new_run_id``)."""
    return run_id.startswith(INVOCATION)


def _no_dynamic_dependencies(name: str) -> TypeError:
    return TypeError(
        f"{name}: a gatekeeper task's run() must not yield dynamic dependencies (one attempt "
        "is one run of run(); Luigi would resume it as new runs); declare them in requires()"
    )


def recorded(user_run: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Wrap a task class's ``run`` (wherever the class got it) so every execution is a
    recorded attempt. A generator ``run`` is refused here, at class definition; one hidden
    behind a decorator is refused when it runs (the attempt is recorded failed)."""
    name = getattr(user_run, "__qualname__", repr(user_run))
    if inspect.isgeneratorfunction(user_run):
        raise _no_dynamic_dependencies(name)

    def attempt(self: Any) -> Any:
        result = user_run(self)
        if inspect.isgenerator(result):
            result.close()
            raise _no_dynamic_dependencies(name)
        return result

    @functools.wraps(user_run)
    def run(self: Any) -> Any:
        if getattr(self, "_gk_in_run", False):  # super().run() from an overriding run()
            return user_run(self)
        self._gk_in_run = True
        try:
            return self._run_as_attempt(lambda: attempt(self))
        finally:
            self._gk_in_run = False

    run._gk_recorded = True  # type: ignore[attr-defined]
    return run


class RecordedRun:
    """The attempt lifecycle of a ``PeriodTask`` (which provides ``ledger()``, ``job_id``,
    ``period_key``, ``attempt`` and ``output()``); see the module docstring."""

    run_id: str | None = None
    attempt_ordinal: int | None = None
    #: while the attempt's body runs: the ledger as it writes through it (``ledger()``)
    owned_ledger: Ledger | None = None
    _gk_in_run = False  # set by recorded() while the wrapped run() runs
    job_id: Any
    period_key: Any
    attempt: Any
    rerun: Any

    if TYPE_CHECKING:  # provided by PeriodTask and luigi.Task

        def ledger(self) -> Ledger: ...

        def output(self) -> Any: ...

    def before_attempt(self, ledger: Ledger) -> None:
        """Hook run before an attempt is allocated; raising here records nothing."""

    def reruns_succeeded(self) -> bool:
        """True when this run is asked to run again a period whose latest attempt succeeded:
        an explicit ``--attempt N`` (a repair) or ``--rerun REASON``."""
        return bool(self.attempt) or self.rerun is not None

    def _run_as_attempt(self, work: Callable[[], Any]) -> Any:
        ledger = self.ledger()
        self.before_attempt(ledger)
        own_schedule.record(ledger, self)  # the job's own calendar: once per process
        lease = config.lease_seconds()
        events = integration_config.lineage()  # read once per attempt
        lineage.configured(
            events
        )  # a bad openlineage* option is refused before anything is written
        started = self._begin(ledger, lease, skip=not self.reruns_succeeded())
        if started.state is RunState.SUCCEEDED:
            if outputs_exist(cast(luigi.Task, self)):  # another worker did it: no duplicate work
                logger.info(
                    "gatekeeper: %s %s: attempt %d (run %s) already succeeded; nothing to run",
                    self.job_id,
                    self.period_key,
                    started.attempt,
                    started.run_id,
                )
                return None
            started = self._begin(ledger, lease, skip=False)  # its outputs are gone: rerun
        self.run_id, self.attempt_ordinal = started.run_id, started.attempt
        logger.info(
            "gatekeeper: %s %s attempt %d started (run %s)",
            self.job_id,
            self.period_key,
            started.attempt,
            started.run_id,
        )
        lineage.started(events, self, ledger, started)
        with Heartbeat(ledger.url, started.run_id, lease) as beat:
            self.owned_ledger = ledger.owned_by(started)  # the body's writes are fenced
            try:
                result = work()
                if beat.lost.is_set():
                    raise self._lease_lost(ledger, started)
            except BaseException as exc:
                self._record_failure(ledger, started, exc, events)
                raise
            finally:
                self.owned_ledger = None
        self._finish(ledger, started, RunState.SUCCEEDED, None, events)
        return result

    def _begin(self, ledger: Ledger, lease: float, skip: bool) -> Attempt:
        """Allocate the attempt. Under luigid a live lease on the period can only be a copy of
        this very task another worker runs inline in a chunk (luigid dedupes scheduled ones):
        wait for it, then take its success as ours instead of failing as a race loser. With
        ``[gatekeeper] inline = false`` no period runs inline, so a held lease is refused at
        once, as under a local scheduler (and the worker's scheduler is never looked up)."""
        while True:
            try:
                return ledger.begin_attempt(
                    self.job_id,
                    self.period_key,
                    new_run_id(),
                    lease_seconds=lease,
                    attempt=self.attempt,
                    skip_succeeded=skip,
                    reason=self.rerun,
                )
            except LeaseHeld as held:
                if not (
                    skip
                    and held.holder.lease_expires_at is not None
                    and config.inline()
                    and luigi_compat.under_remote_scheduler(cast(luigi.Task, self))
                ):
                    raise
                self._wait_for(ledger, held.holder)

    def _wait_for(self, ledger: Ledger, holder: Attempt) -> None:
        """Wait while ``holder`` runs this period, then return to begin again: it succeeded
        (taken as ours), another attempt replaced it, or its lease expired. Raises LeaseHeld
        naming ``holder`` as it ended when it failed (or was abandoned): its failure is not
        retried here (the scheduler retries this task under its retry policy). The rule is
        ``lease.outwait``'s, shared with an inline run (only under luigid does this wait)."""
        outwait(ledger, holder, shared=True)

    def record_timeout(self, message: str) -> None:
        """Luigi's worker terminated the process running this task at its worker timeout
        (``Event.TIMEOUT``, fired in the worker's process): record the attempt that process
        was running as failed, with Luigi's reason. Only a running attempt that started within
        the timeout is that process's (a terminated process records nothing itself); writes."""
        ledger = self.ledger()
        latest = ledger.latest(self.job_id, self.period_key)
        timeout = self.worker_timeout or luigi_compat.worker_timeout()  # type: ignore[attr-defined]
        if (
            latest is None
            or latest.state is not RunState.RUNNING
            or (latest.started_at < ledger.db_now() - dt.timedelta(seconds=float(timeout) + 60))
        ):
            return
        try:
            ledger.record(
                self.job_id,
                self.period_key,
                latest.attempt,
                latest.run_id,
                RunState.FAILED,
                latest.started_at,
                error=printable_text(message),
            )
        except GatekeeperError as exc:
            logger.error(
                "gatekeeper: %s %s attempt %d: could not record its timeout: %s",
                self.job_id,
                self.period_key,
                latest.attempt,
                exc,
            )
            return
        logger.info(
            "gatekeeper: %s %s attempt %d (run %s) recorded failed: %s",
            self.job_id,
            self.period_key,
            latest.attempt,
            latest.run_id,
            printable(message),
        )

    def _record_failure(
        self, ledger: Ledger, started: Attempt, exc: BaseException, events: LineageSettings | None
    ) -> None:
        """Record the attempt ``failed``, keeping the run's own error in front if that fails
        (a lost lease: the attempt is already ``abandoned``). Its publication's COMMIT lost
        and not read back (``UnknownOutcome`` with ``probed``): nothing is recorded, the
        attempt stays ``running`` until its lease expires and the next attempt finds the truth
        (``succeeded`` if its publication committed). A publication naming it committed: it
        is recorded ``succeeded``, whatever failed after."""
        if isinstance(exc, UnknownOutcome) and exc.probed is not None:
            logger.error(
                "gatekeeper: %s %s attempt %d (run %s) left running: %s; its lease's expiry "
                "resolves it",
                self.job_id,
                self.period_key,
                started.attempt,
                started.run_id,
                exc,
            )
            return
        try:
            if getattr(self, "publishes", False) and self._published_by(ledger, started):
                logger.warning(
                    "gatekeeper: %s %s attempt %d (run %s): its publication committed, then "
                    "%s: recorded succeeded",
                    self.job_id,
                    self.period_key,
                    started.attempt,
                    started.run_id,
                    type(exc).__name__,
                )
                self._finish(ledger, started, RunState.SUCCEEDED, None, events)
                return
            error = printable_text(f"{type(exc).__name__}: {exc}")
            self._finish(ledger, started, RunState.FAILED, error, events)
        except GatekeeperError as unrecorded:
            logger.error(
                "gatekeeper: %s %s attempt %d: could not record the failure: %s",
                self.job_id,
                self.period_key,
                started.attempt,
                unrecorded,
            )

    def _published_by(self, ledger: Ledger, started: Attempt) -> bool:
        """True when a publication of this job and period names ``started`` as producer."""
        found = ledger.publications(self.job_id, self.period_key)
        return any(p.run_id == started.run_id for p in found)

    def _finish(
        self,
        ledger: Ledger,
        started: Attempt,
        state: RunState,
        error: str | None,
        events: LineageSettings | None,
    ) -> None:
        try:
            ledger.record(
                self.job_id,
                self.period_key,
                started.attempt,
                started.run_id,
                state,
                started.started_at,
                error=error,
            )
            lineage.ended(events, self, ledger, started, state, error)
        except StateConflict as exc:
            if state is RunState.SUCCEEDED:
                raise self._lease_lost(ledger, started) from exc
            raise

    def _lease_lost(self, ledger: Ledger, started: Attempt) -> LeaseLost:
        """LeaseLost for ``started``, naming the attempt that took over (read from the ledger)."""
        attempts = ledger.attempts(self.job_id, self.period_key)
        latest = attempts[-1] if attempts else None
        taken = latest if latest is not None and latest.run_id != started.run_id else None
        mine = next((a for a in attempts if a.run_id == started.run_id), started)
        by = (
            f"; attempt {taken.attempt} (run {taken.run_id}) took over"
            if taken
            else f"; it is {mine.state.value}"
        )
        return LeaseLost(
            f"{self.job_id} {self.period_key} attempt {started.attempt} (run {started.run_id}) "
            f"lost its lease while running{by}; its outcome is not recorded as succeeded",
            run_id=started.run_id,
            taken_over_by=taken,
            job=self.job_id,
            period=self.period_key,
            attempt=started.attempt,
        )
