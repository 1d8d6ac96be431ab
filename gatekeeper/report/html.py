"""The coverage report: one self-contained HTML page of every period of some jobs (pure).

``render_report(jobs, generated_at=...)`` turns, per job, its RangePlan and the state of every
period of its window (``period_states.period_states``) into an HTML string with inline CSS and
JS, nothing fetched from the network. Daily periods are month calendars (weeks as rows, Monday
first, one row of months per year); hourly periods a day x 24 grid per month (hours in UTC, as
their ledger keys); weeks, months and quarters a row per year. Every cell carries
``data-job``, ``data-period``, ``data-state`` and a ``title`` tooltip (attempt, run ID,
error, lease, publication revision and evidence run IDs).
Reads and writes nothing; user text (job names, errors, run IDs) is escaped, its control and
bidi characters shown as visible escapes.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from html import escape
from itertools import groupby

from gatekeeper.core.display import printable
from gatekeeper.core.freshness import Freshness
from gatekeeper.core.periods import DAILY, HOURLY, MONTHLY, QUARTERLY, WEEKLY, Period
from gatekeeper.core.periods.intervals import duration_text
from gatekeeper.core.planning import RangePlan
from gatekeeper.report.assets import ATTENTION, CSS, PALETTE, SCRIPT, state_rules
from gatekeeper.report.states import PeriodState, PeriodStatus, collapse

_ATTENTION_ROWS = 12
_WEEKDAYS = "".join(f'<span class="wd">{d}</span>' for d in "MTWTFSS")
_LABELS = {s: s.value.replace("_", " ") for s in PeriodState}


@dataclass(frozen=True, slots=True)
class JobCoverage:
    """One job of the report: its plan and the state of every period of the plan's window."""

    job: str
    plan: RangePlan
    states: tuple[PeriodStatus, ...]
    freshness: Freshness | None = None  # its deadlines, when it has one (core/freshness.py)

    def counts(self) -> dict[str, int]:
        """State -> number of periods in it, in palette order: every state, but
        ``non_business`` only for a job that has such periods (one on a calendar)."""
        found = Counter(s.state for s in self.states)
        return {
            s.value: found.get(s, 0)
            for s in PALETTE
            if s is not PeriodState.NON_BUSINESS or found.get(s, 0)
        }

    def summary(self) -> dict[str, object]:
        """JSON-ready: the job, its counts, contiguous-through and next due."""
        plan = self.plan
        return {
            "job": self.job,
            "period": plan.period,
            "counts": self.counts(),
            "contiguous_through": (
                None if plan.contiguous_through is None else plan.key(plan.contiguous_through)
            ),
            "next_due_at": None if plan.next_due_at is None else plan.next_due_at.isoformat(),
            "freshness": None if self.freshness is None else self.freshness.to_json(),
        }


def render_report(
    jobs: Sequence[JobCoverage], *, generated_at: dt.datetime, title: str = "gatekeeper coverage"
) -> str:
    """The report page for ``jobs`` (in order), stamped ``generated_at``; pure, returns HTML."""
    data = json.dumps({"jobs": [j.summary() for j in jobs]}).replace("<", "\\u003c")
    parts = [
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{_text(title)}</title><style>{CSS}{state_rules()}</style></head>",
        '<body class="compact">' if all(map(_side_by_side, jobs)) else "<body>",
        f"<h1>{_text(title)}</h1>",
        _meta(jobs, generated_at),
        _legend(),
        _overview(jobs),
        "<main>",
    ]
    for n, job in enumerate(jobs):
        parts.append(_section(n, job))
    parts += [
        "</main>",
        '<pre id="detail" aria-live="polite">Click a cell to pin its details here.</pre>',
        f'<script type="application/json" id="gk-data">{data}</script>',
        f"<script>{SCRIPT}</script></body></html>\n",
    ]
    return "".join(parts)


def _meta(jobs: Sequence[JobCoverage], generated_at: dt.datetime) -> str:
    nows = sorted({_instant(j.plan.now) for j in jobs})
    as_of = ", ".join(nows) if nows else "-"
    return (
        f'<p class="meta">Generated {escape(_instant(generated_at))} &middot; states '
        f"as of {escape(as_of)} &middot; {len(jobs)} job{'s' if len(jobs) != 1 else ''}"
        " &middot; click a legend entry to highlight a state, a cell to pin its details</p>"
    )


def _legend() -> str:
    items = "".join(
        f'<li><button type="button" data-state="{s.value}" aria-pressed="false" '
        f'title="{escape(meaning)}"><span class="sw" data-state="{s.value}" '
        f'data-color="{colour}"></span>{_LABELS[s]}</button></li>'
        for s, (colour, meaning) in PALETTE.items()
    )
    through = (
        '<li><span class="sw ct"></span> contiguous through (every period up to it succeeded)</li>'
    )
    return f'<ul class="legend" aria-label="legend">{items}{through}</ul>'


