"""The line a stored run of complete periods counts on, and stored runs read on any kind.

A row of ``gk_complete_runs`` is tagged (``calendar``) with its line:

- ``all``: every period in ``[first_period, last_period]`` is complete;
- ``weekdays`` (daily keys only): every *weekday* in it is complete; the weekends inside it
  say nothing (the run bridges them, so a weekday job with no gaps is one run).

The line is a fixed rule, never a calendar's definition: a holiday package's new version or
a ``[gatekeeper.calendars]`` closure in one process cannot change what a stored row means,
so every process reads every row alike. A job whose profile (``gk_jobs.calendar``) names a
calendar other than ``all`` keeps its complete weekdays on the weekday line and its other
complete periods (a weekend day recorded before the calendar was set, a Saturday session,
weeks and months) on the ``all`` line; any other job keeps every period on ``all``. Each
line's runs are disjoint and never adjacent on that line's ordinals.

A reader asks for one kind (``between``): a kind whose calendar has weekdays only
(``calendars.weekdays_only``: ``weekdays``, ``holidays:CC``, most exchanges) takes a bridged
row whole, as the ranks of its ends; any other (``all`` included) splits a bridged row at its
weekends, so no bridged weekend is ever read as complete.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, Period, kind_of_key
from gatekeeper.core.periods.calendars import WEEKDAYS, weekdays_only
from gatekeeper.core.spans import PeriodRuns, Span

ALL_LINE = "all"
WEEKDAY_LINE = "weekdays"
#: the daily kind counting weekdays: the ordinals of the weekday line
WEEKDAY_DAYS = DAILY.on(WEEKDAYS)


def bridges(calendar: str | None) -> bool:
    """True when a job whose profile names ``calendar`` (None: no profile, or none recorded)
    keeps its complete weekdays on the weekday line."""
    return calendar is not None and calendar != "all"


def line_of(bridged: bool, period: str) -> tuple[str, Period]:
    """The tag and the kind whose ordinals ``period`` (a ledger key) counts on, for a job that
    ``bridged`` weekends (``bridges``) or not."""
    kind = kind_of_key(period)
    if bridged and kind is DAILY and dt.date.fromisoformat(period).weekday() < 5:
        return WEEKDAY_LINE, WEEKDAY_DAYS
    return ALL_LINE, kind


def read_runs(
    kind: Period, first: str, last: str, rows: Iterable[tuple[str, str, str]]
) -> PeriodRuns:
    """The periods of ``kind`` among ``[first, last]`` (ledger keys of its base kind) that
    ``rows`` (``(tag, first_period, last_period)`` overlapping the window) hold, as runs of
    ``kind`` clipped to the window. Raises InvalidInput for a kind of another base, or a
    window beyond the years ``kind``'s calendar knows."""
    base = kind_of_key(first)
    if kind.base is not base:
        raise InvalidInput("complete", base.name, f"runs of another kind than {kind}")
    ordinal = base.key_ordinal
    rank: Callable[[int], int]
    if kind is base:
        rank = _same
    else:
        kind.rank(first, "first")  # the calendar refuses years it does not know
        kind.rank(last, "last")
        rank = kind.rank_of_ordinal  # type: ignore[attr-defined]
    lo, hi = rank(ordinal(first)), rank(ordinal(last) + 1)
    whole = kind is not base and weekdays_only(kind.calendar)
    base_lo, base_hi = ordinal(first), ordinal(last) + 1
    spans: list[Span] = []
    for tag, a, b in rows:
        ends = (ordinal(a), ordinal(b) + 1)
        parts = [ends] if tag == ALL_LINE or whole else _weekdays(*ends, base_lo, base_hi)
        for x, y in parts:
            start, end = max(lo, rank(x)), min(hi, rank(y))
            if start < end:
                spans.append((start, end))
    return PeriodRuns(kind, _coalesced(spans))


def _same(n: int) -> int:
    return n


def _weekdays(lo: int, hi: int, clip_lo: int, clip_hi: int) -> list[Span]:
    """The weekdays of the day ordinals ``[lo, hi)`` within ``[clip_lo, clip_hi)``, as spans
    of day ordinals (day ordinal 1, 0001-01-01, is a Monday)."""
    at, stop = max(lo, clip_lo), min(hi, clip_hi)
    found: list[Span] = []
    while at < stop:
        day = (at - 1) % 7
        if day >= 5:  # Saturday or Sunday: on to Monday
            at += 7 - day
            continue
        end = min(stop, at + 5 - day)
        found.append((at, end))
        at = end
    return found


def _coalesced(spans: list[Span]) -> tuple[Span, ...]:
    """``spans`` sorted, overlapping and adjacent ones joined."""
    merged: list[list[int]] = []
    for lo, hi in sorted(spans):
        if merged and lo <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], hi)
        else:
            merged.append([lo, hi])
    return tuple((lo, hi) for lo, hi in merged)
