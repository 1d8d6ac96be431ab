"""What a command returns and how it is printed (a Result, tables, exit codes), and the ledger
it opens."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from gatekeeper.core.display import printable, redact_url
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.validation import parse_count_text
from gatekeeper.ledger import Ledger, open_ledger
from gatekeeper.luigi import config

EXIT_OK, EXIT_NOT_READY, EXIT_BAD_INPUT, EXIT_CONFLICT, EXIT_LEDGER = 0, 1, 2, 3, 4


class Result:
    """What a command produced: JSON-able data, its table rendering and the exit code."""

    def __init__(self, data: Any, text: str, code: int = EXIT_OK):
        self.data, self.text, self.code = data, text, code


def table(rows: Sequence[Sequence[Any]], header: Sequence[str]) -> str:
    """Render rows as a left-aligned text table; a cell's control and bidi characters (a
    newline too: it would fake a row) are shown escaped (``display.printable``)."""
    body = [["" if v is None else printable(v) for v in row] for row in rows]
    cells = [list(map(str, header)), *body]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join(
        "  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in cells
    )


def to_int(value: str, field: str) -> int:
    """A count typed on the command line: plain ASCII digits (``2_0``, ``٣``, ``+2`` refused)."""
    return parse_count_text(value, field)


def open_cli_ledger(explicit: str | None, *, create: bool) -> Ledger:
    """Open the command's ledger (``--ledger``, ``$GATEKEEPER_LEDGER_URL``, luigi.cfg).

    A read-only command passes ``create=False``: the ledger is opened read-only, and one that
    is not there (a SQLite file that does not exist, a PostgreSQL schema without a ledger) is
    refused (InvalidInput, exit 2) and not created. A bad URL's message says where it came
    from, with ``***`` for its password.
    """
    url, source = config.cli_ledger_source(explicit)
    try:
        return open_ledger(url, create=create)
    except InvalidInput as exc:
        if not exc.field.startswith("ledger_url"):
            raise
        # the URL is repeated for a bad part of it (its password as ***); a ledger that is not
        # there is named by its message (no password)
        shown = redact_url(url)
        missing = exc.field == "ledger_url.schema" and isinstance(exc.value, str)  # not there
        named = exc.value in (url, shown, None) or missing
        given = source if named else f"{source} {shown}"
        raise InvalidInput(exc.field, exc.value, f"{exc.reason} (given by {given})") from None


LEDGER_HELP = (
    "ledger URL (default: $GATEKEEPER_LEDGER_URL, then [gatekeeper] ledger_url in "
    "luigi.cfg, then sqlite:///gatekeeper.db)"
)


def global_options(defaults: bool) -> argparse.ArgumentParser:
    """``--ledger`` and ``--json``, for the main parser (``defaults``) and each subcommand.

    A subcommand's copy has no defaults (SUPPRESS), so a value given before the subcommand is
    not reset by the subcommand's parser; given after, it wins.
    """
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--ledger", metavar="URL", help=LEDGER_HELP, default=None if defaults else argparse.SUPPRESS
    )
    options.add_argument(
        "--json",
        action="store_true",
        help="print JSON instead of a table",
        default=False if defaults else argparse.SUPPRESS,
    )
    return options
