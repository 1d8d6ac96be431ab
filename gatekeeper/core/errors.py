"""Errors gatekeeper raises on purpose; every one is a GatekeeperError.

Expected outcomes (a closed gate, an incomplete range) are returned as records, never raised;
only the act that needs them (publishing, starting an attempt) raises.
"""

from __future__ import annotations

import datetime as dt
import enum
import os
from decimal import Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gatekeeper.core.records import Attempt, Readiness


class GatekeeperError(Exception):
    """Base of every error gatekeeper raises on purpose."""

    def __reduce__(self) -> tuple[object, ...]:
        """Pickled with its attributes (the Delta helper process sends errors back): the
        subclasses' constructors take more than the message."""
        return _rebuild, (type(self), self.args, self.__dict__)


def _rebuild(
    cls: type[GatekeeperError], args: tuple[object, ...], state: dict[str, object]
) -> GatekeeperError:
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class InvalidInput(GatekeeperError, ValueError):
    """A caller passed a value gatekeeper refuses; nothing was written.

    ``field`` names the offending field and ``value`` holds what was passed (the message shows
    it as the user would have typed it, see ``show_value``). ``message`` replaces the usual
    ``invalid FIELD=VALUE: REASON`` where that would say the value twice.
    """

    def __init__(self, field: str, value: object, reason: str, *, message: str | None = None):
        shown = "" if value is None else f"={show_value(value)}"
        super().__init__(message or f"invalid {field}{shown}: {reason}")
        self.field = field
        self.value = value
        self.reason = reason


def show_value(value: object) -> str:
    """``value`` as a user would have typed it, for a message: never a Python repr.

    Strings are quoted as they are (escaped only if unprintable, so a message stays one line),
    dates and datetimes are ISO 8601, numbers, durations, zones and enums are plain, a class
    is its name and a list or tuple is its items shown this way.
    """
    if isinstance(value, enum.Enum):  # before str: a state is a str Enum
        return str(value.value)
    if isinstance(value, (str, os.PathLike)):
        text = os.fspath(value)
        return f"'{text}'" if isinstance(text, str) and text.isprintable() else repr(text)
    if isinstance(value, (dt.date, dt.time)):  # datetime is a date
        return value.isoformat()
    if isinstance(value, (bool, int, float, Decimal, dt.timedelta, dt.tzinfo)):
        return str(value)
    if isinstance(value, type):
        return value.__qualname__
    if isinstance(value, (list, tuple, set, frozenset)):
        items = sorted(value, key=str) if isinstance(value, (set, frozenset)) else value
        return "[" + ", ".join(show_value(item) for item in items) + "]"
    return repr(value)


class StateConflict(GatekeeperError):
    """An attempt observation contradicts what the ledger already holds (nothing was written).

    ``job``, ``period`` and ``attempt`` name the attempt concerned (None where not known).
    """

    def __init__(
        self,
        message: str,
        *,
        job: str | None = None,
        period: str | None = None,
        attempt: int | None = None,
    ):
        super().__init__(message)
        self.job, self.period, self.attempt = job, period, attempt


class PublicationConflict(GatekeeperError):
    """A publication for the key exists with a different fingerprint or requirements.

    ``consumer``, ``period`` and ``revision`` name the publication it conflicts with.
    """

    def __init__(
        self,
        message: str,
        *,
        consumer: str | None = None,
        period: str | None = None,
        revision: int | None = None,
    ):
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

    def __init__(
        self,
        message: str,
        *,
        holder: Attempt,
        job: str | None = None,
        period: str | None = None,
        attempt: int | None = None,
    ):
        super().__init__(message, job=job, period=period, attempt=attempt)
        self.holder = holder


class LeaseLost(StateConflict):
    """An attempt that no longer holds a live lease tried to act as the owner of its period.

    ``run_id`` is the attempt's run ID and ``taken_over_by`` the Attempt that replaced it (None
    when none did: its lease expired, or it was already finished). Nothing was written.
    """

    def __init__(
        self,
        message: str,
        *,
        run_id: str,
        taken_over_by: Attempt | None = None,
        job: str | None = None,
        period: str | None = None,
        attempt: int | None = None,
    ):
        super().__init__(message, job=job, period=period, attempt=attempt)
        self.run_id = run_id
        self.taken_over_by = taken_over_by


class OutputMismatch(GatekeeperError):
    """A published output outside the ledger is missing or does not match its checksum."""


class RecoveryNotSafe(GatekeeperError):
    """The recovery planner refuses to propose a restart; the message says why."""


class LedgerError(GatekeeperError):
    """The ledger could not be reached or the database failed; wraps the driver error.

    ``retryable`` is True when the transaction cannot have committed (it failed before its
    COMMIT was sent, or the database aborted it in a race) and may safely run again;
    ``unreachable`` when that was because the database could not be reached (a connection that
    could not be opened, or one lost before the commit was sent).
    """

    def __init__(self, message: str, *, retryable: bool = False, unreachable: bool = False):
        super().__init__(message)
        self.retryable = retryable
        self.unreachable = unreachable
