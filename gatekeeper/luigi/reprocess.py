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
import datetime as dt
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gatekeeper.core.backfill import Action, BackfillFacts, PlannedPeriod, Reprocess, plan_backfill
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.intervals import parse_lateness
from gatekeeper.core.plan_facts import facts_of
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.reviewed import ReviewedPlan, refusal
from gatekeeper.ledger import Ledger
from gatekeeper.ledger.backfill_facts import read_facts
from gatekeeper.luigi.cascade import Cascade, republish_task
from gatekeeper.luigi.tasks import PeriodTask


@dataclass(frozen=True, slots=True)
class Reprocessing:
    """What one invocation does under ``policy``: ``fill``, the range's plan of its gaps
    (scheduled: the gaps the policy takes, in fill order), and ``tasks``, the periods it
    reprocesses beyond them, in fill order."""

    policy: Reprocess
    fill: RangePlan
    tasks: tuple[PeriodTask, ...] = ()
    in_order: bool = False  # an applied plan: every period a task, in the plan's order
    cascade_left: frozenset[str] | None = None  # stale: the own keys the cascade leaves
    cascade_only: frozenset[tuple[str, str]] = frozenset()  # an applied plan's cascade


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


def choose(rng: Any, ledger: Ledger, ranged: RangePlan, now: dt.datetime) -> Reprocessing:
    """What ``rng`` (a range whose plan at ``now`` is ``ranged``) does: the plan file it
    applies (``--plan-file``, checked first: ``applying``), else its ``--reprocess`` policy
    (``reprocessing``). Reads the ledger; InvalidInput naming the parameter, nothing written."""
    if rng.plan_file is None:
        return reprocessing(rng, ledger, ranged, policy_of(rng))
    reviewed = read_plan(str(rng.plan_file))
    if rng.reprocess not in (Reprocess.MISSING.value, reviewed.policy.value):
        reason = f"contradicts the plan file's reprocess {reviewed.policy}"
        raise InvalidInput("reprocess", rng.reprocess, reason)
    return applying(rng, ledger, ranged, reviewed, now)


def read_plan(path: str) -> ReviewedPlan:
    """The plan file at ``path``; InvalidInput naming ``plan_file`` when it cannot be read."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("plan_file", path, f"cannot be read: {exc}") from None
    return ReviewedPlan.parse(text, path)


def applying(
    rng: Any, ledger: Ledger, ranged: RangePlan, reviewed: ReviewedPlan, now: dt.datetime
) -> Reprocessing:
    """Apply ``reviewed`` as it was reviewed: refused (InvalidInput naming ``plan_file`` and
    why: ``core/reviewed.py refusal``) unless its job is the range's, it is no older than
    ``--max-age`` at ``now`` and every fact it read still holds (two statements per 300
    pairs); then exactly its periods, each a task (its gaps too, no chunk), in its order,
    with its actions and reasons; its cascade (``stale``) before them, exactly its pairs."""
    max_age = parse_lateness(rng.max_age, "max_age")
    pairs = reviewed.pairs
    current = facts_of(pairs, ledger.fleet.latest(pairs), ledger.fleet.revisions(pairs))
    why = refusal(reviewed, rng.job(), now, max_age, current)
    if why is not None:
        raise InvalidInput("plan_file", reviewed.source, why)
    attempts = {f.period: f.attempt for f in reviewed.facts if f.job == reviewed.job}
    incomplete = {*map(ranged.key, (*ranged.gaps, *ranged.skipped_by_policy))}
    cascaded = {(step.job, step.period) for step in reviewed.cascade}
    tasks = tuple(
        _task(rng, p, None if p.period in incomplete else attempts.get(p.period))
        for p in reviewed.todo
        if (reviewed.job, p.period) not in cascaded  # the cascade republishes them first
    )
    fill = dataclasses.replace(ranged, scheduled=())
    return Reprocessing(
        reviewed.policy, fill, tasks, in_order=True, cascade_only=frozenset(cascaded)
    )


def only_planned(cascade: Cascade, chosen: Reprocessing, source: str) -> frozenset[tuple[str, str]]:
    """The publications of ``cascade`` an applied plan's cascade republishes: exactly its
    pairs; InvalidInput naming ``plan_file`` for one not below the range's window."""
    missing = sorted(chosen.cascade_only - cascade.eligible)
    if missing:
        job, period = missing[0]
        raise InvalidInput(
            "plan_file",
            source,
            f"its cascade names {job} {period}, which is not a publication below the "
            "range's window; plan again",
        )
    return chosen.cascade_only


def in_order(rng: Any) -> Iterator[PeriodTask]:
    """The tasks of the plan ``rng`` (a contiguous range) applies, one at a time in the plan's
    order, each once the one before it is done: a failure leaves the rest untouched, as a
    contiguous fill. Luigi runs ``run()`` anew after each: ``rng._fill_cursor`` says where
    it was."""
    tasks = rng.session.refreshes
    for index in range(rng._fill_cursor, len(tasks)):
        rng._fill_cursor = index
        if not tasks[index].complete():
            yield tasks[index]
    rng._fill_cursor = len(tasks)


def reprocessing(rng: Any, ledger: Ledger, ranged: RangePlan, policy: Reprocess) -> Reprocessing:
    """What ``rng`` (a range whose plan is ``ranged``) does under ``policy`` (the module
    docstring). Reads the ledger (three statements) unless the policy is ``missing``."""
    if policy is Reprocess.MISSING:
        return Reprocessing(policy, ranged)
    of = rng.of_class()
    facts = read_facts(ledger, ranged, BackfillFacts(rng.job(), {}, of.publishes))
    found = plan_backfill(ranged, facts, policy)
    attempts = {key: a.attempt for key, a in facts.latest.items()}
    chosen = _split(rng, ranged, policy, found.todo, found.taken, attempts)
    if policy is not Reprocess.STALE:
        return chosen
    # the cascade (cascade.py) republishes the stale ones, after what is stale below them;
    # it leaves the gaps to the fill and what the plan left beyond task_limit
    incomplete = {*map(ranged.key, (*ranged.gaps, *ranged.skipped_by_policy))}
    beyond = {s.business_date for s in facts.stale} - set(found.taken)
    return dataclasses.replace(chosen, tasks=(), cascade_left=frozenset(incomplete | beyond))


def _split(
    rng: Any,
    ranged: RangePlan,
    policy: Reprocess,
    todo: Sequence[PlannedPeriod],
    taken: Sequence[str],
    attempts: Mapping[str, int | None],
) -> Reprocessing:
    """The range's gaps among ``taken`` filled in chunks, every other period of ``todo``
    (in order) a task of its own; ``attempts``: each period's latest attempt ordinal."""
    gaps = {ranged.key(label): label for label in ranged.gaps}
    fill = dataclasses.replace(ranged, scheduled=tuple(gaps[k] for k in taken if k in gaps))
    incomplete = {*gaps, *map(ranged.key, ranged.skipped_by_policy)}
    tasks = tuple(
        _task(rng, planned, None if planned.period in incomplete else attempts.get(planned.period))
        for planned in todo
        if planned.period not in gaps
    )
    return Reprocessing(policy, fill, tasks)


def _task(rng: Any, planned: PlannedPeriod, complete: int | None) -> PeriodTask:
    """The ``of`` task that acts on ``planned``: as it is for a period not complete
    (``complete`` None), else with a new attempt after ``complete`` (and, to republish, the
    plan's reason)."""
    task = rng.task_for(rng.period_kind.label(planned.period))
    if complete is None:
        return task
    reason = planned.reason if planned.action is Action.REPUBLISH else None
    return republish_task(task, complete + 1, reason)
