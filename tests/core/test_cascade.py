"""The cascade's order (``core/cascade.py``): a stale publication republishes only once nothing
stale lies below it; checked against a reference model on random graphs, and on a chain as
long as a job's history (the walk is not recursive)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.cascade import (
    Below,
    Graph,
    counts_by_job,
    describe_counts,
    next_layer,
    predict,
    stale_below,
)
from gatekeeper.core.records import Staleness


def chain(length: int) -> Graph:
    """Day n requires day n - 1 (a job on its own previous period), each a publication."""
    children = {str(n): ((str(n - 1),) if n else ()) for n in range(length)}
    return Graph(children, {str(n): ("Daily", f"{n:05d}") for n in range(length)})


def test_next_layer_takes_the_lowest_stale_publication_of_a_long_chain() -> None:
    graph = chain(5000)
    stale = {("Daily", "00010"), ("Daily", "04000")}
    assert next_layer(graph, stale) == (("Daily", "00010"),)
    assert next_layer(graph, {("Daily", "04000")}) == (("Daily", "04000"),)
    assert next_layer(graph, set()) == ()


def test_next_layer_waits_for_every_stale_publication_below_through_any_task() -> None:
    # a month on two days, one of them through a task that is no period task
    graph = Graph(
        {"m": ("d1", "x"), "x": ("d2",), "d1": (), "d2": (), "w": ("d2",)},
        {"m": ("Month", "2026-09"), "d1": ("Day", "1"), "d2": ("Day", "2"), "w": ("Week", "W")},
    )
    both = {("Month", "2026-09"), ("Day", "2"), ("Week", "W")}
    assert next_layer(graph, both) == (("Day", "2"),)
    assert next_layer(graph, {("Month", "2026-09"), ("Week", "W")}) == (
        ("Month", "2026-09"),
        ("Week", "W"),
    )


def test_stale_below_walks_from_the_top_meeting_a_node_twice() -> None:
    # "a" comes first and reaches "d" twice (directly, and through "b" and "c")
    graph = Graph(
        {"a": ("d", "b"), "b": ("c",), "c": ("d",), "d": ()},
        {n: ("J", n) for n in "abd"},
    )
    assert stale_below(graph, {("J", "d")}) == {"a": True, "b": True, "c": True, "d": False}
    assert next_layer(graph, {("J", "a"), ("J", "d")}) == (("J", "d"),)


@st.composite
def graphs(draw: st.DrawFn) -> tuple[Graph, set[tuple[str, str]]]:
    """A random DAG (a node requires only nodes numbered below it), some nodes period tasks
    (each its own pair: a job's task for a period is one Luigi task), some of them stale."""
    size = draw(st.integers(1, 12))
    # in any order: a walk from a node above meets its children before their own turn
    children = {
        str(n): tuple(str(k) for k in draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=3)))
        if n
        else ()
        for n in draw(st.permutations(range(size)))
    }
    pairs = {str(n): ("J", str(n)) for n in range(size) if draw(st.booleans())}
    stale = {p for p in pairs.values() if draw(st.booleans())}
    return Graph(children, pairs), stale


@given(graphs())
def test_next_layer_matches_a_reference_model(case: tuple[Graph, set[tuple[str, str]]]) -> None:
    graph, stale = case

    def below(node: str) -> set[tuple[str, str]]:
        found: set[tuple[str, str]] = set()
        for kid in graph.children[node]:
            if kid in graph.pairs:
                found.add(graph.pairs[kid])
            found |= below(kid)
        return found

    blocked = {p for n, p in graph.pairs.items() if p in stale and below(n) & stale}
    assert next_layer(graph, stale) == tuple(sorted(stale - blocked))
    if stale:  # never empty while something is stale: the lowest ones qualify
        assert next_layer(graph, stale)


def test_counts_by_job_keeps_the_order_the_jobs_came_in() -> None:
    pairs = [("Consumer", "1"), ("Month", "9"), ("Consumer", "2")]
    assert counts_by_job(pairs) == {"Consumer": 2, "Month": 1}
    assert describe_counts({"Consumer": 2, "Month": 1}) == (
        "republished 3 stale (Consumer 2, Month 1)"
    )
    assert describe_counts({}) == ""


def stale_of(consumer: tuple[str, str], upstream: tuple[str, str]) -> Staleness:
    """``consumer``'s evidence names attempt 1 of ``upstream``, which attempt 2 replaced."""
    return Staleness(*consumer, 1, *upstream, "r-1", 1, "r-2", 2)


def test_predict_republishes_a_layer_at_a_time_naming_each_attempt_it_supersedes() -> None:
    # Day 1 and Day 2 are stale (their Orders were repaired); the week on both days and the
    # month on the week and Day 1 become stale as the layers below them republish; Other
    # (named by the plan's `left`) and Gone (no evidence read) are left alone
    day1, day2, week, month = ("Day", "1"), ("Day", "2"), ("Week", "W"), ("Month", "M")
    other, gone, kept = ("Other", "X"), ("Gone", "G"), ("Kept", "K")
    below = Below(
        evidence={
            day1: ((("Orders", "1"), 1),),
            other: ((day2, 1),),
            day2: ((("Orders", "2"), 1),),
            week: ((day1, 1), (day2, 2)),
            month: ((week, 1), (day1, 1)),
            kept: ((("Orders", "3"), 1),),
        },
        stale={
            day1: (stale_of(day1, ("Orders", "1")),),
            day2: (stale_of(day2, ("Orders", "2")),),
            gone: (stale_of(gone, ("Orders", "1")),),
            kept: (stale_of(kept, ("Orders", "3")),),
        },
        latest={day1: 3},  # Day 1's republish is its attempt 4; Day 2's is 2 + 1
    )
    steps = predict(below, left={other, kept})
    assert [(s.job, s.period, s.reason, s.layer) for s in steps] == [
        ("Day", "1", "stale: upstream Orders 1 attempt 1 → 2", 1),
        ("Day", "2", "stale: upstream Orders 2 attempt 1 → 2", 1),
        (
            "Week",
            "W",
            "stale: upstream Day 1 attempt 1 → 4; stale: upstream Day 2 attempt 2 → 3",
            2,
        ),
        (
            "Month",
            "M",
            "stale: upstream Day 1 attempt 1 → 4; stale: upstream Week W attempt 1 → 2",
            3,
        ),
    ]
    assert steps[0].to_json() == {
        "job": "Day",
        "period": "1",
        "reason": "stale: upstream Orders 1 attempt 1 → 2",
        "layer": 1,
    }
    assert predict(below, left=set(below.evidence)) == ()


def test_describe_counts_is_empty_for_none() -> None:
    assert describe_counts({}) == ""
    assert describe_counts({"Consumer": 0}) == ""
    assert counts_by_job([]) == {}
