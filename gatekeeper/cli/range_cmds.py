"""``status``: the RangePlan of a job, read from the ledger."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from gatekeeper import config
from gatekeeper.cli.output import EXIT_NOT_READY, EXIT_OK, Result, table, to_int
from gatekeeper.clock import utc_now
from gatekeeper.coverage import plan_from_ledger
from gatekeeper.ledger import Ledger
from gatekeeper.validation import check_timestamp


def cmd_status(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Plan JOB's range at ``--now`` (default: the current time); exit 1 while gaps remain."""
    now = check_timestamp(args.now, "now") if args.now else utc_now()
    plan = plan_from_ledger(
        ledger, args.job, start=args.start, stop=args.stop, now=now,
        lateness=args.lateness or config.lateness(), period=args.period,
        timezone=args.timezone or str(config.settings().timezone), strategy=args.strategy,
        catchup=args.catchup, task_limit=to_int(args.task_limit, "task_limit"),
    )
    rows = [(plan.key(p), "gap, scheduled" if p in set(plan.scheduled) else "gap")
            for p in plan.gaps]
    rows += [(plan.key(p), "missing, skipped by policy") for p in plan.skipped_by_policy]
    text = f"{args.job}: {plan.describe()}"
    if rows:
        text += "\n" + table(rows, ("period", "status"))
    return Result({"job": args.job, **plan.to_json()}, text,
                  EXIT_NOT_READY if plan.gaps else EXIT_OK)


def register(add: Callable[..., Any]) -> None:
    """Add ``status`` to the parser."""
    p = add("status", cmd_status,
            "The range of JOB: due periods, gaps, contiguous-through, next due, skipped by "
            "policy (exit 1 while gaps remain).")
    p.add_argument("job")
    p.add_argument("--start", required=True, help="first period (inclusive)")
    p.add_argument("--stop", help="end period (exclusive; default: open)")
    p.add_argument("--lateness", help="e.g. 2h (default: [gatekeeper] lateness)")
    p.add_argument("--now", help="ISO 8601 with offset (default: the current time)")
    p.add_argument("--catchup", default="all", help="all, none or last:N")
    p.add_argument("--strategy", default="contiguous", help="contiguous, forward or reverse")
    p.add_argument("--period", default="daily", choices=("daily", "hourly"))
    p.add_argument("--timezone", help="IANA zone (default: [gatekeeper] timezone)")
    p.add_argument("--task-limit", default="50", help="periods a fill would schedule")
