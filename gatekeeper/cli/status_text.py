"""``status``'s text: a job's window as counts and one row per run of periods in one state,
several jobs as a grid. Drawn from a window's segments (``report/segments.py``: long runs of
complete periods as one ``Run``, the other periods one by one), so a long window of
complete periods costs a row, not an object per period; the same text as the window's
periods one by one (``PeriodStatus`` alone) give. A stale period (never inside a run) is
counted in its job's line, marked in a grid's strip (``STALE``, in place of ``#``) and
counted in its column, and listed after the table with the upstream change."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from gatekeeper.cli.output import table
from gatekeeper.core.display import printable
from gatekeeper.core.planning import RangePlan
from gatekeeper.report.segments import Revisions, Run, Segment, expand, segment_counts
from gatekeeper.report.states import PeriodState, PeriodStatus

#: One character per period in the grid of several jobs.
SYMBOLS = {
    PeriodState.SUCCEEDED: "#",
    PeriodState.FAILED: "F",
    PeriodState.RUNNING: "R",
    PeriodState.ABANDONED: "A",
    PeriodState.BLOCKED: "b",
    PeriodState.MISSING: ".",
    PeriodState.SKIPPED: "s",
    PeriodState.NOT_DUE: "-",
    PeriodState.NON_BUSINESS: "_",
}
#: A succeeded period whose publication is stale, in a grid's strip (in place of ``#``; a
#: stale period in another state keeps that state's character), and its column of counts.
STALE = "~"
STRIP_LIMIT = 64  # longer windows drop the strip column (one character per period)
DETAIL_WIDTH = 72  # longer details (errors) are cut; --json and history have them whole
STALE_LIMIT = 20  # stale periods listed per job; gatekeeper stale JOB lists them all

#: a job, its plan and its window's segments, oldest first
JobStates = tuple[str, RangePlan, tuple[Segment, ...]]


def status_text(found: Sequence[JobStates]) -> str:
    """One job's text (``render_one``), or several's: a grid when they share a period kind,
    else each job's text in turn."""
    if len(found) == 1:
        return render_one(found[0])
    if len({plan.period for _, plan, _ in found}) > 1:  # daily and hourly: no shared axis
        return "\n\n".join(map(render_one, found))
    return render_grid(found)


def render_one(found: JobStates) -> str:
    """The first line, the counts by state, then one row per run of periods in one state."""
    job, plan, states = found
    lines = [job_line(found)]
    if not states:
        return lines[0]
    lines.append("  " + describe_counts(states))
    rows = run_rows(states, plan.period.base.name)
    lines.append(table(rows, ("periods", "state", "count", "detail")))
    lines += stale_lines(found)
    return "\n".join(lines)


def job_line(found: JobStates) -> str:
    """``Report: <plan>``, with ``; 1 stale`` when periods of its window are stale."""
    job, plan, states = found
    stale = stale_count(states)
    return f"{job}: {plan.describe()}" + (f"; {stale} stale" if stale else "")


def stale_count(states: Sequence[Segment]) -> int:
    """How many periods of ``states`` are stale (never inside a run)."""
    return sum(1 for s in states if isinstance(s, PeriodStatus) and s.stale)


def stale_lines(found: JobStates, prefix: str = "") -> list[str]:
    """``stale 2026-10-22: upstream Orders 2026-10-22 attempt 1 → 2``: each stale period
    of the window (the first STALE_LIMIT, then how many more) with what superseded its
    publication's evidence."""
    job, _, states = found
    stale = [s for s in states if isinstance(s, PeriodStatus) and s.stale]
    lines = [
        f"{prefix}stale {s.period}: " + "; ".join(printable(e.change) for e in s.stale)
        for s in stale[:STALE_LIMIT]
    ]
    if len(stale) > STALE_LIMIT:
        more = len(stale) - STALE_LIMIT
        lines.append(f"{prefix}... {more} more stale (gatekeeper stale {printable(job)})")
    return lines


