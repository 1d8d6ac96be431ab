"""``status`` (every period of a window in one state, for one job or a grid of several) and
``jobs`` (every job of the ledger at a glance)."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from gatekeeper.cli.known import add_allow_unknown, check_freshness_keys, check_known
from gatekeeper.cli.output import EXIT_NOT_READY, EXIT_OK, Result, table, to_int
from gatekeeper.cli.windows import fill_options, flagged_window, window_options
from gatekeeper.core.clock import utc_now
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.validation import check_timestamp
from gatekeeper.ledger import Ledger
from gatekeeper.ledger.overview import JobOverview
from gatekeeper.luigi.freshness import freshness_rules
from gatekeeper.report.freshness import freshnesses
from gatekeeper.report.states import PeriodState, PeriodStatus, counts, window_states

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
STRIP_LIMIT = 64  # longer windows drop the strip column (one character per period)
DETAIL_WIDTH = 72  # longer details (errors) are cut; --json and history have them whole

JobStates = tuple[str, RangePlan, tuple[PeriodStatus, ...]]


def cmd_status(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Every period of each JOB's window at ``--now`` (default: the current time) in one
    state; exit 1 while any job has gaps."""
    check_known(ledger, args.jobs, args.allow_unknown)
    check_freshness_keys(ledger, args.allow_unknown, strict=False)
    now = check_timestamp(args.now, "now") if args.now else utc_now()
    limit = to_int(args.task_limit, "task_limit")
    windows = {job: flagged_window(ledger, job, args) for job in dict.fromkeys(args.jobs)}
    found = [
        (job, *window_states(ledger, job, now=now, task_limit=limit, window=window))
        for job, window in windows.items()
    ]
    rules = freshness_rules(ledger, list(windows))
    fresh = freshnesses(ledger, windows, rules, now)
    data = [
        {
            "job": job,
            **plan.to_json(),
            "periods": [s.to_json() for s in states],
            "freshness": fresh[job].to_json() if job in fresh else None,
        }
        for job, plan, states in found
    ]
    if len(found) == 1:
        text = render_one(found[0])
    elif len({plan.period for _, plan, _ in found}) > 1:  # daily and hourly: no shared axis
        text = "\n\n".join(map(render_one, found))
    else:
        text = render_grid(found)
    text += "".join(f"\n{job}: {f.describe()}" for job, f in fresh.items())
    code = EXIT_NOT_READY if any(plan.gaps for _, plan, _ in found) else EXIT_OK
    return Result(data[0] if len(found) == 1 else data, text, code)


def render_one(found: JobStates) -> str:
    """The first line, the counts by state, then one row per run of periods in one state."""
    job, plan, states = found
    lines = [f"{job}: {plan.describe()}"]
    if not states:
        return lines[0]
    lines.append("  " + describe_counts(states))
    rows = run_rows(states, plan.period.base.name)
    lines.append(table(rows, ("periods", "state", "count", "detail")))
    return "\n".join(lines)


def render_grid(found: Sequence[JobStates]) -> str:
    """Several jobs of one period kind: their first lines, a grid (a strip of one character
    per period, the jobs lined up by period on the axis of all their windows, blank where a
    job's window has none; and the counts by state), then the runs of every job in one
    table."""
    lines = [f"{job}: {plan.describe()}" for job, plan, _ in found]
    axis = sorted({s.period for _, _, job_states in found for s in job_states})
    if not axis:
        return "\n".join(lines)
    strip = len(axis) <= STRIP_LIMIT
    numbers = [counts(job_states) for _, _, job_states in found]
    shown = {state for number in numbers for state, n in number.items() if n}
    span = axis[0] + (f" .. {axis[-1]}" if len(axis) > 1 else "")
    lines += [
        "",
        f"{span} ({found[0][1].period}, {len(axis)} periods):",
        "  " + "  ".join(f"{s} {state.value}" for state, s in SYMBOLS.items() if state in shown),
        "",
    ]
    columns = [state for state in SYMBOLS if any(state in n for n in numbers)]
    width = {state: max(len(str(n.get(state, 0))) for n in numbers) for state in columns}
    header = (
        "job",
        *(("strip",) if strip else ()),
        *(SYMBOLS[state].rjust(width[state]) for state in columns),
    )
    rows = []
    for (job, _, job_states), number in zip(found, numbers, strict=True):
        strip_cell = (_strip(job_states, axis),) if strip else ()
        rows.append(
            (job, *strip_cell, *(str(number.get(s) or "").rjust(width[s]) for s in columns))
        )
    lines += [table(rows, header), ""]
    runs = []
    for job, plan, job_states in found:
        rows = run_rows(job_states, plan.period.base.name)
        runs += [(job if i == 0 else "", *row) for i, row in enumerate(rows)]
    lines.append(table(runs, ("job", "periods", "state", "count", "detail")))
    return "\n".join(lines)


def _strip(states: Sequence[PeriodStatus], axis: Sequence[str]) -> str:
    """One character per period of ``axis``: the state's symbol, blank where ``states``
    (a job's window) has no such period."""
    by_period = {s.period: SYMBOLS[s.state] for s in states}
    return "".join(by_period.get(period, " ") for period in axis)


