"""``--reprocess stale`` through the ``requires()`` graph: a repair carried up in one invocation.

A range under ``--reprocess stale`` (not an applied ``--plan-file``: that runs its periods
and no others) republishes every stale publication below it, and of its own job, in
dependency order (``core/cascade.py``): the repaired day's consumers first, then the week and
the month built on them. ``walk`` reads the graph once, when the session opens: from the task
of every due period of the window down through ``requires()`` (a period task below is followed
only when its job has recorded an attempt for it: a period never attempted has no publication
to be stale, and ends a chain that would otherwise run back through a job's whole history).
``layers`` is the range's ``run()``'s first part, for every strategy: it reads which of the
graph's publications are stale now (``Ledger.fleet.stale``, one statement per 300 jobs),
yields the lowest of them as one layer of tasks (Luigi runs a layer in parallel with
``--workers``), and when Luigi hands back, reads again: what the layer's republishes made stale
above it is the next layer. A failure stops it there, as a contiguous fill stops.

Each republish is the period's own task with the next attempt and the plan's reason as its
republish reason (``stale: upstream JOB PERIOD attempt N → M``), the mechanism
``--reprocess stale`` uses for the range's own job: to Luigi an ordinary task. The range's own
periods the plan left beyond ``task_limit``, and those that are gaps (the fill gives them
fresh evidence), are left to it; the cascade below is not limited, as Luigi's ``task_limit``
limits a range's own tasks, not their requirements.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import luigi.task

from gatekeeper.core.backfill import stale_reason
from gatekeeper.core.cascade import Graph, Pair, counts_by_job, next_layer
from gatekeeper.core.errors import GatekeeperError
from gatekeeper.core.progress import own_keys
from gatekeeper.core.records import Staleness
from gatekeeper.ledger import Ledger
from gatekeeper.luigi.tasks import PeriodTask


@dataclass(frozen=True, slots=True)
class Cascade:
    """The graph below a range's window as its session read it: ``graph``; ``tasks`` a
    period task of each pair; ``since`` each publishing job's first period key in it (where
    a read of its stale publications starts); ``eligible`` the publishing pairs it may
    republish (``walk``)."""

    graph: Graph
    tasks: Mapping[Pair, PeriodTask]
    since: Mapping[str, str]
    eligible: frozenset[Pair]


class StillStale(GatekeeperError):
    """A publication the cascade republished is stale again before the cascade ended: an
    upstream changed under it (a later invocation takes it up)."""


def walk(roots: Sequence[PeriodTask], own_left: Collection[str], ledger: Ledger) -> Cascade:
    """The Cascade below ``roots`` (the range's tasks, one per due period; ``own_left``:
    their period keys it leaves to the fill or to a later invocation). Reads the graph level
    by level, one ledger statement per level (which period tasks were ever attempted)."""
    read = _Reading({task.task_id for task in roots})
    frontier: list[luigi.Task] = list(roots)
    while frontier:
        frontier = read.level(frontier, ledger)
    pairs = read.pairs
    left = {pairs[task.task_id] for task in roots if pairs[task.task_id][1] in own_left}
    since: dict[str, str] = {}
    for job, key in sorted(read.publishing):
        since.setdefault(job, key)
    eligible = frozenset(p for p in read.publishing if p not in left)
    return Cascade(Graph(read.children, pairs), read.tasks, since, eligible)


class _Reading:
    """What ``walk`` has read of the graph so far: each task's pair computed once (a period
    key is derived anew at every ``period_key``), each task's requirements asked once."""

    def __init__(self, root_ids: set[str]):
        self.root_ids = root_ids
        self.seen = set(root_ids)
        self.children: dict[str, tuple[str, ...]] = {}
        self.pairs: dict[str, Pair] = {}
        self.tasks: dict[Pair, PeriodTask] = {}
        self.publishing: set[Pair] = set()

    def level(self, frontier: list[luigi.Task], ledger: Ledger) -> list[luigi.Task]:
        """Note ``frontier``'s tasks and return the level below them: the requirements not
        seen yet of each root, of each other task, and of each period task whose job
        recorded an attempt for its period (one ledger statement per 300 of them)."""
        pairs = self.pairs
        for task in frontier:
            if isinstance(task, PeriodTask):
                pairs[task.task_id] = pair = _pair(task)
                self.tasks.setdefault(pair, task)
                if task.publishes:
                    self.publishing.add(pair)
        ids = [t.task_id for t in frontier]
        asked = [pairs[i] for i in ids if i in pairs and i not in self.root_ids]
        attempted = ledger.fleet.latest(asked) if asked else {}
        following: list[luigi.Task] = []
        for task in frontier:
            node = task.task_id
            if node in pairs and node not in self.root_ids and pairs[node] not in attempted:
                self.children[node] = ()
                continue
            found = _flat(task.requires())
            self.children[node] = tuple(dep.task_id for dep in found)
            fresh = [dep for dep in found if dep.task_id not in self.seen]
            self.seen.update(dep.task_id for dep in fresh)
            following.extend(fresh)
        return following


