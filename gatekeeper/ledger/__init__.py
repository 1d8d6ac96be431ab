"""The ledger: every attempt and every publication, with the run IDs that authorized it.

``open_ledger(url)`` picks the dialect from the URL scheme; both dialects share one contract
(``StalenessStore``, built up from ``AttemptStore`` and ``PublicationStore``), so code and
tests are written once.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from gatekeeper.errors import InvalidInput
from gatekeeper.ledger.staleness import StalenessStore

Ledger = StalenessStore

__all__ = ["Ledger", "open_ledger"]


def open_ledger(url: str) -> Ledger:
    """Open (creating or migrating its schema if needed) the ledger at ``url``.

    ``sqlite:///relative.db``, ``sqlite:////absolute.db`` or ``postgresql://user@host/db``
    (optionally ``?schema=NAME``). Raises InvalidInput for an unsupported URL and LedgerError
    when the database cannot be opened.
    """
    if not isinstance(url, str) or not url:
        raise InvalidInput("ledger_url", url, "expected sqlite:///PATH or postgresql://...")
    scheme = urlsplit(url).scheme
    if scheme == "sqlite":
        from gatekeeper.ledger.sqlite import SqliteLedger

        path = url[len("sqlite:///"):] if url.startswith("sqlite:///") else ""
        if not path:
            raise InvalidInput("ledger_url", url, "expected sqlite:///relative.db or sqlite:////abs.db")
        return SqliteLedger(url, path)
    if scheme in ("postgresql", "postgres"):
        from gatekeeper.ledger.postgres import PostgresLedger

        return PostgresLedger(url)
    raise InvalidInput("ledger_url", url, "unsupported scheme; use sqlite:/// or postgresql://")
