"""Recovery planning over the ledger, on both backends; only the clock is faked."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput, RecoveryNotSafe
from gatekeeper.ledger.recovery import plan_recovery_from_ledger
from tests.helpers.ledgers import T0, snapshot

DATE = "2026-11-07"
SILVER, GOLD = "SilverCampaigns", "GoldCampaignDaily"
PIPELINE = [SILVER, GOLD]
LATER = T0 + dt.timedelta(hours=1)


def record(ledger: gk.Ledger, job: str, state: str, attempt: int = 1, date: str = DATE) -> str:
    run_id = f"{job}-{date}-{attempt}"
    ledger.record(job, date, attempt, run_id, state, T0)
    return run_id


def plan(ledger: gk.Ledger, verified: Any = (), stages: Any = None, **kw: Any) -> dict[str, Any]:
    return plan_recovery_from_ledger(
        ledger, PIPELINE if stages is None else stages, DATE, list(verified), now=LATER, **kw
    )


def test_plan_recovery_from_ledger_all_succeeded_is_none(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "succeeded")
    record(ledger, GOLD, "succeeded")
    result = plan(ledger)
    assert {k: result[k] for k in ("action", "restart_at_stage", "skipped_stages")} == {
        "action": "none",
        "restart_at_stage": None,
        "skipped_stages": [],
    }
    assert result["restart_at_job"] is None and result["skipped_jobs"] == []


def test_plan_recovery_from_ledger_restarts_gold_after_verified_silver(ledger: gk.Ledger) -> None:
    silver_run = record(ledger, SILVER, "succeeded")
    record(ledger, GOLD, "failed")
    before = snapshot(ledger)
    result = plan(ledger, [1])
    assert result["action"] == "manual_restart"
    assert result["restart_at_stage"] == 2 and result["skipped_stages"] == [1]
    assert result["restart_at_job"] == GOLD and result["skipped_jobs"] == [SILVER]
    assert result["business_date"] == DATE
    assert [(s["job"], s["status"], s["run_id"]) for s in result["stages"]] == [
        (SILVER, "succeeded", silver_run),
        (GOLD, "failed", f"{GOLD}-{DATE}-1"),
    ]
    assert snapshot(ledger) == before  # reads only


def test_plan_recovery_from_ledger_restarts_at_failed_first_stage(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "failed")
    result = plan(ledger)
    assert (result["restart_at_stage"], result["restart_at_job"]) == (1, SILVER)
    assert result["skipped_stages"] == [] and result["skipped_jobs"] == []
    assert result["stages"][1]["status"] == "not_started"


def test_plan_recovery_from_ledger_uses_the_latest_attempt(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "failed", attempt=1)
    record(ledger, SILVER, "succeeded", attempt=2)
    record(ledger, GOLD, "succeeded", attempt=1)
    record(ledger, GOLD, "failed", attempt=2)
    result = plan(ledger, [1])
    assert (result["restart_at_job"], result["stages"][0]["attempt"]) == (GOLD, 2)


def test_plan_recovery_from_ledger_abandoned_counts_as_failed(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "succeeded")
    record(ledger, GOLD, "abandoned")
    result = plan(ledger, [1])
    assert result["restart_at_job"] == GOLD
    assert (result["stages"][1]["status"], result["stages"][1]["state"]) == ("failed", "abandoned")


def test_plan_recovery_from_ledger_lease_expired_by_begin_is_abandoned(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "succeeded")
    ledger.begin_attempt(GOLD, DATE, "gold-1", lease_seconds=60, now=T0)
    ledger.begin_attempt(GOLD, DATE, "gold-2", lease_seconds=60, now=T0 + dt.timedelta(minutes=5))
    ledger.record(GOLD, DATE, 2, "gold-2", "failed", T0 + dt.timedelta(minutes=5))
    assert [a.state.value for a in ledger.attempts(GOLD, DATE)] == ["abandoned", "failed"]
    assert plan(ledger, [1])["restart_at_job"] == GOLD


def test_plan_recovery_from_ledger_refuses_a_live_lease(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "succeeded")
    ledger.begin_attempt(GOLD, DATE, "gold-1", lease_seconds=7200, now=T0)
    with pytest.raises(RecoveryNotSafe, match="live lease") as caught:
        plan(ledger, [1])
    assert all(s in str(caught.value) for s in (DATE, GOLD, "attempt 1", "gold-1", "running"))


def test_plan_recovery_from_ledger_refuses_running_without_lease(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "running")
    with pytest.raises(RecoveryNotSafe, match=f"{SILVER} attempt 1 .* is running: .*without"):
        plan(ledger)


@pytest.mark.parametrize("seconds", [60, 3600])  # expired before now, and exactly at now
def test_plan_recovery_from_ledger_refuses_expired_lease_as_stalled(
    ledger: gk.Ledger, seconds: int
) -> None:
    record(ledger, SILVER, "succeeded")
    ledger.begin_attempt(GOLD, DATE, "gold-1", lease_seconds=seconds, now=T0)
    before = snapshot(ledger)
    with pytest.raises(RecoveryNotSafe, match="is stalled") as caught:
        plan(ledger, [1])
    assert GOLD in str(caught.value) and "gold-1" in str(caught.value)
    assert ledger.latest(GOLD, DATE).state is gk.RunState.RUNNING  # type: ignore[union-attr]
    assert snapshot(ledger) == before  # nothing was abandoned by planning


def test_plan_recovery_from_ledger_lease_judged_at_now(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "succeeded")
    ledger.begin_attempt(GOLD, DATE, "gold-1", lease_seconds=600, now=T0)
    with pytest.raises(RecoveryNotSafe, match="live lease"):
        plan_recovery_from_ledger(ledger, PIPELINE, DATE, [1], now=T0 + dt.timedelta(minutes=9))
    with pytest.raises(RecoveryNotSafe, match="stalled"):
        plan_recovery_from_ledger(ledger, PIPELINE, DATE, [1], now=T0 + dt.timedelta(minutes=10))


def test_plan_recovery_from_ledger_unknown_jobs_are_not_started(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "succeeded", date="2026-11-06")  # another date does not count
    result = plan(ledger, stages=[SILVER, "NeverRan"])
    assert [s["status"] for s in result["stages"]] == ["not_started", "not_started"]
    assert result["restart_at_job"] == SILVER and result["stages"][0]["attempt"] is None


def test_plan_recovery_from_ledger_refuses_downstream_success(ledger: gk.Ledger) -> None:
    record(ledger, SILVER, "failed")
    record(ledger, GOLD, "succeeded")
    with pytest.raises(RecoveryNotSafe, match="downstream") as caught:
        plan(ledger)
    assert f"stage 2 {GOLD}: attempt 1 succeeded" in str(caught.value)


def test_plan_recovery_from_ledger_refuses_unverified_or_wrong_verification(
    ledger: gk.Ledger,
) -> None:
    record(ledger, SILVER, "succeeded")
    record(ledger, GOLD, "failed")
    with pytest.raises(RecoveryNotSafe, match="not verified"):
        plan(ledger, [])
    with pytest.raises(RecoveryNotSafe, match="stage 2"):
        plan(ledger, [1, 2])


@pytest.mark.parametrize(
    "stages",
    [
        [],
        (),
        "SilverCampaigns",
        {SILVER, GOLD},
        None,
        [SILVER, ""],
        [SILVER, " "],
        [SILVER, 2],
        [SILVER, SILVER],
        [" Silver"],
    ],
)
def test_plan_recovery_from_ledger_bad_stages_invalid_input(ledger: gk.Ledger, stages: Any) -> None:
    before = snapshot(ledger)
    with pytest.raises(InvalidInput) as caught:
        plan_recovery_from_ledger(ledger, stages, DATE, [], now=LATER)
    assert caught.value.field == "stages"
    assert snapshot(ledger) == before


@pytest.mark.parametrize("date", ["2026-02-30", "07/11/2026", dt.datetime(2026, 11, 7), None])
def test_plan_recovery_from_ledger_bad_business_date(ledger: gk.Ledger, date: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        plan_recovery_from_ledger(ledger, PIPELINE, date, [], now=LATER)
    assert caught.value.field == "business_date"


def test_plan_recovery_from_ledger_accepts_a_date_and_naive_now_is_refused(
    ledger: gk.Ledger,
) -> None:
    record(ledger, SILVER, "succeeded")
    record(ledger, GOLD, "succeeded")
    assert (
        plan_recovery_from_ledger(ledger, PIPELINE, dt.date(2026, 11, 7), [], now=LATER)["action"]
        == "none"
    )
    with pytest.raises(InvalidInput) as caught:
        plan_recovery_from_ledger(ledger, PIPELINE, DATE, [], now=dt.datetime(2026, 11, 7))
    assert caught.value.field == "now"