def _flat(found: Any) -> list[luigi.Task]:
    """``luigi.task.flatten`` of what a ``requires()`` returned, a task or a list of tasks
    (the common shapes) without its recursion."""
    if isinstance(found, luigi.Task):
        return [found]
    if isinstance(found, list) and all(isinstance(dep, luigi.Task) for dep in found):
        return found
    return list(luigi.task.flatten(found))


def _pair(task: PeriodTask) -> Pair:
    return (str(task.job_id), str(task.period_key))


def stale_now(cascade: Cascade, ledger: Ledger) -> dict[Pair, list[Staleness]]:
    """The eligible publications of ``cascade`` that are stale now, with why: one statement
    per 300 publishing jobs; reads only."""
    if not cascade.since:
        return {}
    found = ledger.fleet.stale(cascade.since.items())
    return {pair: found[pair] for pair in sorted(found) if pair in cascade.eligible}


def pending(cascade: Cascade | None, ledger: Ledger) -> bool:
    """Something of ``cascade`` is stale now (None: no cascade, nothing)."""
    return cascade is not None and bool(stale_now(cascade, ledger))


def layers(
    cascade: Cascade | None, ledger_of: Any, since: dt.datetime, mine: Any
) -> Iterator[list[PeriodTask]]:
    """The layers of republishes, lowest first, each read from the ledger (``ledger_of()``:
    the process's ledger, asked anew each time: Luigi may resume the range in a forked
    child) once the one before it is done.

    While a publication of the graph is being run by another run (its latest attempt
    running on a live lease: under luigid, a worker that added the range too may run a pass
    of it while the worker of the last pass still runs its layer), what is stale is in
    flux: the layer is then those periods' own tasks, which Luigi's scheduler dedupes with
    the running one (or which wait for its lease), and the next pass reads again.
    StillStale when a publication of the next layer was republished by this invocation
    already (its latest attempt succeeded, in a run ``mine`` started at or after
    ``since``): an upstream changed under it again, and republishing it once more could go
    on for as long as that goes on."""
    if cascade is None:
        return
    waited: set[Pair] = set()
    while True:
        ledger = ledger_of()
        busy = _busy(cascade, ledger)
        if busy:
            if busy <= waited:  # waited for them in this pass and they still run
                raise StillStale(f"{_held(busy, ledger)}: still running after a wait")
            waited |= busy
            yield [cascade.tasks[pair] for pair in sorted(busy)]
            continue
        stale = stale_now(cascade, ledger)
        layer = next_layer(cascade.graph, stale)
        if not layer:
            return
        latest = ledger.fleet.latest(layer)
        again = sorted(own_keys(latest, since, mine))  # what this invocation republished
        if again:
            job, period = again[0]
            raise StillStale(
                f"{job} {period}: stale again after its republish in this invocation "
                f"(attempt {latest[again[0]].attempt}; {stale_reason(stale[again[0]])}): an "
                "upstream changed meanwhile; run the range again once it is settled"
            )
        yield [
            republish_task(cascade.tasks[p], _next_attempt(latest.get(p)), stale_reason(stale[p]))
            for p in layer
        ]


def _busy(cascade: Cascade, ledger: Ledger) -> set[Pair]:
    """The publications of ``cascade`` another run is running now (a live lease by the
    database's clock): one statement per 300 pairs."""
    now = ledger.db_now()
    latest = ledger.fleet.latest(cascade.eligible)
    return {pair for pair, attempt in latest.items() if attempt.lease_live(now)}


def _held(busy: set[Pair], ledger: Ledger) -> str:
    """``JOB PERIOD held by run R`` of the first of ``busy``."""
    job, period = min(busy)
    found = ledger.latest(job, period)
    return f"{job} {period} held by run {found.run_id if found else '?'}"


def _next_attempt(latest: Any) -> int:
    return 1 if latest is None else int(latest.attempt) + 1


def republish_task(task: PeriodTask, attempt: int, reason: str | None) -> PeriodTask:
    """``task`` as a new attempt ``attempt``, republishing with ``reason`` (None: a rerun
    that does not republish); the same Luigi task id (both parameters are insignificant)."""
    extra: dict[str, Any] = {"attempt": attempt}
    if reason is not None:
        extra["republish_reason"] = reason
    return type(task)(**{**task.param_kwargs, **extra})


def republished(
    cascade: Cascade | None, ledger: Ledger, since: dt.datetime, mine: Any
) -> dict[str, int]:
    """Job -> how many of the cascade's publications this invocation republished (a newest
    revision after the first, by a succeeded attempt of a run ``mine``, a run ID predicate,
    started at or after ``since``), the jobs in the order their first one started. Two
    statements per 300 pairs; reads only."""
    if cascade is None or not cascade.eligible:
        return {}
    revisions = ledger.fleet.revisions(cascade.eligible)
    latest = ledger.fleet.latest(p for p, n in revisions.items() if n > 1)
    ours = sorted((latest[pair].started_at, pair) for pair in own_keys(latest, since, mine))
    return counts_by_job(pair for _, pair in ours)  # the jobs in the order they ran
