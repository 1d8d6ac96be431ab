"""Ranges over coarse periods: RangeBusinessWeekly, RangeBusinessMonthly, RangeBusinessQuarterly.

They plan and fill as RangeBusinessDaily does (range.py); ``--start`` and ``--stop`` take the
kind's own labels.
"""

from __future__ import annotations

from gatekeeper.core.periods import MONTHLY, QUARTERLY, WEEKLY
from gatekeeper.luigi.period_tasks import (
    BusinessMonthParameter,
    BusinessQuarterParameter,
    BusinessWeekParameter,
)
from gatekeeper.luigi.range import RangeBusinessBase


class RangeBusinessWeekly(RangeBusinessBase):
    """Fill the missing ISO weeks of ``--of`` (a BusinessWeekTask); ``--start`` and ``--stop``
    are Mondays (``2026-10-05``) or week keys (``2026-W41``), stop exclusive."""

    start = BusinessWeekParameter(description="First week (inclusive): its Monday or 2026-W41")
    stop = BusinessWeekParameter(
        default=None,  # type: ignore[arg-type]
        description="End week (exclusive)",
    )
    period_kind = WEEKLY


class RangeBusinessMonthly(RangeBusinessBase):
    """Fill the missing months of ``--of`` (a BusinessMonthTask); ``--start 2025-01``."""

    start = BusinessMonthParameter(description="First month (inclusive), e.g. 2025-01")
    stop = BusinessMonthParameter(
        default=None,  # type: ignore[arg-type]
        description="End month (exclusive)",
    )
    period_kind = MONTHLY


class RangeBusinessQuarterly(RangeBusinessBase):
    """Fill the missing quarters of ``--of`` (a BusinessQuarterTask); ``--start 2025-Q1``."""

    start = BusinessQuarterParameter(description="First quarter (inclusive), e.g. 2025-Q1")
    stop = BusinessQuarterParameter(
        default=None,  # type: ignore[arg-type]
        description="End quarter (exclusive)",
    )
    period_kind = QUARTERLY
