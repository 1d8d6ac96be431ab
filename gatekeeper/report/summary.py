"""How many periods of a window are in each state, in proportion to what is not complete.

``window_counts(plan, latest, causes, through)`` is ``counts(period_states(...))``
(``report/states.py``) without a state or an object per period: the plan's complete due
periods (its ``due`` less its gaps and the periods its catch-up policy skips, read from the
runs the ledger keeps) are counted as ``succeeded`` by arithmetic on ordinals, the days off
the calendar and the periods not yet due likewise, and only the due periods that are not
complete, and the attempts recorded for periods not yet due, are looked at one by one. What
``/metrics``, ``/api/jobs`` and serve's summaries show of a job.

The reads that feed it are ``report/fleet.py``'s (``summaries``, ``window_summary``).
"""

from __future__ import annotations

from collections.abc import Mapping

from gatekeeper.core.causes import Cause
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.records import Attempt
from gatekeeper.report.states import (
    PeriodState,
    attempt_state,
    base_bounds,
    window_bounds,
)

Counts = dict[PeriodState, int]


def window_counts(
    plan: RangePlan,
    latest: Mapping[str, Attempt],
    causes: Mapping[str, Cause] | None = None,
    through: str | None = None,
) -> Counts:
    """``counts(period_states(plan, WindowFacts(latest, causes=causes), through))``, in enum
    order, in proportion to the plan's incomplete due periods and ``latest``'s size (pure).

    ``latest`` must hold the latest attempt of every due period that is not complete (the
    plan's gaps and the periods its policy skips) and of every business period of the window
    after the due ones that has one; attempts of other periods are not looked at (a complete
    due period is ``succeeded`` whatever ``latest`` says of it, as the runs say).
    """
    kind, now = plan.period, plan.now
    found: Counts = dict.fromkeys(PeriodState, 0)
    first, end = window_bounds(plan, through)
    due = plan.due
    lo = kind.ordinal(due[0]) if due else first
    hi = lo + len(due)
    skipped = {plan.key(label) for label in plan.skipped_by_policy}
    blocked = causes or {}
    incomplete = 0
    for label in (*plan.gaps, *plan.skipped_by_policy):
        key = plan.key(label)
        attempt = latest.get(key)
        if attempt is not None:
            state = attempt_state(attempt, now)
        elif key in skipped:
            state = PeriodState.SKIPPED
        else:
            state = PeriodState.BLOCKED if key in blocked else PeriodState.MISSING
        found[state] += 1
        incomplete += 1
    found[PeriodState.SUCCEEDED] += (hi - lo) - incomplete
    later = (end - first) - (hi - lo)  # business periods of the window not yet due
    for key, attempt in latest.items():
        if not kind.owns_key(key) or not kind.is_business(key):
            continue  # a Saturday's old attempt on a weekday job: shown non-business
        n = kind.ordinal(key)
        if first <= n < end and not lo <= n < hi:
            found[attempt_state(attempt, now)] += 1
            later -= 1
    found[PeriodState.NOT_DUE] += later
    if kind.base is not kind:  # on a business calendar: the days off it too
        base_first, base_end = base_bounds(plan, kind.at(end - 1) if end > first else None)
        if base_end > base_first:
            at = kind.base.at
            business = kind.rank(at(base_end)) - kind.rank(at(base_first))
            found[PeriodState.NON_BUSINESS] += (base_end - base_first) - business
    if not found[PeriodState.NON_BUSINESS]:
        del found[PeriodState.NON_BUSINESS]
    return found
