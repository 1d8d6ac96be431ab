"""``verify``: do the ledger's invariants hold? Exit 0 when every one holds, 1 naming each
violation (the invariant, the job and period, the rows involved), 2 for bad input. Read-only:
one read transaction (``ledger/verify.py``)."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.known import refuse_unknown
from gatekeeper.cli.output import EXIT_NOT_READY, EXIT_OK, Result
from gatekeeper.core.validation import check_name
from gatekeeper.ledger import Ledger
from gatekeeper.ledger.verify import INVARIANTS


def cmd_verify(ledger: Ledger, args: argparse.Namespace) -> Result:
    """Check the invariants of the whole ledger, or of the jobs named (a name the ledger has
    never seen is refused with the closest known names: exit 2)."""
    jobs = list(dict.fromkeys(check_name(j, "job") for j in args.jobs))
    if jobs:
        refuse_unknown(ledger, jobs)
    violations = ledger.verify(jobs)
    data = {
        "ok": not violations,
        "invariants": list(INVARIANTS),
        "violations": [v.to_json() for v in violations],
    }
    scope = f"jobs {', '.join(jobs)}" if jobs else "every job"
    if not violations:
        text = f"ok: {len(INVARIANTS)} invariants hold for {scope} of {ledger.describe()}"
        return Result(data, text, EXIT_OK)
    lines = [f"VIOLATED {v.describe()}" for v in violations]
    lines.append(f"{len(violations)} violation(s) in {scope} of {ledger.describe()}")
    return Result(data, "\n".join(lines), EXIT_NOT_READY)


def register(add: Callable[..., Any]) -> None:
    """Add ``verify`` to the parser."""
    p = add(
        "verify",
        cmd_verify,
        "Check the ledger's invariants, read-only: exit 0 when every one holds, 1 naming "
        "each violation (invariant, job, period and the rows involved), 2 for bad input.",
    )
    p.add_argument(
        "jobs",
        nargs="*",
        metavar="job",
        help="jobs to check (default: every job): the violations naming them as job, "
        "consumer or upstream",
    )
