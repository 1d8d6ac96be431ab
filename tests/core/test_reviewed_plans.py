"""A plan file read back (``core/reviewed.py``) and judged against the facts read now, and the
facts' digest (``core/plan_facts.py``): pure, on plan files written here as JSON."""

from __future__ import annotations

import datetime as dt
import hashlib
import json

import pytest

from gatekeeper.core.backfill import Action, BackfillPlan, PlannedPeriod, Reprocess
from gatekeeper.core.cascade import Below, Step
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.plan_facts import Fact, cascade_pairs, digest, fact_of, facts_of
from gatekeeper.core.planning import plan_range
from gatekeeper.core.reviewed import ReviewedPlan, refusal

MADE = dt.datetime(2026, 11, 5, 6, 0, tzinfo=dt.timezone.utc)
FACTS = (
    Fact("Orders", "2026-11-03", 2, "r-2", "succeeded", 1),
    Fact("Sales", "2026-11-03", 1, "r-1", "failed", None),
    Fact("Sales", "2026-11-04"),
)


def plan_text(**changed: object) -> str:
    """A plan file of Sales: a rerun gated on Orders, a run with no upstream listed, and a
    cascade step below."""
    data: dict[str, object] = {
        "job": "Sales",
        "reprocess": "stale",
        "window": {"now": MADE.isoformat()},
        "periods": [
            {
                "period": "2026-11-03",
                "action": "rerun",
                "reason": "attempt 1 failed",
                "upstream": [["Orders", "2026-11-03"]],
            },
            {"period": "2026-11-04", "action": "run", "reason": "missing"},
            {"period": "2026-11-05", "action": "skip", "reason": "not_due", "upstream": []},
        ],
        "order": ["2026-11-04", "2026-11-03"],
        "facts": [f.to_list() for f in FACTS],
        "digest": digest(FACTS),
        "cascade": [
            {"job": "Orders", "period": "2026-11-03", "reason": "stale: x", "layer": 1},
            {"job": "Sales", "period": "2026-11-03", "reason": "stale: y", "layer": 2},
        ],
    }
    data.update(changed)
    return json.dumps(data)


def test_a_plan_file_reads_back_as_the_planner_made_it() -> None:
    plan = ReviewedPlan.parse(plan_text(), "p.json")
    assert plan.source == "p.json"
    assert plan.job == "Sales"
    assert plan.policy is Reprocess.STALE
    assert plan.now == MADE
    assert plan.todo == (
        PlannedPeriod("2026-11-04", Action.RUN, "missing", ()),
        PlannedPeriod("2026-11-03", Action.RERUN, "attempt 1 failed", (("Orders", "2026-11-03"),)),
    )
    assert plan.digest == digest(FACTS)
    assert plan.facts == FACTS
    assert plan.pairs == (
        ("Orders", "2026-11-03"),
        ("Sales", "2026-11-03"),
        ("Sales", "2026-11-04"),
    )
    assert plan.cascade == (
        Step("Orders", "2026-11-03", "stale: x", 1),
        Step("Sales", "2026-11-03", "stale: y", 2),
    )
    assert ReviewedPlan.parse(plan_text(cascade=[]), "p.json").cascade == ()
    older = json.loads(plan_text())
    del older["cascade"]  # a plan file written before the cascade
    assert ReviewedPlan.parse(json.dumps(older), "p.json").cascade == ()


