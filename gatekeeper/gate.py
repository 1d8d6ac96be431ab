"""The readiness gate: did the latest attempt of every required job succeed for this date?

The rule is ``readiness.evaluate_readiness`` (pure, over attempts already fetched);
``check_ready`` reads the ledger and never writes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from gatekeeper.readiness import Requirement, Watermarks, evaluate_readiness
from gatekeeper.records import Readiness
from gatekeeper.validation import check_name, check_requirements

if TYPE_CHECKING:
    from gatekeeper.ledger import Ledger

__all__ = ["Requirement", "Watermarks", "check_name", "check_ready", "check_requirements",
           "evaluate_readiness"]


def check_ready(ledger: Ledger, jobs: Iterable[Any], business_date: Any) -> Readiness:
    """Return the Readiness of ``jobs`` for ``business_date`` (reads the ledger, writes nothing).

    Raises InvalidInput for a bad date or job list and LedgerError when the ledger fails.
    """
    return ledger.readiness(jobs, business_date)
