"""Errors gatekeeper raises on purpose; every one is a GatekeeperError.

Expected outcomes (a closed gate, an incomplete range) are returned as records, never raised;
only the act that needs them (publishing, starting an attempt) raises.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from gatekeeper.records import Attempt, Readiness


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
    """An attempt observation contradicts what the ledger already holds (nothing was written).

    ``job``, ``period`` and ``attempt`` name the attempt concerned (None where not known).
    """

    def __init__(self, message: str, *, job: str | None = None, period: str | None = None,
                 attempt: int | None = None):
        super().__init__(message)
        self.job, self.period, self.attempt = job, period, attempt


class PublicationConflict(GatekeeperError):
    """A publication for the key exists with a different fingerprint or requirements.

    ``consumer``, ``period`` and ``revision`` name the publication it conflicts with.
    """

    def __init__(self, message: str, *, consumer: str | None = None, period: str | None = None,
                 revision: int | None = None):
        super().__init__(message)
        self.consumer, self.period, self.revision = consumer, period, revision


class NotReady(GatekeeperError):
    """The readiness gate is closed for the date; carries the ``Readiness``."""

    def __init__(self, readiness: Readiness):
        super().__init__(
            f"{readiness.business_date}: not ready, blocked by {readiness.describe_blockers()}"
        )
        self.readiness = readiness


class LeaseHeld(StateConflict):
    """Another attempt for the same job and date holds a live lease (``holder``)."""

    def __init__(self, message: str, *, holder: Attempt, **where: Any):
        super().__init__(message, **where)
        self.holder = holder


class LeaseLost(StateConflict):
    """An attempt that no longer holds a live lease tried to act as the owner of its period.

    ``run_id`` is the attempt's run ID and ``taken_over_by`` the Attempt that replaced it (None
    when none did: its lease expired, or it was already finished). Nothing was written.
    """

    def __init__(self, message: str, *, run_id: str, taken_over_by: Attempt | None = None,
                 **where: Any):
        super().__init__(message, **where)
        self.run_id = run_id
        self.taken_over_by = taken_over_by


class OutputMismatch(GatekeeperError):
    """A published output outside the ledger is missing or does not match its checksum."""


class RecoveryNotSafe(GatekeeperError):
    """The recovery planner refuses to propose a restart; the message says why."""


class LedgerError(GatekeeperError):
    """The ledger could not be reached or the database failed; wraps the driver error.

    ``retryable`` is True when the transaction cannot have committed (it failed before its
    COMMIT was sent, or the database aborted it in a race) and may safely run again.
    """

    def __init__(self, message: str, *, retryable: bool = False):
        super().__init__(message)
        self.retryable = retryable
