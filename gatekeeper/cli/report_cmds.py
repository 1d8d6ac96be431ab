"""``report``: the self-contained HTML coverage report of some jobs, written to a file."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.known import add_allow_unknown, check_freshness_keys, check_known
from gatekeeper.cli.output import Result, output_path, table, write_atomically
from gatekeeper.cli.windows import flagged_window, window_options
from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.validation import check_name, check_timestamp
from gatekeeper.ledger import Ledger
from gatekeeper.luigi.freshness import freshness_rules
from gatekeeper.report.coverage import coverages
from gatekeeper.report.freshness import freshnesses
from gatekeeper.report.html import JobCoverage, render_report, shown_states


def cmd_report(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Write the report of JOB... over ``[--start, --stop)`` at ``--now``; exit 0 once written
    (the report observes, it does not gate). Prints each job's counts by state, its stale
    periods (a column when any is) and contiguous-through. Bad input writes nothing."""
    target = output_path(args.output)
    jobs = _job_names(args.jobs)
    check_known(ledger, jobs, args.allow_unknown)
    check_freshness_keys(ledger, args.allow_unknown, strict=False)
    now = check_timestamp(args.now, "now") if args.now else utc_now()
    rules = freshness_rules(ledger, jobs)
    windows = {job: flagged_window(ledger, job, args) for job in jobs}
    fresh = freshnesses(ledger, windows, rules, now)
    found = coverages(ledger, windows, now)
    covered = [JobCoverage(job, *found[job], freshness=fresh.get(job)) for job in jobs]
    write_atomically(target, render_report(covered, generated_at=utc_now()))
    summaries = [c.summary() for c in covered]
    shown = shown_states(covered)
    stale = any(c.stale() for c in covered)  # a column only when a period is stale
    rows = [
        (
            c.job,
            *(c.counts().get(k, 0) for k in shown),
            *((c.stale(),) if stale else ()),
            s["contiguous_through"] or "nothing",
        )
        for c, s in zip(covered, summaries, strict=True)
    ]
    header = (
        "job",
        *(k.replace("_", " ") for k in shown),
        *(("stale",) if stale else ()),
        "contiguous through",
    )
    return Result(
        {"output": str(target), "jobs": summaries}, f"wrote {target}\n" + table(rows, header)
    )


def _job_names(values: list[str]) -> list[str]:
    names = [check_name(v, "job") for v in values]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise InvalidInput("job", name, "listed twice")
        seen.add(name)
    return names


def register(add: Callable[..., Any]) -> None:
    """Add ``report`` to the parser."""
    p = add(
        "report",
        cmd_report,
        "Write a self-contained HTML coverage report of JOB... (one cell per period, "
        "coloured by state, a long run of complete periods as one bar; exit 0 once written).",
    )
    p.add_argument("jobs", nargs="+", metavar="job")
    p.add_argument("-o", "--output", required=True, help="the HTML file to write")
    window_options(p)
    add_allow_unknown(p, freshness=True)
