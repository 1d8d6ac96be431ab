"""``plan``: a backfill you review before it runs. Every period of a job's window with the
action a fill would take (``run``, ``rerun``, ``republish``, ``skip``) and why, under a
reprocess policy (``report/backfill.py``, ``core/backfill.py``). Reads only; not to be
confused with ``plan-recovery`` (where a multi-stage run may restart)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from typing import Any

from gatekeeper.cli.known import add_allow_unknown, check_known
from gatekeeper.cli.output import (
    EXIT_NOT_READY,
    EXIT_OK,
    Result,
    output_path,
    table,
    to_int,
    write_atomically,
)
from gatekeeper.cli.windows import fill_options, flagged_window, window_options
from gatekeeper.core.backfill import BackfillPlan, PlannedPeriod, Reprocess
from gatekeeper.core.clock import utc_now
from gatekeeper.core.plan_facts import digest
from gatekeeper.core.validation import check_name, check_timestamp
from gatekeeper.ledger import Ledger
from gatekeeper.report.backfill import PlanRequest, backfill, reviewed

PAIRS_SHOWN = 3  # a row's upstream pairs shown in the table; --json has every one


def cmd_plan(ledger: Ledger, args: argparse.Namespace) -> Result:
    """JOB's backfill plan over its window at ``--now`` under ``--reprocess``: exit 0 when
    it has nothing to do, 1 when it has. With ``-o FILE`` the plan is written there as JSON
    with the ledger facts it read and their digest. Bad input is refused before anything is
    read or written."""
    policy = Reprocess.parse(args.reprocess)
    target = output_path(args.output) if args.output is not None else None
    job = check_name(args.job, "job")
    now = check_timestamp(args.now, "now") if args.now else utc_now()
    limit = to_int(args.task_limit, "task_limit")
    check_known(ledger, [job], args.allow_unknown)
    request = PlanRequest(job, flagged_window(ledger, job, args), policy, now, limit)
    if target is None:
        found = backfill(ledger, request)
        return Result(found.to_json(), render(found), _exit(found))
    found, facts = reviewed(ledger, request)
    data = {
        **found.to_json(),
        "digest": digest(facts),
        "facts": [f.to_list() for f in facts],
    }
    write_atomically(target, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
    text = f"{render(found)}\nwrote {target} ({len(facts)} facts, {data['digest']})"
    return Result({**data, "output": str(target)}, text, _exit(found))


def _exit(found: BackfillPlan) -> int:
    """1 when the plan has something to do (its window or the cascade below it), else 0."""
    return EXIT_NOT_READY if found.order or found.below else EXIT_OK


def render(found: BackfillPlan) -> str:
    """The plan's line, the range's, the estimate, then one row per run of periods with one
    action and reason: periods, action, count, reason, the upstream pairs it gates on."""
    lines = [found.describe(), f"  window: {found.range.describe()}"]
    if found.estimate is not None:
        lines.append(f"  {found.estimate.describe()}")
    rows = [_row(run) for run in runs(found.periods)]
    if rows:
        lines.append(table(rows, ("periods", "action", "count", "reason", "gates on")))
    if found.below:  # --reprocess stale: what the range republishes below first
        lines.append("first, below it, lowest first (each republished once those under it are):")
        steps = [(s.layer, s.job, s.period, "republish", s.reason) for s in found.below]
        lines.append(table(steps, ("layer", "job", "period", "action", "reason")))
    return "\n".join(lines)


def runs(periods: Sequence[PlannedPeriod]) -> list[list[PlannedPeriod]]:
    """Consecutive periods with the same action and reason, as runs."""
    found: list[list[PlannedPeriod]] = []
    for p in periods:
        if found and (found[-1][0].action, found[-1][0].reason) == (p.action, p.reason):
            found[-1].append(p)
        else:
            found.append([p])
    return found


def _row(run: list[PlannedPeriod]) -> tuple[str, str, int, str, str]:
    first, last = run[0], run[-1]
    span = first.period if len(run) == 1 else f"{first.period} .. {last.period}"
    pairs = sorted({pair for p in run for pair in p.upstream})
    shown = ", ".join(f"{job} {key}" for job, key in pairs[:PAIRS_SHOWN])
    more = len(pairs) - PAIRS_SHOWN
    gates = shown + (f" (+{more} more)" if more > 0 else "")
    return span, first.action.value, len(run), first.reason, gates


def register(add: Callable[..., Any]) -> None:
    """Add ``plan`` to the parser."""
    p = add(
        "plan",
        cmd_plan,
        "A backfill to review before it runs: every period of JOB's window with its action "
        "(run, rerun, republish, skip), the reason, and the upstream pairs it gates on, "
        "under --reprocess (exit 0 nothing to do, 1 something to do; writes nothing).",
    )
    p.add_argument("job", metavar="JOB")
    p.add_argument(
        "--reprocess",
        default="missing",
        help="missing (the range's gaps: default), failed (also every failed or abandoned "
        "period), stale (also stale publications), all (every due business period)",
    )
    window_options(p)
    fill_options(p)
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="also write the plan there as JSON, with every ledger fact it read (the latest "
        "attempt and current revision of each period and upstream pair) and their digest",
    )
    add_allow_unknown(p)
