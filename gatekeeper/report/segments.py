"""A window's periods as segments: long runs of complete periods as one, the rest one by one.

``window_segments(plan, facts, through)`` is ``period_states(plan, facts, through)``
(``report/states.py``) in proportion to what is not complete: each run of at least
``LONG`` consecutive complete due periods (the plan's ``due`` less its gaps and the periods
its catch-up policy skips, as the ledger's runs say) is one ``Run`` (its first and last
period, how many succeeded, how many periods off the calendar lie between them, and the
revisions its periods' newest publications carry); every other period of the window is
judged one by one (``states.judge``) from its latest attempt.
A stale period (``states.py``: its publication's evidence superseded) is never inside a run:
it cuts the run around it and is judged one by one, carrying its Staleness entries.
``expand(plan, segments)`` gives back the state of each period, as ``period_states`` would.
What the report draws, and where it reads attempts (``individual``). Pure.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

from gatekeeper.core.periods import Label
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.records import Publication
from gatekeeper.report.states import (
    PeriodState,
    PeriodStatus,
    WindowFacts,
    base_bounds,
    judge,
    tally,
    window_bounds,
)

#: the fewest consecutive complete periods drawn as one run (shorter ones are cells)
LONG = 32


@dataclass(frozen=True, slots=True)
class Revisions:
    """The newest publications of some periods: the lowest and highest revision among them
    and how many of the periods have one (``published``)."""

    low: int
    high: int
    published: int

    @classmethod
    def of(cls, revisions: Iterable[int]) -> Revisions | None:
        """The Revisions of periods whose newest revisions are ``revisions``; None for none."""
        found = list(revisions)
        return cls(min(found), max(found), len(found)) if found else None


@dataclass(frozen=True, slots=True)
class Run:
    """Consecutive complete periods of a window, drawn as one: the first and last (business)
    period's keys, how many succeeded (``count``), how many periods between them are not
    business periods of the job's calendar (``non_business``) and, for a publishing job,
    the revisions of its periods' newest publications (None when none has one)."""

    first: str
    last: str
    count: int
    non_business: int = 0
    revisions: Revisions | None = None

    @property
    def state(self) -> PeriodState:
        return PeriodState.SUCCEEDED


Segment = PeriodStatus | Run


def complete_spans(
    plan: RangePlan, shortest: int = LONG, stale: Iterable[str] = ()
) -> list[tuple[int, int]]:
    """The ordinals ``[a, b)`` of each run of at least ``shortest`` consecutive complete due
    periods of ``plan`` (oldest first): its due ones split at its gaps, skipped ones and
    the keys of its ``stale`` periods."""
    kind = plan.period
    if not plan.due:
        return []
    lo = kind.ordinal(plan.due[0])
    hi = lo + len(plan.due)
    marked = (kind.label(key) for key in stale)
    cuts = sorted(
        {kind.ordinal(p) for p in (*plan.gaps, *plan.skipped_by_policy)}
        | {n for n in (kind.ordinal(p) for p in marked if kind.is_business(p)) if lo <= n < hi}
    )
    spans, at = [], lo
    for cut in [*cuts, hi]:
        if cut - at >= shortest:
            spans.append((at, cut))
        at = max(at, cut + 1)
    return spans


def segment_counts(segments: Iterable[Segment]) -> dict[PeriodState, int]:
    """How many periods ``segments`` hold in each state, as ``states.counts`` gives those
    of the periods they stand for (``expand``)."""
    found: Counter[PeriodState] = Counter()
    for s in segments:
        if isinstance(s, Run):
            found[s.state] += s.count
            found[PeriodState.NON_BUSINESS] += s.non_business
        else:
            found[s.state] += 1
    return tally(found)


def window_span(plan: RangePlan, through: str | None = None) -> tuple[str, str] | None:
    """The keys of the first and last period ``window_segments`` covers, or None when its
    window has none."""
    base = plan.period.base
    first, end = _base_window(plan, through)
    return (plan.key(base.at(first)), plan.key(base.at(end - 1))) if end > first else None


