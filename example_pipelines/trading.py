"""A trading-day load and a month-end report on it (docs/calendars.md).

``TradingDayLoad`` runs on weekdays only (``calendar = "weekdays"``; ``"holidays:US"`` or
``"exchange:XNYS"`` with the ``calendars`` extra): a range over it attempts no weekend, and a
run for a Saturday is refused before anything is written. ``MonthEnd`` is a monthly period
(key ``2026-10``) that requires the load of every trading day of its month.
"""

from __future__ import annotations

import luigi

import gatekeeper as gk
from gatekeeper.core.periods import MONTHLY
from gatekeeper.luigi.period_tasks import BusinessMonthTask


class TradingDayLoad(gk.BusinessDateTask):
    calendar = "weekdays"

    def run(self) -> None:  # plain Luigi: gatekeeper records the attempt around it
        pass


class MonthEnd(BusinessMonthTask):
    def requires(self) -> list[luigi.Task]:
        days = TradingDayLoad.period_kind
        first = self.business_month
        stop = MONTHLY.shift(first, 1)  # the 1st of the next month
        return [TradingDayLoad(business_date=day) for day in days.between(first, stop)]

    def run(self) -> None:
        pass