def _instant(when: dt.datetime) -> str:
    return when.isoformat(timespec="seconds")


def _big(job: JobCoverage) -> bool:
    return len(job.states) <= _layout(job).big


def _side_by_side(job: JobCoverage) -> bool:
    """A short daily window fits a column beside the others (a day x 24 grid does not)."""
    return _layout(job).beside and _big(job)


def shown_states(jobs: Sequence[JobCoverage]) -> list[str]:
    """The states a table of ``jobs`` has a column for: those any job counts."""
    return list(dict.fromkeys(state for job in jobs for state in job.counts()))


def _overview(jobs: Sequence[JobCoverage]) -> str:
    shown = shown_states(jobs)
    head = "".join(f"<th>{_LABELS[PeriodState(s)]}</th>" for s in shown)
    rows = []
    for n, job in enumerate(jobs):
        cells = []
        number = job.counts()
        for state in shown:
            count = number.get(state, 0)
            cls = "zero" if not count else ("bad" if PeriodState(state) in ATTENTION else "")
            cells.append(f'<td class="{cls}">{count}</td>')
        rows.append(
            f'<tr><td><a href="#job-{n}">{_text(job.job)}</a></td>{"".join(cells)}'
            f"<td>{escape(_through(job.plan))}</td>{_freshness_cell(job.freshness)}</tr>"
        )
    return (
        f'<table class="overview"><thead><tr><th>job</th>{head}<th>contiguous through'
        f"</th><th>freshness</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
    )


def _through(plan: RangePlan) -> str:
    return "nothing" if plan.contiguous_through is None else plan.key(plan.contiguous_through)


def _section(n: int, job: JobCoverage) -> str:
    plan = job.plan
    stop = "open" if plan.stop is None else plan.key(plan.stop)
    counts = "".join(
        f'<span class="{"" if c else "zero"}"><span class="sw" data-state="{s}"></span>'
        f"{_LABELS[PeriodState(s)]} <b>{c}</b></span>"
        for s, c in job.counts().items()
    )
    due_at = "never" if plan.next_due_at is None else _instant(plan.next_due_at)
    facts = (
        f'<p class="facts">{plan.period}, {escape(plan.key(plan.start))} to '
        f"{escape(stop)} (stop exclusive), time zone {escape(plan.timezone)}, lateness "
        f"{duration_text(plan.lateness)}, catch-up {escape(plan.catchup)} &middot; contiguous "
        f"through <b>{escape(_through(plan))}</b> &middot; next due at {escape(due_at)}</p>"
    )
    grid = _layout(job).grid(job)
    size = " big" if _big(job) else ""
    return (
        f'<section class="job{size}" id="job-{n}" data-job="{_text(job.job)}">'
        f'<h2>{_text(job.job)}</h2><div class="counts">{counts}</div>{facts}'
        f'{_deadlines(job.freshness)}{_attention(job.states)}<div class="cells">{grid}</div>'
        "</section>"
    )


def _freshness_cell(found: Freshness | None) -> str:
    """The overview's freshness cell: ``6h: met``, ``6h: 2 breached`` (bad) or ``none``."""
    if found is None:
        return '<td class="zero">none</td>'
    within = duration_text(found.within)
    if found.met:
        return f'<td data-freshness="met">{within}: met</td>'
    count = len(found.breaches)
    return f'<td class="bad" data-freshness="breached">{within}: {count} breached</td>'


def _deadlines(found: Freshness | None) -> str:
    """A job's freshness line; when breached, its oldest breach (due at, overdue by, state)."""
    if found is None:
        return ""
    if found.met:
        return f'<p class="facts" data-freshness="met">{_text(found.describe())}</p>'
    oldest = found.breaches[0]
    return (
        f'<ul class="attention" data-freshness="breached"><li><b>{_text(found.describe())}'
        f"</b>: due {escape(_instant(oldest.due_at))}, {_text(oldest.describe_state())}</li></ul>"
    )


def _attention(states: tuple[PeriodStatus, ...]) -> str:
    """The runs of failed, abandoned, running, blocked and missing periods: causes before
    their effects (ATTENTION's order), newest first within a state; a blocked run names
    what blocks it."""
    by_period = {s.period: s for s in states}
    runs = [r for r in reversed(collapse(states)) if r[2] in ATTENTION]
    runs.sort(key=lambda r: ATTENTION.index(r[2]))  # stable: newest first within a state
    if not runs:
        return ""
    items = []
    for first, last, state, count in runs[:_ATTENTION_ROWS]:
        span = first if count == 1 else f"{first} to {last} ({count})"
        cause = by_period[first].cause
        error = by_period[last].error
        if cause is not None:
            why = f": {cause.lead}<code>{_text(_short(cause.describe()))}</code>"
        else:
            why = f": <code>{_text(_short(error))}</code>" if error else ""
        items.append(
            f'<li><span class="sw" data-state="{state.value}"></span> '
            f"<b>{_LABELS[state]}</b> {escape(span)}{why}</li>"
        )
    more = len(runs) - _ATTENTION_ROWS
    if more > 0:
        items.append(f"<li>... and {more} more runs of periods that need attention</li>")
    return f'<ul class="attention">{"".join(items)}</ul>'


