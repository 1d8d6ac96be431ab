"""The ``gatekeeper`` command: parse, call the library, format (a table or ``--json``).

Exit codes: 0 ok or ready, 1 not ready / refused, 2 bad input, 3 conflict, 4 ledger unavailable,
5 (``ready``, ``evidence``) not a business day of the job's calendar: nothing to do.
Each command module registers its subcommands; this module only dispatches. ``--ledger`` and
``--json`` are accepted before or after the subcommand. A reader that goes away (``| head``)
ends the command quietly with the exit code it had determined. What reaches the terminal is
safe to show: control and bidi characters in user text are escaped (``display.printable``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Sequence
from typing import Any

from gatekeeper.cli import (
    check_cmds,
    collect_cmds,
    compact_cmds,
    coverage_cmds,
    ledger_cmds,
    plan_cmds,
    recovery_cmds,
    report_cmds,
    serve_cmds,
    verify_cmds,
)
from gatekeeper.cli.output import (
    EXIT_BAD_INPUT,
    EXIT_CONFLICT,
    EXIT_LEDGER,
    EXIT_NOT_READY,
    Parser,
    Result,
    global_options,
    open_cli_ledger,
)
from gatekeeper.core.display import printable
from gatekeeper.core.errors import (
    GatekeeperError,
    InvalidInput,
    LedgerError,
    PublicationConflict,
    StateConflict,
)
from gatekeeper.core.version import package_version
from gatekeeper.luigi import calendar_config

Command = Callable[[Any, argparse.Namespace], Result]


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="gatekeeper",
        description="Inspect and operate a gatekeeper ledger.",
        parents=[global_options(defaults=True)],
    )
    parser.add_argument("--version", action="version", version=f"gatekeeper {package_version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    shared = global_options(defaults=False)

    def add(
        name: str,
        fn: Command,
        help_text: str,
        ledger: bool = True,
        writes: bool = False,
        creates: bool | None = None,
    ) -> Any:
        """A subcommand; ``writes=False`` (read-only) opens the ledger read-only and refuses
        one that is not there instead of creating it; so does a command that writes only to
        change what is there (``creates=False``: abandon), before it opens it to write."""
        p = sub.add_parser(name, help=help_text, description=help_text, parents=[shared])
        create = writes if creates is None else creates
        p.set_defaults(fn=fn, needs_ledger=ledger, writes=writes, creates=create)
        return p

    for module in (
        ledger_cmds,
        coverage_cmds,
        plan_cmds,
        recovery_cmds,
        report_cmds,
        collect_cmds,
        check_cmds,
        serve_cmds,
        verify_cmds,
        compact_cmds,
    ):
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
        return respond(args)
    except BrokenPipeError:
        # The reader went away (``| head``). As the Python docs recommend, point stdout at
        # devnull so the interpreter's final flush does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return int(getattr(args, "exit_code", 0))


def respond(args: argparse.Namespace) -> int:
    """Run the command, print its result (or its error) and return the exit code."""
    try:
        result = run(args)
    except GatekeeperError as exc:
        args.exit_code = exit_code(exc)
        print(f"gatekeeper: {type(exc).__name__}: {printable(exc)}", file=sys.stderr)
        if args.json:  # json.dumps escapes every control and non-ASCII character
            print(json.dumps({"error": type(exc).__name__, "message": str(exc)}))
        sys.stdout.flush()
        return int(args.exit_code)
    args.exit_code = result.code
    print(
        json.dumps(result.data, indent=2, default=str)
        if args.json
        else printable(result.text, newlines=True)
    )
    sys.stdout.flush()
    return result.code


def run(args: argparse.Namespace) -> Result:
    """The command ``args`` names, on the ledger it opens (none for some); the calendars
    luigi.cfg defines resolve by name in it (``luigi/calendar_config.py use_defined_calendars``)."""
    calendar_config.use_defined_calendars()
    if not args.needs_ledger:
        return args.fn(None, args)
    if args.writes and not args.creates:  # a ledger that is not there is refused, not made
        open_cli_ledger(args.ledger, create=False).close()
    with open_cli_ledger(args.ledger, create=args.writes) as ledger:
        result: Result = args.fn(ledger, args)
        return result
