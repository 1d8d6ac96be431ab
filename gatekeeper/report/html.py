"""The coverage report: one self-contained HTML page of every period of some jobs (pure).

``render_report(jobs, generated_at=...)`` turns, per job, its RangePlan and its window as
segments (``segments.window_segments``: the state of each period, a long run of complete
periods as one) into an HTML string with inline CSS and JS, nothing fetched from the network:
an overview table, then per job its counts, facts, the runs of periods that need attention and
its grids (``grids.py``: month calendars, day x 24 grids, rows of weeks, months or quarters,
and a bar per long run of complete periods). Reads and writes nothing; user text (job names,
errors, run IDs) is escaped, its control and bidi characters shown as visible escapes.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from html import escape

from gatekeeper.core.freshness import Freshness
from gatekeeper.core.periods.intervals import duration_text
from gatekeeper.core.planning import RangePlan
from gatekeeper.report.assets import ATTENTION, CSS, PALETTE, SCRIPT, state_rules
from gatekeeper.report.grids import LABELS, layout, text
from gatekeeper.report.grids import grid as grid_of
from gatekeeper.report.segments import Run, Segment, segment_counts, stretches
from gatekeeper.report.states import PeriodState, PeriodStatus, collapse

_ATTENTION_ROWS = 12


@dataclass(frozen=True, slots=True)
class JobCoverage:
    """One job of the report: its plan and its window's periods, oldest first, each in its
    state (a ``PeriodStatus``) but for long runs of complete ones, each one ``Run``
    (``segments.window_segments``); a tuple of PeriodStatus alone is drawn cell by cell."""

    job: str
    plan: RangePlan
    states: tuple[Segment, ...]  # its periods, long runs of complete ones as one
    freshness: Freshness | None = None  # its deadlines, when it has one (core/freshness.py)

    _counts: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        found = segment_counts(self.states)
        counted = {s.value: found[s] for s in PALETTE if s in found}
        object.__setattr__(self, "_counts", counted)

    def counts(self) -> dict[str, int]:
        """State -> number of periods in it, in palette order: every state, but
        ``non_business`` only for a job that has such periods (one on a calendar)."""
        return dict(self._counts)

    def stale(self) -> int:
        """How many periods of the window are stale: the cells drawn with the mark (a stale
        period is never inside a run)."""
        return sum(1 for s in self.states if isinstance(s, PeriodStatus) and s.stale)

    def summary(self) -> dict[str, object]:
        """JSON-ready: the job, its counts, its stale periods, contiguous-through and next
        due."""
        plan = self.plan
        return {
            "job": self.job,
            "period": plan.period,
            "counts": self.counts(),
            "stale": self.stale(),
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
        f"<title>{text(title)}</title><style>{CSS}{state_rules()}</style></head>",
        '<body class="compact">' if all(map(_side_by_side, jobs)) else "<body>",
        f"<h1>{text(title)}</h1>",
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
        f'data-color="{colour}"></span>{LABELS[s]}</button></li>'
        for s, (colour, meaning) in PALETTE.items()
    )
    through = (
        '<li><span class="sw ct"></span> contiguous through (every period up to it succeeded)</li>'
        '<li><span class="sw stale"></span> stale (an upstream it was published on changed)</li>'
    )
    return f'<ul class="legend" aria-label="legend">{items}{through}</ul>'


def _instant(when: dt.datetime) -> str:
    return when.isoformat(timespec="seconds")


def _big(job: JobCoverage) -> bool:
    return sum(job.counts().values()) <= layout(job.plan.period).big


def _side_by_side(job: JobCoverage) -> bool:
    """A short daily window fits a column beside the others (a day x 24 grid does not)."""
    return layout(job.plan.period).beside and _big(job)


def shown_states(jobs: Sequence[JobCoverage]) -> list[str]:
    """The states a table of ``jobs`` has a column for: those any job counts."""
    return list(dict.fromkeys(state for job in jobs for state in job.counts()))


def _overview(jobs: Sequence[JobCoverage]) -> str:
    shown = shown_states(jobs)
    head = "".join(f"<th>{LABELS[PeriodState(s)]}</th>" for s in shown)
    rows = []
    for n, job in enumerate(jobs):
        cells = []
        number = job.counts()
        for state in shown:
            count = number.get(state, 0)
            cls = "zero" if not count else ("bad" if PeriodState(state) in ATTENTION else "")
            cells.append(f'<td class="{cls}">{count}</td>')
        rows.append(
            f'<tr><td><a href="#job-{n}">{text(job.job)}</a></td>{"".join(cells)}'
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
        f"{LABELS[PeriodState(s)]} <b>{c}</b></span>"
        for s, c in job.counts().items()
    )
    due_at = "never" if plan.next_due_at is None else _instant(plan.next_due_at)
    facts = (
        f'<p class="facts">{plan.period}, {escape(plan.key(plan.start))} to '
        f"{escape(stop)} (stop exclusive), time zone {escape(plan.timezone)}, lateness "
        f"{duration_text(plan.lateness)}, catch-up {escape(plan.catchup)} &middot; contiguous "
        f"through <b>{escape(_through(plan))}</b> &middot; next due at {escape(due_at)}</p>"
    )
    grid = grid_of(plan.period, text(job.job), _through(plan), job.states)
    size = " big" if _big(job) else ""
    return (
        f'<section class="job{size}" id="job-{n}" data-job="{text(job.job)}">'
        f'<h2>{text(job.job)}</h2><div class="counts">{counts}</div>{facts}'
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
        return f'<p class="facts" data-freshness="met">{text(found.describe())}</p>'
    oldest = found.breaches[0]
    return (
        f'<ul class="attention" data-freshness="breached"><li><b>{text(found.describe())}'
        f"</b>: due {escape(_instant(oldest.due_at))}, {text(oldest.describe_state())}</li></ul>"
    )


def _attention(segments: tuple[Segment, ...]) -> str:
    """The runs of failed, abandoned, running, blocked and missing periods: causes before
    their effects (ATTENTION's order), newest first within a state; a blocked run names
    what blocks it; then the stale periods, each with its upstream change."""
    cells = [s for s in stretches(segments) if not isinstance(s, Run)]
    by_period = {s.period: s for some in cells for s in some}
    found = [r for some in cells for r in collapse(some)]
    runs = [r for r in reversed(found) if r[2] in ATTENTION]
    runs.sort(key=lambda r: ATTENTION.index(r[2]))  # stable: newest first within a state
    items = []
    for first, last, state, count in runs[:_ATTENTION_ROWS]:
        span = first if count == 1 else f"{first} to {last} ({count})"
        cause = by_period[first].cause
        error = by_period[last].error
        if cause is not None:
            why = f": {cause.lead}<code>{text(_short(cause.describe()))}</code>"
        else:
            why = f": <code>{text(_short(error))}</code>" if error else ""
        items.append(
            f'<li><span class="sw" data-state="{state.value}"></span> '
            f"<b>{LABELS[state]}</b> {escape(span)}{why}</li>"
        )
    more = len(runs) - _ATTENTION_ROWS
    if more > 0:
        items.append(f"<li>... and {more} more runs of periods that need attention</li>")
    items += _stale_items(by_period.values())
    return f'<ul class="attention">{"".join(items)}</ul>' if items else ""


def _stale_items(cells: Iterable[PeriodStatus]) -> list[str]:
    """``stale 2026-10-22: upstream Orders 2026-10-22 attempt 1 → 2``, newest first, the
    first _ATTENTION_ROWS (a stale period is never inside a run)."""
    stale = sorted((s for s in cells if s.stale), key=lambda s: s.period, reverse=True)
    items = [
        f'<li><span class="sw stale"></span> <b>stale</b> {escape(s.period)}: '
        f"<code>{text('; '.join(e.change for e in s.stale))}</code></li>"
        for s in stale[:_ATTENTION_ROWS]
    ]
    if len(stale) > _ATTENTION_ROWS:
        items.append(f"<li>... and {len(stale) - _ATTENTION_ROWS} more stale periods</li>")
    return items


def _short(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."
