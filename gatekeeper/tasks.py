"""Luigi task classes whose identity is a business date and an attempt ordinal.

Thin adapters: the attempt bookkeeping, the gate and publication live in the ledger; these
classes call it around the user's ``run()`` and answer ``complete()`` from it.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import logging
import os
import threading
import uuid
from collections import defaultdict
from collections.abc import Callable, Iterable
from typing import Any, cast

import luigi
from luigi.parameter import _no_value

from gatekeeper import config
from gatekeeper.errors import GatekeeperError, InvalidInput, NotReady, PublicationConflict
from gatekeeper.lease import Heartbeat
from gatekeeper.ledger import Ledger, open_ledger
from gatekeeper.records import RunState, fingerprint
from gatekeeper.targets import FilePublicationTarget, PublicationTarget, file_sha256

logger = logging.getLogger("luigi-interface.gatekeeper")
IDENTITY_PARAMS = ("business_date", "attempt")
_ledgers: dict[tuple[int, str], Ledger] = {}
_ledgers_lock = threading.Lock()


def shared_ledger(url: str | None = None) -> Ledger:
    """This process's ledger for ``url`` (default: the configured one), opened once.

    Keyed by process id too, so a worker forked by ``luigi --workers N`` opens its own
    connection instead of sharing its parent's.
    """
    url = url or config.ledger_url()
    key = (os.getpid(), url)
    with _ledgers_lock:
        if key not in _ledgers:
            _ledgers[key] = open_ledger(url)
        return _ledgers[key]


def new_run_id() -> str:
    return uuid.uuid4().hex


def _recorded(user_run: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """Wrap a subclass's ``run`` so every execution is a recorded attempt."""
    if inspect.isgeneratorfunction(user_run):
        raise TypeError(
            f"{user_run.__qualname__}: a BusinessDateTask's run() must not yield dynamic "
            "dependencies; declare them in requires()"
        )

    @functools.wraps(user_run)
    def run(self: BusinessDateTask) -> Any:
        if getattr(self, "_gk_in_run", False):  # super().run() from an overriding run()
            return user_run(self)
        self._gk_in_run = True
        try:
            return self._run_as_attempt(lambda: user_run(self))
        finally:
            self._gk_in_run = False

    run._gk_recorded = True  # type: ignore[attr-defined]
    return run


