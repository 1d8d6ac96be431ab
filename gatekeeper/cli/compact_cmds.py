"""``compact``: remove the attempts no promise needs (superseded ``failed`` and ``abandoned``
attempts of periods older than ``--before``), or with ``--dry-run`` say which it would. Exit 0,
2 for bad input (nothing written). One write transaction (``ledger/compaction.py``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.known import refuse_unknown
from gatekeeper.cli.output import EXIT_OK, Result
from gatekeeper.core.validation import check_name
from gatekeeper.ledger import Ledger
from gatekeeper.ledger.compaction import Horizon


def cmd_compact(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Compact the whole ledger, or the jobs named (a name the ledger has never seen is
    refused with the closest known names: exit 2); a bad ``--before`` is refused first."""
    horizon = Horizon.parse(args.before, "--before")
    jobs = list(dict.fromkeys(check_name(j, "job") for j in args.jobs))
    if jobs:
        refuse_unknown(ledger, jobs)
    result = ledger.compact(before=horizon, jobs=jobs, dry_run=args.dry_run)
    verb = "would remove" if result.dry_run else "removed"
    lines = [
        f"{j.job}: {verb} {j.attempts} attempt(s) ({j.failed} failed, {j.abandoned} "
        f"abandoned) of {j.periods} period(s)"
        for j in result.jobs
    ]
    scope = f"jobs {', '.join(jobs)}" if jobs else "every job"
    dry = " (dry run: nothing written)" if result.dry_run else ""
    lines.append(
        f"{verb} {result.removed} superseded attempt(s) of periods before {result.before} "
        f"from {scope} of {ledger.describe()}{dry}"
    )
    return Result(result.to_json(), "\n".join(lines), EXIT_OK)


def register(add: Callable[..., Any]) -> None:
    """Add ``compact`` to the parser."""
    p = add(
        "compact",
        cmd_compact,
        "Remove the superseded failed and abandoned attempts of periods before --before: "
        "never a period's latest attempt, a running or succeeded one, one that evidence, a "
        "publication or a reservation names. One transaction; --dry-run writes nothing.",
        writes=True,
        creates=False,
    )
    p.add_argument(
        "--before",
        required=True,
        metavar="PERIOD",
        help="the horizon: a period key of any kind (2026-01-01, 2026-01-01T00:00Z, "
        "2026-W01, 2026-01, 2026-Q1); periods that end by its start (on UTC's clock) are "
        "compacted",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="report what would be removed, writing nothing",
    )
    p.add_argument(
        "jobs",
        nargs="*",
        metavar="job",
        help="jobs to compact (default: every job)",
    )
