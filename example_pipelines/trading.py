"""A trading-day load and a month-end report on it (docs/calendars.md).

``TradingDayLoad`` runs on weekdays only (``calendar = "weekdays"``; ``"holidays:US"`` or
``"exchange:XNYS"`` with the ``calendars`` extra): a range over it attempts no weekend, and a
run for a Saturday is refused before anything is written. ``MonthEnd`` is a monthly
publication (key ``2026-10``) gated on the load of every trading day of its month: it
publishes once all of them succeeded, and its evidence names each day's run.
"""

from __future__ import annotations

import luigi

import gatekeeper as gk


class TradingDayLoad(gk.BusinessDateTask):
    calendar = "weekdays"

    def run(self) -> None:  # plain Luigi: gatekeeper records the attempt around it
        pass


class MonthEnd(gk.GatedPeriodTask, gk.BusinessMonthTask):
    def requires(self) -> list[luigi.Task]:
        days = TradingDayLoad.period_kind
        first = self.business_month
        stop = self.period_kind.shift(first, 1)  # the 1st of the next month
        return [TradingDayLoad(business_date=day) for day in days.between(first, stop)]

    def build(self) -> dict[str, object]:  # published with the run of every trading day
        return {"month": self.period_key, "trading_days": len(self.requires())}