class BusinessDateTask(luigi.Task):
    """A Luigi task responsible for one business date, recorded attempt by attempt.

    Write ``run()`` as in plain Luigi. Around it gatekeeper allocates the next attempt (or the
    explicit ``--attempt N``), records it ``running`` with a fresh run ID and a lease renewed
    by a heartbeat, then ``succeeded`` or ``failed`` (the exception propagates). If the start
    cannot be recorded, ``run()`` is not executed.
    """

    business_date = luigi.DateParameter(description="The business date this run is for")
    attempt = luigi.IntParameter(
        default=0, significant=False, positional=False,
        description="Attempt ordinal; 0 = the next one, allocated in the ledger at start",
    )

    outputs_in_ledger = False  # True when completed_dates() also checks output()
    run_id: str | None = None
    attempt_ordinal: int | None = None
    _gk_in_run = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own_run = cls.__dict__.get("run")
        if own_run is not None and not getattr(own_run, "_gk_recorded", False):
            cls.run = _recorded(own_run)  # type: ignore[method-assign]

    # -- identity ------------------------------------------------------------------------------
    @classmethod
    def job_id_for(cls, **params: Any) -> str:
        """The job name for these parameter values, without building a task.

        Task family plus significant parameters other than business_date and attempt, in
        declaration order: ``RegionLoad(region=eu)``. Override for a custom naming.
        """
        parts = []
        for name, param in cls.get_params():
            if name in IDENTITY_PARAMS or not param.significant:
                continue
            value = (params[name] if name in params
                     else param._get_value(cls.get_task_family(), name))
            if value is _no_value:
                raise InvalidInput(name, None, f"{cls.get_task_family()} needs it to name the job")
            if isinstance(value, str):
                value = param.parse(value)
            parts.append(f"{name}={param.serialize(param.normalize(value))}")
        family = cls.get_task_family()
        return f"{family}({', '.join(parts)})" if parts else family

    @property
    def job_id(self) -> str:
        return type(self).job_id_for(**self.param_kwargs)

    def ledger(self) -> Ledger:
        """The ledger this task records to (``[gatekeeper] ledger_url``)."""
        return shared_ledger()

    # -- completeness --------------------------------------------------------------------------
    def complete(self) -> bool:
        """True when the latest attempt for (job, date) succeeded and declared outputs exist.

        With an explicit ``--attempt N`` (a repair), that attempt or a later one must have
        succeeded: asking for attempt N runs it once.
        """
        latest = self.ledger().latest(self.job_id, self.business_date)
        if latest is None or latest.state is not RunState.SUCCEEDED:
            return False
        if latest.attempt < self.attempt:
            return False
        return all(target.exists() for target in luigi.task.flatten(self.output()))

    @classmethod
    def bulk_complete(cls, parameter_tuples: Iterable[Any]) -> list[Any]:
        """Those of ``parameter_tuples`` that are complete: one ledger query per job.

        Accepts what Luigi's range tools pass (dates, tuples or dicts, with ``cls`` possibly a
        ``functools.partial`` carrying ``of_params``).
        """
        task_cls, fixed = _unwrap_partial(cls)
        items = list(parameter_tuples)
        by_job: dict[str, list[tuple[Any, dt.date]]] = defaultdict(list)
        for item in items:
            params = {**fixed, **task_cls.params_of(item)}
            date = task_cls.business_date.normalize(_parse_date(params["business_date"]))
            by_job[task_cls.job_id_for(**params)].append((item, date))
        complete: list[Any] = []
        ledger = shared_ledger()
        for job, pairs in by_job.items():
            done = task_cls.completed_dates(ledger, job, [d for _, d in pairs])
            complete.extend(item for item, date in pairs if date in done)
        if task_cls.output is not luigi.Task.output and not task_cls.outputs_in_ledger:
            # outputs beyond the ledger: ask each succeeded task's targets
            complete = [
                i for i in complete if task_cls._outputs_exist({**fixed, **task_cls.params_of(i)})
            ]
        return complete

    @classmethod
    def _outputs_exist(cls, params: dict[str, Any]) -> bool:
        return all(t.exists() for t in luigi.task.flatten(cls(**params).output()))

    @classmethod
    def params_of(cls, item: Any) -> dict[str, Any]:
        """Parameter values of one of Luigi's parameter tuples (a value, tuple or dict)."""
        if isinstance(item, dict):
            return dict(item)
        positional = [name for name, p in cls.get_params() if p.positional]
        values = item if isinstance(item, (list, tuple)) else (item,)
        return dict(zip(positional, values, strict=False))

    @classmethod
    def completed_dates(cls, ledger: Ledger, job: str, dates: list[dt.date]) -> set[dt.date]:
        """Dates among ``dates`` whose latest attempt of ``job`` succeeded (one query)."""
        if not dates:
            return set()
        keys = ledger.completed_periods(job, min(dates).isoformat(), max(dates).isoformat())
        return {d for d in dates if d.isoformat() in keys}

    # -- the recorded attempt ------------------------------------------------------------------
    def before_attempt(self, ledger: Ledger) -> None:
        """Hook run before an attempt is allocated; raising here records nothing."""

    def _run_as_attempt(self, work: Callable[[], Any]) -> Any:
        ledger = self.ledger()
        self.before_attempt(ledger)
        lease = config.lease_seconds()
        started = ledger.begin_attempt(
            self.job_id, self.business_date, new_run_id(), lease_seconds=lease,
            attempt=self.attempt,
        )
        self.run_id, self.attempt_ordinal = started.run_id, started.attempt
        logger.info("gatekeeper: %s %s attempt %d started (run %s)", self.job_id,
                    self.business_date, started.attempt, started.run_id)
        with Heartbeat(ledger, started.run_id, lease):
            try:
                result = work()
            except BaseException as exc:
                self._finish(ledger, RunState.FAILED, f"{type(exc).__name__}: {exc}"[:2000])
                raise
        self._finish(ledger, RunState.SUCCEEDED, None)
        return result

    def _finish(self, ledger: Ledger, state: RunState, error: str | None) -> None:
        assert self.run_id is not None and self.attempt_ordinal is not None
        latest = ledger.attempts(self.job_id, self.business_date)
        started = next(a.started_at for a in latest if a.run_id == self.run_id)
        ledger.record(self.job_id, self.business_date, self.attempt_ordinal, self.run_id,
                      state, started, error=error)


