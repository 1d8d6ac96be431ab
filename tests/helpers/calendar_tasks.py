"""Tasks on business calendars and coarse periods, for the real `luigi` command."""

from __future__ import annotations

import gatekeeper as gk
from gatekeeper.luigi.period_tasks import BusinessMonthTask, BusinessQuarterTask, BusinessWeekTask


class WeekdayLoad(gk.BusinessDateTask):
    calendar = "weekdays"

    def run(self) -> None:
        pass


class UsTradingLoad(gk.BusinessDateTask):
    calendar = "holidays:US"

    def run(self) -> None:
        pass


class MonthEnd(BusinessMonthTask):
    def run(self) -> None:
        pass


class WeekLoad(BusinessWeekTask):
    def run(self) -> None:
        pass


class QuarterLoad(BusinessQuarterTask):
    def run(self) -> None:
        pass


class WeekdayFresh(gk.BusinessDateTask):
    """A weekday job with a freshness deadline (its range records it)."""

    calendar = "weekdays"
    freshness = "6h"

    def run(self) -> None:
        pass


class MonthReport(gk.GatedPeriodTask, BusinessMonthTask):
    """A monthly publication gated on WeekdayLoad of every business day of its month."""

    def requires(self) -> list[WeekdayLoad]:
        days = WeekdayLoad.period_kind
        first = self.business_month
        stop = self.period_kind.shift(first, 1)
        return [WeekdayLoad(business_date=day) for day in days.between(first, stop)]

    def build(self) -> dict[str, str]:
        return {"month": self.period_key}