def render_grid(found: Sequence[JobStates]) -> str:
    """Several jobs of one period kind: their first lines, a grid (a strip of one character
    per period, the jobs lined up by period on the axis of all their windows, blank where a
    job's window has none; the counts by state, and of stale periods when any is), then the
    runs of every job in one table."""
    lines = [job_line(each) for each in found]
    first, last, total = _axis(found)
    if not total:
        return "\n".join(lines)
    span = first + (f" .. {last}" if total > 1 else "")
    columns = _columns(found)
    lines += [
        "",
        f"{span} ({found[0][1].period}, {total} periods):",
        "  " + "  ".join(f"{c} {word}" for c, word, counts in columns if any(counts)),
        "",
    ]
    strips = _strips(found) if total <= STRIP_LIMIT else None
    sized = [(c, counts, max(len(str(n)) for n in counts)) for c, _, counts in columns]
    header = (
        "job",
        *(("strip",) if strips is not None else ()),
        *(c.rjust(width) for c, _, width in sized),
    )
    rows = []
    for i, (job, _, _) in enumerate(found):
        strip_cell = (strips[i],) if strips is not None else ()
        rows.append((job, *strip_cell, *(str(n[i] or "").rjust(w) for _, n, w in sized)))
    lines += [table(rows, header), ""]
    runs = []
    for job, plan, job_states in found:
        job_rows = run_rows(job_states, plan.period.base.name)
        runs += [(job if i == 0 else "", *row) for i, row in enumerate(job_rows)]
    lines.append(table(runs, ("job", "periods", "state", "count", "detail")))
    for each in found:
        lines += stale_lines(each, f"{each[0]}: ")
    return "\n".join(lines)


def _columns(found: Sequence[JobStates]) -> list[tuple[str, str, list[int]]]:
    """The grid's columns of counts: (character, word, each job's count) of every state the
    jobs' counts hold, in SYMBOLS' order, then STALE's when a job has a stale period."""
    numbers = [segment_counts(states) for _, _, states in found]
    columns = [
        (symbol, state.value, [n.get(state, 0) for n in numbers])
        for state, symbol in SYMBOLS.items()
        if any(state in n for n in numbers)
    ]
    stale = [stale_count(states) for _, _, states in found]
    return columns + ([(STALE, "stale", stale)] if any(stale) else [])


def _ends(segment: Segment) -> tuple[str, str]:
    return (segment.first, segment.last) if isinstance(segment, Run) else (segment.period,) * 2


def _axis(found: Sequence[JobStates]) -> tuple[str, str, int]:
    """The first and last period of all the jobs' windows (of one kind) and how many
    periods they cover together: each window is consecutive periods of its kind's base, so
    the union of their ordinal spans, whatever their length."""
    spans = []
    for _, plan, states in found:
        if states:
            base = plan.period.base
            first, last = _ends(states[0])[0], _ends(states[-1])[1]
            spans.append((base.key_ordinal(first), base.key_ordinal(last), first, last))
    if not spans:
        return "", "", 0
    spans.sort()
    total, reach = 0, spans[0][0] - 1
    for lo, hi, _, _ in spans:
        total += max(0, hi - max(lo, reach + 1) + 1)
        reach = max(reach, hi)
    return spans[0][2], max(spans, key=lambda s: s[1])[3], total


def _strips(found: Sequence[JobStates]) -> list[str]:
    """Each job's strip on the axis of all the periods of their windows (few of them: the
    segments are expanded): one character per period, blank where a job's window has none,
    STALE for a succeeded period whose publication is stale."""
    expanded = [_marks(plan, states) for _, plan, states in found]
    axis = sorted({period for by_period in expanded for period in by_period})
    return ["".join(by_period.get(p, " ") for p in axis) for by_period in expanded]


def _marks(plan: RangePlan, states: Sequence[Segment]) -> dict[str, str]:
    """Period key -> its character in a strip: its state's, or STALE for a succeeded one
    whose publication is stale (one judged alone: a stale period is never inside a run)."""
    marks = {key: SYMBOLS[state] for key, state in expand(plan, states)}
    for s in states:
        if isinstance(s, PeriodStatus) and s.stale and s.state is PeriodState.SUCCEEDED:
            marks[s.period] = STALE
    return marks


def describe_counts(states: Sequence[Segment]) -> str:
    """``19 succeeded, 1 failed, 2 missing, 9 not_due``: the states that occur."""
    number = segment_counts(states)
    return ", ".join(f"{number[s]} {s.value}" for s in SYMBOLS if number.get(s, 0))


@dataclass(slots=True)
class _Row:
    """A run of consecutive business periods in one state, as it grows: the periods judged
    one by one (``cells``), the long runs of complete ones (``runs``) and how many periods
    off the calendar it holds (``off``)."""

    state: PeriodState
    first: str
    last: str
    off: int = 0
    cells: list[PeriodStatus] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.cells) + sum(r.count for r in self.runs)


