"""Frozen records of the ledger and the run-state transition rule (pure)."""

from __future__ import annotations

import datetime as dt
import enum
import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from gatekeeper.core.errors import InvalidInput, StateConflict


class RunState(str, enum.Enum):
    """State of one attempt: ``running`` then exactly one terminal state."""

    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    ABANDONED = "abandoned"

    def __str__(self) -> str:
        return self.value

    @property
    def terminal(self) -> bool:
        return self is not RunState.RUNNING

    @classmethod
    def parse(cls, value: object, field: str = "state") -> RunState:
        """Return the RunState named by ``value``; raises InvalidInput for anything else."""
        if isinstance(value, RunState):
            return value
        if isinstance(value, str):
            try:
                return cls(value)
            except ValueError:
                pass
        names = ", ".join(s.value for s in cls)
        raise InvalidInput(field, value, f"unknown state; expected one of {names}")


def transition(current: RunState | None, new: RunState, where: str) -> bool:
    """Decide whether observing ``new`` after ``current`` changes the attempt.

    Returns True when the ledger must change, False for a harmless replay (same state again, or a
    late ``running`` after a terminal state). Raises StateConflict when a terminal state would be
    changed; ``where`` names the job, date and attempt for the message.
    """
    if current is None:
        return True
    if current is new:
        return False
    if current is RunState.RUNNING:
        return True
    if new is RunState.RUNNING:
        return False
    raise StateConflict(
        f"{where}: already {current.value}, refusing {new.value}; a repair needs a new attempt"
    )


@dataclass(frozen=True, slots=True)
class Attempt:
    """One attempt of a job for a business period, as the ledger holds it."""

    job: str
    business_date: str
    attempt: int
    run_id: str
    state: RunState
    started_at: dt.datetime
    updated_at: dt.datetime
    lease_expires_at: dt.datetime | None = None
    error: str | None = None
    #: why it was asked for (``--rerun REASON``); None for a plain run
    reason: str | None = None

    @property
    def period_key(self) -> str:
        """The ledger key of its period (a date or an hour; stored as ``business_date``)."""
        return self.business_date

    def lease_live(self, now: dt.datetime) -> bool:
        """True when the attempt is running and its lease has not expired at ``now``."""
        return (
            self.state is RunState.RUNNING
            and self.lease_expires_at is not None
            and self.lease_expires_at > now
        )

    def to_json(self) -> dict[str, object]:
        return {
            "job": self.job,
            "business_date": self.business_date,
            "attempt": self.attempt,
            "run_id": self.run_id,
            "state": self.state.value,
            "started_at": self.started_at.isoformat(),
            "updated_at": self.updated_at.isoformat(),
            "lease_expires_at": _iso(self.lease_expires_at),
            "error": self.error,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True)
class EvidenceItem:
    """One upstream attempt that authorized a publication, and the upstream's newest
    publication revision then (``revision``: None when it had none, or was not recorded)."""

    job: str
    business_date: str
    run_id: str
    attempt: int
    watermark: dt.datetime | None = None
    revision: int | None = None


@dataclass(frozen=True, slots=True)
class Publication:
    """One revision of a consumer's output for a business period, with its evidence."""

    consumer: str
    business_date: str
    revision: int
    fingerprint: str
    required_jobs: tuple[str, ...]
    items: tuple[EvidenceItem, ...]
    published_at: dt.datetime
    reason: str | None = None
    location: str | None = None
    run_id: str | None = None
    attempt: int | None = None

    @property
    def period_key(self) -> str:
        """The ledger key of its period (a date or an hour; stored as ``business_date``)."""
        return self.business_date

    @property
    def requirements(self) -> tuple[tuple[str, str], ...]:
        """The required (job, period key) pairs: those its evidence names, sorted."""
        return tuple(sorted((i.job, i.business_date) for i in self.items))

    @property
    def evidence(self) -> dict[str, str]:
        """Requirement label -> authorizing run ID (see ``requirement_label``)."""
        return {
            requirement_label(i.job, i.business_date, self.business_date): i.run_id
            for i in self.items
        }

    def to_json(self) -> dict[str, object]:
        return {
            "consumer": self.consumer,
            "business_date": self.business_date,
            "revision": self.revision,
            "fingerprint": self.fingerprint,
            "required_jobs": list(self.required_jobs),
            "evidence": self.evidence,
            "evidence_attempts": {
                requirement_label(i.job, i.business_date, self.business_date): i.attempt
                for i in self.items
            },
            "watermarks": {
                requirement_label(i.job, i.business_date, self.business_date): _iso(i.watermark)
                for i in self.items
                if i.watermark is not None
            },
            "published_at": self.published_at.isoformat(),
            "reason": self.reason,
            "location": self.location,
            "run_id": self.run_id,
            "attempt": self.attempt,
        }


