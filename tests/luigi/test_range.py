"""RangeBusinessDaily / RangeBusinessHourly through real Luigi on a real ledger."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import luigi
import pytest
from luigi.tools.range import RangeEvent

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad
from tests.helpers.ledgers import T0, snapshot
from tests.helpers.luigi_support import build
from tests.helpers.luigi_tasks import Controlled, HourlyLoad, Trivial

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

UTC = dt.timezone.utc
START = dt.date(2026, 10, 1)
STOP = dt.date(2026, 10, 11)  # ten dates
NOW = int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp())


def ran_dates(folder: Path) -> list[str]:
    path = folder / "ran"
    return [line.split()[2] for line in path.read_text().splitlines()] if path.exists() else []


def daily(of: Any = Controlled, folder: Path | None = None, **kw: Any) -> gk.RangeBusinessDaily:
    params = {"of": of, "start": START, "stop": STOP, "now": NOW}
    if folder is not None:
        params["of_params"] = {"control": str(folder)}
    params.update(kw)
    return gk.RangeBusinessDaily(**params)


def succeeded(ledger: gk.Ledger, job: str) -> list[str]:
    return sorted(a.business_date for a in ledger.history(job) if a.state.value == "succeeded")


def dates(n: int, first: dt.date = START) -> list[str]:
    return [(first + dt.timedelta(days=i)).isoformat() for i in range(n)]


@pytest.mark.parametrize("inline", [True, False])
def test_contiguous_fill_stops_at_failure_and_leaves_later_dates(
    ledger_cfg: gk.Ledger, tmp_path: Path, inline: bool
) -> None:
    (tmp_path / "fail-2026-10-04").touch()
    result = build(daily(folder=tmp_path, inline=inline))
    assert not result.scheduling_succeeded
    assert ran_dates(tmp_path) == dates(4)  # 1st..4th, the 4th failed, nothing later started
    assert succeeded(ledger_cfg, "Controlled") == dates(3)
    (tmp_path / "fail-2026-10-04").unlink()
    assert build(daily(folder=tmp_path, inline=inline)).scheduling_succeeded
    assert succeeded(ledger_cfg, "Controlled") == dates(10)
    assert ran_dates(tmp_path) == dates(4) + dates(7, dt.date(2026, 10, 4))


@pytest.mark.parametrize(("inline", "workers"), [(True, 1), (True, 2), (False, 2)])
def test_forward_fill_continues_past_failure(
    ledger_cfg: gk.Ledger, tmp_path: Path, inline: bool, workers: int
) -> None:
    (tmp_path / "fail-2026-10-04").touch()
    result = build(daily(folder=tmp_path, strategy="forward", inline=inline), workers=workers)
    assert not result.scheduling_succeeded
    assert succeeded(ledger_cfg, "Controlled") == [d for d in dates(10) if d != "2026-10-04"]
    assert sorted(ran_dates(tmp_path)) == dates(10)  # each attempted once
    if workers == 1:
        assert ran_dates(tmp_path) == dates(10)  # oldest first
    (tmp_path / "fail-2026-10-04").unlink()
    assert build(
        daily(folder=tmp_path, strategy="forward", inline=inline), workers=workers
    ).scheduling_succeeded
    assert succeeded(ledger_cfg, "Controlled") == dates(10)
    assert [a.state.value for a in ledger_cfg.attempts("Controlled", "2026-10-04")] == [
        "failed",
        "succeeded",
    ]


def test_forward_fill_of_gated_task_schedules_its_requirements(ledger_cfg: gk.Ledger) -> None:
    rng = daily(of=DailySalesLoad, stop=dt.date(2026, 10, 6), strategy="forward")
    assert build(rng, workers=2).scheduling_succeeded
    assert all(ledger_cfg.publication("DailySalesLoad", day) for day in dates(5))


def test_reverse_fills_newest_first(ledger_cfg: gk.Ledger, tmp_path: Path) -> None:
    assert build(daily(folder=tmp_path, reverse=True, task_limit=3)).scheduling_succeeded
    assert succeeded(ledger_cfg, "Controlled") == dates(10)[-3:]
    assert ran_dates(tmp_path) == dates(10)[-3:][::-1]


def test_catchup_none_fills_latest_and_reports_the_rest(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    rng = daily(folder=tmp_path, catchup="none")
    plan = rng.plan()
    assert [d.isoformat() for d in plan.skipped_by_policy] == dates(9)
    assert build(rng).scheduling_succeeded
    assert succeeded(ledger_cfg, "Controlled") == ["2026-10-10"]
    after = daily(folder=tmp_path, catchup="none")
    assert after.complete()
    assert "9 skipped by policy" in after.plan().describe()


def test_complete_range_runs_nothing(ledger_cfg: gk.Ledger, tmp_path: Path) -> None:
    assert build(daily(folder=tmp_path)).scheduling_succeeded
    rows = snapshot(ledger_cfg)
    again = daily(folder=tmp_path)
    assert again.complete()
    assert build(again).scheduling_succeeded
    assert snapshot(ledger_cfg) == rows and len(ran_dates(tmp_path)) == 10


def test_range_over_gated_task_fills_dimensions_first(ledger_cfg: gk.Ledger) -> None:
    assert build(daily(of=DailySalesLoad, stop=dt.date(2026, 10, 4))).scheduling_succeeded
    for day in dates(3):
        pub = ledger_cfg.publication("DailySalesLoad", day)
        assert pub is not None and set(pub.evidence) == {"DimCustomer", "DimProduct"}
        for job, run_id in pub.evidence.items():
            latest = ledger_cfg.latest(job, day)
            assert latest is not None and latest.run_id == run_id
            assert latest.updated_at <= pub.published_at


def test_lateness_makes_a_date_due_exactly_at_end_plus_lateness(ledger_cfg: gk.Ledger) -> None:
    due_at = dt.datetime(2026, 10, 11, 2, 0, tzinfo=UTC)  # the 10th ends at midnight; +2h
    before = daily(of=Trivial, stop=None, lateness="2h", now=int(due_at.timestamp()) - 1)
    assert before.plan().due[-1] == dt.date(2026, 10, 9)
    assert before.plan().next_due_at == due_at
    at = daily(of=Trivial, stop=None, lateness="2h", now=int(due_at.timestamp()))
    assert at.plan().due[-1] == dt.date(2026, 10, 10)


def test_no_silent_days_back_trimming(ledger_cfg: gk.Ledger) -> None:
    rng = daily(of=Trivial, start=dt.date(2016, 1, 1), stop=None, task_limit=None)
    plan = rng.plan()
    assert plan.due[0] == dt.date(2016, 1, 1) and len(plan.gaps) == len(plan.due) > 3900


def test_range_fires_range_events(ledger_cfg: gk.Ledger) -> None:
    ledger_cfg.record("Trivial", "2026-10-01", 1, "t1", "succeeded", T0)
    seen: dict[str, Any] = {}
    for event in (RangeEvent.COMPLETE_COUNT, RangeEvent.COMPLETE_FRACTION, RangeEvent.DELAY):
        gk.RangeBusinessDaily.event_handler(event)(
            lambda family, value, event=event: seen.__setitem__(event, (family, value))
        )
    build(daily(of=Trivial))
    assert seen[RangeEvent.COMPLETE_COUNT] == ("Trivial", 1)
    assert seen[RangeEvent.COMPLETE_FRACTION] == ("Trivial", 0.1)
    assert seen[RangeEvent.DELAY] == ("Trivial", 9)


def test_range_requires_declares_only_and_deps_announces(ledger_cfg: gk.Ledger) -> None:
    """requires() is also what Luigi's tools call (luigi.tools.deps, deps_tree): it fires no
    event and starts no watch. Luigi's worker calls deps() as it takes the range up: the range
    announces itself there (its RangeEvents, its watch), once per invocation."""
    fired: list[tuple[str, int]] = []

    def handler(family: str, value: int) -> None:
        fired.append((family, value))

    gk.RangeBusinessDaily.event_handler(RangeEvent.COMPLETE_COUNT)(handler)
    try:
        rng = daily(of=Trivial, strategy="forward")
        chunks = rng.requires()
        assert chunks and rng.requires() == chunks
        assert fired == [] and rng.invocation.watch is None
        assert rng.deps() == chunks
        assert fired == [("Trivial", 0)] and rng.invocation.watch is not None
        assert rng.deps() == chunks
        assert fired == [("Trivial", 0)]
    finally:
        callbacks = luigi.Task._event_callbacks[gk.RangeBusinessDaily]
        callbacks[RangeEvent.COMPLETE_COUNT].discard(handler)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"catchup": "last:0"}, "catchup"),
        ({"catchup": "some"}, "catchup"),
        ({"lateness": "-2h"}, "lateness"),
        ({"timezone": "Mars/Olympus"}, "timezone"),
        ({"start": dt.date(2026, 10, 12)}, "stop"),
        ({"reverse": True, "strategy": "forward"}, "reverse"),
        ({"of": luigi.Task}, "of"),
        ({"of": HourlyLoad}, "of"),
    ],
)
def test_range_bad_input_names_the_field(
    ledger_cfg: gk.Ledger, kw: dict[str, Any], field: str
) -> None:
    rows = snapshot(ledger_cfg)
    with pytest.raises(gk.InvalidInput) as caught:
        daily(**{"of": Trivial, **kw}).complete()
    assert caught.value.field == field and snapshot(ledger_cfg) == rows
    assert not build(daily(**{"of": Trivial, **kw})).scheduling_succeeded
    assert snapshot(ledger_cfg) == rows


def test_hourly_range_fills_hours(ledger_cfg: gk.Ledger) -> None:
    rng = gk.RangeBusinessHourly(
        of=HourlyLoad, start=dt.datetime(2026, 10, 1, 0), stop=dt.datetime(2026, 10, 1, 6), now=NOW
    )
    assert build(rng).scheduling_succeeded
    keys = [a.business_date for a in ledger_cfg.history("HourlyLoad")]
    assert keys == [f"2026-10-01T0{h}:00Z" for h in range(6)]
    assert gk.RangeBusinessHourly(
        of=HourlyLoad, start=dt.datetime(2026, 10, 1, 0), stop=dt.datetime(2026, 10, 1, 6), now=NOW
    ).complete()
    assert HourlyLoad(business_hour=dt.datetime(2026, 10, 1, 3)).complete()


def test_task_limit_fills_at_most_that_many(ledger_cfg: gk.Ledger, tmp_path: Path) -> None:
    assert build(daily(folder=tmp_path, task_limit=4)).scheduling_succeeded
    assert succeeded(ledger_cfg, "Controlled") == dates(4)
    assert not daily(folder=tmp_path).complete()


@pytest.mark.parametrize("strategy", ["contiguous", "forward"])
@pytest.mark.parametrize("repaired", [[2], list(range(10))], ids=["one", "all"])
def test_the_same_range_built_again_in_one_process_is_a_new_invocation(
    ledger_cfg: gk.Ledger, tmp_path: Path, strategy: str, repaired: list[int]
) -> None:
    """Luigi keeps one instance per parameters in a process across ``luigi.build`` calls (a
    process that builds a range every hour gets the same one, and the same chunks when the
    same periods are missing again): each build is an invocation of its own, which plans
    afresh and refills the periods repaired since the last."""
    rng = daily(folder=tmp_path, strategy=strategy)
    assert luigi.build([rng], local_scheduler=True, log_level="WARNING")
    assert succeeded(ledger_cfg, "Controlled") == dates(10)
    for i in repaired:
        ledger_cfg.record("Controlled", dates(10)[i], 2, f"failed-repair-{i}", "failed", T0)
    assert daily(folder=tmp_path, strategy=strategy) is rng  # Luigi's instance cache
    assert luigi.build([rng], local_scheduler=True, log_level="WARNING")
    for i in repaired:
        latest = ledger_cfg.latest("Controlled", dates(10)[i])
        assert latest is not None and (latest.attempt, latest.state.value) == (3, "succeeded")
    assert ran_dates(tmp_path) == [*dates(10), *(dates(10)[i] for i in repaired)]
