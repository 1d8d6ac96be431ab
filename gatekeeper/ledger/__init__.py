"""The ledger: every attempt and every publication, with the run IDs that authorized it.

``open_ledger(url)`` picks the dialect from the URL scheme and returns a ``Ledger``: one
contract (``contract.py``) composed of its stores (attempts, publications, staleness,
reservations) over one SQL core (``sql.py`` on ``connection.py``); the dialects
(``sqlite.py``, ``postgres.py``) add only SQL and connection creation, so code and tests are
written once.
"""

from __future__ import annotations

import os
from urllib.parse import parse_qsl, urlsplit

from gatekeeper.core.display import redact_url
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.validation import check_busy_timeout, check_synchronous
from gatekeeper.ledger.contract import Ledger
from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.ledger.sql import DEFAULT_BUSY_TIMEOUT, DEFAULT_RECONNECT_WINDOW

__all__ = ["Ledger", "LedgerReads", "open_ledger"]


def open_ledger(
    url: str,
    *,
    create: bool = True,
    connect_timeout: float | None = None,
    reconnect_window: float | None = None,
) -> Ledger:
    """Open (creating or migrating its schema if needed) the ledger at ``url``.

    ``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``postgresql://user@host/db``
    (``?schema=NAME``; other query parameters go to libpq). Both take ``busy_timeout=SECONDS``
    (default 30), the longest wait for a lock, and ``reconnect_window=SECONDS`` (default 30),
    how long an operation rides out a database it cannot reach before it fails. A SQLite URL
    also takes ``synchronous=full`` (the default) or ``normal``.

    ``connect_timeout`` and ``reconnect_window`` replace the defaults (libpq's
    ``connect_timeout`` 10, ``reconnect_window`` 30) where the URL sets neither: a command
    that only reads gives up on an unreachable database at once (``gatekeeper``'s read-only
    commands pass 5 and 0) while a running task rides out a blip.

    ``create=False`` opens an existing ledger read-only: nothing is created, migrated or
    written (a SQLite file opened ``mode=ro``, a PostgreSQL session whose transactions are
    read only). A ledger that is not there (a missing SQLite file, a PostgreSQL schema that
    does not exist, a database without gatekeeper's tables) is InvalidInput; one whose schema
    is older than this code's is LedgerError (a writer migrates it).

    Raises InvalidInput for an unsupported URL or option, and LedgerError when the database
    cannot be opened. No error shows the URL's password (``display.redact_url``): its
    ``value`` holds the redacted URL.
    """
    if not isinstance(url, str) or not url:
        raise InvalidInput("ledger_url", url, "expected sqlite:///PATH or postgresql://...")
    shown = redact_url(url)  # what a message may show: never the password
    try:
        scheme = urlsplit(url).scheme
    except ValueError as exc:  # e.g. an unclosed [ in the host
        raise InvalidInput("ledger_url", shown, f"not a URL ({exc})") from None
    if scheme == "sqlite":
        from gatekeeper.ledger.sqlite import SqliteDialect

        rest = url[len("sqlite:///") :] if url.startswith("sqlite:///") else ""
        path, _, query = rest.partition("?")
        if not path:
            raise InvalidInput(
                "ledger_url", shown, "expected sqlite:///relative.db or sqlite:////abs.db"
            )
        options = dict(parse_qsl(query, keep_blank_values=True))
        unknown = sorted(set(options) - {"busy_timeout", "reconnect_window", "synchronous"})
        if unknown:
            raise InvalidInput(
                f"ledger_url.{unknown[0]}",
                redact_url(f"{unknown[0]}={options[unknown[0]]}").partition("=")[2],
                "unknown option of a sqlite:/// ledger; it takes busy_timeout, "
                "reconnect_window and synchronous",
            )
        synchronous = check_synchronous(options.get("synchronous", "full"))
        if not create and not os.path.exists(path):
            raise InvalidInput(
                "ledger_url",
                shown,
                f"no ledger file {os.path.abspath(path)}; nothing was created (check the path)",
            )
        return Ledger(
            SqliteDialect(path, synchronous, not create), url, *_waits(options, reconnect_window)
        )
    if scheme in ("postgresql", "postgres"):
        from gatekeeper.ledger.postgres import PostgresDialect

        if not url.startswith(f"{scheme}://"):
            raise InvalidInput("ledger_url", shown, "expected postgresql://[user@]host/db")
        pg_options = dict(parse_qsl(urlsplit(url).query, keep_blank_values=True))
        dialect = PostgresDialect(url, not create, connect_timeout)
        return Ledger(dialect, url, *_waits(pg_options, reconnect_window))
    raise InvalidInput("ledger_url", shown, "unsupported scheme; use sqlite:/// or postgresql://")


def _waits(options: dict[str, str], reconnect_window: float | None) -> tuple[float, float]:
    """(busy_timeout, reconnect_window) from the URL's options, else the defaults (the
    caller's ``reconnect_window`` first); InvalidInput naming either."""
    window = DEFAULT_RECONNECT_WINDOW if reconnect_window is None else reconnect_window
    return tuple(  # type: ignore[return-value]
        check_busy_timeout(options[name], f"ledger_url.{name}") if name in options else default
        for name, default in (
            ("busy_timeout", DEFAULT_BUSY_TIMEOUT),
            ("reconnect_window", window),
        )
    )
