"""The readiness gate: did the latest attempt of every required job succeed for this date?

``evaluate_readiness`` is pure (it judges attempts already fetched); ``check_ready`` reads the
ledger and never writes.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gatekeeper.errors import InvalidInput
from gatekeeper.periods import parse_aware_datetime, period_key
from gatekeeper.records import Attempt, Readiness, RunState, requirement_label

if TYPE_CHECKING:
    from gatekeeper.ledger import Ledger

Requirement = tuple[str, str]  # (job, period key)


def normalize_requirements(jobs: Any, business_date: str) -> tuple[Requirement, ...]:
    """Return the required (job, period key) pairs, sorted and without duplicates.

    ``jobs`` is a non-empty iterable of job names (required for ``business_date``) or
    ``(job, date)`` pairs for an upstream on another date. Raises InvalidInput otherwise.
    """
    if isinstance(jobs, (str, bytes)) or not isinstance(jobs, Iterable):
        raise InvalidInput("jobs", jobs, "expected a collection of job names, not a single value")
    out: set[Requirement] = set()
    for item in jobs:
        if isinstance(item, tuple) and len(item) == 2:
            job, period = item[0], period_key(item[1], "jobs[].business_date")
        else:
            job, period = item, business_date
        out.add((check_name(job, "jobs[]"), period))
    if not out:
        raise InvalidInput("jobs", jobs, "at least one required job is needed")
    return tuple(sorted(out))


def check_name(value: Any, field: str) -> str:
    """Return ``value`` if it is a non-empty string without surrounding blanks."""
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(field, value, "expected a non-empty string")
    if value != value.strip():
        raise InvalidInput(field, value, "leading or trailing whitespace")
    return value


def evaluate_readiness(
    business_date: str,
    required: tuple[Requirement, ...],
    latest: Mapping[Requirement, Attempt],
    watermarks: Watermarks | None = None,
) -> Readiness:
    """Judge readiness from the greatest recorded attempt of each requirement (pure).

    Returns a Readiness whose blockers name each requirement that has no attempt (``missing``)
    or whose latest attempt did not succeed (its state), and, with ``watermarks``, each
    succeeded one whose declared watermark is before the period's end (``watermark``).
    """
    evidence: dict[str, str] = {}
    blockers: dict[str, str] = {}
    attempts: dict[str, int] = {}
    details: dict[str, str] = {}
    for job, period in required:
        label = requirement_label(job, period, business_date)
        found = latest.get((job, period))
        if found is None:
            blockers[label] = "missing"
            continue
        attempts[label] = found.attempt
        if found.state is not RunState.SUCCEEDED:
            blockers[label] = found.state.value
        elif watermarks is not None and not watermarks.reached(label):
            blockers[label] = "watermark"
            details[label] = watermarks.describe(label)
        else:
            evidence[label] = found.run_id
    labels = tuple(requirement_label(j, p, business_date) for j, p in required)
    return Readiness(business_date, labels, evidence, blockers, attempts, details)


@dataclass(frozen=True, slots=True)
class Watermarks:
    """Data-time watermarks declared by upstream jobs, and the instant each must reach.

    ``observed`` maps a requirement label to the greatest event time its source has (None: it
    declared none it could read); ``required`` is the end of the period's half-open interval,
    so a watermark exactly at the end counts.
    """

    required: dt.datetime
    observed: Mapping[str, dt.datetime | None]

    def reached(self, label: str) -> bool:
        if label not in self.observed:
            return True
        seen = self.observed[label]
        return seen is not None and seen >= self.required

    def describe(self, label: str) -> str:
        seen = self.observed.get(label)
        shown = "none" if seen is None else seen.isoformat()
        return f"watermark {shown} < required {self.required.isoformat()}"

    @classmethod
    def parse(cls, required: Any, observed: Mapping[str, Any]) -> Watermarks:
        """Validate (aware datetimes, in UTC); raises InvalidInput naming the field."""
        checked = {
            check_name(label, "watermarks[]"): (
                None if value is None else parse_aware_datetime(value, f"watermarks[{label}]")
            )
            for label, value in observed.items()
        }
        return cls(parse_aware_datetime(required, "watermark_required"), checked)


def check_ready(ledger: Ledger, jobs: Iterable[Any], business_date: Any) -> Readiness:
    """Return the Readiness of ``jobs`` for ``business_date`` (reads the ledger, writes nothing).

    Raises InvalidInput for a bad date or job list and LedgerError when the ledger fails.
    """
    return ledger.readiness(jobs, business_date)
