"""Which periods of many jobs' windows are stale, in a few set-based reads.

``stale_periods(ledger, spans)``: for each job of ``spans`` that publishes, the periods of its
span whose newest publication's evidence names an upstream attempt a newer succeeded attempt
superseded, each with its Staleness entries (one per upstream pair that changed):
``ledger.fleet.publishers`` (an index probe a job) and ``ledger.fleet.stale`` (the rule of
``ledger/staleness.py``, one statement per batch of publishers). What ``/metrics``, serve's
grid, ``gatekeeper status`` and the report show; it reads publications and evidence, which
only publishing jobs have.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gatekeeper.core.records import Staleness

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads

#: job -> period key -> what superseded the evidence of its newest publication
StalePeriods = dict[str, dict[str, tuple[Staleness, ...]]]


def stale_periods(ledger: LedgerReads, spans: Mapping[str, tuple[str, str] | None]) -> StalePeriods:
    """Job -> {period key: its Staleness entries} over the keys ``[first, last]`` of its
    span, for every job of ``spans`` that publishes (an empty mapping when none of its
    periods is stale); a job that never published, or whose span is None, is absent.
    Reads only."""
    asked = {job: span for job, span in spans.items() if span is not None}
    publishers = ledger.fleet.publishers(asked)
    found: StalePeriods = {job: {} for job in sorted(publishers)}
    since = [(job, asked[job][0]) for job in found]
    for (job, key), entries in ledger.fleet.stale(since).items():
        if key <= asked[job][1]:
            found[job][key] = tuple(entries)
    return found


def stale_count(found: StalePeriods, job: str) -> int | None:
    """How many periods of ``job`` ``found`` holds stale; None for a job that does not
    publish."""
    periods = found.get(job)
    return None if periods is None else len(periods)
