"""One range invocation's fill session, and the checks of its parameters.

- ``FillSession``: everything an invocation of RangeBusinessDaily/Hourly fixes when Luigi first
  checks it (clock, settings, strategy, the initial plan, the scheduled keys, their chunks, the
  stale refreshes, the start time), built once and frozen.
- which periods are complete is ``completeness.py``'s (the ``of`` class's ``bulk_complete``).
- ``check_of_params``: ``of_params`` checked against the ``of`` class before anything runs.
- ``chunk_params``, ``independent_chunks``: the chunks a session's blocks become.
- ``emit_metrics``: a range's RangeEvent figures (what ``--reprocess`` adds: ``reprocess.py``).
"""

from __future__ import annotations

import bisect
import datetime as dt
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import luigi.task
from luigi.tools.range import RangeEvent

from gatekeeper.core.backfill import Reprocess
from gatekeeper.core.causes import JobProfile, profile, requirements
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.freshness import parse_freshness
from gatekeeper.core.periods import period_ordinal
from gatekeeper.core.periods.intervals import duration_text
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.progress import range_metrics
from gatekeeper.core.schedule import Schedule, Strategy
from gatekeeper.core.validation import check_timestamp
from gatekeeper.luigi.cascade import Cascade
from gatekeeper.luigi.fill.chunks import CHUNK, IndependentChunk
from gatekeeper.luigi.fill.filler import Filler
from gatekeeper.luigi.tasks import PeriodTask

UTC = dt.timezone.utc
LANES = 16  # a forward or reverse window is cut into at least this many chunks
CONTIGUOUS_GROWTH = 8  # a contiguous fill's blocks grow up to this many times CHUNK
Blocks = tuple[tuple[str, tuple[str, ...]], ...]


@dataclass(frozen=True, slots=True)
class FillSession:
    """What one invocation of a range fills, fixed at its first check (Luigi's ``complete()``).

    ``now`` is the range's clock for the whole invocation (so a long fill plans one window);
    ``schedule`` what it plans (its parameters and settings, resolved once);
    ``plan`` the plan made then; ``keys`` the ledger keys of its scheduled periods in fill
    order; ``chunks`` those keys as (block, keys) of CHUNK due periods; ``refreshes`` the
    tasks of the periods it reprocesses beyond its gaps under ``policy`` (``--reprocess``:
    ``reprocess.py``; ``in_order``: they are an applied plan's periods, a contiguous fill
    yields them one at a time); ``cascade`` under ``stale``, the graph below the window whose
    stale publications ``run()`` republishes first (``cascade.py``); ``started`` when it was
    built (epoch seconds); ``filler`` how its chunks fill their periods (``fill/filler.py``:
    inline or scheduled, as ``--inline`` or ``[gatekeeper] inline`` says).
    """

    now: dt.datetime
    schedule: Schedule
    started: float
    plan: RangePlan
    keys: tuple[str, ...]
    chunks: Blocks
    refreshes: tuple[PeriodTask, ...]
    filler: Filler
    policy: Reprocess = Reprocess.MISSING
    in_order: bool = False
    cascade: Cascade | None = None
    cascade_first: bool = False  # forward/reverse: the chunks wait for the cascade (run())


def clock_at(seconds: float) -> dt.datetime:
    """The aware UTC instant of ``seconds`` since the epoch; InvalidInput naming ``now``."""
    try:
        at = dt.datetime.fromtimestamp(seconds, UTC)
    except (OverflowError, OSError, ValueError):
        raise InvalidInput("now", seconds, "epoch seconds outside the years 1 to 9999") from None
    return check_timestamp(at, "now")


