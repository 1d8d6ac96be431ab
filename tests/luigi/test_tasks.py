"""BusinessDateTask and GatedTask through real Luigi (local scheduler) on a real ledger."""

from __future__ import annotations

import datetime as dt
import functools
from pathlib import Path
from typing import Any

import luigi
import luigi.tools.range
import pytest

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad, DimCustomer, DimProduct, sales_total
from gatekeeper.luigi import targets as gk_targets
from gatekeeper.luigi import tasks as gk_tasks
from tests.helpers.ledgers import T0, count_rows, snapshot
from tests.helpers.luigi_support import build, configure, failures_of
from tests.helpers.luigi_tasks import Controlled, ExternalGated, RegionLoad, Report, Trivial

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

D = dt.date(2026, 10, 23)


def states(ledger: gk.Ledger, job: str, date: dt.date = D) -> list[tuple[int, str]]:
    return [(a.attempt, a.state.value) for a in ledger.attempts(job, date)]


def test_job_id_is_family_plus_significant_params() -> None:
    assert Trivial.job_id_for() == "Trivial"
    assert RegionLoad.job_id_for(region="eu") == "RegionLoad(region=eu, tier=1)"
    named = RegionLoad.job_id_for(region="eu", tier="2", debug=True)
    assert named == "RegionLoad(region=eu, tier=2)"
    task = RegionLoad(business_date=D, region="eu", attempt=3, debug=True)
    assert task.job_id == "RegionLoad(region=eu, tier=1)"
    with pytest.raises(gk.InvalidInput, match="region"):
        RegionLoad.job_id_for()


