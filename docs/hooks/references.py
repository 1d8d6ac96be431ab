"""mkdocs hook: the command-line and configuration references, generated from the code.

A page that holds the line ``<!-- generated: cli -->`` gets, in its place, every ``gatekeeper``
subcommand as ``gatekeeper.cli.build_parser()`` defines it (usage, description, every argument
with its default and help); ``<!-- generated: config -->`` becomes the table of the
``[gatekeeper]`` options, read from the ``luigi.Config`` class
(``gatekeeper.luigi.config.gatekeeper``): name, ``gatekeeper`` flag, luigi flag, environment
variable, luigi.cfg key, default, type, description.
Built from the code at every build, they cannot go stale.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
MARKERS = {"<!-- generated: cli -->": "cli", "<!-- generated: config -->": "config"}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace each generation marker line of a page with what it names."""
    if not any(marker in markdown for marker in MARKERS):
        return markdown
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    for marker, kind in MARKERS.items():
        if marker in markdown:
            markdown = markdown.replace(
                marker, cli_reference() if kind == "cli" else config_reference()
            )
    return markdown


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
    out += ["```text", usage, "```", ""]
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
