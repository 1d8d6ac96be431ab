"""The cascade's order (``core/cascade.py``): a stale publication republishes only once nothing
stale lies below it; checked against a reference model on random graphs, and on a chain as
long as a job's history (the walk is not recursive)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.cascade import Graph, counts_by_job, describe_counts, next_layer


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


@st.composite
def graphs(draw: st.DrawFn) -> tuple[Graph, set[tuple[str, str]]]:
    """A random DAG (a node requires only nodes numbered below it), some nodes period tasks
    (each its own pair: a job's task for a period is one Luigi task), some of them stale."""
    size = draw(st.integers(1, 12))
    children = {
        str(n): tuple(str(k) for k in draw(st.sets(st.integers(0, max(n - 1, 0)), max_size=3)))
        if n
        else ()
        for n in range(size)
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