def chunk_size(plan: RangePlan) -> int:
    """Due periods per chunk: CHUNK for a contiguous fill (one chunk runs at a time); for
    forward and reverse, small enough that the window makes at least LANES chunks (so every
    worker of every process sharing the range gets some), at most CHUNK."""
    if plan.strategy is Strategy.CONTIGUOUS:
        return CHUNK
    return max(1, min(CHUNK, -(-len(plan.due) // LANES)))


def block_starts(plan: RangePlan) -> list[int]:
    """Where the blocks of the due periods start (indexes into ``plan.due``): every
    ``chunk_size`` periods; for a contiguous fill the blocks then grow (two of each size,
    doubling up to CONTIGUOUS_GROWTH times it), so a long fill is few chunks, each a round of
    Luigi's worker and scheduler, while a short one is cut as before. A start depends only on
    the periods before it: a window that grows at its end keeps its blocks."""
    size, grows = chunk_size(plan), plan.strategy is Strategy.CONTIGUOUS
    starts: list[int] = []
    at = 0
    while at < len(plan.due):
        starts.append(at)
        at += size * (min(2 ** ((len(starts) - 1) // 2), CONTIGUOUS_GROWTH) if grows else 1)
    return starts


def chunk_blocks(plan: RangePlan) -> Blocks:
    """(block, keys): the scheduled keys, in fill order, by blocks of due periods
    (``block_starts``). A block is named by its first due period, so invocations of the same
    range planned at different times name their chunks alike and a central scheduler runs each
    once."""
    if not plan.scheduled:
        return ()
    first, starts = period_ordinal(plan.due[0], plan.period), block_starts(plan)
    blocks: dict[str, list[str]] = {}
    for label in plan.scheduled:
        index = period_ordinal(label, plan.period) - first
        start = starts[bisect.bisect_right(starts, index) - 1]
        blocks.setdefault(plan.key(plan.due[start]), []).append(plan.key(label))
    return tuple((block, tuple(found)) for block, found in blocks.items())


# -- parameters --------------------------------------------------------------------------------
def check_of_params(of: type[PeriodTask], of_params: Mapping[str, Any], period: Any) -> None:
    """Refuse ``of_params`` that ``of`` would not take: an unknown name, the period parameter
    (the range sets it), a value its parameter cannot parse or serialize, a required parameter
    left out; then build one period task, so its own checks (``attempt`` >= 0, a command-line
    ``--Of-attempt``) run now.
    Raises InvalidInput naming the parameter; writes nothing."""
    params = dict(of.get_params())
    family = of.get_task_family()
    for name, value in dict(of_params).items():
        if name == of.period_param:
            raise InvalidInput(f"of_params.{name}", value, "set by the range for each period")
        if name not in params:
            known = ", ".join(n for n in params if n != of.period_param)
            raise InvalidInput(
                f"of_params.{name}",
                value,
                f"{family} has no parameter {name!r} (it has: {known or 'none'})",
            )
        _check_value(params[name], f"of_params.{name}", value, family)
    for name, param in params.items():
        if (
            name not in of_params
            and name != of.period_param
            and not param.has_task_value(family, name)
        ):
            raise InvalidInput(
                f"of_params.{name}", None, f"{family} requires it (no default, none configured)"
            )
    of(**{**dict(of_params), of.period_param: period})


def _check_value(param: Any, field: str, value: Any, family: str) -> None:
    """The value as the command line would give it (parsed when a string), normalized, and
    serialized and parsed back as Luigi does when it hands a task over."""
    try:
        normal = param.normalize(param.parse(value) if isinstance(value, str) else value)
        param.parse(param.serialize(normal))
    except InvalidInput:
        raise
    except Exception as exc:  # a Luigi parameter raises what its parse/serialize raise
        kind = type(param).__name__
        raise InvalidInput(field, value, f"not a value of {family}'s {kind}: {exc}") from None


def chunk_params(
    rng: Any, session: FillSession, block: str, keys: tuple[str, ...]
) -> dict[str, Any]:
    """The parameters of the chunk of ``rng`` (a range) that fills ``keys`` of ``block``."""
    return {
        "of": rng.of,
        "of_params": rng.of_params,
        "block": block,
        "last": keys[-1],
        "keys": keys,
        "inline": session.filler.inline,
        "since": session.started,
    }


def independent_chunks(rng: Any, session: FillSession) -> list[IndependentChunk]:
    """Every chunk of a forward or reverse fill, ordered (``ContiguousChunk.priority``) so
    that Luigi's scheduler takes the oldest (or newest) periods first, in parallel with
    ``--workers`` and across every process sharing the range."""
    count = len(session.chunks)
    return [
        IndependentChunk(**chunk_params(rng, session, block, keys), order=rank / count)
        for rank, (block, keys) in enumerate(session.chunks)
    ]


def emit_metrics(rng: Any, plan: RangePlan) -> None:
    """Fire Luigi's RangeEvent figures of ``plan`` on ``rng``, as luigi's RangeBase does."""
    family = rng.of_class().get_task_family()
    delay, count, fraction = range_metrics(plan)
    rng.trigger_event(RangeEvent.DELAY, family, delay)
    rng.trigger_event(RangeEvent.COMPLETE_COUNT, family, count)
    rng.trigger_event(RangeEvent.COMPLETE_FRACTION, family, fraction)


def job_profile(rng: Any, session: FillSession) -> JobProfile:
    """The profile of the range's job as this invocation plans it: the period kind, zone,
    lateness, catch-up, strategy and window, and what a period task requires (its upstream
    gatekeeper tasks, ``causes.requirements``, read from the task of the first scheduled
    period; ``requires()`` declares only, so calling it is safe)."""
    plan = session.plan
    sample = sample_task(rng, session)
    upstream = [(dep.job_id, dep.period_kind, dep.period_key) for dep in upstream_tasks(sample)]
    requires = requirements(sample.period_kind, sample.period_key, upstream)
    stop = rng.stop_label()
    return profile(
        rng.job(),
        rng.of_class().period_kind,  # on the class's calendar
        session.schedule.timezone.key,
        requires,
        lateness=duration_text(session.schedule.lateness),
        catchup=str(session.schedule.catchup),
        strategy=session.schedule.strategy.value,
        start=plan.key(rng.start_label()),
        stop=None if stop is None else plan.key(stop),
        freshness=class_freshness(rng.of_class()),
    )


def sample_task(rng: Any, session: FillSession) -> PeriodTask:
    """The period task of the first scheduled period (else the window's first)."""
    plan = session.plan
    return rng.task_for(plan.scheduled[0] if plan.scheduled else rng.first_business_label())


def upstream_tasks(task: Any) -> list[PeriodTask]:
    """The gatekeeper period tasks ``task`` requires (``requires()`` declares only, so
    calling it is safe), in its order."""
    return [dep for dep in luigi.task.flatten(task.requires()) if isinstance(dep, PeriodTask)]


def class_freshness(cls: Any) -> str | None:
    """The ``freshness`` a task class declares, normalised (``6h``), or None; InvalidInput
    naming ``Class.freshness`` and the value for a bad one (the range then records nothing)."""
    declared = getattr(cls, "freshness", None)
    if declared is None:
        return None
    return duration_text(parse_freshness(declared, f"{cls.get_task_family()}.freshness"))
