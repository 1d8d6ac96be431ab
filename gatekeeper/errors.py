"""Errors gatekeeper raises on purpose; every one is a GatekeeperError.

Expected outcomes (a closed gate, an incomplete range) are returned as records, never raised;
only the act that needs them (publishing, starting an attempt) raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gatekeeper.records import Readiness


class GatekeeperError(Exception):
    """Base of every error gatekeeper raises on purpose."""


class InvalidInput(GatekeeperError, ValueError):
    """A caller passed a value gatekeeper refuses; nothing was written.

    ``field`` names the offending field and ``value`` holds what was passed.
    """

    def __init__(self, field: str, value: Any, reason: str):
        super().__init__(f"invalid {field}={value!r}: {reason}")
        self.field = field
        self.value = value
        self.reason = reason


class StateConflict(GatekeeperError):
    """An attempt observation contradicts what the ledger already holds (nothing was written)."""


class PublicationConflict(GatekeeperError):
    """A publication for the key exists with a different fingerprint or requirements."""


class NotReady(GatekeeperError):
    """The readiness gate is closed for the date; carries the ``Readiness``."""

    def __init__(self, readiness: Readiness):
        super().__init__(
            f"{readiness.business_date}: not ready, blocked by {readiness.describe_blockers()}"
        )
        self.readiness = readiness


class LeaseHeld(StateConflict):
    """Another attempt for the same job and date holds a live lease."""


class OutputMismatch(GatekeeperError):
    """A published output outside the ledger is missing or does not match its checksum."""


class RecoveryNotSafe(GatekeeperError):
    """The recovery planner refuses to propose a restart; the message says why."""


class LedgerError(GatekeeperError):
    """The ledger could not be reached or the database failed; wraps the driver error."""
