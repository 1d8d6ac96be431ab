"""A rollup pipeline for ``--reprocess stale``'s cascade (issue 50, item 4).

``CascadeDay`` (recorded, publishes nothing) feeds ``CascadeConsumer``, which publishes each
day; ``CascadeMonthly`` publishes a month on its consumer days, ``CascadeQuarterly`` a
quarter on its months, and ``CascadeWeekly`` a week on its consumer days (not below the
quarter). A consumer fails while ``<control>/fail-consumer`` exists; while
``<control>/repair-again`` exists, each consumer's success is followed by a new succeeded
attempt of its day (an upstream repaired again while the cascade runs). Every publication's
output is its period's key, so a republish differs only in its evidence.
"""

from __future__ import annotations

import datetime as dt
import uuid
from pathlib import Path

import luigi

import gatekeeper as gk


class CascadeDay(gk.BusinessDateTask):
    def run(self) -> None:
        pass


class CascadeConsumer(gk.GatedTask):
    control = luigi.Parameter(default="", significant=False)

    def requires(self) -> CascadeDay:
        return CascadeDay(business_date=self.business_date)

    def build(self) -> dict[str, str]:
        if self.control and (Path(self.control) / "fail-consumer").exists():
            raise RuntimeError("consumer down")
        return {"day": self.period_key}


@CascadeConsumer.event_handler(luigi.Event.SUCCESS)
def _repair_again(task: CascadeConsumer) -> None:
    """The day below ``task`` repaired once more, right after ``task`` published on it."""
    if task.control and (Path(task.control) / "repair-again").exists():
        with gk.open_ledger(task.ledger().url) as ledger:
            latest = ledger.latest("CascadeDay", task.period_key)
            attempt = 1 if latest is None else latest.attempt + 1
            now = dt.datetime.now(dt.timezone.utc)
            run_id = uuid.uuid4().hex
            ledger.record("CascadeDay", task.period_key, attempt, run_id, "succeeded", now)


def _consumer_days(task: gk.PeriodTask, first: object, control: str) -> list[CascadeConsumer]:
    days = CascadeConsumer.period_kind
    stop = task.period_kind.shift(first, 1)
    return [CascadeConsumer(business_date=d, control=control) for d in days.between(first, stop)]


class CascadeWeekly(gk.GatedWeekTask):
    control = luigi.Parameter(default="", significant=False)

    def requires(self) -> list[CascadeConsumer]:
        return _consumer_days(self, self.business_week, self.control)

    def build(self) -> dict[str, str]:
        return {"week": self.period_key}


class CascadeMonthly(gk.GatedMonthTask):
    control = luigi.Parameter(default="", significant=False)

    def requires(self) -> list[CascadeConsumer]:
        return _consumer_days(self, self.business_month, self.control)

    def build(self) -> dict[str, str]:
        return {"month": self.period_key}


class CascadeQuarterly(gk.GatedQuarterTask):
    control = luigi.Parameter(default="", significant=False)

    def requires(self) -> list[CascadeMonthly]:
        months = CascadeMonthly.period_kind
        first = self.business_quarter
        stop = self.period_kind.shift(first, 1)
        return [
            CascadeMonthly(business_month=m, control=self.control)
            for m in months.between(first, stop)
        ]

    def build(self) -> dict[str, str]:
        return {"quarter": self.period_key}
