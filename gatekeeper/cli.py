"""The ``gatekeeper`` command: parse, call the library, format (a table or ``--json``).

Exit codes: 0 ok or ready, 1 not ready / refused, 2 bad input, 3 conflict, 4 ledger unavailable.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gatekeeper import config
from gatekeeper.errors import (
    GatekeeperError,
    InvalidInput,
    LedgerError,
    PublicationConflict,
    RecoveryNotSafe,
    StateConflict,
)
from gatekeeper.ledger import Ledger, open_ledger
from gatekeeper.periods import parse_aware_datetime

EXIT_OK, EXIT_NOT_READY, EXIT_BAD_INPUT, EXIT_CONFLICT, EXIT_LEDGER = 0, 1, 2, 3, 4


class Result:
    """What a command produced: JSON-able data, its table rendering and the exit code."""

    def __init__(self, data: Any, text: str, code: int = EXIT_OK):
        self.data, self.text, self.code = data, text, code


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Render rows as a left-aligned text table."""
    cells = [list(map(str, header))] + [["" if v is None else str(v) for v in r] for r in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def to_int(value: str, field: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise InvalidInput(field, value, "expected an integer") from None


# -- commands ----------------------------------------------------------------------------------
def cmd_record(ledger: Ledger, args: argparse.Namespace) -> Result:
    started = (
        parse_aware_datetime(args.started_at, "started_at")
        if args.started_at else dt.datetime.now(dt.timezone.utc)
    )
    changed = ledger.record(
        args.job, args.date, to_int(args.attempt, "attempt"), args.run_id, args.state, started,
        error=args.error,
    )
    latest = ledger.latest(args.job, args.date)
    data = {"changed": changed, "latest": latest.to_json() if latest else None}
    return Result(data, f"{'recorded' if changed else 'already recorded (no change)'}: "
                        f"{args.job} {args.date} attempt {args.attempt} {args.state}")


def cmd_ready(ledger: Ledger, args: argparse.Namespace) -> Result:
    readiness = ledger.readiness(args.jobs, args.date)
    rows = [(job, "ready", readiness.evidence[job]) if job in readiness.evidence
            else (job, readiness.blockers[job], "") for job in readiness.required]
    text = f"{readiness.business_date}: {'READY' if readiness else 'NOT READY'}\n"
    text += table(rows, ("job", "status", "run_id"))
    return Result(readiness.to_json(), text, EXIT_OK if readiness else EXIT_NOT_READY)


def cmd_history(ledger: Ledger, args: argparse.Namespace) -> Result:
    found = ledger.history(args.job, args.date)
    now = dt.datetime.now(dt.timezone.utc)
    rows = [(a.business_date, a.attempt, a.state.value, a.run_id, a.started_at.isoformat(),
             lease_text(a, now), a.error) for a in found]
    text = table(rows, ("date", "attempt", "state", "run_id", "started_at", "lease", "error"))
    return Result([a.to_json() for a in found], text if rows else f"no attempts of {args.job}")


def lease_text(attempt: Any, now: dt.datetime) -> str:
    if attempt.lease_expires_at is None:
        return ""
    live = "live" if attempt.lease_live(now) else "expired"
    return f"{live} until {attempt.lease_expires_at.isoformat()}"


def cmd_evidence(ledger: Ledger, args: argparse.Namespace) -> Result:
    revisions = ledger.publications(args.consumer, args.date)
    if not revisions:
        return Result({"consumer": args.consumer, "business_date": args.date,
                       "revisions": []},
                      f"{args.consumer} {args.date}: not published", EXIT_NOT_READY)
    lines = []
    for pub in revisions:
        lines.append(f"{pub.consumer} {pub.business_date} revision {pub.revision} published "
                     f"{pub.published_at.isoformat()} fingerprint {pub.fingerprint}"
                     + (f" reason: {pub.reason}" if pub.reason else ""))
        lines.append(table([(i.job, i.business_date, i.attempt, i.run_id) for i in pub.items],
                           ("  job", "date", "attempt", "run_id")))
    return Result({"consumer": args.consumer, "business_date": args.date,
                   "revisions": [p.to_json() for p in revisions]}, "\n".join(lines))


def cmd_demo(_: Ledger | None, args: argparse.Namespace) -> Result:
    from gatekeeper.demo import run_demo

    lines = run_demo()
    return Result({"lines": lines}, "\n".join(lines))


def cmd_plan_recovery(_: Ledger | None, args: argparse.Namespace) -> Result:
    """Plan from an event log (no ledger) or the ledger; a refusal is exit 1 with its reason."""
    from gatekeeper.recovery import plan_recovery
    from gatekeeper.recovery_ledger import plan_recovery_from_ledger

    verified = [to_int(v, "verified_stage") for v in args.verified_stage]
    for stage in verified:
        if stage < 1:
            raise InvalidInput("verified_stage", stage, "expected a stage number >= 1")
    check_mode(args)
    try:
        if args.events is not None:
            summary = read_events(args.events, to_int(args.expected_stages, "expected_stages"))
            plan = plan_recovery(summary, args.run_id, verified)
            return Result(plan, f"run {args.run_id}: {describe_plan(plan)}")
        with open_ledger(config.cli_ledger_url(args.ledger)) as ledger:
            plan = plan_recovery_from_ledger(ledger, args.stages.split(","), args.business_date,
                                             verified)
    except RecoveryNotSafe as exc:
        print(f"gatekeeper: RecoveryNotSafe: {exc}", file=sys.stderr)
        return Result({"action": "refused", "reason": str(exc)}, f"refused: {exc}",
                      EXIT_NOT_READY)
    rows = [(v["stage"], v["job"], v["status"], v["attempt"], v["run_id"]) for v in plan["stages"]]
    return Result(plan, f"{plan['business_date']}: {describe_plan(plan)}\n"
                        + table(rows, ("stage", "job", "status", "attempt", "run_id")))


def check_mode(args: argparse.Namespace) -> None:
    """Raise InvalidInput for an option missing from, or foreign to, the chosen mode."""
    mode, own, foreign = (("--events", ("run_id", "expected_stages"), ("business_date",))
                          if args.events is not None
                          else ("--stages", ("business_date",), ("run_id", "expected_stages")))
    for name in own:
        if getattr(args, name) is None:
            raise InvalidInput(name, None, f"required with {mode}")
    for name in foreign:
        if getattr(args, name) is not None:
            raise InvalidInput(name, getattr(args, name), f"not allowed with {mode}")


def read_events(path: str, expected_stages: int) -> dict[str, Any]:
    """Summarize the event log at ``path``; an unreadable file is InvalidInput (exit 2)."""
    from gatekeeper.recovery import summarize_events

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
        for i, n in enumerate(plan["skipped_stages"]))
    return text + f"skip {skipped}" + ("" if jobs else " (verified by operator)")


# -- parser and main ---------------------------------------------------------------------------
Command = Callable[[Any, argparse.Namespace], Result]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gatekeeper", description="Inspect and operate a gatekeeper ledger."
    )
    parser.add_argument("--ledger", help="ledger URL (default: $GATEKEEPER_LEDGER_URL, then "
                        "[gatekeeper] ledger_url in luigi.cfg, then sqlite:///gatekeeper.db)")
    sub = parser.add_subparsers(dest="command", required=True)

    def add(name: str, fn: Command, help_text: str, ledger: bool = True) -> Any:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print JSON instead of a table")
        p.set_defaults(fn=fn, needs_ledger=ledger)
        return p

    p = add("record", cmd_record, "Record one observation of an attempt.")
    for name in ("job", "date", "attempt", "run_id", "state"):
        p.add_argument(name)
    p.add_argument("--started-at", help="ISO 8601 with offset (default: now)")
    p.add_argument("--error", help="error summary for a failed attempt")
    p = add("ready", cmd_ready, "Is every job's latest attempt succeeded for DATE? (exit 1 if not)")
    p.add_argument("date")
    p.add_argument("jobs", nargs="+", metavar="job")
    p = add("history", cmd_history, "Attempts of JOB (for DATE), with leases.")
    p.add_argument("job")
    p.add_argument("date", nargs="?")
    p = add("evidence", cmd_evidence, "Every revision of a publication with its evidence.")
    p.add_argument("consumer")
    p.add_argument("date")
    add("demo", cmd_demo, "Run the backfill-is-not-today scenario on a temporary ledger.",
        ledger=False)
    add_plan_recovery(add)
    for extend in EXTENSIONS:
        extend(add)
    return parser


