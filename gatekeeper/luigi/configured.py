"""The public API's pure functions that take a calendar by name (``gk.shift``,
``gk.plan_range``), as a Luigi deployment calls them: a name ``[gatekeeper.calendars]`` of
luigi.cfg defines resolves (``calendar_config.use_defined_calendars``, called here, where the
name is used), as it does for a task class. The core's functions themselves resolve only what
they are passed and what the registry holds (``core/periods/registry.py``).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from gatekeeper.core import planning
from gatekeeper.core.periods import DAILY, Label, by_name
from gatekeeper.luigi import calendar_config

__all__ = ["plan_range", "shift"]


def shift(label: Any, n: int, *, calendar: Any = "all", period: Any = DAILY) -> Label:
    """The period ``n`` business periods after ``label`` (before it for n < 0), counting only
    the business periods of ``calendar`` (a name, one ``[gatekeeper.calendars]`` defines
    included, or a Calendar): ``shift(monday, -1, calendar="weekdays")`` is the Friday before.
    Raises InvalidInput naming the field for a label that is no business period, an unknown
    calendar or kind, or beyond the calendar."""
    calendar_config.use_defined_calendars()
    return by_name.shift(label, n, calendar=calendar, period=period)


def plan_range(
    complete: Iterable[Any],
    *,
    start: Any,
    stop: Any = None,
    now: Any,
    lateness: Any = dt.timedelta(0),
    timezone: Any = "UTC",
    period: Any = DAILY,
    strategy: Any = "contiguous",
    catchup: str = "all",
    task_limit: int | None = 50,
    calendar: Any = None,
) -> planning.RangePlan:
    """Plan the filling of ``[start, stop)`` at ``now``; pure, writes nothing.

    ``complete`` is a ``PeriodRuns`` of the period's kind, or any collection of completed
    period labels (dates for daily; aware datetimes for hourly, matched by their UTC instant)
    or their ledger keys; periods outside the range are ignored. ``start``/``stop`` are
    labels or ISO strings; ``stop`` None means no end. A period is due exactly at its
    interval end + ``lateness`` (a timedelta or a string such as ``2h``). ``catchup`` is
    ``all`` (every due period since start), ``none`` (only the latest due period) or
    ``last:N`` (the N latest). ``strategy`` only orders the gaps: ``contiguous`` and
    ``forward`` oldest first, ``reverse`` newest first; running ``contiguous`` one period at a
    time, in order, stopping at the first failure, is the Luigi wrapper's job. ``calendar``
    (a name, one ``[gatekeeper.calendars]`` defines included, or a Calendar) counts only its
    business periods.

    Returns a RangePlan. Raises InvalidInput naming the field for a bad period, calendar,
    time zone, ``now`` (naive), lateness (negative), start/stop (wrong type for the period;
    stop before start), strategy, catchup (unknown, ``last:0``), task_limit (negative) or
    complete item.
    """
    calendar_config.use_defined_calendars()
    return planning.plan_range(
        complete,
        start=start,
        stop=stop,
        now=now,
        lateness=lateness,
        timezone=timezone,
        period=period,
        strategy=strategy,
        catchup=catchup,
        task_limit=task_limit,
        calendar=calendar,
    )