@pytest.mark.parametrize(
    ("text", "error"),
    [
        ("not json", "JSONDecodeError"),
        ("{}", "KeyError: 'periods'"),
        (plan_text(order=["2026-11-09"]), "KeyError: '2026-11-09'"),
        (plan_text(reprocess="some"), "InvalidInput"),
        (plan_text(facts=[[1, 2, 3, 4, 5, 6, 7]]), "TypeError"),
        (plan_text(window={"now": "2026-11-05T06:00"}), "InvalidInput: invalid now="),
    ],
)
def test_a_file_that_is_no_plan_is_refused_naming_plan_file(text: str, error: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        ReviewedPlan.parse(text, "p.json")
    assert caught.value.field == "plan_file"
    assert caught.value.value == "p.json"
    assert "not a plan file of gatekeeper plan -o (" in str(caught.value)
    assert error in str(caught.value)


AFTER_REPAIR = (Fact("Orders", "2026-11-03", 3, "r-3", "succeeded", 2), *FACTS[1:])


@pytest.mark.parametrize(
    ("job", "now", "current", "expected"),
    [
        ("Sales", MADE + dt.timedelta(hours=1), FACTS, None),
        ("Sales", MADE + dt.timedelta(hours=2), FACTS, None),  # exactly --max-age
        ("Orders", MADE, FACTS, "a plan of Sales, not of Orders"),
        (
            "Sales",
            MADE + dt.timedelta(hours=2, seconds=1),
            FACTS,
            "made at 2026-11-05T06:00:00+00:00, 2h1s before this run's clock "
            "2026-11-05T08:00:01+00:00: older than --max-age 2h; plan again",
        ),
        (
            "Sales",
            MADE,
            AFTER_REPAIR,
            "the ledger changed since it was made: Orders 2026-11-03 was attempt 2 (run r-2, "
            "succeeded), revision 1, is attempt 3 (run r-3, succeeded), revision 2; plan again",
        ),
        (
            "Sales",
            MADE,
            FACTS[:2],
            "the ledger changed since it was made: Sales 2026-11-04 was no attempt, not "
            "published, is not read; plan again",
        ),
        (
            "Sales",
            MADE,
            (*FACTS, Fact("Extra", "1")),
            f"its digest {digest(FACTS)} is not that of its facts; plan again",
        ),
    ],
)
def test_refusal_names_the_first_fact_that_changed(
    job: str, now: dt.datetime, current: tuple[Fact, ...], expected: str | None
) -> None:
    plan = ReviewedPlan.parse(plan_text(), "p.json")
    assert refusal(plan, job, now, dt.timedelta(hours=2), current) == expected


@pytest.mark.parametrize(
    ("fact", "text"),
    [
        (Fact("J", "1"), "no attempt, not published"),
        (Fact("J", "1", 2, "r-2", "failed"), "attempt 2 (run r-2, failed), not published"),
        (Fact("J", "1", 1, "r-1", "succeeded", 3), "attempt 1 (run r-1, succeeded), revision 3"),
        (Fact("J", "1", revision=1), "no attempt, revision 1"),
    ],
)
def test_fact_describe(fact: Fact, text: str) -> None:
    assert fact.describe() == text


def test_digest_is_of_the_facts_sorted_by_job_and_period_in_compact_json() -> None:
    # pinned: a plan file made by one release is applied by the next
    rows = (
        '[["A","1",null,null,null,null],["A","2",1,"r-\\u00e9","failed",2],'
        '["B","0",null,null,null,null]]'
    )
    expected = "sha256:" + hashlib.sha256(rows.encode("ascii")).hexdigest()
    facts = [Fact("B", "0"), Fact("A", "2", 1, "r-\u00e9", "failed", 2), Fact("A", "1")]
    assert digest(facts) == expected
    assert digest(reversed(facts)) == expected


def test_digest_keeps_a_pair_read_twice_in_the_order_given() -> None:
    # sorted by (job, period) alone: the rest of a row (None beside a number) is not compared
    twice = [Fact("A", "1", 2, "r-2", "failed"), Fact("A", "1")]
    assert digest(twice) != digest(reversed(twice))


def test_facts_of_each_pair_once_sorted_with_its_revision_attempt_or_not() -> None:
    assert fact_of(("J", "1"), None, 2) == Fact("J", "1", revision=2)
    assert facts_of([("J", "2"), ("J", "1"), ("J", "2")], {}, {("J", "2"): 1}) == (
        Fact("J", "1"),
        Fact("J", "2", revision=1),
    )


def test_cascade_pairs_are_its_republishes_and_what_their_evidence_names() -> None:
    below = Below(
        evidence={
            ("Orders", "1"): ((("Raw", "1"), 1),),
            ("Sales", "1"): ((("Orders", "1"), 1), (("Dim", "1"), 2)),
        },
        stale={},
        latest={},
    )
    steps = (Step("Orders", "1", "", 1), Step("Sales", "1", "", 2), Step("Other", "9", "", 2))
    ranged = plan_range([], start="2026-11-01", stop="2026-11-02", now=MADE)
    found = BackfillPlan("Sales", Reprocess.STALE, ranged, (), cascade=steps)
    assert cascade_pairs(found, below) == (
        ("Dim", "1"),
        ("Orders", "1"),
        ("Other", "9"),  # read for its reason, though no evidence of it was read
        ("Raw", "1"),
        ("Sales", "1"),
    )
    assert cascade_pairs(found, None) == ()
