"""Inline periods reported to a local scheduler leave its task table once settled DONE
(gatekeeper/luigi/fill/local.py), unless a task depends on them; the run looks the same."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import luigi
import luigi.interface
import luigi.scheduler
import pytest
from luigi.scheduler import DONE, FAILED, RUNNING
from luigi.task_register import Register

import gatekeeper as gk
from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi.fill.local import LocalReports
from tests.helpers.luigi_tasks import Trivial

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

UTC = dt.timezone.utc
START = dt.date(2026, 10, 1)
NOW = int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp())


def report(reports: LocalReports, task_id: str, status: str) -> None:
    reports.call(
        "add_task",
        {"task_id": task_id, "worker": "w", "status": status, "runnable": status == DONE},
    )


def test_local_reports_forget_a_done_period_only_their_reports_put_in_the_table() -> None:
    scheduler = luigi.scheduler.Scheduler()
    reports = LocalReports(scheduler)
    report(reports, "alone", DONE)
    report(reports, "announced", RUNNING)
    assert luigi_compat.scheduler_has_task(scheduler, "announced")
    report(reports, "announced", DONE)
    scheduler.add_task(task_id="downstream", worker="w", deps=["needed"])
    report(reports, "needed", DONE)  # a dependent named it first: it stays, DONE
    report(reports, "broken", RUNNING)
    report(reports, "broken", FAILED)  # a failure stays, for the retry policy
    listed = scheduler.task_list("", "")
    assert {task_id: task["status"] for task_id, task in listed.items()} == {
        "downstream": "PENDING",
        "needed": DONE,
        "broken": FAILED,
    }


def test_forget_done_task_leaves_any_other_status_alone() -> None:
    scheduler = luigi.scheduler.Scheduler()
    scheduler.add_task(task_id="running", worker="w", status=RUNNING)
    scheduler.add_task(task_id="done", worker="w", status=DONE)
    for task_id in ("running", "done", "never-added"):
        luigi_compat.forget_done_task(scheduler, task_id)
    assert list(scheduler.task_list("", "")) == ["running"]


def test_missing_local_scheduler_internals_are_named() -> None:
    scheduler = luigi.scheduler.Scheduler()
    del scheduler._state
    with pytest.raises(luigi_compat.LuigiInternalMissing, match="Scheduler._state"):
        luigi_compat.scheduler_has_task(scheduler, "x")
    scheduler._state = object()  # type: ignore[assignment]
    with pytest.raises(luigi_compat.LuigiInternalMissing, match="SimpleTaskState.has_task"):
        luigi_compat.forget_done_task(scheduler, "x")


class NeedsOnePeriod(luigi.Task):
    """Depends on one period the range also fills: it must still run after the range."""

    marker = luigi.Parameter()

    def requires(self) -> Any:
        return Trivial(business_date=START + dt.timedelta(days=3))

    def complete(self) -> bool:
        return Path(self.marker).exists()

    def run(self) -> None:
        Path(self.marker).write_text("ran")


class KeptScheduler(luigi.interface._WorkerSchedulerFactory):
    """Luigi's factory, keeping the local scheduler it creates (to read its table after)."""

    created: list[luigi.scheduler.Scheduler] = []

    def create_local_scheduler(self) -> luigi.scheduler.Scheduler:
        scheduler = super().create_local_scheduler()
        self.created.append(scheduler)
        return scheduler


@pytest.mark.parametrize("workers", [1, 2])
def test_a_local_fill_leaves_its_periods_out_of_the_table_but_not_a_dependency(
    sqlite_url: str, tmp_path: Path, workers: int
) -> None:
    from tests.helpers.luigi_support import configure

    for _ in configure({"ledger_url": sqlite_url, "lateness": "0s", "timezone": "UTC"}):
        Register.clear_instance_cache()
        KeptScheduler.created.clear()
        window = {"start": START, "stop": START + dt.timedelta(days=40), "now": NOW}
        fill = gk.RangeBusinessDaily(of=Trivial, inline=True, **window)  # whatever the config
        downstream = NeedsOnePeriod(marker=str(tmp_path / "downstream"))
        result = luigi.build(
            [downstream, fill],
            worker_scheduler_factory=KeptScheduler(),
            local_scheduler=True,
            detailed_summary=True,
            workers=workers,
            log_level="WARNING",
        )
        assert result.scheduling_succeeded, result.summary_text
        assert (tmp_path / "downstream").read_text() == "ran"
        assert "* 44 ran successfully" in result.summary_text, result.summary_text
        assert "- 40 Trivial(" in result.summary_text, result.summary_text
        listed = KeptScheduler.created[0].task_list("", "")
        periods = sorted(t for t in listed if t.startswith("Trivial_"))
        assert periods == [Trivial(business_date=START + dt.timedelta(days=3)).task_id]
        with gk.open_ledger(sqlite_url) as ledger:
            assert len([a for a in ledger.history("Trivial") if a.state.value == "succeeded"]) == 40
