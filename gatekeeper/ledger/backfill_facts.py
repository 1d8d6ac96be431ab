"""What a backfill plan reads of one job over its window (reads only).

``read_facts(ledger, ranged, known)`` fills in the facts ``core/backfill.py plan_backfill``
judges a window with: the latest attempt of each of its periods, its stale publications (a
publisher's), and its last successes (the estimate), one statement each, whatever the
window's length. ``gatekeeper plan`` (``report/backfill.py``) and a range's ``--reprocess``
(``luigi/reprocess.py``) read them here, so both plan from the same facts.

``read_below(ledger, roots)`` reads what ``stale``'s cascade is planned from
(``core/cascade.py Below``): down from the window's periods, level by level, the upstream
pairs each publication's newest revision names (one statement per 300 pairs a level), then
the stale ones among them and the latest attempt of each pair met.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from typing import TYPE_CHECKING

from gatekeeper.core.backfill import ESTIMATE_SAMPLES, BackfillFacts
from gatekeeper.core.cascade import Below, Named, Pair
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.records import Attempt, Staleness
from gatekeeper.core.window import plan_window

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads


def read_facts(ledger: LedgerReads, ranged: RangePlan, known: BackfillFacts) -> BackfillFacts:
    """``known`` (the job, whether it publishes, what it requires, its last recorded period)
    with what the ledger holds over ``ranged``'s window: the latest attempts, the stale
    publications (when it publishes) and the last successes. Three statements; reads only;
    LedgerError when the database fails."""
    job = known.job
    labels = plan_window(ranged, known.through)
    successes = tuple(ledger.fleet.recent_successes([job], ESTIMATE_SAMPLES).get(job, ()))
    latest: dict[str, Attempt] = {}
    stale: tuple[Staleness, ...] = ()
    if labels:
        first, last = ranged.key(labels[0]), ranged.key(labels[-1])
        latest = ledger.latest_between(job, first, last)
        found = ledger.stale(job, since=first) if known.publishes else []
        stale = tuple(s for s in found if s.business_date <= last)
    return dataclasses.replace(known, latest=latest, stale=stale, successes=successes)


def read_below(ledger: LedgerReads, roots: Iterable[Pair]) -> Below:
    """What is below ``roots`` (a window's (job, period) pairs), as the module docstring
    says; reads only."""
    evidence: dict[Pair, tuple[Named, ...]] = {}
    seen = set(roots)
    frontier = set(seen)
    while frontier:
        found = ledger.fleet.evidence(frontier)
        evidence.update(found)
        frontier = {up for named in found.values() for up, _ in named} - seen
        seen |= frontier
    since: dict[str, str] = {}
    for job, key in sorted(evidence):
        since.setdefault(job, key)
    stale = ledger.fleet.stale(since.items()) if since else {}
    latest = ledger.fleet.latest(seen)
    return Below(
        evidence,
        {pair: tuple(entries) for pair, entries in stale.items() if pair in evidence},
        {pair: attempt.attempt for pair, attempt in latest.items()},
    )
