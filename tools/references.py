"""The command-line and configuration references, generated from the code into committed pages.

``python tools/references.py`` (or ``python -m tools.references``) rewrites, in
docs/cli-reference.md, what lies between ``<!-- generated: cli ... -->`` and
``<!-- end generated: cli -->``: every ``gatekeeper`` subcommand as
``gatekeeper.cli.build_parser()`` defines it (usage, description, every argument with its
default and help); and in docs/configuration.md, between the ``config`` markers, the table of
the ``[gatekeeper]`` options, read from the ``luigi.Config`` class
(``gatekeeper.luigi.config.gatekeeper``): name, ``gatekeeper`` flag, luigi flag, environment
variable, luigi.cfg key, default, type, description. ``--check`` writes nothing and exits 1
naming each page that is not what the code generates (tests/docs/test_references.py runs the
same comparison). The pages are Markdown a code host shows as they are.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMAND = "python tools/references.py"


def begin(kind: str) -> str:
    """The line that opens a generated part of a page."""
    return (
        f"<!-- generated: {kind} (`{COMMAND}` writes what follows, to the end marker; "
        "do not edit by hand) -->"
    )


def end(kind: str) -> str:
    """The line that closes a generated part of a page."""
    return f"<!-- end generated: {kind} -->"


def pages() -> dict[str, tuple[str, Callable[[], str]]]:
    """Kind -> (the page, relative to the repository, and what generates its part)."""
    return {
        "cli": ("docs/cli-reference.md", cli_reference),
        "config": ("docs/configuration.md", config_reference),
    }


def regenerated(text: str, kind: str, body: str) -> str:
    """``text`` with its ``kind`` part (between the markers) replaced by ``body``; raises
    ValueError when the page has no such part."""
    opening, closing = begin(kind), end(kind)
    head, found, rest = text.partition(f"\n{opening}\n")
    if not found:
        head, found, rest = text.partition(f"\n<!-- generated: {kind} -->\n")  # before markers
        rest = f"{closing}\n{rest}"
    _, closed, tail = rest.partition(f"{closing}\n")
    if not found or not closed:
        raise ValueError(f"no '{opening}' ... '{closing}' part")
    return f"{head}\n{opening}\n\n{body.strip()}\n\n{closing}\n{tail}"


def stale(root: Path = ROOT, write: bool = False) -> list[str]:
    """The pages under ``root`` whose generated part is not what the code generates now
    (relative paths); with ``write``, rewritten so they are. Reads the code in this checkout."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    found = []
    for kind, (page, generate) in pages().items():
        path = root / page
        text = path.read_text()
        fresh = regenerated(text, kind, generate())
        if fresh != text:
            found.append(page)
            if write:
                path.write_text(fresh)
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Regenerate the reference pages (``--check``: only say which are stale, exit 1)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 naming each stale page"
    )
    args = parser.parse_args(argv)
    found = stale(write=not args.check)
    for page in found:
        print(f"{page}: {'stale (run ' + COMMAND + ')' if args.check else 'regenerated'}")
    return 1 if args.check and found else 0


def cli_reference() -> str:
    """Markdown for the ``gatekeeper`` command and each subcommand, from its argparse parser."""
    from gatekeeper.cli import build_parser

    previous = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"  # argparse wraps usage lines to the terminal's width
    try:
        return "\n".join(_parser_section(build_parser(), "gatekeeper", level=2))
    finally:
        if previous is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = previous


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, argparse.ArgumentParser]]:
    """(name, parser) of each subcommand, in definition order."""
    found: list[tuple[str, argparse.ArgumentParser]] = []
    for action in parser._actions:  # argparse keeps no public list of its arguments
        if isinstance(action, argparse._SubParsersAction):
            found.extend(action.choices.items())
    return found


def _parser_section(parser: argparse.ArgumentParser, name: str, level: int) -> list[str]:
    out = [f"{'#' * level} `{name}`", ""]
    if parser.description:
        out += [_escape(parser.description), ""]
    usage = parser.format_usage().strip().removeprefix("usage: ").replace("\n       ", "\n")
    # the usage is text, not a command to run (tests/docs/test_docs.py's convention)
    out += ["<!-- docs: illustrative usage as argparse prints it -->", "```text", usage, "```", ""]
    rows = [
        _argument_row(action)
        for action in parser._actions
        if not isinstance(action, (argparse._SubParsersAction, argparse._HelpAction))
    ]
    if rows:
        out += ["| argument | default | |", "|---|---|---|", *rows, ""]
    for sub_name, sub in _subcommands(parser):
        out += _parser_section(sub, f"{name} {sub_name}", min(level + 1, 4))
    return out


def _argument_row(action: argparse.Action) -> str:
    if action.option_strings:
        flags = ", ".join(action.option_strings)
        if action.nargs != 0:
            flags += f" {action.metavar or action.dest.upper()}"
    else:
        flags = str(action.metavar or action.dest)
    if action.nargs in ("+", "*"):
        flags += " ..."
    repeat = " (repeatable)" if isinstance(action, argparse._AppendAction) else ""
    default = (
        ""
        if action.default in (None, False, argparse.SUPPRESS) or action.nargs == 0
        else f"`{action.default}`"
    )
    choices = (
        f" One of {', '.join(f'`{c}`' for c in action.choices)}."
        if action.choices and not isinstance(action.choices, dict)
        else ""
    )
    help_text = (
        ""
        if action.help in (None, argparse.SUPPRESS)
        else _escape(
            action.help % {"default": action.default, "prog": "gatekeeper"}
            if "%(" in action.help
            else action.help
        )
    )
    return f"| `{flags}`{repeat} | {default} | {help_text}{choices} |"


#: The ``gatekeeper`` command's own flag for an option, where it is not ``--<option>``.
CLI_FLAGS = {"ledger_url": "--ledger"}


def config_reference() -> str:
    """Markdown table of the ``[gatekeeper]`` options, from the luigi.Config class: each with
    its environment variable, luigi.cfg key, luigi flag, ``gatekeeper`` flag (found in the
    command's parser) and default, in precedence order of the sources."""
    from gatekeeper.luigi.config import env_var, options

    rows = [
        "| option | `gatekeeper` flag | luigi flag | environment | luigi.cfg `[gatekeeper]` "
        "| default | type | description |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, param in options():
        default = param._default  # luigi.Parameter keeps its default only here
        shown = "(empty)" if default == "" else f"`{default}`"
        flag = f"`--gatekeeper-{name.replace('_', '-')}`"
        kind = type(param).__name__
        rows.append(
            f"| `{name}` | {_cli_flag(name)} | {flag} | `{env_var(name)}` | `{name}` | {shown} "
            f"| {kind} | {_escape(param.description)} |"
        )
    return "\n".join(rows) + "\n"


def _cli_flag(option: str) -> str:
    """The ``gatekeeper`` flag giving ``option`` and the commands that take it, else a dash."""
    from gatekeeper.cli import build_parser

    flag = CLI_FLAGS.get(option, f"--{option.replace('_', '-')}")
    parser = build_parser()
    if any(flag in action.option_strings for action in parser._actions):
        return f"`{flag}`"
    takers = [
        name
        for name, sub in _subcommands(parser)
        if any(flag in action.option_strings for action in sub._actions)
    ]
    return f"`{flag}` ({', '.join(takers)})" if takers else "-"


def _escape(text: str) -> str:
    """One table cell or paragraph: no pipe splits a cell, no newline ends a row."""
    return " ".join(str(text).split()).replace("|", "\\|")


if __name__ == "__main__":
    sys.exit(main())
