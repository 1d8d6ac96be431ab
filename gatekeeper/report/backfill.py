"""What ``gatekeeper plan`` reads: a job's backfill plan over its window (reads only).

``backfill(ledger, request)`` (a ``PlanRequest``) is the one
fetch-then-plan step: the range's own plan of the job (``planning.plan_from_ledger``: its
complete periods as the range reads them, published by it when it publishes), then the
facts the planner needs (``core/backfill.py BackfillFacts``) in one statement per kind of
fact, whatever the window's length: the latest attempts over the window, its stale
publications, its last successes (the estimate of the plan's duration). ``reviewed`` adds
the facts a plan file carries (``core/plan_facts.py``): the current revision of each of
the window's periods, and the latest attempt and revision of every upstream pair they
require, read for all pairs at once (``Ledger.fleet``). Nothing is written.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from dataclasses import dataclass
from typing import TYPE_CHECKING

from gatekeeper.core.backfill import BackfillFacts, BackfillPlan, Reprocess, plan_backfill
from gatekeeper.core.plan_facts import Fact, cascade_pairs, facts_of, job_pairs, window_pairs
from gatekeeper.core.planning import RangePlan, plan_from_ledger
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.backfill_facts import read_below, read_facts
from gatekeeper.report.windows import JobWindow

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads


@dataclass(frozen=True, slots=True)
class PlanRequest:
    """What a backfill plan is asked for: ``job``'s ``window`` under ``policy`` at ``now``,
    a fill scheduling ``task_limit`` periods (None: all)."""

    job: str
    window: JobWindow
    policy: Reprocess
    now: dt.datetime
    task_limit: int | None = 50


def backfill(ledger: LedgerReads, request: PlanRequest) -> BackfillPlan:
    """The backfill plan ``request`` asks for (the module docstring). A few queries; reads
    only. Raises InvalidInput for a bad request and LedgerError when the database fails."""
    ranged, facts = _read(ledger, request)
    return plan_backfill(ranged, facts, request.policy)


def reviewed(ledger: LedgerReads, request: PlanRequest) -> tuple[BackfillPlan, tuple[Fact, ...]]:
    """``backfill``, and every ledger fact it read (``core/plan_facts.py``): two more
    statements per 300 pairs; reads only."""
    ranged, facts = _read(ledger, request)
    found = plan_backfill(ranged, facts, request.policy)
    own, upstream = job_pairs(found), window_pairs(found, request.window.requires)
    upstream = (*upstream, *cascade_pairs(found, facts.below))
    latest = {(found.job, key): a for key, a in facts.latest.items()}
    latest.update(ledger.fleet.latest(upstream))
    revisions = ledger.fleet.revisions((*own, *upstream))
    return found, facts_of((*own, *upstream), latest, revisions)


def _read(ledger: LedgerReads, request: PlanRequest) -> tuple[RangePlan, BackfillFacts]:
    """The range's plan of the requested job and the facts of its window the planner reads
    (``ledger/backfill_facts.py``)."""
    job, window = check_name(request.job, "job"), request.window
    publishes = ledger.has_published(job)
    ranged = plan_from_ledger(
        ledger,
        job,
        now=request.now,
        schedule=window.schedule,
        consumer=job if publishes else None,
        task_limit=request.task_limit,
    )
    known = BackfillFacts(job, {}, publishes, requires=window.requires, through=window.through)
    facts = read_facts(ledger, ranged, known)
    if request.policy is Reprocess.STALE:  # and the cascade a range runs first
        below = read_below(ledger, [(job, ranged.key(label)) for label in ranged.due])
        facts = dataclasses.replace(facts, below=below)
    return ranged, facts
