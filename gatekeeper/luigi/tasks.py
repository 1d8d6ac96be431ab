"""Luigi task classes whose identity is a business date and an attempt ordinal.

Thin adapters: the attempt bookkeeping, the gate and publication live in the ledger; these
classes call it around the user's ``run()`` (``attempt_run.py``: the attempt's lifecycle) and
answer ``complete()`` from it.
"""

from __future__ import annotations

import datetime as dt
import functools
import inspect
import logging
import os
import threading
from collections.abc import Iterable
from typing import Any, cast

import luigi

from gatekeeper.core.errors import InvalidInput, StateConflict
from gatekeeper.core.periods import DAILY, HOURLY
from gatekeeper.core.validation import check_attempt, parse_attempt_text
from gatekeeper.ledger import Ledger, open_ledger
from gatekeeper.luigi import calendar_config, completeness, config, first_run
from gatekeeper.luigi.attempt_run import RecordedRun, recorded
from gatekeeper.luigi.param_cache import class_params, param_values
from gatekeeper.luigi.refusals import log_refusals_in_one_line, refuse_at_import
from gatekeeper.luigi.rerun import RerunParameter, check_rerun, rerun_from

logger = logging.getLogger("luigi-interface.gatekeeper")
# a bad parameter (or a refused --attempt) is one line in Luigi's log, not a traceback
log_refusals_in_one_line((InvalidInput, StateConflict))
IDENTITY_PARAMS = (
    "business_date",
    "business_hour",
    "business_week",
    "business_month",
    "business_quarter",
    "attempt",
)
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
            first_run.name_ledger(_ledgers[key], url)  # once: which ledger, and why that one
        return _ledgers[key]


class AttemptParameter(luigi.IntParameter):
    """``--attempt``: 0 (the next ordinal) or an explicit 1..2,147,483,647, checked when the
    task is built (plain ASCII digits on the command line), before any attempt is recorded."""

    def parse(self, x: Any) -> int:
        return parse_attempt_text(x, "attempt", allow_zero=True)

    def normalize(self, x: Any) -> int:
        return check_attempt(x, "attempt", allow_zero=True)


class BusinessDateParameter(luigi.DateParameter):
    """``--business-date``: Luigi's DateParameter; a value it cannot parse is InvalidInput
    naming the parameter and the value (Luigi's own ValueError names neither)."""

    def parse(self, s: Any) -> Any:
        try:
            return super().parse(s)
        except ValueError:
            raise InvalidInput("business_date", s, "expected a date YYYY-MM-DD") from None


class BusinessHourParameter(luigi.DateHourParameter):
    """``--business-hour``: Luigi's DateHourParameter (UTC); a value it cannot parse is
    InvalidInput naming the parameter and the value."""

    def parse(self, s: Any) -> Any:
        try:
            return super().parse(s)
        except ValueError:
            raise InvalidInput("business_hour", s, "expected an hour YYYY-MM-DDTHH (UTC)") from None


