"""Many jobs' windows as segments, in a few set-based reads: what ``gatekeeper report`` draws.

``coverages(ledger, windows, now)``: each job's RangePlan at ``now``, planned from the runs of
its complete periods (``fleet.fleet_plans``: one statement per batch of jobs), and its window
as segments (``segments.window_segments``): long runs of complete periods as one, the other
periods judged from their latest attempts, read for every job at once (``ledger.fleet.latest``
of the periods outside the runs only); what blocks a job's unattempted gaps is read per job
that has such a gap and requirements (``fleet.blocking``), the stale periods of every
publishing job (``stale.stale_periods``: they cut the runs), and a job's newest publications
over its window per job that has published (a run's revisions, a period's). In proportion
to the jobs and to what is not complete, not to the periods of their windows (but for the
publications of a job that publishes).
"""

from __future__ import annotations

import datetime as dt
from collections import defaultdict
from collections.abc import Mapping
from typing import TYPE_CHECKING

from gatekeeper.core.planning import RangePlan
from gatekeeper.core.records import Attempt
from gatekeeper.report.fleet import blocking, fleet_plans
from gatekeeper.report.segments import LONG, Segment, individual, window_segments, window_span
from gatekeeper.report.stale import stale_periods
from gatekeeper.report.states import WindowFacts
from gatekeeper.report.windows import JobWindow

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads


def coverages(
    ledger: LedgerReads,
    windows: Mapping[str, JobWindow],
    now: dt.datetime,
    shortest: int = LONG,
    task_limit: int | None = None,
) -> dict[str, tuple[RangePlan, tuple[Segment, ...]]]:
    """Job -> its RangePlan at ``now`` over its window (the first ``task_limit`` gaps
    scheduled; None: every gap) and the window as segments, runs of at least ``shortest``
    complete periods as one (see the module). Reads only; raises InvalidInput for a bad
    window and LedgerError when the database fails."""
    plans = fleet_plans(ledger, windows, now, task_limit)
    spans = {job: window_span(found, windows[job].through) for job, found in plans.items()}
    stale = stale_periods(ledger, spans)
    keys = {
        job: [
            found.key(label)
            for label in individual(found, windows[job].through, shortest, stale.get(job, {}))
        ]
        for job, found in plans.items()
    }
    latest: dict[str, dict[str, Attempt]] = defaultdict(dict)
    pairs = [(job, key) for job, some in keys.items() for key in some]
    for (job, key), attempt in ledger.fleet.latest(pairs).items():
        latest[job][key] = attempt
    out = {}
    for job, found in plans.items():
        window, seen, span = windows[job], latest.get(job, {}), spans[job]
        causes = blocking(ledger, found, seen, window)
        marked = stale.get(job)
        published = ledger.newest_publications(job, *span) if span and marked is not None else {}
        facts = WindowFacts(seen, published, causes, marked or {})
        out[job] = (found, window_segments(found, facts, window.through, shortest))
    return out