EXTENSIONS: list[Callable[[Any], None]] = []

VERIFIED_STAGE_HELP = (
    "--verified-stage K is an operator assertion, not an integrity check: gatekeeper never "
    "inspects outputs. Before asserting it, verify that stage K's output exists, is complete "
    "(row counts, checksums) and was produced by this exact run ID / attempt, not an earlier one."
)


def add_plan_recovery(add: Callable[..., Any]) -> None:
    """Register ``plan-recovery``: from a JSONL event log (no ledger) or from the ledger."""
    p = add("plan-recovery", cmd_plan_recovery,
            "Propose where to restart a stopped multi-stage run, or refuse (exit 1); read-only.",
            ledger=False)
    p.epilog = VERIFIED_STAGE_HELP
    mode = p.add_mutually_exclusive_group(required=True)
    mode.add_argument("--events", metavar="LOG",
                      help="JSONL stage event log; opens no ledger (needs --run-id, "
                           "--expected-stages)")
    mode.add_argument("--stages", metavar="JOB,JOB,...",
                      help="ordered job IDs of one pipeline; reads each one's latest attempt "
                           "for --business-date from the ledger")
    p.add_argument("--run-id", help="the run to plan (with --events)")
    p.add_argument("--expected-stages", metavar="N", help="stages per run (with --events)")
    p.add_argument("--business-date", metavar="DATE", help="YYYY-MM-DD (with --stages)")
    p.add_argument("--verified-stage", metavar="K", action="append", default=[],
                   help="repeatable: stage K succeeded and you verified its output, so it is "
                        "skipped. An operator assertion, not an integrity check (see below).")


def exit_code(exc: GatekeeperError) -> int:
    if isinstance(exc, InvalidInput):
        return EXIT_BAD_INPUT
    if isinstance(exc, (StateConflict, PublicationConflict)):
        return EXIT_CONFLICT
    if isinstance(exc, LedgerError):
        return EXIT_LEDGER
    if isinstance(exc, RecoveryNotSafe):
        return EXIT_NOT_READY
    return EXIT_NOT_READY


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        result = run(args)
    except GatekeeperError as exc:
        code = exit_code(exc)
        if getattr(args, "json", False):
            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        print(f"gatekeeper: {type(exc).__name__}: {exc}", file=sys.stderr)
        return code
    print(json.dumps(result.data, indent=2, default=str) if args.json else result.text)
    return result.code


def run(args: argparse.Namespace) -> Result:
    if not args.needs_ledger:
        return args.fn(None, args)
    with open_ledger(config.cli_ledger_url(args.ledger)) as ledger:
        result: Result = args.fn(ledger, args)
        return result


if __name__ == "__main__":
    sys.exit(main())
