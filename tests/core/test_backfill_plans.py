"""``plan_backfill`` on values (``core/backfill.py``): the cascade ``stale`` predicts leaves
the window's periods the range leaves (not complete, or stale beyond ``task_limit``)."""

from __future__ import annotations

import datetime as dt

import pytest

from gatekeeper.core.backfill import (
    Action,
    BackfillFacts,
    BackfillPlan,
    Reprocess,
    estimate,
    plan_backfill,
    stale_reason,
)
from gatekeeper.core.cascade import Below
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.planning import plan_range
from gatekeeper.core.records import Attempt, RunState, Staleness

NOW = dt.datetime(2026, 11, 5, 6, 0, tzinfo=dt.timezone.utc)
DAYS = ("2026-11-01", "2026-11-02", "2026-11-03")


def repaired(day: str, attempt: int = 2) -> Staleness:
    """Sales ``day``'s evidence names Orders ``day`` attempt 1, replaced by ``attempt``."""
    return Staleness("Sales", day, 1, "Orders", day, "r-1", 1, f"r-{attempt}", attempt)


def test_stale_cascade_leaves_the_incomplete_and_those_beyond_task_limit() -> None:
    # 11-01 and 11-02 published and stale, 11-03 never completed (its old evidence stale
    # too); task_limit 1 takes 11-01 only: the cascade republishes Orders 11-01 below (its
    # Raw was repaired), then Sales 11-01 alone
    ranged = plan_range(DAYS[:2], start=DAYS[0], stop="2026-11-04", now=NOW, task_limit=1)
    stale = tuple(repaired(day) for day in DAYS)
    orders = Staleness("Orders", DAYS[0], 1, "Raw", DAYS[0], "r-1", 1, "r-2", 2)
    earlier = Staleness("Orders", "2026-10-31", 1, "Raw", "2026-10-31", "r-1", 1, "r-2", 2)
    below = Below(
        evidence={
            ("Orders", "2026-10-31"): ((("Raw", "2026-10-31"), 1),),
            ("Orders", DAYS[0]): ((("Raw", DAYS[0]), 1),),
            **{("Sales", day): ((("Orders", day), 1),) for day in DAYS},
        },
        stale={
            ("Orders", "2026-10-31"): (earlier,),
            ("Orders", DAYS[0]): (orders,),
            **{("Sales", s.business_date): (s,) for s in stale},
        },
        latest={},
    )
    facts = BackfillFacts("Sales", {}, publishes=True, stale=stale, below=below)
    plan = plan_backfill(ranged, facts, Reprocess.STALE)
    reason = "stale: upstream Orders 2026-11-01 attempt 1 → 2"
    assert [(s.job, s.period, s.reason, s.layer) for s in plan.cascade] == [
        ("Orders", "2026-10-31", "stale: upstream Raw 2026-10-31 attempt 1 → 2", 1),
        ("Orders", "2026-11-01", "stale: upstream Raw 2026-11-01 attempt 1 → 2", 1),
        ("Sales", "2026-11-01", reason, 2),
    ]
    assert [(p.period, p.action, p.reason) for p in plan.periods] == [
        ("2026-11-01", Action.REPUBLISH, reason),
        ("2026-11-02", Action.SKIP, "beyond task_limit"),
        ("2026-11-03", Action.SKIP, "beyond task_limit"),
    ]
    assert plan.order == ("2026-11-01",)
    description = "Sales: reprocess stale: 1 republish, 2 skip; first 2 republish below"
    found = plan.to_json()
    assert (found["counts"], found["description"]) == ({"republish": 1, "skip": 2}, description)
    assert found["cascade"] == [step.to_json() for step in plan.cascade]
    assert found["estimate"] == {
        "periods": 3,  # Sales 11-01, and Orders 10-31 and 11-01 below
        "samples": 0,
        "median_seconds": None,
        "total_seconds": None,
        "description": "estimate: no history (no succeeded attempt recorded)",
    }
    # the cascade is stale's alone
    assert plan_backfill(ranged, facts, Reprocess.ALL).cascade == ()


