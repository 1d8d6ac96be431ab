"""Readiness judged from attempts already fetched (pure): the rule behind the gate.

Below the ledger and the gate alike: the ledger evaluates it inside the publication transaction,
``gate.check_ready`` over a read.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import NamedTuple

from gatekeeper.core.periods.intervals import parse_aware_datetime
from gatekeeper.core.records import Attempt, Readiness, RunState, requirement_label
from gatekeeper.core.validation import Requirement, check_name

__all__ = ["Outcome", "Requirement", "Watermarks", "evaluate_readiness"]


class Outcome(NamedTuple):
    """What readiness judges of a latest attempt (an ``Attempt`` has the same fields)."""

    attempt: int
    run_id: str
    state: RunState


def evaluate_readiness(
    period_key: str,
    required: tuple[Requirement, ...],
    latest: Mapping[Requirement, Attempt | Outcome],
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
        label = requirement_label(job, period, period_key)
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
    labels = tuple(requirement_label(j, p, period_key) for j, p in required)
    return Readiness(period_key, labels, evidence, blockers, attempts, details)


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
    def parse(cls, required: object, observed: Mapping[str, object]) -> Watermarks:
        """Validate (aware datetimes, in UTC); raises InvalidInput naming the field."""
        checked = {
            check_name(label, "watermarks[]"): (
                None if value is None else parse_aware_datetime(value, f"watermarks[{label}]")
            )
            for label, value in observed.items()
        }
        return cls(parse_aware_datetime(required, "watermark_required"), checked)