def run_rows(
    states: Sequence[Segment], kind: str = "daily"
) -> list[tuple[str, str, int | str, str]]:
    """One row per run of consecutive business periods in one state: periods, state, count,
    detail. The periods off the calendar (``non_business``) within or after a run, or before
    the first, fold into it (``10 (+2 days off)``, ``kind``'s unit); a window of periods off
    only is one row of them."""
    found = _runs(states)
    if not found and states:
        cells = [s for s in states if isinstance(s, PeriodStatus)]
        found = [_Row(PeriodState.NON_BUSINESS, _ends(states[0])[0], _ends(states[-1])[1])]
        found[0].cells = cells
    rows = []
    for row in found:
        span = row.first if row.count == 1 else f"{row.first} .. {row.last}"
        count: int | str = f"{row.count} (+{_off(row.off, kind)})" if row.off else row.count
        detail = run_detail(row.state, row.cells, row.runs)
        rows.append((span, row.state.value, count, shorten(detail)))
    return rows


#: the word for one period of a kind, in ``(+2 days off)``
UNITS = {"hourly": "hour", "daily": "day", "weekly": "week", "monthly": "month"}


def _off(count: int, kind: str) -> str:
    unit = UNITS.get(kind, "quarter" if kind == "quarterly" else "period")
    return f"{count} {unit}{'' if count == 1 else 's'} off"


def _runs(states: Sequence[Segment]) -> list[_Row]:
    """The runs of business periods in one state, each with how many periods off it holds
    (those within and after it, and the first one those before it); periods off alone do
    not break a run. Empty when every period is off."""
    rows: list[_Row] = []
    before = 0
    for segment in states:
        if segment.state is PeriodState.NON_BUSINESS:
            if rows:
                rows[-1].off += 1
            else:
                before += 1
            continue
        first, last = _ends(segment)
        if not rows or rows[-1].state is not segment.state:
            rows.append(_Row(segment.state, first, last, 0 if rows else before))
        row = rows[-1]
        row.last = last
        if isinstance(segment, Run):
            row.runs.append(segment)
            row.off += segment.non_business
        else:
            row.cells.append(segment)
    return rows


def run_detail(state: PeriodState, run: Sequence[PeriodStatus], runs: Sequence[Run] = ()) -> str:
    """What an on-call engineer needs next to a run: the attempt, run ID and error of one
    failed period, the leases of running ones, the revisions of published ones (``run``:
    its periods judged one by one; ``runs``: its long runs of complete ones)."""
    if state is PeriodState.MISSING:
        return "no attempt recorded"
    if state is PeriodState.BLOCKED:
        return blockers(run)
    if state is PeriodState.SKIPPED:
        return "no attempt; left out by the catch-up policy"
    if state is PeriodState.NON_BUSINESS:
        return "not a business period of its calendar"
    if state is PeriodState.SUCCEEDED:
        return revisions(run, runs)
    if state is PeriodState.RUNNING:
        until = max(s.lease_expires_at for s in run if s.lease_expires_at is not None)
        head = f"attempt {run[0].attempt}, " if len(run) == 1 else ""
        return f"{head}lease live until {until.isoformat()}"
    if state in (PeriodState.FAILED, PeriodState.ABANDONED):
        return failure(run)
    return ""


def failure(run: Sequence[PeriodStatus]) -> str:
    """``attempt 2: disk full`` for one period; the error a run shares, or how many differ."""
    if len(run) == 1:
        return f"attempt {run[0].attempt}" + (f": {run[0].error}" if run[0].error else "")
    errors = {s.error for s in run if s.error}
    if len(errors) == 1:
        return f"error: {errors.pop()}"
    return f"{len(errors)} different errors (gatekeeper history)" if errors else ""


def blockers(run: Sequence[PeriodStatus]) -> str:
    """``by Orders 2026-11-18 failed (attempt 1: disk full)``: the first period's cause, led
    by how many causes the run has when it has several (``--json`` has each)."""
    causes = [s.cause for s in run if s.cause is not None]
    if not causes:
        return ""
    several = len({(c.job, c.state) for c in causes})
    return ("" if several == 1 else f"{several} causes, first ") + causes[0].reason()


def revisions(run: Sequence[PeriodStatus], runs: Sequence[Run] = ()) -> str:
    """``revision 2``, ``revisions 1-3``, ``2 not published``: for a publishing job only
    (``run``: periods one by one; ``runs``: long runs of them, with their revisions)."""
    cells = Revisions.of(s.revision for s in run if s.revision is not None)
    found = [r for r in (cells, *(r.revisions for r in runs)) if r is not None]
    if not found:
        return ""
    low, high = min(r.low for r in found), max(r.high for r in found)
    periods = len(run) + sum(r.count for r in runs)
    unpublished = periods - sum(r.published for r in found)
    text = f"revision {low}" if low == high else f"revisions {low}-{high}"
    return text + (f", {unpublished} not published" if unpublished else "")


def shorten(text: str) -> str:
    """``text`` cut to DETAIL_WIDTH characters, ``...`` marking a cut."""
    return text if len(text) <= DETAIL_WIDTH else text[: DETAIL_WIDTH - 3] + "..."