def test_a_plan_with_nothing_to_do_says_so() -> None:
    empty = plan_range([], start="2026-11-05", stop="2026-11-05", now=NOW)
    plan = plan_backfill(empty, BackfillFacts("Sales", {}), Reprocess.MISSING)
    assert plan.describe() == "Sales: reprocess missing: nothing to do (no periods)"
    done = plan_range(DAYS[:1], start=DAYS[0], stop=DAYS[1], now=NOW)
    plan = plan_backfill(done, BackfillFacts("Sales", {}), Reprocess.MISSING)
    assert plan.describe() == "Sales: reprocess missing: nothing to do (1 skip)"
    unestimated = BackfillPlan("Sales", Reprocess.MISSING, done, plan.periods)
    assert unestimated.to_json()["estimate"] is None


def test_an_open_window_runs_on_through_the_last_recorded_period() -> None:
    ranged = plan_range([], start=DAYS[0], now=NOW)
    plan = plan_backfill(
        ranged, BackfillFacts("Sales", {}, through="2026-11-06"), Reprocess.MISSING
    )
    assert [(p.period, p.reason) for p in plan.periods[-3:]] == [
        ("2026-11-04", "missing"),
        ("2026-11-05", "not_due"),
        ("2026-11-06", "not_due"),
    ]


def test_a_policy_not_named_is_refused_naming_the_policies() -> None:
    with pytest.raises(InvalidInput) as caught:
        Reprocess.parse("some")
    assert str(caught.value) == (
        "invalid reprocess='some': expected one of missing, failed, stale, all"
    )


def test_stale_reason_joins_every_staleness_of_a_period() -> None:
    assert stale_reason([repaired(DAYS[0]), repaired(DAYS[0], 3)]) == (
        "stale: upstream Orders 2026-11-01 attempt 1 → 2; "
        "stale: upstream Orders 2026-11-01 attempt 1 → 3"
    )
    assert stale_reason([]) == ""


def attempt(
    day: str, state: RunState, lease: dt.datetime | None = None, error: str = ""
) -> Attempt:
    started = dt.datetime.fromisoformat(f"{day}T23:00:00+00:00")
    return Attempt("Sales", day, 2, f"r-{day}", state, started, started, lease, error or None)


def test_a_period_not_complete_is_run_rerun_or_left_to_its_holder() -> None:
    days = [f"2026-11-0{n}" for n in range(1, 8)]
    now = dt.datetime(2026, 11, 8, 6, 0, tzinfo=dt.timezone.utc)
    live, gone = now + dt.timedelta(minutes=5), now - dt.timedelta(minutes=5)
    latest = [
        None,
        attempt(days[1], RunState.RUNNING, live),
        attempt(days[2], RunState.FAILED, live, "boom"),
        attempt(days[3], RunState.FAILED),
        attempt(days[4], RunState.RUNNING, gone),
        attempt(days[5], RunState.ABANDONED, gone),
        attempt(days[6], RunState.SUCCEEDED, gone),
    ]
    ranged = plan_range([], start=days[0], stop="2026-11-08", now=now)
    facts = BackfillFacts("Sales", {a.business_date: a for a in latest if a is not None})
    plan = plan_backfill(ranged, facts, Reprocess.MISSING)
    assert [(p.action, p.reason) for p in plan.periods] == [
        (Action.RUN, "missing"),
        (Action.SKIP, f"held by run r-{days[1]} until {live.isoformat()}"),
        (Action.RERUN, "attempt 2 failed: boom"),
        (Action.RERUN, "attempt 2 failed"),
        (Action.RERUN, "abandoned"),
        (Action.RERUN, "abandoned"),
        (Action.RERUN, "not published"),
    ]


MINUTE = dt.timedelta(minutes=1)


@pytest.mark.parametrize(
    ("spans", "periods", "text"),
    [
        ([], 3, "estimate: no history (no succeeded attempt recorded)"),
        (
            [2],
            1,
            "estimate: 1 period x 2m00s = 2m00s, one after another (the one success recorded)",
        ),
        (
            [1, 3],
            3,
            "estimate: 3 periods x 2m00s = 6m00s, one after another "
            "(median of the last 2 successes)",
        ),
        (
            [5, 1, 2],
            2,
            "estimate: 2 periods x 2m00s = 4m00s, one after another "
            "(median of the last 3 successes)",
        ),
    ],
)
def test_estimate_describes_the_median_of_the_successes(
    spans: list[int], periods: int, text: str
) -> None:
    start = dt.datetime(2026, 11, 1, tzinfo=dt.timezone.utc)
    successes = [
        Attempt("Sales", "2026-11-01", 1, "r", RunState.SUCCEEDED, start, start + n * MINUTE)
        for n in spans
    ]
    assert estimate(successes, periods).describe() == text
