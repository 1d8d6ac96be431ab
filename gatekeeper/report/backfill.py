"""What ``gatekeeper plan`` reads: a job's backfill plan over its window (reads only).

``backfill(ledger, job, window, policy, now=..., task_limit=...)`` is the one
fetch-then-plan step: the range's own plan of the job (``planning.plan_from_ledger``: its
complete periods as the range reads them, published by it when it publishes), then the
facts the planner needs (``core/backfill.py BackfillFacts``) in one statement per kind of
fact, whatever the window's length: the latest attempts over the window, its stale
publications. Nothing is written.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING

from gatekeeper.core.backfill import BackfillFacts, BackfillPlan, Reprocess, plan_backfill
from gatekeeper.core.planning import plan_from_ledger
from gatekeeper.core.validation import check_name
from gatekeeper.core.window import plan_window
from gatekeeper.report.windows import JobWindow

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads


def backfill(
    ledger: LedgerReads,
    job: str,
    window: JobWindow,
    policy: Reprocess,
    *,
    now: dt.datetime,
    task_limit: int | None = 50,
) -> BackfillPlan:
    """``job``'s backfill plan at ``now`` over ``window`` under ``policy`` (the module
    docstring). A few queries; reads only. Raises InvalidInput for a bad request and
    LedgerError when the database fails."""
    job = check_name(job, "job")
    publishes = ledger.has_published(job)
    ranged = plan_from_ledger(
        ledger,
        job,
        now=now,
        schedule=window.schedule,
        consumer=job if publishes else None,
        task_limit=task_limit,
    )
    labels = plan_window(ranged, window.through)
    facts = BackfillFacts(job, {}, publishes, requires=window.requires, through=window.through)
    if labels:
        first, last = ranged.key(labels[0]), ranged.key(labels[-1])
        stale = ledger.stale(job, since=first) if publishes else []
        facts = BackfillFacts(
            job,
            ledger.latest_between(job, first, last),
            publishes,
            stale=tuple(s for s in stale if s.business_date <= last),
            requires=window.requires,
            through=window.through,
        )
    return plan_backfill(ranged, facts, policy)
