"""A gated task for every period kind: ``GatedHourTask`` is GatedTask over hours (the gate
shut while an hour's upstream failed, nothing written; one publication per hour with that
hour's evidence; ``RangeBusinessHourly`` fills it), and ``GatedWeekTask`` /
``GatedMonthTask`` / ``GatedQuarterTask`` publish once per period, gated on the days they
require."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import luigi
import pytest

import gatekeeper as gk
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import build

pytestmark = pytest.mark.luigi

UTC = dt.timezone.utc
NOW = int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp())
H5 = dt.datetime(2026, 10, 23, 5)


class EveryKindEvents(gk.BusinessHourTask):
    """Fails while ``<control>/fail`` exists."""

    control = luigi.Parameter(significant=False)

    def run(self) -> None:
        if (Path(self.control) / "fail").exists():
            raise RuntimeError("feed down")


class EveryKindHourly(gk.GatedHourTask):
    control = luigi.Parameter(significant=False)

    def requires(self) -> EveryKindEvents:
        return EveryKindEvents(business_hour=self.business_hour, control=self.control)

    def build(self) -> dict[str, str]:
        return {"hour": self.period_key}


class EveryKindDay(gk.BusinessDateTask):
    def run(self) -> None:
        pass


def _days(task: gk.PeriodTask, first: dt.date) -> list[EveryKindDay]:
    stop = task.period_kind.shift(first, 1)
    days = EveryKindDay.period_kind
    return [EveryKindDay(business_date=day) for day in days.between(first, stop)]


class EveryKindWeekly(gk.GatedWeekTask):
    def requires(self) -> list[EveryKindDay]:
        return _days(self, self.business_week)

    def build(self) -> dict[str, str]:
        return {"week": self.period_key}


class EveryKindMonthly(gk.GatedMonthTask):
    def requires(self) -> list[EveryKindDay]:
        return _days(self, self.business_month)

    def build(self) -> dict[str, str]:
        return {"month": self.period_key}


class EveryKindMonth(gk.BusinessMonthTask):
    def run(self) -> None:
        pass


class EveryKindQuarterly(gk.GatedQuarterTask):
    """Gated on its three months (a coarser kind than days: each month for its own key)."""

    def requires(self) -> list[EveryKindMonth]:
        months = EveryKindMonth.period_kind
        first = self.business_quarter
        stop = self.period_kind.shift(first, 1)
        return [EveryKindMonth(business_month=m) for m in months.between(first, stop)]

    def build(self) -> dict[str, str]:
        return {"quarter": self.period_key}


def test_gated_hour_task_is_gated_per_hour(ledger_cfg: gk.Ledger, tmp_path: Path) -> None:
    (tmp_path / "fail").touch()
    before = snapshot(ledger_cfg)
    task = EveryKindHourly(business_hour=H5, control=str(tmp_path))
    assert not build(task).scheduling_succeeded
    key = "2026-10-23T05:00Z"
    assert ledger_cfg.publication("EveryKindHourly", key) is None
    assert ledger_cfg.attempts("EveryKindHourly", key) == []  # the gate shut: not attempted
    assert [a.state.value for a in ledger_cfg.attempts("EveryKindEvents", key)] == ["failed"]
    assert snapshot(ledger_cfg) != before  # only the upstream's failure was written

    (tmp_path / "fail").unlink()
    assert build(EveryKindHourly(business_hour=H5, control=str(tmp_path))).scheduling_succeeded
    published = ledger_cfg.publication("EveryKindHourly", key)
    upstream = ledger_cfg.latest("EveryKindEvents", key)
    assert published is not None and upstream is not None
    assert published.evidence == {"EveryKindEvents": upstream.run_id}
    assert published.fingerprint == gk.fingerprint({"hour": key})
    assert EveryKindHourly(business_hour=H5, control=str(tmp_path)).complete()


def test_range_business_hourly_fills_a_gated_hour_task(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    fill = gk.RangeBusinessHourly(
        of=EveryKindHourly,
        of_params={"control": str(tmp_path)},
        start=dt.datetime(2026, 10, 23, 0),
        stop=dt.datetime(2026, 10, 23, 3),
        now=NOW,
    )
    assert build(fill).scheduling_succeeded
    hours = [f"2026-10-23T0{h}:00Z" for h in range(3)]
    for key in hours:
        published = ledger_cfg.publication("EveryKindHourly", key)
        assert published is not None and published.requirements == (("EveryKindEvents", key),)
    assert ledger_cfg.publication("EveryKindHourly", "2026-10-23T03:00Z") is None  # stop: out


@pytest.mark.parametrize(
    ("cls", "param", "first", "key", "required"),
    [
        (EveryKindWeekly, "business_week", dt.date(2026, 10, 19), "2026-W43", ("EveryKindDay", 7)),
        (EveryKindMonthly, "business_month", dt.date(2026, 10, 1), "2026-10", ("EveryKindDay", 31)),
        (
            EveryKindQuarterly,
            "business_quarter",
            dt.date(2026, 10, 1),
            "2026-Q4",
            ("EveryKindMonth", 3),
        ),
    ],
)
def test_coarse_gated_tasks_publish_once_per_period_on_their_days(
    ledger_cfg: gk.Ledger,
    cls: type[gk.GatedPeriodTask],
    param: str,
    first: dt.date,
    key: str,
    required: tuple[str, int],
) -> None:
    task = cls(**{param: first})
    assert task.period_key == key
    assert build(task).scheduling_succeeded
    published = ledger_cfg.publication(cls.__name__, key)
    assert published is not None
    job, count = required
    assert len(published.requirements) == count
    assert {name for name, _ in published.requirements} == {job}
    assert published.requirements[0][1] == (
        first.isoformat() if job == "EveryKindDay" else first.strftime("%Y-%m")
    )
