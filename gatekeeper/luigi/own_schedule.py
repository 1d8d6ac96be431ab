"""A job's own schedule, recorded from its task class (issue 47: a job's calendar holds
everywhere).

Whenever gatekeeper attempts a period task, or a range plans a job or reaches a task class
through its ``requires()``, the job's period kind, calendar and zone are those of its class
(and the ``[gatekeeper]`` zone), never those of whoever required it: ``record`` writes them
(``Ledger.record_schedule``: the window a range planned is kept, none is invented). Once per
process, ledger and job: after the first call the ledger holds them, so an attempt adds no
write transaction, and a read only the first time.
"""

from __future__ import annotations

import threading
from typing import Any

from gatekeeper.core.causes import JobProfile, profile
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.calendars import parse_calendar
from gatekeeper.ledger import Ledger
from gatekeeper.luigi import calendar_config, config

#: (ledger URL, job, kind, calendar, zone) recorded by this process
_recorded: set[tuple[str, str, str, str, str]] = set()
_lock = threading.Lock()


def own_schedule(task: Any, zone: str | None = None) -> JobProfile | None:
    """The schedule of ``task``'s job: its class's period kind and calendar (a calendar
    object by its import path: ``core/periods/calendar_paths.py``), and ``zone`` (default: the
    ``[gatekeeper]`` zone), with no window; None for a class on a calendar object no other
    process could rebuild (no import path: the job is read as before)."""
    found = profile(task.job_id, type(task).period_kind, zone or config.timezone())
    calendar_config.use_defined_calendars()
    try:
        parse_calendar(found.calendar, "calendar")
    except InvalidInput:
        return None
    return found


def record(ledger: Ledger, task: Any, zone: str | None = None) -> None:
    """Record ``task``'s own schedule (``own_schedule``) on ``ledger``, once per process;
    writes only when the ledger does not hold it yet."""
    found = own_schedule(task, zone)
    if found is None:
        return
    key = (ledger.url, found.job, found.period.name, found.calendar, found.timezone)
    with _lock:
        if key in _recorded:
            return
    ledger.record_schedule(found)
    with _lock:
        _recorded.add(key)
