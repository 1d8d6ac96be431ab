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
