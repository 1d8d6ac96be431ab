"""A job's freshness over a ledger: the one fetch-then-judge step ``gatekeeper check``,
``status``, the report and the web view share (reads only).

``job_freshness(ledger, job, within=..., now=..., **window)`` judges the deadlines of the
job's window (the keyword arguments ``window_states`` takes; ``cli/windows.py job_request``
resolves them from the job's profile) with ``core/freshness.py assess``; the window is
extended, when it is open-ended, through the latest period whose deadline is in force, so a
period past its deadline that the range's lateness does not yet call due is judged too.
"""

from __future__ import annotations

import datetime as dt
from typing import TYPE_CHECKING, Any

from gatekeeper.core.freshness import Breach, Freshness, assess, last_in_force
from gatekeeper.core.periods import DAILY, parse_period
from gatekeeper.core.validation import check_name
from gatekeeper.report.states import window_states

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads

_PUBLISHES = "SELECT 1 FROM gk_publications WHERE consumer = ? LIMIT 1"


def job_freshness(
    ledger: LedgerReads,
    job: str,
    *,
    within: dt.timedelta,
    now: dt.datetime,
    start: Any,
    stop: Any = None,
    period: Any = DAILY,
    timezone: Any = "UTC",
    through: str | None = None,
    source: str = "",
    **request: Any,
) -> Freshness:
    """``job``'s Freshness at ``now`` for a deadline of ``within`` after each period's end
    (``source``: where it was set). ``start``, ``stop``, ``period``, ``timezone``, ``through``
    and ``request`` (lateness, catchup, strategy, requires) are ``window_states``' window. A
    job that has ever published must have each period published as well. A few queries;
    reads only; raises InvalidInput for a bad window and LedgerError when the database fails.
    """
    job = check_name(job, "job")
    kind = parse_period(period)
    last = last_in_force(kind, timezone, within, now)
    if stop is None and last is not None:
        if through is None or kind.rank(through) < kind.rank(last):
            through = kind.key(last)
    _, states = window_states(
        ledger,
        job,
        start=start,
        stop=stop,
        period=kind,
        timezone=timezone,
        through=through,
        now=now,
        task_limit=None,
        **request,
    )
    publishes = bool(ledger.read(_PUBLISHES, (job,)))
    published = {s.period for s in states if s.revision is not None} if publishes else None
    judged = [(s.period, s.state.value) for s in states]
    return assess(job, kind, timezone, within, judged, now, published, source)


def freshness_breaches(
    ledger: LedgerReads, job: str, *, within: dt.timedelta, now: dt.datetime, **window: Any
) -> list[Breach]:
    """The breached deadlines of ``job`` at ``now``, oldest first (``job_freshness``)."""
    return list(job_freshness(ledger, job, within=within, now=now, **window).breaches)