@dataclass(frozen=True, slots=True)
class Staleness:
    """A publication whose evidence names an upstream run that a newer success replaced, or
    an upstream publication revision that a republish replaced (the same attempt)."""

    consumer: str
    business_date: str
    revision: int
    job: str
    job_date: str
    old_run_id: str
    old_attempt: int
    new_run_id: str
    new_attempt: int
    old_revision: int | None = None  # the upstream's revision the evidence recorded
    new_revision: int | None = None  # the upstream's newest revision now

    @property
    def by_revision(self) -> bool:
        """True when only the upstream's revision changed (the attempt is the same)."""
        return self.new_attempt == self.old_attempt

    @property
    def reason(self) -> str:
        """The republish reason recorded when this is refreshed."""
        if self.by_revision:
            return f"upstream republished: {self.job} revision {self.new_revision}"
        return f"upstream repaired: {self.job} attempt {self.new_attempt}"

    @property
    def change(self) -> str:
        """``upstream Orders 2026-11-03 attempt 1 → 2``: what superseded its evidence; when
        only the upstream's publication changed, ``upstream Orders 2026-11-03 revision 1 → 2``
        (when both changed, the attempt is named: its new run is what a refresh reads)."""
        upstream = f"upstream {self.job} {self.job_date}"
        if self.by_revision:
            return f"{upstream} revision {self.old_revision} → {self.new_revision}"
        return f"{upstream} attempt {self.old_attempt} → {self.new_attempt}"

    def upstream_json(self) -> dict[str, object]:
        """``{job, period, old_attempt, new_attempt, old_revision, new_revision}``: the
        upstream pair that changed, as ``status --json`` gives it on a stale period (the
        revisions None where the upstream does not publish or the evidence predates them)."""
        return {
            "job": self.job,
            "period": self.job_date,
            "old_attempt": self.old_attempt,
            "new_attempt": self.new_attempt,
            "old_revision": self.old_revision,
            "new_revision": self.new_revision,
        }

    def to_json(self) -> dict[str, object]:
        return {
            "consumer": self.consumer,
            "business_date": self.business_date,
            "revision": self.revision,
            "job": self.job,
            "job_date": self.job_date,
            "old_run_id": self.old_run_id,
            "old_attempt": self.old_attempt,
            "new_run_id": self.new_run_id,
            "new_attempt": self.new_attempt,
            "old_revision": self.old_revision,
            "new_revision": self.new_revision,
        }


def requirement_label(job: str, key: str, period_key: str) -> str:
    """``job`` for a requirement on the period ``period_key`` itself, ``job@key`` for one on
    another period (``key``)."""
    return job if key == period_key else f"{job}@{key}"


@dataclass(frozen=True, slots=True)
class Readiness:
    """Whether every required job's latest attempt succeeded for one business date.

    ``evidence`` maps each ready requirement to its run ID; ``blockers`` maps each blocking one to
    ``missing``, ``running``, ``failed``, ``abandoned`` or ``watermark`` (its data time is
    before the period's end; ``details`` then names the watermark and the required value).
    Truthy exactly when ready.
    """

    business_date: str
    required: tuple[str, ...]
    evidence: Mapping[str, str] = field(default_factory=dict)
    blockers: Mapping[str, str] = field(default_factory=dict)
    attempts: Mapping[str, int] = field(default_factory=dict)
    details: Mapping[str, str] = field(default_factory=dict)

    @property
    def ready(self) -> bool:
        return not self.blockers

    def __bool__(self) -> bool:
        return self.ready

    def describe_blockers(self) -> str:
        """``job (attempt N running), other (missing)`` or ``nothing``."""
        parts = []
        for job, why in sorted(self.blockers.items()):
            n = self.attempts.get(job)
            what = self.details.get(job, why)
            parts.append(f"{job} ({what})" if n is None else f"{job} (attempt {n} {what})")
        return ", ".join(parts) or "nothing"

    def to_json(self) -> dict[str, object]:
        return {
            "business_date": self.business_date,
            "ready": self.ready,
            "required": list(self.required),
            "evidence": dict(self.evidence),
            "blockers": dict(self.blockers),
            "attempts": dict(self.attempts),
            "details": dict(self.details),
        }


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.isoformat()


def fingerprint(payload: object) -> str:
    """Return the canonical sha256 of a publication payload (pure).

    Bytes are hashed as they are; anything else as canonical JSON (sorted keys, no blanks,
    NaN refused), so equal payloads always share a fingerprint. Raises InvalidInput for a
    payload that is not JSON-serializable.
    """
    if isinstance(payload, (bytes, bytearray)):
        data = bytes(payload)
    else:
        try:
            text = json.dumps(payload, sort_keys=True, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as exc:
            raise InvalidInput("payload", payload, f"not canonical JSON: {exc}") from None
        data = text.encode()  # UTF-8
    return "sha256:" + hashlib.sha256(data).hexdigest()
