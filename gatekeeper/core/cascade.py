"""Carrying a repair up a ``requires()`` graph: which stale publications republish next (pure).

A range under ``--reprocess stale`` republishes every stale publication below it (and of its
own job) in dependency order (``luigi/cascade.py`` reads the graph and the ledger, and runs
them). The order is a layer at a time: the stale publications with no other stale one below
them republish first; that may make the ones above them stale (a month's evidence names the
day's consumer attempt that the republish replaced), which the next layer, read afresh from
the ledger, takes. So a repaired day reaches its daily consumer, then the week and the month
built on it, and a publication is republished once, after everything below it.

The graph is a value: ``Graph.children`` maps each node (a task id) to the nodes its
``requires()`` returns, ``Graph.pairs`` a period task's node to its (job, period key). Nothing
here reads or writes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass

#: a (job, period key) pair
Pair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Graph:
    """A ``requires()`` graph: ``children`` node -> the nodes it requires (every node is a
    key), ``pairs`` the (job, period key) of each period task's node (another task has
    none)."""

    children: Mapping[str, tuple[str, ...]]
    pairs: Mapping[str, Pair]

    def nodes_of(self, wanted: Collection[Pair]) -> list[str]:
        """The nodes whose pair is one of ``wanted``."""
        return [node for node, pair in self.pairs.items() if pair in wanted]


def stale_below(graph: Graph, stale: Collection[Pair]) -> dict[str, bool]:
    """Node -> whether a node of a ``stale`` pair lies anywhere below it (not counting
    itself): one walk of the graph, iterative (a job that requires its own previous period
    makes a chain as long as its history)."""
    below: dict[str, bool] = {}
    for start in graph.children:
        if start in below:
            continue
        stack: list[tuple[str, bool]] = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if node in below:
                continue
            kids = graph.children.get(node, ())
            if expanded:
                below[node] = any(graph.pairs.get(k) in stale or below.get(k, False) for k in kids)
                continue
            stack.append((node, True))
            stack.extend((k, False) for k in kids if k not in below)
    return below


def next_layer(graph: Graph, stale: Collection[Pair]) -> tuple[Pair, ...]:
    """The ``stale`` pairs of ``graph`` that republish now: those with no stale pair below
    any of their nodes, sorted by job and period. Empty when none is stale; never empty
    otherwise (the graph has no cycle, so the lowest stale pairs qualify)."""
    if not stale:
        return ()
    below = stale_below(graph, stale)
    blocked = {graph.pairs[n] for n in graph.nodes_of(stale) if below[n]}
    return tuple(sorted(pair for pair in stale if pair not in blocked))


def counts_by_job(pairs: Iterable[Pair]) -> dict[str, int]:
    """Job -> how many of ``pairs`` are its, in order of the jobs' first pair."""
    found: dict[str, int] = {}
    for job, _ in pairs:
        found[job] = found.get(job, 0) + 1
    return found


def describe_counts(counts: Mapping[str, int]) -> str:
    """``republished 3 stale (DailyConsumer 2, MonthlyRollup 1)``; empty for none."""
    total = sum(counts.values())
    if not total:
        return ""
    return f"republished {total} stale ({', '.join(f'{j} {n}' for j, n in counts.items())})"