def describe_counts(states: Sequence[PeriodStatus]) -> str:
    """``19 succeeded, 1 failed, 2 missing, 9 not_due``: the states that occur."""
    number = counts(states)
    return ", ".join(f"{number[s]} {s.value}" for s in SYMBOLS if number.get(s, 0))


def run_rows(
    states: Sequence[PeriodStatus], kind: str = "daily"
) -> list[tuple[str, str, int | str, str]]:
    """One row per run of consecutive business periods in one state: periods, state, count,
    detail. The periods off the calendar (``non_business``) within or after a run, or before
    the first, fold into it (``10 (+2 days off)``, ``kind``'s unit); a window of periods off
    only is one row of them."""
    found = _runs(states)
    if not found:
        found = [(list(states), 0)] if states else []
    rows = []
    for run, off in found:
        state, first, last = run[0].state, run[0].period, run[-1].period
        span = first if len(run) == 1 else f"{first} .. {last}"
        count: int | str = f"{len(run)} (+{_off(off, kind)})" if off else len(run)
        rows.append((span, state.value, count, shorten(run_detail(state, run))))
    return rows


#: the word for one period of a kind, in ``(+2 days off)``
UNITS = {"hourly": "hour", "daily": "day", "weekly": "week", "monthly": "month"}


def _off(count: int, kind: str) -> str:
    unit = UNITS.get(kind, "quarter" if kind == "quarterly" else "period")
    return f"{count} {unit}{'' if count == 1 else 's'} off"


def _runs(states: Sequence[PeriodStatus]) -> list[tuple[list[PeriodStatus], int]]:
    """The runs of business periods in one state, each with how many periods off it holds
    (those after it, and the first one those before it); periods off alone do not break a
    run. Empty when every period is off."""
    runs: list[tuple[list[PeriodStatus], int]] = []
    before = 0
    for status in states:
        if status.state is PeriodState.NON_BUSINESS:
            if runs:
                runs[-1] = (runs[-1][0], runs[-1][1] + 1)
            else:
                before += 1
        elif runs and runs[-1][0][0].state is status.state:
            runs[-1][0].append(status)
        else:
            runs.append(([status], before if not runs else 0))
    return runs


def run_detail(state: PeriodState, run: Sequence[PeriodStatus]) -> str:
    """What an on-call engineer needs next to a run: the attempt, run ID and error of one
    failed period, the leases of running ones, the revisions of published ones."""
    if state is PeriodState.MISSING:
        return "no attempt recorded"
    if state is PeriodState.BLOCKED:
        return blockers(run)
    if state is PeriodState.SKIPPED:
        return "no attempt; left out by the catch-up policy"
    if state is PeriodState.NON_BUSINESS:
        return "not a business period of its calendar"
    if state is PeriodState.SUCCEEDED:
        return revisions(run)
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


def revisions(run: Sequence[PeriodStatus]) -> str:
    """``revision 2``, ``revisions 1-3``, ``2 not published``: for a publishing job only."""
    found = sorted({s.revision for s in run if s.revision is not None})
    unpublished = sum(1 for s in run if s.revision is None)
    if not found:
        return ""
    text = f"revision {found[0]}" if len(found) == 1 else f"revisions {found[0]}-{found[-1]}"
    return text + (f", {unpublished} not published" if unpublished else "")


def shorten(text: str) -> str:
    """``text`` cut to DETAIL_WIDTH characters, ``...`` marking a cut."""
    return text if len(text) <= DETAIL_WIDTH else text[: DETAIL_WIDTH - 3] + "..."


def cmd_jobs(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Every job of the ledger: kind, first and last period, counts, last activity."""
    now = check_timestamp(args.now, "now") if args.now else None
    found = ledger.jobs_overview(now)
    if not found:
        return Result([], f"no jobs in the ledger {ledger.describe()}")
    rows = [
        (
            j.job,
            j.kind,
            j.first_period,
            j.last_period,
            j.last_updated.isoformat(timespec="minutes"),
            job_counts(j),
        )
        for j in found
    ]
    return Result(
        [j.to_json() for j in found],
        table(rows, ("job", "kind", "first", "last", "last activity", "periods by latest attempt")),
    )


def job_counts(job: JobOverview) -> str:
    """``19 succeeded, 1 failed, 3 published``: the states that occur, and publications."""
    parts = [f"{n} {state}" for state, n in job.states if n]
    if job.published:
        parts.append(f"{job.published} published")
    return ", ".join(parts) or "no attempts"


def register(add: Callable[..., Any]) -> None:
    """Add ``status`` and ``jobs`` to the parser."""
    p = add(
        "status",
        cmd_status,
        "Every period of each JOB's window in one state (succeeded, failed, running, "
        "abandoned, missing, not_due, skipped), with the range plan: filled, "
        "contiguous-through, next due (exit 1 while gaps remain).",
    )
    p.add_argument("jobs", nargs="+", metavar="JOB")
    window_options(p)
    fill_options(p)
    add_allow_unknown(p, freshness=True)
    p = add(
        "jobs",
        cmd_jobs,
        "Every job in the ledger: period kind, first and last period, periods by the "
        "state of their latest attempt, last activity.",
    )
    p.add_argument(
        "--now", help="judge leases at this ISO 8601 instant (default: the database's clock)"
    )
