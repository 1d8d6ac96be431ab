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
    for extend in EXTENSIONS:
        extend(add)
    return parser


EXTENSIONS: list[Callable[[Any], None]] = []


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
