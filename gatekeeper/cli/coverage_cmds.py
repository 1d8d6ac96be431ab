"""``status`` (every period of a window in one state, for one job or a grid of several: its
text drawn by ``status_text``) and ``jobs`` (every job of the ledger at a glance)."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.known import add_allow_unknown, check_freshness_keys, check_known
from gatekeeper.cli.output import EXIT_NOT_READY, EXIT_OK, Result, table, to_int
from gatekeeper.cli.status_text import status_text
from gatekeeper.cli.windows import fill_options, flagged_window, window_options
from gatekeeper.core.clock import utc_now
from gatekeeper.core.freshness import Freshness
from gatekeeper.core.validation import check_timestamp
from gatekeeper.ledger import Ledger
from gatekeeper.ledger.overview import JobOverview
from gatekeeper.luigi.freshness import freshness_rules
from gatekeeper.report.coverage import coverages
from gatekeeper.report.freshness import freshnesses
from gatekeeper.report.states import window_states
from gatekeeper.report.windows import JobWindow


def cmd_status(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Every period of each JOB's window at ``--now`` (default: the current time) in one
    state; exit 1 while any job has gaps. The text is drawn from the windows' segments
    (``coverages``: attempts read only where a period is not complete); ``--json``, which
    has every period's attempt and run ID, reads each window whole, and only when asked."""
    check_known(ledger, args.jobs, args.allow_unknown)
    check_freshness_keys(ledger, args.allow_unknown, strict=False)
    now = check_timestamp(args.now, "now") if args.now else utc_now()
    limit = to_int(args.task_limit, "task_limit")
    windows = {job: flagged_window(ledger, job, args) for job in dict.fromkeys(args.jobs)}
    covered = coverages(ledger, windows, now, task_limit=limit)
    found = [(job, *covered[job]) for job in windows]
    rules = freshness_rules(ledger, list(windows))
    fresh = freshnesses(ledger, windows, rules, now)
    text = status_text(found)
    text += "".join(f"\n{job}: {f.describe()}" for job, f in fresh.items())
    code = EXIT_NOT_READY if any(plan.gaps for _, plan, _ in found) else EXIT_OK

    def data() -> object:
        periods = [
            status_json(ledger, job, window, now, limit, fresh.get(job))
            for job, window in windows.items()
        ]
        return periods[0] if len(periods) == 1 else periods

    return Result.deferred(data, text, code)


def status_json(
    ledger: Ledger,
    job: str,
    window: JobWindow,
    now: dt.datetime,
    limit: int,
    fresh: Freshness | None,
) -> dict[str, object]:
    """``job``'s plan, every period of its window (``window_states``) and its freshness, as
    ``status --json`` prints them."""
    plan, states = window_states(ledger, job, now=now, task_limit=limit, window=window)
    return {
        "job": job,
        **plan.to_json(),
        "periods": [s.to_json() for s in states],
        "freshness": None if fresh is None else fresh.to_json(),
    }


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
