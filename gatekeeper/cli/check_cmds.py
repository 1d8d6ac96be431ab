"""``check``: are the freshness deadlines met? Exit 0 when every deadline in force is met,
1 naming each breach (job, period, due at, overdue by, its state), 2 for bad input."""

from __future__ import annotations

import argparse
import datetime as dt
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.known import check_freshness_keys, refuse_unknown
from gatekeeper.cli.output import EXIT_NOT_READY, EXIT_OK, Result
from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.freshness import Freshness
from gatekeeper.core.validation import check_name, check_timestamp
from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.luigi import config
from gatekeeper.luigi.freshness import SECTION, Rules, freshness_rules
from gatekeeper.report.fleet import job_windows
from gatekeeper.report.freshness import freshnesses
from gatekeeper.report.windows import JobWindow


def fleet_freshness(ledger: LedgerReads, rules: Rules, now: dt.datetime) -> list[Freshness]:
    """The freshness of each job of ``rules`` at ``now``, in its order, over the window its
    profile and the ``[gatekeeper]`` settings say: every job's window and deadlines read at
    once (``report/fleet.py job_windows``, ``report/freshness.py freshnesses``). Raises the
    InvalidInput of the first job whose window cannot be judged."""
    windows = job_windows(ledger, rules, settings=config.schedule_settings())
    judged: dict[str, JobWindow] = {}
    for job, window in windows.items():
        if isinstance(window, InvalidInput):
            raise window
        judged[job] = window
    found = freshnesses(ledger, judged, rules, now)
    return [found[job] for job in rules]


def cmd_check(ledger: LedgerReads, args: argparse.Namespace) -> Result:
    """Judge the deadlines of JOB... (default: every job with one) at ``--now``."""
    jobs = [check_name(j, "job") for j in args.jobs] or None
    now = check_timestamp(args.now, "now") if args.now else utc_now()
    if jobs:
        refuse_unknown(ledger, jobs)
    check_freshness_keys(ledger, args.allow_unknown, strict=not jobs)
    rules = freshness_rules(ledger, jobs)
    if jobs:
        missing = [j for j in jobs if j not in rules]
        if missing:
            raise InvalidInput(
                "job",
                missing[0],
                f"no freshness deadline: set [{SECTION}] {missing[0]} = 6h in luigi.cfg or "
                "freshness on its task class (recorded by its range)",
            )
    elif not rules:
        raise InvalidInput(
            "job",
            None,
            f"no job of {ledger.describe()} has a freshness deadline ([{SECTION}] in "
            "luigi.cfg, or freshness on a task class run by a range): nothing to check",
        )
    found = fleet_freshness(ledger, rules, now)
    breaches = [b for f in found for b in f.breaches]
    data = {
        "now": now.isoformat(),
        "met": not breaches,
        "jobs": [f.to_json() for f in found],
        "breaches": [b.to_json() for b in breaches],
    }
    lines = [f"{f.job}: {f.describe()}" for f in found]
    lines += [f"BREACHED {b.describe()}" for b in breaches]
    return Result(data, "\n".join(lines), EXIT_NOT_READY if breaches else EXIT_OK)


def register(add: Callable[..., Any]) -> None:
    """Add ``check`` to the parser."""
    p = add(
        "check",
        cmd_check,
        "Check freshness deadlines: exit 0 when every deadline in force is met, 1 naming "
        "each breached period (job, period, due at, overdue by, state), 2 for bad input.",
    )
    p.add_argument(
        "jobs",
        nargs="*",
        metavar="job",
        help="jobs to check (default: every job with a freshness deadline)",
    )
    p.add_argument("--now", help="ISO 8601 with offset (default: the current time)")
    p.add_argument(
        "--allow-unknown",
        action="store_true",
        help="accept a [gatekeeper.freshness] key naming no job of the ledger (a job not yet "
        "run) instead of refusing it with the closest known names (exit 2, with no JOB) or "
        "warning of it (with JOBs); a JOB given is still refused: a job never run has no "
        "period to judge",
    )
