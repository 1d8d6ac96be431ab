"""A job's freshness over a ledger: the one fetch-then-judge step ``gatekeeper check``,
``status``, the report and the web view share (reads only).

``job_freshness(ledger, job, within=..., now=..., window=...)`` judges the deadlines of the
job's window (``report/windows.py job_window`` resolves it from the job's profile) with
``core/freshness.py assess``; the window is extended, when it is open-ended, through the
latest period whose deadline is in force, so a period past its deadline that the range's
lateness does not yet call due is judged too.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING

from gatekeeper.core.freshness import Breach, Freshness, assess, last_in_force
from gatekeeper.core.validation import check_name
from gatekeeper.report.states import PeriodState, window_states
from gatekeeper.report.windows import JobWindow

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads


def job_freshness(
    ledger: LedgerReads,
    job: str,
    *,
    within: dt.timedelta,
    now: dt.datetime,
    window: JobWindow,
    source: str = "",
) -> Freshness:
    """``job``'s Freshness at ``now`` for a deadline of ``within`` after each period's end
    (``source``: where it was set), over ``window`` (``report/windows.py job_window``, or a
    JobWindow of a Schedule, as ``window_states`` takes it). A job that
    has ever published must have each period published as well. A few queries; reads only;
    raises InvalidInput for a bad window and LedgerError when the database fails.
    """
    job = check_name(job, "job")
    plan_of = window.schedule
    kind, zone = plan_of.period, plan_of.timezone
    last = last_in_force(kind, zone.key, within, now)
    through = window.through
    if plan_of.stop is None and last is not None:
        if through is None or kind.rank(through) < kind.rank(last):
            through = kind.key(last)
    _, states = window_states(
        ledger,
        job,
        now=now,
        task_limit=None,
        window=dataclasses.replace(window, through=through),
    )
    publishes = ledger.has_published(job)
    published = {s.period for s in states if s.revision is not None} if publishes else None
    judged = [(s.period, s.state.value) for s in states if s.state is not PeriodState.NON_BUSINESS]
    return assess(job, kind, zone.key, within, judged, now, published, source)


def freshness_breaches(
    ledger: LedgerReads, job: str, *, within: dt.timedelta, now: dt.datetime, window: JobWindow
) -> list[Breach]:
    """The breached deadlines of ``job`` at ``now`` over ``window``, oldest first
    (``job_freshness``)."""
    return list(job_freshness(ledger, job, within=within, now=now, window=window).breaches)
