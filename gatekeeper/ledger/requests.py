"""Validated requests of the ledger's writes: one frozen object per call, built at the door.

The public methods keep their keyword signatures (``Ledger.record(...)``, ``publish(...)``);
each checks its arguments once, builds one of these, and the transaction works on it. A
publication's request is also taken as it is, by ``Ledger.publish_request``.
``now`` is the fixed clock of a call (a fake clock), or None for the database's.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from typing import Any

from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import period_key
from gatekeeper.core.readiness import Requirement, Watermarks
from gatekeeper.core.records import RunState
from gatekeeper.core.validation import check_name, check_optional_name, check_requirements

WriteFn = Callable[[Any], Any]


def fixed_clock(now: dt.datetime | None) -> dt.datetime | None:
    """``now`` as an aware UTC datetime, or None (the database's clock decides)."""
    return None if now is None else utc_now(now)


@dataclass(frozen=True, slots=True)
class AttemptObservation:
    """One observation of an attempt (``Ledger.record``)."""

    job: str
    period: str
    attempt: int
    run_id: str
    state: RunState
    started_at: dt.datetime
    error: str | None
    now: dt.datetime | None

    @property
    def where(self) -> str:
        return f"attempt {self.job} {self.period}"


@dataclass(frozen=True, slots=True)
class AttemptStart:
    """A new running attempt holding a lease (``Ledger.begin_attempt``); ``attempt`` 0 takes
    the next ordinal; ``reason``, why it was asked for, is stored with it."""

    job: str
    period: str
    run_id: str
    lease_seconds: float
    attempt: int
    skip_succeeded: bool
    now: dt.datetime | None
    reason: str | None = None

    @property
    def where(self) -> str:
        return f"attempt {self.job} {self.period}"


@dataclass(frozen=True, slots=True)
class Output:
    """What a publisher publishes: its fingerprint, where it lives, how to write it."""

    fingerprint: str
    location: str | None
    write: WriteFn | None

    @classmethod
    def checked(cls, fingerprint: str, location: str | None, write: WriteFn | None) -> Output:
        """The Output of these arguments; InvalidInput naming the bad one."""
        if write is not None and not callable(write):
            raise InvalidInput("write", write, "expected a callable taking the write handle")
        return cls(
            check_name(fingerprint, "fingerprint"),
            check_optional_name(location, "location"),
            write,
        )


@dataclass(frozen=True, slots=True)
class PublicationRequest:
    """A validated publish, republish (``reason`` set) or reservation of one
    (consumer, period)."""

    consumer: str
    period: str
    required: tuple[Requirement, ...]
    output: Output
    watermarks: Watermarks | None = None
    reason: str | None = None
    producer: str | None = None
    now: dt.datetime | None = None

    @classmethod
    def checked(
        cls, consumer: str, period: Any, required_jobs: Iterable[Any], output: Output
    ) -> PublicationRequest:
        """The request to publish ``output`` (no watermarks, reason or producer: see
        ``having``); InvalidInput naming the bad argument."""
        key = period_key(period)
        consumer = check_name(consumer, "consumer")
        return cls(consumer, key, check_requirements(required_jobs, key), output)

    def having(
        self,
        *,
        watermarks: Watermarks | None = None,
        reason: str | None = None,
        producer: str | None = None,
        now: dt.datetime | None = None,
    ) -> PublicationRequest:
        """This request with the optional parts set (``reason`` and ``producer`` already
        checked by the caller, who knows whether each is required)."""
        return replace(
            self, watermarks=watermarks, reason=reason, producer=producer, now=fixed_clock(now)
        )

    @property
    def where(self) -> str:
        return f"publication {self.consumer} {self.period}"


@dataclass(frozen=True, slots=True)
class ReservationCommit:
    """Reserved ``revision`` of (consumer, period) recorded as published at the external
    ``table_version``, written by run ``writer``, fenced by ``producer``."""

    consumer: str
    period: str
    revision: int
    producer: str
    table_version: int
    writer: str
    now: dt.datetime | None

    @property
    def where(self) -> str:
        return f"publication {self.consumer} {self.period}"
