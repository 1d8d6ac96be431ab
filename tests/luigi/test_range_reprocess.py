"""``--reprocess missing|failed|stale|all`` on the ranges (issue 50, item 3), on both backends.

The range asks the planner ``gatekeeper plan`` shows (``core/backfill.py``), so for each
policy the periods a real Luigi fill (``luigi.build``, in process) gave a new attempt are
exactly those ``gatekeeper plan --reprocess P`` listed to run, rerun or republish, for the same
ledger and clock; a second invocation then writes nothing (but ``all`` on a job that does not
publish: each invocation is a new attempt of every period, as its plan says). A bad policy is
refused naming ``reprocess`` before anything is written.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad, DimCustomer
from gatekeeper.cli import main
from tests.helpers.ledgers import T0, snapshot
from tests.helpers.luigi_support import build
from tests.helpers.luigi_tasks import Controlled
from tests.luigi.test_gated_every_kind import EveryKindDay, EveryKindMonthly

pytestmark = pytest.mark.luigi

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 1, tzinfo=UTC)
START, STOP = dt.date(2026, 10, 1), dt.date(2026, 10, 8)
DAYS = [(START + dt.timedelta(days=n)).isoformat() for n in range((STOP - START).days)]
POLICIES = ("missing", "failed", "stale", "all")


def planned(
    capsys: pytest.CaptureFixture[str], url: str, job: str, policy: str, *more: str
) -> list[str]:
    """The periods ``gatekeeper plan`` lists to act on (run, rerun, republish), in order."""
    capsys.readouterr()
    args = ["--start", START.isoformat(), "--stop", STOP.isoformat(), "--catchup", "last:2"]
    args += more
    when = ["--now", NOW.isoformat(), "--lateness", "0s", "--timezone", "UTC"]
    code = main(["--ledger", url, "--json", "plan", job, *args, *when, "--reprocess", policy])
    data = json.loads(capsys.readouterr().out)
    assert code == (1 if data["order"] else 0)
    return list(data["order"])


def attempts(ledger: gk.Ledger, job: str) -> dict[str, int]:
    """Period -> how many attempts the job has recorded for it."""
    return {day: len(ledger.attempts(job, day)) for day in DAYS}


def ran(before: dict[str, int], after: dict[str, int]) -> list[str]:
    """The periods that got a new attempt, in period order."""
    return [day for day in DAYS if after[day] > before[day]]


def fill(of: Any, policy: str, **of_params: Any) -> Any:
    """A real Luigi fill of the window at NOW under ``policy`` (catch-up: the last 2)."""
    rng = gk.RangeBusinessDaily(
        of=of,
        of_params=of_params,
        start=START,
        stop=STOP,
        now=int(NOW.timestamp()),
        catchup="last:2",
        reprocess=policy,
    )
    return build(rng)


@pytest.mark.parametrize("policy", POLICIES)
def test_range_reprocess_runs_what_plan_lists_for_a_job_that_does_not_publish(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    policy: str,
) -> None:
    # 10-02 failed (outside the catch-up of the last 2), 10-06 missing (inside), others done
    (tmp_path / "fail-2026-10-02").write_text("disk full")
    for day in DAYS:
        if day != "2026-10-06":
            build(Controlled(business_date=dt.date.fromisoformat(day), control=str(tmp_path)))
    (tmp_path / "fail-2026-10-02").unlink()
    expected = {
        "missing": ["2026-10-06"],
        "failed": ["2026-10-02", "2026-10-06"],
        "stale": ["2026-10-06"],
        "all": DAYS,
    }[policy]
    assert planned(capsys, ledger_url, "Controlled", policy) == expected
    before = attempts(ledger_cfg, "Controlled")
    assert fill(Controlled, policy, control=str(tmp_path)).scheduling_succeeded
    assert ran(before, attempts(ledger_cfg, "Controlled")) == expected
    failed = [
        d for d in DAYS if ledger_cfg.latest("Controlled", d).state is not gk.RunState.SUCCEEDED
    ]  # type: ignore[union-attr]
    assert failed == ([] if policy in ("failed", "all") else ["2026-10-02"])

    again = planned(capsys, ledger_url, "Controlled", policy)
    rows, before = snapshot(ledger_cfg), attempts(ledger_cfg, "Controlled")
    assert fill(Controlled, policy, control=str(tmp_path)).scheduling_succeeded
    if policy == "all":  # every invocation of `all` is a new attempt of every period
        assert again == DAYS
        assert ran(before, attempts(ledger_cfg, "Controlled")) == DAYS
    else:
        assert again == []
        assert snapshot(ledger_cfg) == rows


def sales_history(ledger: gk.Ledger) -> None:
    """DailySalesLoad published 10-01 .. 10-05 and 10-07; 10-06 missing; DimCustomer
    repaired on 10-03 (its publication stale); a failed attempt 2 of 10-01 (published by
    attempt 1: outside the catch-up, incomplete)."""
    for day in DAYS:
        if day != "2026-10-06":
            build(DailySalesLoad(business_date=dt.date.fromisoformat(day)))
    build(DimCustomer(business_date=dt.date(2026, 10, 3), attempt=2))
    ledger.record("DailySalesLoad", "2026-10-01", 2, "sales-01-2", "failed", T0, error="boom")


@pytest.mark.parametrize("policy", POLICIES)
def test_range_reprocess_runs_what_plan_lists_for_a_publisher(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
    policy: str,
) -> None:
    sales_history(ledger_cfg)
    expected = {
        "missing": ["2026-10-06"],
        "failed": ["2026-10-01", "2026-10-06"],
        "stale": ["2026-10-03", "2026-10-06"],
        "all": DAYS,
    }[policy]
    assert planned(capsys, ledger_url, "DailySalesLoad", policy) == expected
    before = attempts(ledger_cfg, "DailySalesLoad")
    with caplog.at_level(logging.INFO, logger="luigi-interface.gatekeeper"):
        assert fill(DailySalesLoad, policy).scheduling_succeeded
    assert ran(before, attempts(ledger_cfg, "DailySalesLoad")) == expected
    closing = [r.getMessage() for r in caplog.records if "this run)" in r.getMessage()]
    beyond = {"missing": "", "failed": "; reprocessed 1 (--reprocess failed)"}
    beyond |= {"stale": "; republished 1 stale (DailySalesLoad 1)"}
    beyond |= {"all": "; reprocessed 6 (--reprocess all)"}
    done = policy in ("failed", "all")  # else 10-01 stays failed, outside the catch-up
    assert closing == [  # the gap 10-06 filled, the others reprocessed beyond it
        f"gatekeeper: RangeBusinessDaily DailySalesLoad: filled {7 if done else 6}/7 due "
        "(1 this run)" + beyond[policy] + ("" if done else "; 1 skipped by policy")
    ]
    reasons = {
        day: ledger_cfg.publication("DailySalesLoad", day).reason  # type: ignore[union-attr]
        for day in DAYS
    }
    if policy == "stale":
        assert reasons["2026-10-03"] == "stale: upstream DimCustomer 2026-10-03 attempt 1 → 2"
    if policy == "all":  # the complete periods republished; 10-01 and 10-06 (run) first
        assert [d for d, why in reasons.items() if why == "reprocess all"] == [
            d for d in DAYS if d not in ("2026-10-01", "2026-10-06")
        ]
    still = [s.business_date for s in ledger_cfg.stale("DailySalesLoad")]
    assert still == ([] if policy in ("stale", "all") else ["2026-10-03"])

    again = planned(capsys, ledger_url, "DailySalesLoad", policy)
    rows, before = snapshot(ledger_cfg), attempts(ledger_cfg, "DailySalesLoad")
    assert fill(DailySalesLoad, policy).scheduling_succeeded
    if policy == "all":  # every invocation of `all` is a new attempt of every period
        assert again == DAYS
        assert ran(before, attempts(ledger_cfg, "DailySalesLoad")) == DAYS
    else:
        assert again == []
        assert snapshot(ledger_cfg) == rows  # a second invocation does nothing


@pytest.mark.parametrize(
    "args", [{"reprocess": "everything"}, {"reprocess": "all", "refresh_stale": True}]
)
def test_range_reprocess_refuses_a_bad_policy_naming_it(
    ledger_cfg: gk.Ledger, args: dict[str, Any]
) -> None:
    build(DailySalesLoad(business_date=START))
    rows = snapshot(ledger_cfg)
    rng = gk.RangeBusinessDaily(
        of=DailySalesLoad, start=START, stop=STOP, now=int(NOW.timestamp()), **args
    )
    with pytest.raises(gk.InvalidInput) as caught:
        rng.complete()
    field = "reprocess" if "refresh_stale" not in args else "refresh_stale"
    assert caught.value.field == field
    assert snapshot(ledger_cfg) == rows


@pytest.mark.parametrize(
    ("policy", "expected"), [("stale", ["2026-09"]), ("all", ["2026-09", "2026-10"])]
)
def test_monthly_range_reprocess_runs_what_plan_lists(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    expected: list[str],
) -> None:
    """A coarse range takes --reprocess alike: a month published on its days is republished
    after one of them is repaired (stale), or every month is (all), as plan lists them."""
    now = int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp())

    def fill() -> Any:
        start, stop = dt.date(2026, 9, 1), dt.date(2026, 11, 1)
        months = gk.RangeBusinessMonthly(
            of=EveryKindMonthly, start=start, stop=stop, now=now, reprocess=policy
        )
        return build(months)

    assert fill().scheduling_succeeded  # both months published (none was stale)
    assert build(EveryKindDay(business_date=dt.date(2026, 9, 15), attempt=2)).scheduling_succeeded
    capsys.readouterr()
    args = ["--start", "2026-09", "--stop", "2026-11", "--lateness", "0s", "--timezone", "UTC"]
    clock = ["--now", dt.datetime.fromtimestamp(now, UTC).isoformat()]
    main(
        [
            "--ledger",
            ledger_url,
            "--json",
            "plan",
            "EveryKindMonthly",
            *args,
            *clock,
            "--reprocess",
            policy,
        ]
    )
    assert json.loads(capsys.readouterr().out)["order"] == expected
    before = {m: len(ledger_cfg.attempts("EveryKindMonthly", m)) for m in ("2026-09", "2026-10")}
    assert fill().scheduling_succeeded
    after = {m: len(ledger_cfg.attempts("EveryKindMonthly", m)) for m in ("2026-09", "2026-10")}
    assert [m for m in after if after[m] > before[m]] == expected
    september = ledger_cfg.publication("EveryKindMonthly", "2026-09")
    assert september is not None and september.reason == (
        "stale: upstream EveryKindDay 2026-09-15 attempt 1 → 2"
        if policy == "stale"
        else "reprocess all"
    )
    assert ledger_cfg.stale("EveryKindMonthly") == []


@pytest.mark.parametrize("strategy", ["forward", "reverse"])
def test_range_reprocess_with_independent_strategies(
    ledger_cfg: gk.Ledger, ledger_url: str, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    """forward and reverse (two workers, chunks and reprocessed periods scheduled at once)
    run what plan lists for their strategy, a task limit of 3 cutting its order."""
    sales_history(ledger_cfg)
    limit = ("--strategy", strategy, "--task-limit", "3")
    expected = planned(capsys, ledger_url, "DailySalesLoad", "all", *limit)
    assert expected == (DAYS[:3] if strategy == "forward" else DAYS[-3:][::-1])
    before = attempts(ledger_cfg, "DailySalesLoad")
    rng = gk.RangeBusinessDaily(
        of=DailySalesLoad,
        start=START,
        stop=STOP,
        now=int(NOW.timestamp()),
        catchup="last:2",
        reprocess="all",
        strategy=strategy,
        task_limit=3,
    )
    assert build(rng, workers=2).scheduling_succeeded
    assert ran(before, attempts(ledger_cfg, "DailySalesLoad")) == sorted(expected)
