"""The ledger facts a backfill plan read, and their digest (pure).

A plan written to a file (``gatekeeper plan -o FILE``) carries every fact it read: for each
business period of its window and each upstream (job, period) pair those periods require
(and, for ``stale``'s cascade, each pair it republishes and the pairs their evidence names),
the latest attempt (ordinal, run ID, state as stored) and the current publication revision,
each None where the ledger has none. ``digest`` is the sha256 of those facts in one
canonical form, so two reads of an unchanged ledger give the same digest, and any new
attempt, changed state or new revision changes it. Applying a plan (issue 50, item 2)
recomputes it before the first write.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gatekeeper.core.backfill import BackfillPlan, Pair, requirement_pairs
from gatekeeper.core.cascade import Below
from gatekeeper.core.causes import Requirement
from gatekeeper.core.records import Attempt


@dataclass(frozen=True, slots=True)
class Fact:
    """What the ledger held of one (job, period) when a plan was made."""

    job: str
    period: str
    attempt: int | None = None
    run_id: str | None = None
    state: str | None = None
    revision: int | None = None

    def to_list(self) -> list[object]:
        """``[job, period, attempt, run_id, state, revision]``, as a plan file holds it."""
        return [self.job, self.period, self.attempt, self.run_id, self.state, self.revision]

    def describe(self) -> str:
        """``attempt 2 (run r-2, failed), revision 1``; ``no attempt, not published``."""
        tried = (
            "no attempt"
            if self.attempt is None
            else f"attempt {self.attempt} (run {self.run_id}, {self.state})"
        )
        published = "not published" if self.revision is None else f"revision {self.revision}"
        return f"{tried}, {published}"


def fact_of(pair: Pair, latest: Attempt | None, revision: int | None) -> Fact:
    """The Fact of ``pair`` whose latest attempt is ``latest`` and current revision
    ``revision`` (None: none)."""
    if latest is None:
        return Fact(pair[0], pair[1], revision=revision)
    return Fact(pair[0], pair[1], latest.attempt, latest.run_id, latest.state.value, revision)


def facts_of(
    pairs: Iterable[Pair], latest: Mapping[Pair, Attempt], revisions: Mapping[Pair, int]
) -> tuple[Fact, ...]:
    """The Facts of ``pairs`` (sorted, once each) from what the ledger answered."""
    return tuple(fact_of(p, latest.get(p), revisions.get(p)) for p in sorted(set(pairs)))


def window_pairs(found: BackfillPlan, requires: Sequence[Requirement]) -> tuple[Pair, ...]:
    """Every upstream pair the business periods of ``found``'s window require, sorted."""
    kind = found.range.period
    pairs = {
        pair
        for p in found.periods
        if kind.is_business(p.period)
        for pair in requirement_pairs(requires, kind, p.period)
    }
    return tuple(sorted(pairs))


def cascade_pairs(found: BackfillPlan, below: Below | None) -> tuple[Pair, ...]:
    """The pairs ``found``'s cascade republishes and every upstream pair their evidence
    names (what its reasons are made of), sorted; none without a cascade."""
    if below is None:
        return ()
    steps = {(step.job, step.period) for step in found.cascade}
    named = {up for pair in steps for up, _ in below.evidence.get(pair, ())}
    return tuple(sorted(steps | named))


def job_pairs(found: BackfillPlan) -> tuple[Pair, ...]:
    """The (job, period) pair of every business period of ``found``'s window."""
    kind = found.range.period
    return tuple((found.job, p.period) for p in found.periods if kind.is_business(p.period))


def digest(facts: Iterable[Fact]) -> str:
    """``sha256:<hex>`` of ``facts`` in one canonical form (sorted, compact JSON)."""
    rows = sorted((f.to_list() for f in facts), key=lambda row: (row[0], row[1]))
    text = json.dumps(rows, separators=(",", ":"))  # ASCII: json's default
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()
