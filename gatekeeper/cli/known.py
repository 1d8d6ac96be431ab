"""Unknown names are errors: the one check every command naming jobs or consumers makes first.

``status``, ``report``, ``stale``, ``evidence``, ``history``, ``ready`` and
``plan-recovery --stages`` refuse a job or consumer the ledger has never seen (InvalidInput,
exit 2, the closest known names suggested) before computing anything; ``--allow-unknown``
accepts one not yet run (an empty answer, as for any name before its first attempt).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gatekeeper.core.names import suggest, unknown_names_error
from gatekeeper.ledger.names import known_names, unknown
from gatekeeper.ledger.protocols import LedgerReads


def check_known(
    ledger: LedgerReads, names: Sequence[str], allow_unknown: bool = False, kind: str = "job"
) -> None:
    """Raise InvalidInput naming every one of ``names`` the ledger has never seen, each with
    its closest known names, unless ``--allow-unknown`` was given. Reads only: one query,
    and a second listing the known names only when one is unknown."""
    if allow_unknown:
        return
    missing = unknown(ledger, names, kind)
    if missing:
        raise unknown_names_error(kind, suggest(missing, known_names(ledger)), ledger.describe())


def add_allow_unknown(parser: Any, kind: str = "job") -> None:
    """Add ``--allow-unknown`` to a command naming jobs (or consumers)."""
    later = "not yet run" if kind == "job" else "that has not published yet"
    parser.add_argument(
        "--allow-unknown",
        action="store_true",
        help=f"accept a {kind} the ledger has never seen (a {kind} {later}) instead of "
        "refusing it with the closest known names (exit 2)",
    )
