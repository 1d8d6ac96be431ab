"""The coverage report's grids: how each kind of period is drawn (pure; ``html.py`` lays out
the page around them).

Daily periods are month calendars (weeks as rows, Monday first, one row of months per year);
hourly periods a day x 24 grid per month (hours in UTC, as their ledger keys); weeks, months and
quarters a row per year. Every cell carries ``data-job``, ``data-period``, ``data-state`` and a
``title`` tooltip (attempt, run ID, error, lease, publication revision and evidence run IDs);
a stale period's cell has the class ``stale`` and its tooltip the upstream change. A
long run of complete periods (``segments.Run``) is one bar between the grids of the periods
around it, carrying ``data-first``, ``data-last``, ``data-count`` (periods succeeded) and
``data-non-business`` (periods off the calendar among them), its span and count written on it.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from itertools import groupby

from gatekeeper.core.display import printable
from gatekeeper.core.periods import DAILY, HOURLY, MONTHLY, QUARTERLY, WEEKLY, Period
from gatekeeper.report.segments import Run, Segment, stretches
from gatekeeper.report.states import PeriodState, PeriodStatus

_WEEKDAYS = "".join(f'<span class="wd">{d}</span>' for d in "MTWTFSS")
LABELS = {s: s.value.replace("_", " ") for s in PeriodState}

#: the cells of one stretch of periods: (escaped job name, contiguous-through key, periods)
Grid = Callable[[str, str, Sequence[PeriodStatus]], str]


def text(text: str) -> str:
    """User text for the page: control and bidi characters shown as visible escapes
    (``display.printable``: ``abc\u202egnp.exe`` cannot reorder what a reader sees), then
    HTML-escaped."""
    return escape(printable(text))


def _tooltip(s: PeriodStatus) -> str:
    lines = [f"{s.period}: {LABELS[s.state]}"]
    if s.attempt is not None:
        lines.append(f"attempt {s.attempt}, run {printable(s.run_id)}")
    if s.error:
        lines.append(f"error: {printable(s.error)}")
    if s.cause is not None:
        lines.append(f"blocked {printable(s.cause.reason())}")
    if s.state is PeriodState.RUNNING and s.lease_expires_at is not None:
        lines.append(f"lease until {s.lease_expires_at.isoformat()}")
    if s.revision is not None:
        lines.append(f"published revision {s.revision}")
        for label, run_id in sorted((s.evidence or {}).items()):
            lines.append(f"  evidence {printable(label)}: run {printable(run_id)}")
    lines += [f"stale: {printable(entry.change)}" for entry in s.stale]
    return escape("\n".join(lines))


def _cells(
    job: str, states: Iterable[PeriodStatus], first_style: str = "", through: str | None = None
) -> str:
    """The cells of ``states``: the first one may carry a style (its grid column)."""
    out = []
    for s in states:
        marks = " ".join(m for m, on in (("ct", s.period == through), ("stale", s.stale)) if on)
        cls = f' class="{marks}"' if marks else ""
        out.append(
            f'<i{cls}{first_style} data-job="{job}" data-period="{s.period}" '
            f'data-state="{s.state.value}" title="{_tooltip(s)}"></i>'
        )
        first_style = ""
    return "".join(out)


def _daily(name: str, through: str, states: Sequence[PeriodStatus]) -> str:
    """Month calendars, one row of months per year, the newest year first."""
    years = []
    for year, in_year in groupby(states, key=lambda s: s.period[:4]):
        months = []
        for month, days in groupby(in_year, key=lambda s: s.period[:7]):
            days_list = list(days)
            column = dt.date.fromisoformat(days_list[0].period).weekday() + 1
            label = dt.date.fromisoformat(month + "-01").strftime("%b %Y")
            cells = _cells(name, days_list, f' style="grid-column-start:{column}"', through)
            months.append(
                f'<div class="m"><h3>{label}</h3><div class="g">{_WEEKDAYS}{cells}</div></div>'
            )
        years.append(f'<div class="year"><span class="yl">{year}</span>{"".join(months)}</div>')
    return "".join(reversed(years))


def _hourly(name: str, through: str, states: Sequence[PeriodStatus]) -> str:
    """A day x 24 grid per month, the newest month first; hours in UTC, as the periods'
    ledger keys."""
    head = "<span>UTC</span>" + "".join(
        f"<span>{h:02d}</span>" if h % 6 == 0 else "<span></span>" for h in range(24)
    )
    months = []
    for month, in_month in groupby(states, key=lambda s: s.period[:7]):
        rows = [head]
        for day, hours in groupby(in_month, key=lambda s: s.period[:10]):
            hours_list = list(hours)
            column = int(hours_list[0].period[11:13]) + 2
            rows.append(f'<span style="grid-column-start:1">{day[8:]}</span>')
            rows.append(_cells(name, hours_list, f' style="grid-column-start:{column}"', through))
        label = dt.date.fromisoformat(month + "-01").strftime("%b %Y")
        months.append(f'<div class="m"><h3>{label}</h3><div class="hg">{"".join(rows)}</div></div>')
    return "".join(reversed(months))


def _by_year(
    name: str,
    through: str,
    states: Sequence[PeriodStatus],
    columns: int,
    column_of: Callable[[str], int],
) -> str:
    """One row of ``columns`` cells per year, the newest year first: weeks (53), months
    (12) or quarters (4), each in its own column (``column_of`` a key's, from 1)."""
    years = []
    for year, in_year in groupby(states, key=lambda s: s.period[:4]):
        cells = "".join(
            _cells(name, [s], f' style="grid-column-start:{column_of(s.period)}"', through)
            for s in in_year
        )
        grid = f'<div class="g" style="grid-template-columns:repeat({columns},var(--c))">'
        years.append(f'<div class="year"><span class="yl">{year}</span>{grid}{cells}</div></div>')
    return "".join(reversed(years))


def _weekly(name: str, through: str, states: Sequence[PeriodStatus]) -> str:
    """A row of ISO weeks per ISO year (``2026-W41`` in column 41)."""
    return _by_year(name, through, states, 53, lambda key: int(key[6:8]))


def _monthly(name: str, through: str, states: Sequence[PeriodStatus]) -> str:
    """A row of twelve months per year."""
    return _by_year(name, through, states, 12, lambda key: int(key[5:7]))


def _quarterly(name: str, through: str, states: Sequence[PeriodStatus]) -> str:
    """A row of four quarters per year."""
    return _by_year(name, through, states, 4, lambda key: int(key[6]))


@dataclass(frozen=True, slots=True)
class Layout:
    """How a kind of period is drawn: its grid, the most periods drawn big, and whether a short
    window fits a column beside the others (a month calendar does; a day x 24 grid does not)."""

    grid: Grid
    big: int
    beside: bool


_LAYOUTS: dict[Period, Layout] = {
    DAILY: Layout(_daily, big=100, beside=True),
    HOURLY: Layout(_hourly, big=24 * 8, beside=False),
    WEEKLY: Layout(_weekly, big=53 * 2, beside=False),
    MONTHLY: Layout(_monthly, big=12 * 8, beside=True),
    QUARTERLY: Layout(_quarterly, big=4 * 20, beside=True),
}


def layout(kind: Period) -> Layout:
    """How periods of ``kind`` (of its base kind) are drawn."""
    return _LAYOUTS[kind.base]


def grid(kind: Period, name: str, through: str, segments: Sequence[Segment]) -> str:
    """The cells of ``segments`` (periods of ``kind``, oldest first) of the job named ``name``
    (escaped), newest first: a grid per stretch of periods judged one by one, a bar per run."""
    draw = layout(kind).grid
    parts = [
        _run(name, through, piece) if isinstance(piece, Run) else draw(name, through, piece)
        for piece in stretches(segments)
    ]
    return "".join(reversed(parts))


def _run(name: str, through: str, run: Run) -> str:
    """A run of complete periods as one bar: its span and count on it and in its title."""
    span = f"{run.first} to {run.last}"
    off = f", {run.non_business:,} non-business between them" if run.non_business else ""
    title = f"{span}: {LABELS[run.state]}, {run.count:,} periods{off}"
    cls = "run ct" if run.last == through else "run"
    return (
        f'<div class="{cls}" data-job="{name}" data-state="{run.state.value}" '
        f'data-first="{run.first}" data-last="{run.last}" data-count="{run.count}" '
        f'data-non-business="{run.non_business}" title="{escape(title)}">'
        f"{escape(span)} &middot; {run.count:,} {LABELS[run.state]}{escape(off)}</div>"
    )
