"""The readiness gate: did the latest attempt of every required job succeed for this date?

The rule is ``readiness.evaluate_readiness`` (pure, over attempts already fetched);
``check_ready`` reads the ledger and never writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from gatekeeper.core.readiness import Requirement, Watermarks, evaluate_readiness
from gatekeeper.core.records import Readiness
from gatekeeper.core.validation import check_name, check_requirements


class ReadinessSource(Protocol):
    """What the gate reads (``gatekeeper.Ledger`` is one): the core names the read it needs
    instead of importing the ledger."""

    def readiness(self, jobs: Iterable[object], business_date: object) -> Readiness: ...


__all__ = [
    "Requirement",
    "Watermarks",
    "check_name",
    "check_ready",
    "check_requirements",
    "evaluate_readiness",
]


def check_ready(
    ledger: ReadinessSource, jobs: Iterable[object], business_date: object
) -> Readiness:
    """Return the Readiness of ``jobs`` for ``business_date`` (reads the ledger, writes nothing).

    Raises InvalidInput for a bad date or job list and LedgerError when the ledger fails.
    """
    return ledger.readiness(jobs, business_date)
