"""A range's ``--reprocess``: which periods an invocation runs beyond its gaps, as
``core/backfill.py`` plans them (the one rule ``gatekeeper plan --reprocess`` shows).

``missing`` (the default) is the range's own plan: nothing more is read. Under another
policy the range asks ``plan_backfill`` over the facts ``gatekeeper plan`` reads
(``ledger/backfill_facts.py``), at the range's clock, and acts on exactly what it lists:

- the range's gaps among the periods the plan takes (within ``task_limit``) are filled as
  ever, in chunks (``Reprocessing.fill``: the range's plan with those scheduled);
- every other period the plan acts on is a task of the ``of`` class for that period,
  scheduled by Luigi as any task (the range's ``requires()``): one that is not complete (a
  failure outside the catch-up policy) as it is; a complete one with a new attempt, by the
  mechanism a repair uses: ``attempt`` is the next ordinal (``completeness.period_complete``:
  complete once that attempt succeeded), and for a publisher ``republish_reason`` is the
  plan's reason (``gated.py``: complete once the newest revision carries it, and the
  attempt succeeded). Both parameters are insignificant, so the task is the one Luigi (and
  luigid) knows by its id. So ``all`` is a new attempt of every period each time it is
  given (its plan lists them all again), as ``--attempt N`` is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gatekeeper.core.backfill import Action, BackfillFacts, PlannedPeriod, Reprocess, plan_backfill
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.records import Attempt
from gatekeeper.ledger import Ledger
from gatekeeper.ledger.backfill_facts import read_facts
from gatekeeper.luigi.tasks import PeriodTask


@dataclass(frozen=True, slots=True)
class Reprocessing:
    """What one invocation does under ``policy``: ``fill``, the range's plan of its gaps
    (scheduled: the gaps the policy takes, in fill order), and ``tasks``, the periods it
    reprocesses beyond them, in fill order."""

    policy: Reprocess
    fill: RangePlan
    tasks: tuple[PeriodTask, ...] = ()


def policy_of(rng: Any) -> Reprocess:
    """The policy of ``rng`` (a range): ``--reprocess``, or ``stale`` for ``--refresh-stale``
    (its alias). InvalidInput naming ``reprocess`` for an unknown policy, ``refresh_stale``
    when it contradicts ``--reprocess`` or the ``of`` class does not publish."""
    policy = Reprocess.parse(rng.reprocess)
    if not rng.refresh_stale:
        return policy
    if policy not in (Reprocess.MISSING, Reprocess.STALE):
        raise InvalidInput("refresh_stale", True, f"contradicts --reprocess {policy}")
    of = rng.of_class()
    if not of.publishes:
        raise InvalidInput("refresh_stale", True, f"{of.get_task_family()} does not publish")
    return Reprocess.STALE


def all_done(tasks: Iterable[PeriodTask]) -> bool:
    """Every one of ``tasks`` (the periods a session reprocesses) is complete: its own
    ``complete()``, one ledger query or two each, up to the first that is not."""
    return all(task.complete() for task in tasks)


def reprocessing(rng: Any, ledger: Ledger, ranged: RangePlan, policy: Reprocess) -> Reprocessing:
    """What ``rng`` (a range whose plan is ``ranged``) does under ``policy`` (the module
    docstring). Reads the ledger (three statements) unless the policy is ``missing``."""
    if policy is Reprocess.MISSING:
        return Reprocessing(policy, ranged)
    of = rng.of_class()
    facts = read_facts(ledger, ranged, BackfillFacts(rng.job(), {}, of.publishes))
    found = plan_backfill(ranged, facts, policy)
    gaps = {ranged.key(label): label for label in ranged.gaps}
    fill = dataclasses.replace(ranged, scheduled=tuple(gaps[k] for k in found.taken if k in gaps))
    incomplete = {*gaps, *map(ranged.key, ranged.skipped_by_policy)}
    planned = {p.period: p for p in found.periods}
    tasks = tuple(
        _task(rng, planned[key], None if key in incomplete else facts.latest.get(key))
        for key in found.order
        if key not in gaps
    )
    return Reprocessing(policy, fill, tasks)


def _task(rng: Any, planned: PlannedPeriod, complete: Attempt | None) -> PeriodTask:
    """The ``of`` task that acts on ``planned``: as it is for a period not complete
    (``complete`` None), else with a new attempt (a republish reason, or the next ordinal)."""
    task = rng.task_for(rng.period_kind.label(planned.period))
    if complete is None:
        return task
    extra: dict[str, Any] = {"attempt": complete.attempt + 1}
    if planned.action is Action.REPUBLISH:
        extra["republish_reason"] = planned.reason
    return type(task)(**{**task.param_kwargs, **extra})