def test_attempts_allocated_across_failing_and_succeeding_runs(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    (tmp_path / "fail").touch()
    task = Controlled(business_date=D, control=str(tmp_path))
    assert not build(task).scheduling_succeeded
    assert not build(task).scheduling_succeeded
    (tmp_path / "fail").unlink()
    assert build(task).scheduling_succeeded
    assert states(ledger_cfg, "Controlled") == [(1, "failed"), (2, "failed"), (3, "succeeded")]
    errors = [a.error for a in ledger_cfg.attempts("Controlled", D)]
    assert errors[0] == "RuntimeError: injected failure for 2026-10-23" and errors[2] is None
    assert build(task).scheduling_succeeded  # complete now: nothing runs
    assert states(ledger_cfg, "Controlled")[-1] == (3, "succeeded")
    assert (tmp_path / "ran").read_text().count("\n") == 3


def test_exception_in_run_is_recorded_failed_and_reraised(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    (tmp_path / "fail").touch()
    task = Controlled(business_date=D, control=str(tmp_path))
    with pytest.raises(RuntimeError, match="injected failure"):
        task.run()
    assert states(ledger_cfg, "Controlled") == [(1, "failed")]
    assert task.run_id == ledger_cfg.attempts("Controlled", D)[0].run_id


def test_explicit_attempt_below_max_is_refused_before_run(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    ledger_cfg.record("Controlled", D, 2, "old-2", "failed", T0)
    rows = snapshot(ledger_cfg)
    for wanted in (1, 2):
        task = Controlled(business_date=D, attempt=wanted, control=str(tmp_path))
        with pytest.raises(gk.StateConflict, match="attempt 2 is already recorded"):
            task.run()
        assert not build(task).scheduling_succeeded
    assert not (tmp_path / "ran").exists() and snapshot(ledger_cfg) == rows
    assert build(Controlled(business_date=D, attempt=5, control=str(tmp_path))).scheduling_succeeded
    assert states(ledger_cfg, "Controlled") == [(2, "failed"), (5, "succeeded")]


def test_explicit_attempt_reruns_a_complete_date_once_then_is_refused(
    ledger_cfg: gk.Ledger,
) -> None:
    assert build(DailySalesLoad(business_date=D)).scheduling_succeeded
    published = ledger_cfg.publication("DailySalesLoad", D)
    repair = DimCustomer(business_date=D, attempt=2)
    assert not repair.complete()
    assert build(repair).scheduling_succeeded
    assert repair.complete()  # judged when first asked: the run of attempt 2 is complete
    rows = snapshot(ledger_cfg)
    again = DimCustomer(business_date=D, attempt=2)  # asked anew: 2 is already recorded
    with pytest.raises(gk.StateConflict, match="recorded attempts: 1, 2 .the latest succeeded"):
        again.complete()
    assert not build(DimCustomer(business_date=D, attempt=2)).scheduling_succeeded
    assert snapshot(ledger_cfg) == rows
    assert states(ledger_cfg, "DimCustomer") == [(1, "succeeded"), (2, "succeeded")]
    assert ledger_cfg.publication("DailySalesLoad", D) == published  # evidence untouched


def test_gate_closed_gated_task_does_not_run_and_names_blockers(ledger_cfg: gk.Ledger) -> None:
    ledger_cfg.record("DimCustomer", D, 1, "c1", "succeeded", T0)
    ledger_cfg.record("DimProduct", D, 1, "p1", "succeeded", T0)
    ledger_cfg.record("DimProduct", D, 2, "p2", "failed", T0)
    rows = snapshot(ledger_cfg)
    ExternalGated.built = 0
    messages = failures_of(ExternalGated(business_date=D))
    assert len(messages) == 1
    assert messages[0].startswith("NotReady") and "DimProduct (attempt 2 failed)" in messages[0]
    assert ExternalGated.built == 0 and snapshot(ledger_cfg) == rows


def test_backfill_that_ran_today_does_not_make_today_ready(ledger_cfg: gk.Ledger) -> None:
    backfill = dt.date(2026, 10, 16)
    assert build(
        DimCustomer(business_date=backfill), DimProduct(business_date=backfill)
    ).scheduling_succeeded
    ran_on = ledger_cfg.latest("DimCustomer", backfill)
    assert ran_on is not None and ran_on.started_at.date() != backfill  # it ran "today"
    messages = failures_of(ExternalGated(business_date=D))
    assert "DimCustomer (missing)" in messages[0] and "DimProduct (missing)" in messages[0]
    assert not gk.check_ready(ledger_cfg, ["DimCustomer", "DimProduct"], D)
    assert gk.check_ready(ledger_cfg, ["DimCustomer", "DimProduct"], backfill)


def test_gated_task_publishes_with_latest_upstream_run_ids(ledger_cfg: gk.Ledger) -> None:
    task = DailySalesLoad(business_date=D)
    assert build(task).scheduling_succeeded
    expected = {
        job: ledger_cfg.latest(job, D).run_id  # type: ignore[union-attr]
        for job in ("DimCustomer", "DimProduct")
    }
    assert task.output().evidence() == expected
    assert task.output().exists() and task.complete()
    assert sales_total(ledger_cfg, D) is not None
    before = snapshot(ledger_cfg)
    assert build(DailySalesLoad(business_date=D)).scheduling_succeeded  # nothing to do
    assert snapshot(ledger_cfg) == before


def test_gated_task_rerun_with_same_output_is_noop_and_different_is_conflict(
    ledger_cfg: gk.Ledger,
) -> None:
    assert build(DailySalesLoad(business_date=D)).scheduling_succeeded
    published = ledger_cfg.publication("DailySalesLoad", D)
    again = DailySalesLoad(business_date=D, attempt=2)
    again.run()  # same payload: a retry, nothing written
    assert ledger_cfg.publication("DailySalesLoad", D) == published
    assert count_rows(ledger_cfg, "sales_totals") == 1

    class Changed(DailySalesLoad):  # the same job, a different output
        @classmethod
        def job_id_for(cls, **params: Any) -> str:
            return "DailySalesLoad"

        def build(self) -> dict[str, int]:
            return {"cents": 1}

    with pytest.raises(gk.PublicationConflict, match="fingerprint"):
        Changed(business_date=D, attempt=3).run()
    assert states(ledger_cfg, "DailySalesLoad")[-1] == (3, "failed")
    assert ledger_cfg.publication("DailySalesLoad", D) == published


def test_gated_task_upstream_for_other_date_is_required_for_that_date(
    ledger_cfg: gk.Ledger,
) -> None:
    class Yesterday(gk.GatedTask):
        def requires(self) -> Trivial:
            return Trivial(business_date=self.business_date - dt.timedelta(days=1))

        def build(self) -> int:
            return 1

    assert Yesterday(business_date=D).required_jobs() == [("Trivial", "2026-10-22")]

    class DeclaredYesterday(Yesterday):  # declaring it again changes nothing
        def required_jobs(self) -> list[Any]:
            return [("Trivial", self.business_date - dt.timedelta(days=1))]

    for consumer in (Yesterday, DeclaredYesterday):
        assert build(consumer(business_date=D)).scheduling_succeeded
        pub = ledger_cfg.publication(consumer.__name__, D)
        assert pub is not None and pub.items[0].business_date == "2026-10-22"
        upstream = ledger_cfg.latest("Trivial", D - dt.timedelta(1))
        assert upstream is not None and pub.evidence == {"Trivial@2026-10-22": upstream.run_id}


def query_counter(ledger: gk.Ledger) -> list[str]:
    """Statements run on a SQLite ledger's connection from now on."""
    seen: list[str] = []
    ledger.connection.set_trace_callback(seen.append)
    return seen


def test_bulk_complete_answers_3653_dates_in_one_query(sqlite_url: str) -> None:
    dates = [dt.date(2016, 1, 1) + dt.timedelta(days=i) for i in range(3653)]
    for _ in configure({"ledger_url": sqlite_url}):
        ledger = gk_tasks.shared_ledger()
        with ledger.transaction():
            for i, date in enumerate(dates):
                if i % 10:
                    ledger.record("Trivial", date, 1, f"r{i}", "succeeded", T0)
        seen = query_counter(ledger)
        done = Trivial.bulk_complete(dates)
        assert len(seen) == 1 and seen[0].startswith("SELECT")
        assert done == [d for i, d in enumerate(dates) if i % 10]
        seen.clear()
        rng = luigi.tools.range.RangeDaily(of=Trivial, start=dates[0], stop=dates[-1])
        missing = rng.missing_datetimes([dt.datetime(d.year, d.month, d.day) for d in dates])
        assert len(seen) == 1 and len(missing) == 366


def test_bulk_complete_with_of_params_partial(ledger_cfg: gk.Ledger) -> None:
    ledger_cfg.record("RegionLoad(region=eu, tier=1)", D, 1, "eu", "succeeded", T0)
    ledger_cfg.record(
        "RegionLoad(region=us, tier=1)", D - dt.timedelta(1), 1, "us", "succeeded", T0
    )
    eu = functools.partial(RegionLoad, region="eu")
    dates = [D - dt.timedelta(1), D]
    assert RegionLoad.bulk_complete.__func__(eu, dates) == [D]  # type: ignore[attr-defined]
    assert RegionLoad.bulk_complete(
        [
            {"business_date": D, "region": "us"},
            {"business_date": D - dt.timedelta(1), "region": "us"},
        ]
    ) == [{"business_date": D - dt.timedelta(1), "region": "us"}]
    in_bulk = RegionLoad.bulk_complete.__func__(eu, dates)  # type: ignore[attr-defined]
    for date in dates:
        task = RegionLoad(business_date=date, region="eu")
        assert task.complete() == (task.business_date in in_bulk)


def test_gated_bulk_complete_requires_publication(ledger_cfg: gk.Ledger) -> None:
    ledger_cfg.record("ExternalGated", D, 1, "g1", "succeeded", T0)  # succeeded, never published
    assert ExternalGated.bulk_complete([D]) == []
    assert not ExternalGated(business_date=D).complete()


def test_file_publication_written_atomically_and_checked(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    (tmp_path / "content").write_text("region,cents\neu,17500\n")
    task = Report(business_date=D, folder=str(tmp_path))
    assert build(task).scheduling_succeeded
    path = tmp_path / "report-2026-10-23.csv"
    assert path.read_text() == "region,cents\neu,17500\n"
    pub = ledger_cfg.publication("Report", D)
    assert pub is not None and pub.location == str(path)
    assert pub.fingerprint == gk_targets.file_sha256(str(path))
    params = {"business_date": D, "folder": str(tmp_path)}
    assert task.output().exists() and Report.bulk_complete([params]) == [params]
    (tmp_path / "content").write_text("region,cents\neu,1\n")
    with pytest.raises(gk.PublicationConflict, match="left untouched"):
        Report(business_date=D, folder=str(tmp_path), attempt=9).run()
    assert path.read_text() == "region,cents\neu,17500\n"
    assert not [p for p in tmp_path.iterdir() if ".tmp-" in p.name]
    path.write_text("tampered\n")
    with pytest.raises(gk.OutputMismatch, match="the publication recorded"):
        task.output().exists()
    path.unlink()
    with pytest.raises(gk.OutputMismatch, match="missing"):
        task.output().exists()


class AbandonedThenFails(gk.BusinessDateTask):
    """Its attempt is taken over (recorded abandoned) while it runs, then it fails."""

    def run(self) -> None:
        assert self.run_id is not None and self.attempt_ordinal is not None
        self.ledger().record(
            self.job_id, self.business_date, self.attempt_ordinal, self.run_id, "abandoned", T0
        )
        raise RuntimeError("the run's own error")


def test_run_error_stays_in_front_when_failure_cannot_be_recorded(ledger_cfg: gk.Ledger) -> None:
    with pytest.raises(RuntimeError, match="the run's own error"):
        AbandonedThenFails(business_date=D).run()
    assert states(ledger_cfg, "AbandonedThenFails") == [(1, "abandoned")]


class Ungated(gk.GatedTask):
    def build(self) -> int:
        return 1


def test_gated_task_without_upstream_jobs_is_refused(ledger_cfg: gk.Ledger) -> None:
    rows = snapshot(ledger_cfg)
    with pytest.raises(gk.InvalidInput, match="requires no gatekeeper job"):
        Ungated(business_date=D).run()
    assert snapshot(ledger_cfg) == rows


class ConfiguredLoad(gk.BusinessDateTask):
    """Parameters from luigi.cfg, a list and a default, to compare with Luigi's own values."""

    region = luigi.Parameter(default="eu")
    tags = luigi.ListParameter(default=["a", "b"])


def luigi_param_values(cls: Any, args: Any, kwargs: Any) -> Any:
    """What Luigi's own ``Task.get_param_values`` gives for ``cls``."""
    return luigi.Task.get_param_values.__func__(cls, cls.get_params(), args, kwargs)  # type: ignore[attr-defined]


def test_get_param_values_equals_luigis_and_rereads_luigi_cfg_once_the_cache_is_cleared() -> None:
    calls = [
        ((), {"business_date": D}),
        ((), {"business_date": dt.date(2026, 10, 24), "tags": ["x"]}),
        ((), {"business_date": D, "region": "us", "attempt": 2}),
        ((D,), {}),
    ]
    for _ in configure({}):
        cfg = luigi.configuration.get_config()
        cfg.add_section("ConfiguredLoad")
        try:
            cfg.set("ConfiguredLoad", "region", "apac")
            luigi.task_register.Register.clear_instance_cache()
            for _round in range(2):  # the first call of a generation is Luigi's, then remembered
                for args, kwargs in calls:
                    ours = ConfiguredLoad.get_param_values(
                        ConfiguredLoad.get_params(), args, kwargs
                    )
                    assert ours == luigi_param_values(ConfiguredLoad, args, kwargs)
            assert ConfiguredLoad(business_date=D).region == "apac"
            cfg.set("ConfiguredLoad", "region", "latam")
            luigi.task_register.Register.clear_instance_cache()
            assert ConfiguredLoad(business_date=D).region == "latam"
            assert repr(ConfiguredLoad(business_date=D)) == (
                'ConfiguredLoad(business_date=2026-10-23, region=latam, tags=["a", "b"])'
            )
            with pytest.raises(luigi.parameter.UnknownParameterException, match="nope"):
                ConfiguredLoad(business_date=D, nope=1)
            with pytest.raises(luigi.parameter.MissingParameterException, match="business_date"):
                ConfiguredLoad()
        finally:
            cfg.remove_section("ConfiguredLoad")


def test_range_param_values_equal_luigis_and_reread_luigi_cfg_once_the_cache_is_cleared() -> None:
    """A range's parameters not passed (luigi.cfg's ``[RangeBusinessDaily]``, the defaults) are
    what Luigi's own ``get_param_values`` gives, remembered only until Luigi's instance cache
    is cleared."""
    rng = gk.RangeBusinessDaily
    calls = [
        ((), {"of": ConfiguredLoad, "start": D}),
        ((), {"of": ConfiguredLoad, "start": D, "stop": dt.date(2026, 10, 30), "now": 5}),
        ((), {"of": ConfiguredLoad, "start": D, "of_params": {"region": "us"}, "reverse": True}),
        ((ConfiguredLoad,), {"start": D}),
    ]
    for _ in configure({}):
        cfg = luigi.configuration.get_config()
        cfg.add_section("RangeBusinessDaily")
        try:
            cfg.set("RangeBusinessDaily", "lateness", "2h")
            luigi.task_register.Register.clear_instance_cache()
            for _round in range(2):  # the first call of a generation is Luigi's, then remembered
                for args, kwargs in calls:
                    ours = rng.get_param_values(rng.get_params(), args, kwargs)
                    assert ours == luigi_param_values(rng, args, kwargs)
            assert rng(of=ConfiguredLoad, start=D).lateness == "2h"
            cfg.set("RangeBusinessDaily", "lateness", "30m")
            assert rng(of=ConfiguredLoad, start=D, now=7).lateness == "2h"  # same generation
            luigi.task_register.Register.clear_instance_cache()
            assert rng(of=ConfiguredLoad, start=D, now=7).lateness == "30m"
            with pytest.raises(luigi.parameter.UnknownParameterException, match="nope"):
                rng(of=ConfiguredLoad, start=D, nope=1)
            with pytest.raises(luigi.parameter.MissingParameterException, match="start"):
                rng(of=ConfiguredLoad)
        finally:
            cfg.remove_section("RangeBusinessDaily")
