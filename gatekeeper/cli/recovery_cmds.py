"""``plan-recovery``: where to restart a stopped multi-stage run (event log or ledger)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.known import add_allow_unknown, check_known
from gatekeeper.cli.output import EXIT_NOT_READY, Result, open_cli_ledger, table, to_int
from gatekeeper.core.display import printable
from gatekeeper.core.errors import InvalidInput, RecoveryNotSafe
from gatekeeper.ledger import Ledger


def cmd_plan_recovery(_: Ledger | None, args: argparse.Namespace) -> Result:
    """Plan from an event log (no ledger) or the ledger; a refusal is exit 1 with its reason."""
    from gatekeeper.core.periods import period_key
    from gatekeeper.core.recovery import plan_recovery
    from gatekeeper.ledger.recovery import check_stages, plan_recovery_from_ledger

    verified = [to_int(v, "verified_stage") for v in args.verified_stage]
    for stage in verified:
        if stage < 1:
            raise InvalidInput("verified_stage", stage, "expected a stage number >= 1")
    check_mode(args)
    try:
        if args.events is not None:
            summary = read_events(args.events, to_int(args.expected_stages, "expected_stages"))
            found = dict(plan_recovery(summary, args.run_id, verified))
            return Result(found, f"run {args.run_id}: {describe_plan(found)}")
        stages = check_stages(args.stages.split(","))  # bad input is refused before the
        date = period_key(args.business_date)  # ledger is opened
        with open_cli_ledger(args.ledger, create=False) as ledger:
            check_known(ledger, stages, args.allow_unknown)
            plan = plan_recovery_from_ledger(ledger, stages, date, verified)
    except RecoveryNotSafe as exc:
        print(f"gatekeeper: RecoveryNotSafe: {printable(exc)}", file=sys.stderr)
        return Result({"action": "refused", "reason": str(exc)}, f"refused: {exc}", EXIT_NOT_READY)
    rows = [(v["stage"], v["job"], v["status"], v["attempt"], v["run_id"]) for v in plan["stages"]]
    return Result(
        plan,
        f"{plan['business_date']}: {describe_plan(plan)}\n"
        + table(rows, ("stage", "job", "status", "attempt", "run_id")),
    )


def check_mode(args: argparse.Namespace) -> None:
    """Raise InvalidInput for an option missing from, or foreign to, the chosen mode."""
    mode, own, foreign = (
        ("--events", ("run_id", "expected_stages"), ("business_date",))
        if args.events is not None
        else ("--stages", ("business_date",), ("run_id", "expected_stages"))
    )
    for name in own:
        if getattr(args, name) is None:
            raise InvalidInput(name, None, f"required with {mode}")
    for name in foreign:
        if getattr(args, name) is not None:
            raise InvalidInput(name, getattr(args, name), f"not allowed with {mode}")
    if args.events is not None and args.allow_unknown:
        raise InvalidInput("allow_unknown", None, "not allowed with --events (it names no job)")


def read_events(path: str, expected_stages: int) -> dict[str, Any]:
    """Summarize the event log at ``path``; an unreadable file is InvalidInput (exit 2)."""
    from gatekeeper.core.recovery import summarize_events

    try:
        return summarize_events(path, expected_stages)
    except (OSError, UnicodeDecodeError) as exc:
        raise InvalidInput("events", path, f"cannot read the event log: {exc}") from None


def describe_plan(plan: dict[str, Any]) -> str:
    """``restart at stage 2 (Gold); skip stage 1 (Silver, verified by operator)`` and the like."""
    if plan["restart_at_stage"] is None:
        return "nothing to restart: every stage succeeded"
    jobs = plan.get("skipped_jobs")
    named = f" ({plan['restart_at_job']})" if plan.get("restart_at_job") else ""
    text = f"restart at stage {plan['restart_at_stage']}{named}; "
    if not plan["skipped_stages"]:
        return text + "skip nothing"
    skipped = ", ".join(
        f"stage {n}" + (f" ({jobs[i]}, verified by operator)" if jobs else "")
        for i, n in enumerate(plan["skipped_stages"])
    )
    return text + f"skip {skipped}" + ("" if jobs else " (verified by operator)")


VERIFIED_STAGE_HELP = (
    "--verified-stage K is an operator assertion, not an integrity check: gatekeeper never "
    "inspects outputs. Before asserting it, verify that stage K's output exists, is complete "
    "(row counts, checksums) and was produced by this exact run ID / attempt, not an earlier one."
)


def register(add: Callable[..., Any]) -> None:
    """Register ``plan-recovery``: from a JSONL event log (no ledger) or from the ledger."""
    p = add(
        "plan-recovery",
        cmd_plan_recovery,
        "Propose where to restart a stopped multi-stage run, or refuse (exit 1); read-only.",
        ledger=False,
    )
    p.epilog = VERIFIED_STAGE_HELP
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument(
        "--events",
        metavar="LOG",
        help="JSONL stage event log; opens no ledger (needs --run-id, --expected-stages)",
    )
    mode.add_argument(
        "--stages",
        metavar="JOB,JOB,...",
        help="ordered job IDs of one pipeline; reads each one's latest attempt "
        "for --business-date from the ledger",
    )
    p.add_argument("--run-id", help="the run to plan (with --events)")
    p.add_argument("--expected-stages", metavar="N", help="stages per run (with --events)")
    p.add_argument("--business-date", metavar="DATE", help="YYYY-MM-DD (with --stages)")
    p.add_argument(
        "--verified-stage",
        metavar="K",
        action="append",
        default=[],
        help="repeatable: stage K succeeded and you verified its output, so it is "
        "skipped. An operator assertion, not an integrity check (see below).",
    )
    add_allow_unknown(p)
