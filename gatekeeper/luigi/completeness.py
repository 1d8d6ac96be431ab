"""Is this period complete? The one rule, and the forms Luigi and the ranges ask it in.

A period of a ``PeriodTask``'s job is complete when the latest attempt for (job, period)
succeeded — with an explicit ``--attempt N`` (a repair), attempt N or a later one; with ``--rerun
REASON``, the attempt after the latest one when first asked (``PeriodTask.rerun_from``) or a
later one — and, for a
task that publishes, the job has published it; and the targets its ``output()`` declares beyond
the ledger (files) exist. The forms:

- ``period_complete(task)``: Luigi's ``complete()`` of one task;
- ``complete_among(cls, items, ledger)``: Luigi's ``bulk_complete`` (one ledger query per job);
- ``completed_between(cls, ledger, job, first, last)``: a window's complete periods as runs
  (``PeriodRuns``), one query over the runs the ledger keeps;
- ``completeness(of, of_params, ledger, job)``: what a range plans with — the ``of`` class's
  ``bulk_complete`` as Luigi's ranges call it (``functools.partial(of, **of_params)`` over a
  list of period parameter values): ``completed_between`` when the ledger alone answers it,
  else a user's override (or declared outputs) asked over every period;
- ``complete_keys``: the same over a chunk's keys.

So ``complete()``, ``bulk_complete()``, a range and its chunks agree. A ``GatedTask`` asked to
republish adds its own rule (``gated.py``: complete once the newest revision carries the
reason). The ledger's query is ``Ledger.completed_periods``.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import luigi

from gatekeeper.core.planning import Completeness
from gatekeeper.core.records import RunState
from gatekeeper.core.spans import PeriodRuns
from gatekeeper.ledger import Ledger

if TYPE_CHECKING:
    from gatekeeper.luigi.tasks import PeriodTask


def period_complete(task: PeriodTask) -> bool:
    """``task.complete()``: its period's latest attempt succeeded (at or after ``--attempt N``,
    once ``task.repair_accepted`` judged N, or ``--rerun``'s ``rerun_from``) and its declared
    outputs exist. Reads the ledger
    (one query; a repair's first ask, two) and the outputs. StateConflict for a refused N."""
    if task.attempt and not task.repair_accepted:  # pragma: no cover - it raises instead
        return False
    latest = task.ledger().latest(task.job_id, task.period_key)
    if latest is None or latest.state is not RunState.SUCCEEDED:
        return False
    if latest.attempt < task.least_attempt:  # --attempt N, --rerun (tasks.py)
        return False
    return outputs_exist(task)


def outputs_exist(task: luigi.Task) -> bool:
    """The targets ``task.output()`` declares all exist (True when it declares none)."""
    return all(target.exists() for target in luigi.task.flatten(task.output()))


def complete_among(
    cls: type[PeriodTask], fixed: Mapping[str, Any], items: Iterable[Any], ledger: Ledger
) -> list[Any]:
    """``bulk_complete``: those of Luigi's parameter tuples ``items`` (with the parameters
    ``fixed`` a ``functools.partial`` carries) that are complete; one query per job, then each
    succeeded task's targets when it declares outputs beyond the ledger."""
    by_job: dict[str, list[tuple[Any, str]]] = defaultdict(list)
    for item in items:
        params = {**fixed, **cls.params_of(item)}
        key = cls.key_of(cls.label_of(params))
        by_job[cls.job_id_for(**params)].append((item, key))
    complete: list[Any] = []
    for job, pairs in by_job.items():
        keys = {k for _, k in pairs}  # never empty: the job has at least one item
        done = completed_between(cls, ledger, job, min(keys), max(keys))
        complete.extend(item for item, key in pairs if key in done)
    if cls.outputs_beyond_ledger():
        complete = [i for i in complete if outputs_exist(cls(**{**fixed, **cls.params_of(i)}))]
    return complete


def completed_between(
    cls: type[PeriodTask], ledger: Ledger, job: str, first: str, last: str
) -> PeriodRuns:
    """The periods in [first, last] whose latest attempt of ``job`` succeeded (and, for a
    task that publishes, that are published by it), as runs; one query over the runs the
    ledger keeps, reads only."""
    consumer = job if cls.publishes else None
    return ledger.complete_runs(job, first, last, consumer, period=cls.period_kind)


def completeness(
    of: type[PeriodTask], of_params: Mapping[str, Any], ledger: Ledger, job: str
) -> Completeness:
    """The complete periods between two ledger keys (inclusive), as ``of``'s ``bulk_complete``
    says: one ledger query when the ledger alone answers it (PeriodTask's own, no outputs
    beyond the ledger), else ``bulk_complete`` over every period between them."""
    if of.ledger_answers_bulk_complete():
        return functools.partial(completed_between, of, ledger, job)
    return functools.partial(bulk_complete_between, of, of_params)


def bulk_complete_between(
    of: type[PeriodTask], of_params: Mapping[str, Any], first: str, last: str
) -> set[str]:
    """Keys in [first, last] that ``of.bulk_complete`` returns, called as Luigi's ranges call
    it: on ``functools.partial(of, **of_params)`` with a list of period parameter values.
    Reads what ``bulk_complete`` reads."""
    kind = of.period_kind
    span = range(kind.rank(kind.label(first)), kind.rank(kind.label(last)) + kind.is_business(last))
    values = [kind.to_param(kind.at(n)) for n in span]
    bulk = of.bulk_complete.__func__  # type: ignore[attr-defined]
    found = bulk(functools.partial(of, **dict(of_params)), values)
    return {of.key_of(of.label_of({**dict(of_params), **of.params_of(item)})) for item in found}


def complete_keys(
    of: type[PeriodTask],
    of_params: Mapping[str, Any],
    ledger: Ledger,
    keys: list[str] | tuple[str, ...],
) -> set[str]:
    """Those of ``keys`` that are complete, as a range judges them (``completeness``)."""
    if not keys:
        return set()
    job = of.job_id_for(**dict(of_params))
    found = completeness(of, of_params, ledger, job)(min(keys), max(keys))
    held = found if isinstance(found, (PeriodRuns, set, frozenset)) else set(found)
    return {key for key in keys if key in held}
