"""gatekeeper: be right about which business period a Luigi pipeline processed.

The public API is what ``__all__`` lists; everything else is importable but not promised.
"""

from __future__ import annotations

from gatekeeper.errors import (
    GatekeeperError,
    InvalidInput,
    LeaseHeld,
    LedgerError,
    NotReady,
    PublicationConflict,
    RecoveryNotSafe,
    StateConflict,
)
from gatekeeper.gate import check_ready
from gatekeeper.ledger import Ledger, open_ledger
from gatekeeper.records import Attempt, Publication, Readiness, RunState, fingerprint

__all__ = [
    "Attempt",
    "GatekeeperError",
    "InvalidInput",
    "LeaseHeld",
    "Ledger",
    "LedgerError",
    "NotReady",
    "Publication",
    "PublicationConflict",
    "Readiness",
    "RecoveryNotSafe",
    "RunState",
    "StateConflict",
    "check_ready",
    "fingerprint",
    "open_ledger",
]
