"""The periods of a range plan's window, as every reader shows them (pure).

``plan_window`` is ``[start, stop)``, or from ``start`` through the latest due period when
the window is open-ended (and on through the job's last recorded period when that is later);
``with_non_business`` adds the periods of the kind's calendar that are no business periods
among them. ``gatekeeper status``, the report, serve and ``gatekeeper plan`` judge these.
"""

from __future__ import annotations

from collections.abc import Sequence

from gatekeeper.core.periods import Label
from gatekeeper.core.planning import RangePlan


def window_bounds(plan: RangePlan, through: str | None = None) -> tuple[int, int]:
    """The ordinals ``[first, end)`` of ``plan_window(plan, through)``'s periods."""
    kind = plan.period  # bounds need not be business periods of its calendar: ranks
    first = kind.rank(plan.start)
    if plan.stop is not None:
        end = kind.rank(plan.stop)
    else:
        end = kind.ordinal(plan.due[-1]) + 1 if plan.due else first
        if through is not None and kind.owns_key(through):
            end = max(end, kind.rank(through) + kind.is_business(through))
    return first, end


def plan_window(plan: RangePlan, through: str | None = None) -> tuple[Label, ...]:
    """The periods ``period_states`` judges: ``[start, stop)``, or from ``start`` through the
    latest due period when the range is open-ended, and on through ``through`` (the job's last
    recorded period) when that is later: a period recorded before it is due is shown."""
    first, end = window_bounds(plan, through)
    return tuple(plan.period.at(n) for n in range(first, end))


def base_bounds(plan: RangePlan, last: Label | None) -> tuple[int, int]:
    """The base kind's ordinals ``[first, end)`` that ``with_non_business`` shows for a
    window whose last business period is ``last`` (None: none)."""
    base = plan.period.base
    first = base.ordinal(plan.start)
    end = base.ordinal(last) + 1 if last is not None else first
    if plan.stop is not None:
        end = max(end, base.ordinal(plan.stop))
    else:
        closed = base.last_closed(plan.now - plan.lateness, plan.schedule.timezone)
        if closed is not None:
            end = max(end, base.ordinal(closed) + 1)
    return first, max(first, end)


def with_non_business(plan: RangePlan, labels: Sequence[Label]) -> Sequence[Label]:
    """``labels`` (business periods, ascending) with the periods of the kind's calendar that
    are no business periods among them and up to the window's end: from ``start`` to the
    last of ``labels`` (to ``stop`` for a closed window; for an open one, to the last period
    closed at the plan's ``now`` less its lateness). ``labels`` itself on ``all``."""
    base = plan.period.base
    if base is plan.period:
        return labels
    first, end = base_bounds(plan, labels[-1] if labels else None)
    return [base.at(n) for n in range(first, end)]