class PeriodTask(RecordedRun, luigi.Task):
    """Base of tasks responsible for one business period, recorded attempt by attempt.

    Write ``run()`` as in plain Luigi. Around it gatekeeper allocates the next attempt (or the
    explicit ``--attempt N``), records it ``running`` with a fresh run ID and a lease renewed
    by a heartbeat, then ``succeeded`` or ``failed`` (the exception propagates). If the start
    cannot be recorded, ``run()`` is not executed. Subclasses name their period parameter in
    ``period_param`` (``BusinessDateTask``: daily, ``BusinessHourTask``: hourly).
    """

    attempt = AttemptParameter(
        default=0,
        significant=False,
        positional=False,
        description="Attempt ordinal; 0 = the next one, allocated in the ledger at start "
        "(a period whose latest attempt succeeded is then not run again); N > 0 "
        "is an explicit repair",
    )
    rerun = RerunParameter(
        default=None,
        significant=False,
        positional=False,
        description="Run this period again as its next attempt, whatever its history, "
        "recording this reason with the attempt (not with --attempt N); complete once that "
        "attempt succeeded, so the same --rerun again runs nothing",
    )

    period_param = ""
    period_kind = DAILY
    publishes = False  # True for tasks whose output is a publication in the ledger
    gatekeeper_summary = True  # the execution summary judges it by the ledger (fill/channel.py)
    outputs_in_ledger = False  # True when the ledger (completeness.py) fully checks output()
    #: Freshness deadline (``"6h"``): each period done by its end + this (core/freshness.py);
    #: a range records it in the job's profile for ``gatekeeper check``. None: no deadline.
    freshness: str | None = None

    #: The business calendar the periods follow: ``"all"`` (every period), ``"weekdays"``,
    #: ``"holidays:CC[-SUBDIV]"``, ``"exchange:MIC"`` or a ``Calendar`` object
    #: (core/periods/calendars.py). ``period_kind`` then counts its business periods only, and a
    #: task for another period is refused before anything is written.
    calendar: Any = "all"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        """Record ``run()`` however the class gets it: defined in its body, assigned
        (``run = function``), decorated, or inherited from a mixin or an intermediate base
        that is not itself a gatekeeper task. Bind ``period_kind`` to ``calendar``: a bad one
        is InvalidInput (under the ``luigi`` command, one line and exit 2: ``refusals.py``).
        A class that names a calendar (other than ``all``) may name one luigi.cfg defines, so
        it fills the registry of named calendars first
        (``calendar_config.use_defined_calendars``); a class on ``all``, as gatekeeper's own
        are (made when the adapter is imported), resolves no name and fills nothing:
        importing gatekeeper decides nothing that resolves."""
        super().__init_subclass__(**kwargs)
        if isinstance(cls.calendar, str) and cls.calendar != "all":
            # the class's calendar may be one luigi.cfg defines
            calendar_config.use_defined_calendars()
        try:
            kind = cls.period_kind.on(cls.calendar)
        except InvalidInput as exc:  # a bad calendar: under `luigi`, one line and exit 2
            refuse_at_import(exc)
            raise
        if kind is not cls.period_kind:  # else inherited as it is (a mixin sets none)
            cls.period_kind = kind
        found = inspect.getattr_static(cls, "run")
        if isinstance(found, staticmethod):
            raise TypeError(f"{cls.__qualname__}.run must be a method, not a staticmethod")
        if found is not luigi.Task.run and not getattr(found, "_gk_recorded", False):
            cls.run = recorded(found)  # type: ignore[method-assign]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """Luigi's, then the period must be a business period of the class's calendar:
        else InvalidInput naming the previous and next ones (nothing is written)."""
        super().__init__(*args, **kwargs)
        check_rerun(self.get_task_family(), self.rerun, self.attempt)
        kind = type(self).period_kind
        if self.period_param and kind.base is not kind:
            value = getattr(self, self.period_param)
            label = kind.from_param(value, self.period_param)
            if not kind.is_business(label, self.period_param):
                raise InvalidInput(self.period_param, value, kind.not_business(label))  # type: ignore[attr-defined]

    def previous_period(self, n: int = 1) -> Any:
        """This task (class and parameters, the next attempt) ``n`` business periods before."""
        return self.next_period(-n)

    def next_period(self, n: int = 1) -> Any:
        """This task (class and parameters, the next attempt) ``n`` business periods after:
        a Monday's previous on ``weekdays`` is the Friday before. InvalidInput beyond the
        calendar."""
        kind = type(self).period_kind
        label = kind.shift(kind.from_param(getattr(self, self.period_param)), n, "n")
        params = {k: v for k, v in self.param_kwargs.items() if k not in ("attempt", "rerun")}
        return type(self)(**{**params, self.period_param: kind.to_param(label)})

    # -- identity ------------------------------------------------------------------------------
    @classmethod
    def get_params(cls) -> list[tuple[str, luigi.Parameter]]:
        """Luigi's ``get_params``, computed once per class: Luigi's scans ``dir(cls)`` on every
        call, several times per task built or named (parameters are class attributes, fixed
        once the class and its decorators are done; the first call comes after that)."""
        return list(class_params(cls))

    @classmethod
    def get_param_values(
        cls, params: list[tuple[str, luigi.Parameter]], args: Any, kwargs: Any
    ) -> list[tuple[str, Any]]:
        """Luigi's ``get_param_values``, with the values of parameters not passed (command
        line, luigi.cfg, default) resolved once per generation of Luigi's instance cache and
        command-line parser instead of on every call: Luigi resolves them, and checks
        luigi.cfg for options the class does not consume, each time a task is built, named
        or printed (``Task.__repr__``), which costs a fill more per period than the period.
        The first call of a generation, and any call this cannot answer exactly (positional
        arguments, unknown names, another parameter list), is Luigi's own."""
        return param_values(cls, params, args, kwargs, super().get_param_values)

    @classmethod
    def job_id_for(cls, **params: Any) -> str:
        """The job name for these parameter values, without building a task.

        Task family plus significant parameters other than the period and attempt, in
        declaration order: ``RegionLoad(region=eu)``. Override for a custom naming.
        """
        parts = []
        for name, param in cls.get_params():
            if name in IDENTITY_PARAMS or not param.significant:
                continue
            if name in params:
                value = params[name]
                if isinstance(value, str):
                    value = param.parse(value)
            elif param.has_task_value(cls.get_task_family(), name):  # command line, cfg, default
                value = param.task_value(cls.get_task_family(), name)
            else:
                raise InvalidInput(name, None, f"{cls.get_task_family()} needs it to name the job")
            parts.append(f"{name}={param.serialize(param.normalize(value))}")
        family = cls.get_task_family()
        return f"{family}({', '.join(parts)})" if parts else family

    @classmethod
    def key_of(cls, label: Any) -> str:
        """The ledger key of a value of the period parameter (``period_kind`` converts it)."""
        return cls.period_kind.key(cls.period_kind.from_param(label))

    @classmethod
    def label_of(cls, params: dict[str, Any]) -> Any:
        """The normalized period value among ``params`` (parsed when given as a string)."""
        param = dict(cls.get_params())[cls.period_param]
        value = params[cls.period_param]
        return param.normalize(param.parse(value) if isinstance(value, str) else value)

    @functools.cached_property
    def job_id(self) -> str:
        """``job_id_for`` this task's parameters; computed once (they never change)."""
        return type(self).job_id_for(**self.param_kwargs)

    @property
    def period_key(self) -> str:
        return type(self).key_of(getattr(self, self.period_param))

    @functools.cached_property
    def _ledger_url(self) -> str:
        """``[gatekeeper] ledger_url`` as this task first read it (resolved once)."""
        return config.ledger_url()

    def ledger(self) -> Ledger:
        """The ledger this task records to: this process's connection to the URL it first read.
        While its attempt runs, that ledger as the attempt writes through it
        (``Ledger.owned_by``): its transactions and statements are fenced (LeaseLost, nothing
        written, once the attempt lost its period)."""
        owned = self.owned_ledger
        return owned if owned is not None else shared_ledger(self._ledger_url)

    # -- completeness --------------------------------------------------------------------------
    def complete(self) -> bool:
        """True when the latest attempt for (job, period) succeeded and declared outputs exist
        (``completeness.period_complete``). With an explicit ``--attempt N`` (a repair): N
        must exceed every attempt recorded when the task is first asked (``repair_accepted``:
        else StateConflict, and Luigi does not schedule it); then attempt N or a later one
        must have succeeded. With ``--rerun REASON``: attempt ``rerun_from`` or a later one."""
        return completeness.period_complete(self)

    @functools.cached_property
    def repair_accepted(self) -> bool:
        """True when the explicit ``--attempt N`` exceeds every attempt of (job, period)
        recorded the first time it is asked (when Luigi schedules the task; kept, so the run
        that records attempt N does not refuse itself afterwards). Else StateConflict naming
        the recorded attempts, raised again on every ask; nothing is written. Reads the
        ledger once."""
        found = self.ledger().attempts(self.job_id, self.period_key)
        if found and self.attempt <= found[-1].attempt:
            latest = found[-1]
            raise StateConflict(
                f"{self.job_id} {self.period_key}: --attempt {self.attempt} refused; recorded "
                f"attempts: {', '.join(str(a.attempt) for a in found)} (the latest "
                f"{latest.state.value}, run {latest.run_id}); a repair is "
                f"--attempt {latest.attempt + 1} or more (0: the next one)",
                job=self.job_id,
                period=self.period_key,
                attempt=self.attempt,
            )
        return True

    @functools.cached_property
    def rerun_from(self) -> int:
        """With ``--rerun REASON``: the attempt whose success completes the rerun, fixed the
        first time it is asked (when Luigi schedules the task; kept, so the run's own success
        completes it): ``rerun.rerun_from``. Reads the ledger once."""
        return rerun_from(self.ledger().latest(self.job_id, self.period_key), str(self.rerun))

    @property
    def least_attempt(self) -> int:
        """The attempt at or after which a success completes the period: ``--attempt N``'s N,
        ``--rerun``'s ``rerun_from``, else 0 (any)."""
        return self.rerun_from if self.rerun is not None else int(self.attempt)

    @classmethod
    def bulk_complete(cls, parameter_tuples: Iterable[Any]) -> list[Any]:
        """Those of ``parameter_tuples`` that are complete: one ledger query per job
        (``completeness.complete_among``).

        Accepts what Luigi's range tools pass (dates, tuples or dicts, with ``cls`` possibly a
        ``functools.partial`` carrying ``of_params``).
        """
        task_cls, fixed = _unwrap_partial(cls)
        return completeness.complete_among(task_cls, fixed, parameter_tuples, shared_ledger())

    @classmethod
    def outputs_beyond_ledger(cls) -> bool:
        """True when ``output()`` declares targets the ledger does not check (files...)."""
        return cls.output is not luigi.Task.output and not cls.outputs_in_ledger

    @classmethod
    def ledger_answers_bulk_complete(cls) -> bool:
        """True when the ledger alone answers ``bulk_complete``: PeriodTask's own (not
        overridden) and no output beyond the ledger; a range then asks it in one query."""
        mine = getattr(PeriodTask.bulk_complete, "__func__", None)
        own = getattr(cls.bulk_complete, "__func__", None) is mine
        return own and not cls.outputs_beyond_ledger()

    @classmethod
    def params_of(cls, item: Any) -> dict[str, Any]:
        """Parameter values of one of Luigi's parameter tuples (a value, tuple or dict)."""
        if isinstance(item, dict):
            return dict(item)
        positional = [name for name, p in cls.get_params() if p.positional]
        values = item if isinstance(item, (list, tuple)) else (item,)
        return dict(zip(positional, values, strict=False))

    def watermark(self) -> dt.datetime | None:
        """The greatest tz-aware event time this job's source holds, if it declares one.

        Override to declare a watermark: a GatedTask downstream then opens only once it is at
        or past the end of its period's interval, and stores it with the evidence.
        """
        return None

    @classmethod
    def declares_watermark(cls) -> bool:
        return cls.watermark is not PeriodTask.watermark


@PeriodTask.event_handler(luigi.Event.TIMEOUT)
def _timed_out(task: PeriodTask, message: str) -> None:
    """Luigi terminated a period at its worker timeout: its attempt is recorded failed."""
    task.record_timeout(str(message))


class BusinessDateTask(PeriodTask):
    """A Luigi task responsible for one business date (see PeriodTask for the recording)."""

    business_date = BusinessDateParameter(description="The business date this run is for")
    period_param = "business_date"


class BusinessHourTask(PeriodTask):
    """A Luigi task responsible for one business hour ``[h, h + 1h)``.

    ``business_hour`` is a Luigi DateHourParameter (``2026-10-23T05``), read as UTC like
    Luigi's own hourly tasks; it is stored in the ledger as ``2026-10-23T05:00Z``.
    """

    business_hour = BusinessHourParameter(description="The UTC hour this run is for")
    period_param = "business_hour"
    period_kind = HOURLY


def _unwrap_partial(cls: Any) -> tuple[type[PeriodTask], dict[str, Any]]:
    if isinstance(cls, functools.partial):
        return cast(type[PeriodTask], cls.func), dict(cls.keywords)
    return cls, {}