class GatedTask(BusinessDateTask):
    """A task that publishes one output per business date once its upstream jobs are ready.

    Implement ``build()`` (returns a JSON-serializable payload or bytes; its canonical sha256
    is the fingerprint) and ``write(conn, payload)`` (writes the payload on the ledger
    transaction's connection). ``run()`` opens the gate first: while any required job's latest
    attempt has not succeeded for this date it fails with NotReady and records nothing. Output
    and evidence then commit together; a retry with the same payload writes nothing, a
    different payload fails with PublicationConflict.
    """

    outputs_in_ledger = True

    def output(self) -> PublicationTarget:
        return PublicationTarget(self.job_id, self.business_date, self.ledger())

    def required_jobs(self) -> list[Any]:
        """The jobs the gate requires: each BusinessDateTask in ``requires()``.

        An upstream for another date must be declared explicitly: override this and return
        ``(job, date)`` for it. Raises GatekeeperError for an undeclared one.
        """
        jobs: list[Any] = []
        for task in luigi.task.flatten(self.requires()):
            if not isinstance(task, BusinessDateTask):
                continue
            if task.business_date != self.business_date:
                raise GatekeeperError(
                    f"{self.job_id} {self.business_date}: requires() returns {task.job_id} for "
                    f"{task.business_date}; declare an upstream for another date explicitly by "
                    "overriding required_jobs() with (job, date)"
                )
            jobs.append(task.job_id)
        return jobs

    def before_attempt(self, ledger: Ledger) -> None:
        readiness = ledger.readiness(self.required_jobs(), self.business_date)
        if not readiness:
            raise NotReady(readiness)

    def build(self) -> Any:
        """Compute the output payload (JSON-serializable, or bytes)."""
        raise NotImplementedError(f"{type(self).__name__} must implement build()")

    def write(self, conn: Any, payload: Any) -> None:
        """Write ``payload`` on ``conn`` inside the publication transaction (default: nothing)."""

    def fingerprint_of(self, payload: Any) -> str:
        return fingerprint(payload)

    def location_of(self, payload: Any) -> str | None:
        return None

    def run(self) -> None:
        payload = self.build()
        first = self.ledger().publish(
            self.job_id, self.business_date, self.required_jobs(), self.fingerprint_of(payload),
            lambda conn: self.write(conn, payload), location=self.location_of(payload),
        )
        logger.info("gatekeeper: %s %s %s", self.job_id, self.business_date,
                    "published" if first else "already published with this output (no-op)")

    @classmethod
    def completed_dates(cls, ledger: Ledger, job: str, dates: list[dt.date]) -> set[dt.date]:
        if not dates:
            return set()
        keys = ledger.completed_periods(
            job, min(dates).isoformat(), max(dates).isoformat(), consumer=job
        )
        return {d for d in dates if d.isoformat() in keys}


class GatedFileTask(GatedTask):
    """A GatedTask whose output is a file: written atomically, then published with its sha256.

    Implement ``output_path()`` and ``build_file(path)`` (write the content to ``path``, a
    temporary file beside the final one). gatekeeper renames it into place only when no
    different output is published, then publishes the path and checksum.
    """

    outputs_in_ledger = False

    def output_path(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement output_path()")

    def build_file(self, path: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement build_file(path)")

    def output(self) -> FilePublicationTarget:
        return FilePublicationTarget(
            self.output_path(), self.job_id, self.business_date, self.ledger()
        )

    def build(self) -> dict[str, str]:
        final = os.path.abspath(self.output_path())
        os.makedirs(os.path.dirname(final), exist_ok=True)
        temporary = f"{final}.tmp-{uuid.uuid4().hex}"
        try:
            self.build_file(temporary)
            checksum = file_sha256(temporary)
            published = self.ledger().publication(self.job_id, self.business_date)
            if published is not None and published.fingerprint != checksum:
                raise PublicationConflict(
                    f"{self.job_id} {self.business_date}: {final} was published with "
                    f"{published.fingerprint}, the new file has {checksum}; the published file "
                    "is left untouched (a correction is an explicit republish)"
                )
            os.replace(temporary, final)
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)
        return {"path": final, "sha256": checksum}

    def fingerprint_of(self, payload: Any) -> str:
        return str(payload["sha256"])

    def location_of(self, payload: Any) -> str | None:
        return str(payload["path"])


def _unwrap_partial(cls: Any) -> tuple[type[BusinessDateTask], dict[str, Any]]:
    if isinstance(cls, functools.partial):
        return cast(type[BusinessDateTask], cls.func), dict(cls.keywords)
    return cls, {}


def _parse_date(value: Any) -> dt.date:
    if isinstance(value, dt.datetime):
        return value.date()
    if isinstance(value, dt.date):
        return value
    if isinstance(value, str):
        return dt.date.fromisoformat(value)
    raise InvalidInput("business_date", value, "expected a date")
