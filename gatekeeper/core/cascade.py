"""Carrying a repair up a ``requires()`` graph: which stale publications republish next (pure).

A range under ``--reprocess stale`` republishes every stale publication below it (and of its
own job) in dependency order (``luigi/cascade.py`` reads the graph and the ledger, and runs
them). The order is a layer at a time: the stale publications with no other stale one below
them republish first; that may make the ones above them stale (a month's evidence names the
day's consumer attempt that the republish replaced), which the next layer, read afresh from
the ledger, takes. So a repaired day reaches its daily consumer, then the week and the month
built on it, and a publication is republished once, after everything below it.

The graph is a value: ``Graph.children`` maps each node (a task id) to the nodes its
``requires()`` returns, ``Graph.pairs`` a period task's node to its (job, period key).

``predict`` is what ``gatekeeper plan --reprocess stale`` shows of it before anything runs:
the same order, on the graph the publications' evidence draws (which upstream pairs each
newest revision names: what its gate required), with the reasons the range will record, a
republish of an upstream pair being its next attempt. Nothing here reads or writes.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

from gatekeeper.core.records import Staleness

#: a (job, period key) pair
Pair = tuple[str, str]
#: a node of a graph: a Luigi task id, or a pair
N = TypeVar("N", bound=Hashable)


@dataclass(frozen=True, slots=True)
class Graph(Generic[N]):
    """A ``requires()`` graph: ``children`` node -> the nodes it requires (every node is a
    key), ``pairs`` the (job, period key) of each period task's node (another task has
    none)."""

    children: Mapping[N, tuple[N, ...]]
    pairs: Mapping[N, Pair]

    def nodes_of(self, wanted: Collection[Pair]) -> list[N]:
        """The nodes whose pair is one of ``wanted``."""
        return [node for node, pair in self.pairs.items() if pair in wanted]


def stale_below(graph: Graph[N], stale: Collection[Pair]) -> dict[N, bool]:
    """Node -> whether a node of a ``stale`` pair lies anywhere below it (not counting
    itself): one walk of the graph, iterative (a job that requires its own previous period
    makes a chain as long as its history)."""
    below: dict[N, bool] = {}
    for start in graph.children:
        if start in below:
            continue
        stack: list[tuple[N, bool]] = [(start, False)]
        while stack:
            node, expanded = stack.pop()
            if node in below:
                continue
            kids = graph.children.get(node, ())
            if expanded:
                # each kid was walked before its parent (no cycle: one would never end)
                below[node] = any(graph.pairs.get(k) in stale or below[k] for k in kids)
                continue
            stack.append((node, True))
            stack.extend((k, False) for k in kids if k not in below)
    return below


def next_layer(graph: Graph[N], stale: Collection[Pair]) -> tuple[Pair, ...]:
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


#: an upstream pair a publication's evidence names, and the attempt it names
Named = tuple[Pair, int]


@dataclass(frozen=True, slots=True)
class Below:
    """What the ledger holds of the publications below a window (``gatekeeper plan``):
    ``evidence`` each publication's newest revision's upstream pairs and attempts,
    ``stale`` the stale ones now with why, ``latest`` each pair's latest attempt ordinal."""

    evidence: Mapping[Pair, tuple[Named, ...]]
    stale: Mapping[Pair, tuple[Staleness, ...]]
    latest: Mapping[Pair, int]


@dataclass(frozen=True, slots=True)
class Step:
    """One republish of a cascade: the pair, why (as the range records it), its layer."""

    job: str
    period: str
    reason: str
    layer: int

    def to_json(self) -> dict[str, object]:
        return {"job": self.job, "period": self.period, "reason": self.reason, "layer": self.layer}


def predict(below: Below, left: Collection[Pair] = ()) -> tuple[Step, ...]:
    """The republishes a cascade over ``below`` makes, in order (``next_layer`` on the
    evidence's graph), leaving ``left`` alone: each stale publication once nothing stale is
    below it, with its reason; a publication whose evidence names one republished becomes
    stale (``attempt N → M``: the attempt it names, to the next one after the latest)."""
    children = {pair: tuple(up for up, _ in named) for pair, named in below.evidence.items()}
    graph = Graph(children, {pair: pair for pair in children})
    why: dict[Pair, dict[Pair, str]] = {
        pair: {(s.job, s.job_date): s.change for s in entries}
        for pair, entries in below.stale.items()
        if pair not in left and pair in children
    }
    done: set[Pair] = set()
    steps: list[Step] = []
    while layer := next_layer(graph, why.keys() - done):
        depth = steps[-1].layer + 1 if steps else 1
        for job, period in layer:
            reasons = why[(job, period)]
            text = "; ".join(f"stale: {reasons[up]}" for up in sorted(reasons))
            steps.append(Step(job, period, text, depth))
        done.update(layer)
        _mark_above(below, set(layer), left, done, why)
    return tuple(steps)


def _mark_above(
    below: Below,
    layer: set[Pair],
    left: Collection[Pair],
    done: set[Pair],
    why: dict[Pair, dict[Pair, str]],
) -> None:
    """Mark the publications whose evidence names a pair of ``layer`` stale, with why."""
    for consumer, named in below.evidence.items():
        if consumer in left or consumer in done:
            continue
        for (job, period), attempt in named:
            if (job, period) in layer:
                after = below.latest.get((job, period), attempt) + 1
                change = f"upstream {job} {period} attempt {attempt} → {after}"
                why.setdefault(consumer, {})[(job, period)] = change
