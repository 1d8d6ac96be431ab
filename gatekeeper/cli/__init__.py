"""The ``gatekeeper`` command: parse, call the library, format (a table or ``--json``).

Exit codes: 0 ok or ready, 1 not ready / refused, 2 bad input, 3 conflict, 4 ledger unavailable.
Each command module registers its subcommands; this module only dispatches.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gatekeeper import config
from gatekeeper.cli import coverage_cmds, ledger_cmds, recovery_cmds, report_cmds
from gatekeeper.cli.output import (
    EXIT_BAD_INPUT,
    EXIT_CONFLICT,
    EXIT_LEDGER,
    EXIT_NOT_READY,
    Result,
)
from gatekeeper.errors import (
    GatekeeperError,
    InvalidInput,
    LedgerError,
    PublicationConflict,
    StateConflict,
)
from gatekeeper.ledger import open_ledger

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

    for module in (ledger_cmds, coverage_cmds, recovery_cmds, report_cmds):
        module.register(add)
    return parser


def exit_code(exc: GatekeeperError) -> int:
    if isinstance(exc, InvalidInput):
        return EXIT_BAD_INPUT
    if isinstance(exc, (StateConflict, PublicationConflict)):
        return EXIT_CONFLICT
    if isinstance(exc, LedgerError):
        return EXIT_LEDGER
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
