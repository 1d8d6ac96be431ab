"""What a command returns and how it is printed (a Result, tables, exit codes), and the ledger
it opens."""

from __future__ import annotations

import argparse
import os
import re
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar

from gatekeeper.core.display import printable, redact_url
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.validation import parse_count_text
from gatekeeper.ledger import Ledger, open_ledger
from gatekeeper.luigi import config

EXIT_OK, EXIT_NOT_READY, EXIT_BAD_INPUT, EXIT_CONFLICT, EXIT_LEDGER = 0, 1, 2, 3, 4
#: ``ready`` and ``evidence`` on a day off the job's recorded calendar: nothing to do, which
#: a cron must tell from "not ready" (1) without treating it as ready (0).
EXIT_NOT_BUSINESS = 5
#: A read-only command waits 5 s for a connection and rides out no outage (a running task's
#: ledger keeps libpq's 10 s and its 30 s reconnect window): an operator is waiting.
READ_ONLY_WAITS = {"connect_timeout": 5.0, "reconnect_window": 0.0}


class Result:
    """What a command produced: JSON-able data, its table rendering and the exit code. The
    data of a command whose ``--json`` reads more than its table (``status``) is built when
    it is first read (``deferred``)."""

    def __init__(self, data: Any, text: str, code: int = EXIT_OK):
        self._data, self.text, self.code = data, text, code
        self._build: Callable[[], Any] | None = None

    @classmethod
    def deferred(cls, build: Callable[[], Any], text: str, code: int = EXIT_OK) -> Result:
        """A Result whose data ``build()`` makes, once, when it is first read."""
        result = cls(None, text, code)
        result._build = build
        return result

    @property
    def data(self) -> Any:
        """The JSON-able data (built now if it was deferred)."""
        if self._build is not None:
            self._data, self._build = self._build(), None
        return self._data


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
    refused (InvalidInput, exit 2) and not created; a database it cannot reach is given up
    on at once (``READ_ONLY_WAITS``: LedgerError, exit 4) where the URL sets no
    ``connect_timeout`` or ``reconnect_window`` of its own. A bad URL's message says where it came
    from, with ``***`` for its password.
    """
    url, source = config.cli_ledger_source(explicit)
    waits = {} if create else READ_ONLY_WAITS
    try:
        return open_ledger(url, create=create, **waits)
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


def output_path(value: str) -> Path:
    """The path of a file a command writes (``-o``): its folder must exist and it must not
    be a folder itself; InvalidInput naming ``output``. Checked before anything is read."""
    path = Path(value)
    if not value or path.is_dir():
        raise InvalidInput("output", value, "expected a file path, got a folder")
    if not path.parent.is_dir():
        raise InvalidInput("output", value, f"folder {str(path.parent)!r} does not exist")
    return path


def write_atomically(path: Path, text: str) -> None:
    """Write ``text`` to a temporary file beside ``path`` and rename it over ``path``: a
    reader never sees half a file. Raises InvalidInput naming the output when it fails."""
    fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        os.replace(temp, path)
    except OSError as exc:
        Path(temp).unlink(missing_ok=True)
        raise InvalidInput("output", str(path), f"cannot write it ({exc})") from None


LEDGER_HELP = (
    "ledger URL (default: $GATEKEEPER_LEDGER_URL, then [gatekeeper] ledger_url in "
    "luigi.cfg, then sqlite:///gatekeeper.db)"
)


class Parser(argparse.ArgumentParser):
    """argparse's parser, but a value that looks negative (``--lateness -2h``) is the value
    of the option before it when that option takes one, as ``--lateness=-2h`` is: the value
    is then judged (a negative duration refused, naming the field) instead of argparse
    taking ``-2h`` for an unknown option and printing its usage. Every parser of the command
    is one (a subcommand's parser is its parent's class)."""

    #: option strings that take one value, over every parser of the command
    VALUE_OPTIONS: ClassVar[set[str]] = set()
    _NEGATIVE = re.compile(r"^-[0-9.]")

    def add_argument(self, *args: Any, **kwargs: Any) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        if action.option_strings and action.nargs is None:  # one value: store, append
            Parser.VALUE_OPTIONS.update(action.option_strings)
        return action

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[argparse.Namespace, list[str]]:
        given = list(sys.argv[1:] if args is None else args)
        return super().parse_known_args(self.joined(given), namespace)

    @classmethod
    def joined(cls, args: Sequence[str]) -> list[str]:
        """``args`` with ``OPTION VALUE`` as ``OPTION=VALUE`` where the option takes a value
        and the value looks negative (nothing after ``--`` is touched)."""
        found: list[str] = []
        at = 0
        while at < len(args):
            arg = args[at]
            if arg == "--":
                return found + list(args[at:])
            following = args[at + 1] if at + 1 < len(args) else ""
            if arg in cls.VALUE_OPTIONS and cls._NEGATIVE.match(following):
                found.append(f"{arg}={following}")
                at += 2
                continue
            found.append(arg)
            at += 1
        return found


def global_options(defaults: bool) -> Parser:
    """``--ledger`` and ``--json``, for the main parser (``defaults``) and each subcommand.

    A subcommand's copy has no defaults (SUPPRESS), so a value given before the subcommand is
    not reset by the subcommand's parser; given after, it wins.
    """
    options = Parser(add_help=False)
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
