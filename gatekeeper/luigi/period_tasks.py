"""Luigi tasks for coarse periods: one ISO week, one month, one quarter.

Each is a PeriodTask (tasks.py records its attempts); only the period parameter differs.
"""

from __future__ import annotations

from typing import Any

import luigi

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import MONTHLY, QUARTERLY, WEEKLY
from gatekeeper.luigi.tasks import PeriodTask


class BusinessWeekParameter(luigi.DateParameter):
    """``--business-week``: the Monday of an ISO week (``2026-10-05``) or its key
    (``2026-W41``); anything else is InvalidInput naming the parameter and the value."""

    def parse(self, s: Any) -> Any:
        return WEEKLY.parse(s, "business_week")

    def normalize(self, x: Any) -> Any:
        return None if x is None else WEEKLY.from_param(x, "business_week")


class BusinessMonthParameter(luigi.MonthParameter):
    """``--business-month``: Luigi's MonthParameter (``2025-01``); InvalidInput otherwise."""

    def parse(self, s: Any) -> Any:
        try:
            return super().parse(s)
        except ValueError:
            raise InvalidInput("business_month", s, "expected a month YYYY-MM") from None


class BusinessQuarterParameter(luigi.DateParameter):
    """``--business-quarter``: a quarter ``2025-Q1`` (its first day as a date)."""

    def parse(self, s: Any) -> Any:
        return QUARTERLY.parse(s, "business_quarter")

    def serialize(self, dt_value: Any) -> str:
        return QUARTERLY.key(dt_value, "business_quarter")

    def normalize(self, x: Any) -> Any:
        return None if x is None else QUARTERLY.from_param(x, "business_quarter")


class BusinessWeekTask(PeriodTask):
    """A Luigi task responsible for one ISO week (key ``2026-W41``; see PeriodTask)."""

    business_week = BusinessWeekParameter(description="The ISO week's Monday, or 2026-W41")
    period_param = "business_week"
    period_kind = WEEKLY


class BusinessMonthTask(PeriodTask):
    """A Luigi task responsible for one calendar month (key ``2025-01``; see PeriodTask)."""

    business_month = BusinessMonthParameter(description="The month this run is for, 2025-01")
    period_param = "business_month"
    period_kind = MONTHLY


class BusinessQuarterTask(PeriodTask):
    """A Luigi task responsible for one calendar quarter (key ``2025-Q1``; see PeriodTask)."""

    business_quarter = BusinessQuarterParameter(description="The quarter, 2025-Q1")
    period_param = "business_quarter"
    period_kind = QUARTERLY