def _base_window(plan: RangePlan, through: str | None) -> tuple[int, int]:
    """The base kind's ordinals ``[first, end)`` of the periods ``period_states`` shows."""
    kind = plan.period
    first, end = window_bounds(plan, through)
    if kind.base is kind:
        return first, end
    return base_bounds(plan, kind.at(end - 1) if end > first else None)


def _pieces(
    plan: RangePlan,
    through: str | None,
    shortest: int,
    publications: Mapping[str, Publication] | None = None,
    stale: Iterable[str] = (),
) -> Iterator[tuple[int, int] | Run]:
    """The window in order: base ordinals ``(a, b)`` of periods judged one by one, and runs
    (with the revisions of ``publications`` among their periods), cut at ``stale`` keys."""
    kind, base = plan.period, plan.period.base
    at, end = _base_window(plan, through)
    newest = publications or {}
    published = sorted(newest)
    for a, b in complete_spans(plan, shortest, stale):
        first, last = kind.at(a), kind.at(b - 1)
        start, stop = base.ordinal(first), base.ordinal(last) + 1
        if start > at:
            yield (at, start)
        keys = plan.key(first), plan.key(last)
        among = published[bisect_left(published, keys[0]) : bisect_right(published, keys[1])]
        revisions = Revisions.of(newest[k].revision for k in among if kind.is_business(k))
        yield Run(*keys, b - a, (stop - start) - (b - a), revisions)
        at = stop
    if end > at:
        yield (at, end)


def individual(
    plan: RangePlan, through: str | None = None, shortest: int = LONG, stale: Iterable[str] = ()
) -> list[Label]:
    """The periods of the window (of the base kind) that ``window_segments`` judges one by
    one: those outside its runs (cut at the ``stale`` keys); the ones whose attempts it
    needs."""
    base = plan.period.base
    return [
        base.at(n)
        for p in _pieces(plan, through, shortest, stale=stale)
        if isinstance(p, tuple)
        for n in range(*p)
    ]


def window_segments(
    plan: RangePlan, facts: WindowFacts, through: str | None = None, shortest: int = LONG
) -> tuple[Segment, ...]:
    """The window of ``period_states(plan, facts, through)`` as segments, oldest first (see
    the module). ``facts.latest`` must hold the latest attempt of every period of
    ``individual(plan, through, shortest, facts.stale)`` that has one; no other is looked
    at. ``facts.publications`` holds the newest of each period of the window that has one (a
    run's revisions are those among its periods); ``facts.stale`` what superseded the
    evidence of the stale ones (they cut the runs)."""
    base = plan.period.base
    out: list[Segment] = []
    for piece in _pieces(plan, through, shortest, facts.publications, facts.stale):
        if isinstance(piece, Run):
            out.append(piece)
        else:
            out.extend(judge(plan, [base.at(n) for n in range(*piece)], facts))
    return tuple(out)


def expand(plan: RangePlan, segments: Sequence[Segment]) -> list[tuple[str, PeriodState]]:
    """(period key, state) of every period ``segments`` cover, oldest first: a run's business
    periods succeeded, the others between them non-business. Pure."""
    kind, base = plan.period, plan.period.base
    out = []
    for segment in segments:
        if isinstance(segment, PeriodStatus):
            out.append((segment.period, segment.state))
            continue
        first, last = base.ordinal(segment.first), base.ordinal(segment.last)
        for n in range(first, last + 1):
            label = base.at(n)
            business = kind.is_business(label)
            state = PeriodState.SUCCEEDED if business else PeriodState.NON_BUSINESS
            out.append((plan.key(label), state))
    return out


def stretches(segments: Sequence[Segment]) -> Iterator[tuple[PeriodStatus, ...] | Run]:
    """``segments`` in order, each run alone and the periods between runs together."""
    cells: list[PeriodStatus] = []
    for segment in segments:
        if isinstance(segment, Run):
            if cells:
                yield tuple(cells)
                cells = []
            yield segment
        else:
            cells.append(segment)
    if cells:
        yield tuple(cells)