def _text(text: str) -> str:
    """User text for the page: control and bidi characters shown as visible escapes
    (``display.printable``: ``abc\u202egnp.exe`` cannot reorder what a reader sees), then
    HTML-escaped."""
    return escape(printable(text))


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _tooltip(s: PeriodStatus) -> str:
    lines = [f"{s.period}: {_LABELS[s.state]}"]
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
    return escape("\n".join(lines))


def _cells(
    job: str, states: Iterable[PeriodStatus], first_style: str = "", through: str | None = None
) -> str:
    """The cells of ``states``: the first one may carry a style (its grid column)."""
    out = []
    for s in states:
        cls = ' class="ct"' if s.period == through else ""
        out.append(
            f'<i{cls}{first_style} data-job="{job}" data-period="{s.period}" '
            f'data-state="{s.state.value}" title="{_tooltip(s)}"></i>'
        )
        first_style = ""
    return "".join(out)


def _daily(job: JobCoverage) -> str:
    """Month calendars, one row of months per year, the newest year first."""
    name, through = _text(job.job), _through(job.plan)
    years = []
    for year, in_year in groupby(job.states, key=lambda s: s.period[:4]):
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


def _hourly(job: JobCoverage) -> str:
    """A day x 24 grid per month, the newest month first; hours in UTC, as the periods'
    ledger keys."""
    name, through = _text(job.job), _through(job.plan)
    head = "<span>UTC</span>" + "".join(
        f"<span>{h:02d}</span>" if h % 6 == 0 else "<span></span>" for h in range(24)
    )
    months = []
    for month, in_month in groupby(job.states, key=lambda s: s.period[:7]):
        rows = [head]
        for day, hours in groupby(in_month, key=lambda s: s.period[:10]):
            hours_list = list(hours)
            column = int(hours_list[0].period[11:13]) + 2
            rows.append(f'<span style="grid-column-start:1">{day[8:]}</span>')
            rows.append(_cells(name, hours_list, f' style="grid-column-start:{column}"', through))
        label = dt.date.fromisoformat(month + "-01").strftime("%b %Y")
        months.append(f'<div class="m"><h3>{label}</h3><div class="hg">{"".join(rows)}</div></div>')
    return "".join(reversed(months))


def _by_year(job: JobCoverage, columns: int, column_of: Callable[[str], int]) -> str:
    """One row of ``columns`` cells per year, the newest year first: weeks (53), months
    (12) or quarters (4), each in its own column (``column_of`` a key's, from 1)."""
    name, through = _text(job.job), _through(job.plan)
    years = []
    for year, in_year in groupby(job.states, key=lambda s: s.period[:4]):
        cells = "".join(
            _cells(name, [s], f' style="grid-column-start:{column_of(s.period)}"', through)
            for s in in_year
        )
        grid = f'<div class="g" style="grid-template-columns:repeat({columns},var(--c))">'
        years.append(f'<div class="year"><span class="yl">{year}</span>{grid}{cells}</div></div>')
    return "".join(reversed(years))


def _weekly(job: JobCoverage) -> str:
    """A row of ISO weeks per ISO year (``2026-W41`` in column 41)."""
    return _by_year(job, 53, lambda key: int(key[6:8]))


def _monthly(job: JobCoverage) -> str:
    """A row of twelve months per year."""
    return _by_year(job, 12, lambda key: int(key[5:7]))


def _quarterly(job: JobCoverage) -> str:
    """A row of four quarters per year."""
    return _by_year(job, 4, lambda key: int(key[6]))


@dataclass(frozen=True, slots=True)
class _Layout:
    """How a kind of period is drawn: its grid, the most periods drawn big, and whether a short
    window fits a column beside the others (a month calendar does; a day x 24 grid does not)."""

    grid: Callable[[JobCoverage], str]
    big: int
    beside: bool


_LAYOUTS: dict[Period, _Layout] = {
    DAILY: _Layout(_daily, big=100, beside=True),
    HOURLY: _Layout(_hourly, big=24 * 8, beside=False),
    WEEKLY: _Layout(_weekly, big=53 * 2, beside=False),
    MONTHLY: _Layout(_monthly, big=12 * 8, beside=True),
    QUARTERLY: _Layout(_quarterly, big=4 * 20, beside=True),
}


def _layout(job: JobCoverage) -> _Layout:
    return _LAYOUTS[job.plan.period.base]
