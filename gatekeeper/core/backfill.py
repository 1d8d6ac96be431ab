"""A backfill's plan: every period of a window with the action a fill would take and why (pure).

``plan_backfill(ranged, facts, policy)`` starts from the range's own plan (``ranged``, a
``RangePlan``: ``planning.plan_from_ledger`` over the periods the range reads as complete,
with its ``task_limit``), so the default
policy, ``missing``, runs exactly the periods ``RangeBusiness*`` would schedule: its gaps
(every due period whose latest attempt did not succeed, failed and abandoned ones included,
within the catch-up policy), in its strategy's order, the first ``task_limit`` of them. The
other policies add to them, on every due period of the window (the catch-up policy limits
only what ``missing`` fills):

- ``failed``: also the periods whose latest attempt failed or was abandoned (``rerun``);
- ``stale``: also the publications whose evidence names a superseded upstream attempt
  (``republish``, the ledger's staleness rule: ``ledger/staleness.py``), and, given what is
  below the window (``BackfillFacts.below``), the cascade a range runs first
  (``core/cascade.py predict``): every stale publication below, in dependency order, and
  the window's own periods it makes stale (``republish``, with the reason the range will
  record);
- ``all``: every due business period: ``rerun``, or ``republish`` for a publisher, with the
  reason ``reprocess all``.

Every period gets one ``Action`` and a reason. A period held by another run's live lease is
``skip`` (``held by run R until T``) but takes its place among the ``task_limit`` periods, as
the range schedules it. Nothing is read or written here: the facts and the clock come in.
"""

from __future__ import annotations

import datetime as dt
import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from gatekeeper.core.cascade import Below, Step, predict
from gatekeeper.core.causes import Requirement
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import Period
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.progress import duration
from gatekeeper.core.records import Attempt, RunState, Staleness
from gatekeeper.core.schedule import Strategy
from gatekeeper.core.window import plan_window, with_non_business


class Reprocess(str, enum.Enum):
    """Which periods a backfill takes beyond the missing ones (see the module docstring)."""

    MISSING = "missing"
    FAILED = "failed"
    STALE = "stale"
    ALL = "all"

    def __str__(self) -> str:
        return self.value

    @classmethod
    def parse(cls, value: object) -> Reprocess:
        """The policy named ``value``; InvalidInput naming ``reprocess`` for another."""
        try:
            return cls(value)
        except ValueError:
            names = ", ".join(p.value for p in cls)
            raise InvalidInput("reprocess", value, f"expected one of {names}") from None


class Action(str, enum.Enum):
    """What a fill does with a period: attempt it first (``run``), again (``rerun``), attempt
    it and publish a new revision (``republish``), or leave it (``skip``)."""

    RUN = "run"
    RERUN = "rerun"
    REPUBLISH = "republish"
    SKIP = "skip"

    def __str__(self) -> str:
        return self.value


#: an upstream (job, period key) pair a period's gate asks about
Pair = tuple[str, str]


@dataclass(frozen=True, slots=True)
class PlannedPeriod:
    """One period of a backfill plan: its action, why, and the upstream pairs it gates on."""

    period: str
    action: Action
    reason: str
    upstream: tuple[Pair, ...] = ()

    def to_json(self) -> dict[str, object]:
        return {
            "period": self.period,
            "action": self.action.value,
            "reason": self.reason,
            "upstream": [list(pair) for pair in self.upstream],
        }


#: the job's latest successes an estimate takes the median of
ESTIMATE_SAMPLES = 20
ZERO = dt.timedelta(0)


@dataclass(frozen=True, slots=True)
class Estimate:
    """How long a plan's ``periods`` would take one after another: the median duration
    (``updated_at - started_at``) of the job's last ``samples`` successes; None without
    any (no history)."""

    periods: int
    samples: int
    median: dt.timedelta | None

    @property
    def total(self) -> dt.timedelta | None:
        return None if self.median is None else self.median * self.periods

    def describe(self) -> str:
        """``estimate: 3 periods x 2m05s = 6m15s, one after another (median of the last 20
        successes)``, or ``estimate: no history``."""
        if self.median is None:
            return "estimate: no history (no succeeded attempt recorded)"
        total = self.median * self.periods
        source = (
            "the one success recorded"
            if self.samples == 1
            else f"median of the last {self.samples} successes"
        )
        periods = f"{self.periods} period{'' if self.periods == 1 else 's'}"
        return (
            f"estimate: {periods} x {duration(self.median.total_seconds())} = "
            f"{duration(total.total_seconds())}, one after another ({source})"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "periods": self.periods,
            "samples": self.samples,
            "median_seconds": None if self.median is None else self.median.total_seconds(),
            "total_seconds": None if self.total is None else self.total.total_seconds(),
            "description": self.describe(),
        }


def estimate(successes: Sequence[Attempt], periods: int) -> Estimate:
    """The Estimate of ``periods`` from ``successes`` (newest first: the first
    ``ESTIMATE_SAMPLES`` count). Pure."""
    spans = sorted(max(a.updated_at - a.started_at, ZERO) for a in successes[:ESTIMATE_SAMPLES])
    if not spans:
        return Estimate(periods, 0, None)
    middle = len(spans) // 2
    median = spans[middle] if len(spans) % 2 else (spans[middle - 1] + spans[middle]) / 2
    return Estimate(periods, len(spans), median)


@dataclass(frozen=True, slots=True)
class BackfillFacts:
    """What the ledger holds that a backfill plan of one job reads, as values.

    ``latest``: key -> its latest attempt, over the window; ``publishes``: it publishes;
    ``stale``: its stale publications in the window (``Ledger.stale``); ``requires``: what
    its periods require; ``through``: its last recorded period (an open window runs on
    through it); ``successes``: its succeeded attempts that finished last, newest first
    (``ESTIMATE_SAMPLES`` of them)."""

    job: str
    latest: Mapping[str, Attempt]
    publishes: bool = False
    stale: tuple[Staleness, ...] = ()
    requires: tuple[Requirement, ...] = ()
    through: str | None = None
    successes: tuple[Attempt, ...] = ()
    below: Below | None = None  # the publications below the window (``stale`` only)


@dataclass(frozen=True, slots=True)
class BackfillPlan:
    """Every period of a job's window with its action (``periods``, oldest first), under
    ``policy``, and the range plan it started from (``range``); ``cascade`` the republishes
    of ``stale``'s cascade in order, the window's own among them."""

    job: str
    policy: Reprocess
    range: RangePlan
    periods: tuple[PlannedPeriod, ...]
    order: tuple[str, ...] = ()  # the keys it acts on, in fill order
    estimate: Estimate | None = None
    taken: tuple[str, ...] = ()  # the keys within task_limit, in fill order (held ones too)
    cascade: tuple[Step, ...] = ()

    @property
    def todo(self) -> tuple[PlannedPeriod, ...]:
        """The periods it acts on (``run``, ``rerun``, ``republish``), in fill order."""
        by_key = {p.period: p for p in self.periods}
        return tuple(by_key[key] for key in self.order)

    def counts(self) -> dict[str, int]:
        """Periods by action, in ``Action`` order (those that occur)."""
        found = {a.value: sum(1 for p in self.periods if p.action is a) for a in Action}
        return {name: n for name, n in found.items() if n}

    @property
    def below(self) -> tuple[Step, ...]:
        """The cascade's republishes of other jobs, in order."""
        return tuple(step for step in self.cascade if step.job != self.job)

    def describe(self) -> str:
        """``Sales: reprocess failed: 2 run, 1 rerun, 7 skip`` (or ``nothing to do``), and
        ``; first 2 republish below`` for a cascade."""
        parts = ", ".join(f"{n} {action}" for action, n in self.counts().items())
        head = f"{self.job}: reprocess {self.policy}: "
        more = f"; first {len(self.below)} republish below" if self.below else ""
        if not (self.order or self.below):
            return head + f"nothing to do ({parts or 'no periods'})"
        return head + parts + more

    def to_json(self) -> dict[str, object]:
        return {
            "job": self.job,
            "reprocess": self.policy.value,
            "window": self.range.to_json(),
            "counts": self.counts(),
            "order": list(self.order),
            "periods": [p.to_json() for p in self.periods],
            "estimate": None if self.estimate is None else self.estimate.to_json(),
            "cascade": [step.to_json() for step in self.cascade],
            "description": self.describe(),
        }


def plan_backfill(ranged: RangePlan, facts: BackfillFacts, policy: Reprocess) -> BackfillPlan:
    """The plan of ``ranged``'s window (the range's plan of the job) under ``policy``: see
    the module docstring. Pure."""
    kind = ranged.period
    choice = _choose(facts, ranged, policy)
    steps = _cascade(facts, choice) if policy is Reprocess.STALE else ()
    cascaded = {step.period: step.reason for step in steps if step.job == facts.job}
    periods = []
    for label in with_non_business(ranged, plan_window(ranged, facts.through)):
        key = ranged.key(label)
        if not kind.is_business(label):
            periods.append(PlannedPeriod(key, Action.SKIP, "non_business"))
            continue
        action, reason = _judge(facts, ranged.now, policy, key, choice)
        if key in cascaded:  # stale now, or once what is below it is republished
            action, reason = Action.REPUBLISH, cascaded[key]
        pairs = requirement_pairs(facts.requires, kind, key) if action is not Action.SKIP else ()
        periods.append(PlannedPeriod(key, action, reason, pairs))
    acting = {p.period for p in periods if p.action is not Action.SKIP}
    ordered = sorted({*choice.ordered, *acting}, key=kind.ordinal, reverse=choice.reverse)
    order = tuple(key for key in ordered if key in acting)
    guess = estimate(facts.successes, len(order) + sum(s.job != facts.job for s in steps))
    taken = tuple(key for key in choice.ordered if key in choice.taken)
    return BackfillPlan(facts.job, policy, ranged, tuple(periods), order, guess, taken, steps)


def _cascade(facts: BackfillFacts, choice: _Choice) -> tuple[Step, ...]:
    """``stale``'s cascade over ``facts.below`` (none without it), leaving the window's
    periods the range leaves: not complete (the fill's), or stale beyond ``task_limit``."""
    if facts.below is None:
        return ()
    stale = {s.business_date for s in facts.stale}
    left = choice.incomplete | (stale - choice.taken)
    return predict(facts.below, {(facts.job, key) for key in left})


@dataclass(frozen=True, slots=True)
class _Choice:
    """The keys of a window a policy chose: ``due``; ``incomplete`` (due, not complete);
    ``wanted`` (what the policy acts on), ``ordered`` in fill order, ``taken`` (the first
    ``task_limit`` of them)."""

    due: frozenset[str]
    incomplete: frozenset[str]
    wanted: frozenset[str]
    ordered: tuple[str, ...]
    taken: frozenset[str]
    reverse: bool = False


def _choose(facts: BackfillFacts, ranged: RangePlan, policy: Reprocess) -> _Choice:
    """What ``policy`` acts on: the range's gaps, and more (module docstring), in the order
    of the range's strategy, the first ``task_limit`` taken."""
    due = frozenset(map(ranged.key, ranged.due))
    incomplete = frozenset(ranged.key(p) for p in (*ranged.gaps, *ranged.skipped_by_policy))
    wanted = {ranged.key(p) for p in ranged.gaps}
    if policy is Reprocess.ALL:
        wanted = set(due)
    elif policy is Reprocess.FAILED:
        wanted |= {k for k in due if k in facts.latest and _failed(facts.latest[k], ranged.now)}
    elif policy is Reprocess.STALE:
        wanted |= {s.business_date for s in facts.stale if s.business_date in due} - incomplete
    kind = ranged.period
    reverse = ranged.strategy is Strategy.REVERSE
    ordered = tuple(sorted(wanted, key=kind.ordinal, reverse=reverse))
    taken = ordered[: ranged.task_limit]  # all of them for None
    return _Choice(due, incomplete, frozenset(wanted), ordered, frozenset(taken), reverse)


def _judge(
    facts: BackfillFacts, now: dt.datetime, policy: Reprocess, key: str, choice: _Choice
) -> tuple[Action, str]:
    """The action and reason of the business period ``key``."""
    if key not in choice.due:
        return Action.SKIP, "not_due"
    if key not in choice.wanted:
        return Action.SKIP, "outside catchup" if key in choice.incomplete else "complete"
    if key not in choice.taken:
        return Action.SKIP, "beyond task_limit"
    if key in choice.incomplete:
        return _incomplete(facts.latest.get(key), now)
    if policy is Reprocess.ALL:
        return (Action.REPUBLISH if facts.publishes else Action.RERUN), "reprocess all"
    return Action.REPUBLISH, stale_reason(s for s in facts.stale if s.business_date == key)


def _incomplete(latest: Attempt | None, now: dt.datetime) -> tuple[Action, str]:
    """What a fill does with a period that is not complete, whose latest attempt is
    ``latest``: run it, rerun it after a failure, or leave it to the run that holds it."""
    if latest is None:
        return Action.RUN, "missing"
    until = latest.lease_expires_at  # set whenever the lease is live
    if until is not None and latest.lease_live(now):
        return Action.SKIP, f"held by run {latest.run_id} until {until.isoformat()}"
    if latest.state is RunState.FAILED:
        error = f": {latest.error}" if latest.error else ""
        return Action.RERUN, f"attempt {latest.attempt} failed{error}"
    if _failed(latest, now):
        return Action.RERUN, "abandoned"
    return Action.RERUN, "not published"  # succeeded, but its publication is missing


def _failed(attempt: Attempt, now: dt.datetime) -> bool:
    """The attempt failed, was abandoned, or runs on a lease expired at ``now``."""
    if attempt.state is RunState.RUNNING:
        return not attempt.lease_live(now)
    return attempt.state in (RunState.FAILED, RunState.ABANDONED)


def stale_reason(found: Iterable[Staleness]) -> str:
    """``stale: upstream Orders 2026-11-03 attempt 1 → 2``, or ``... revision 1 → 2`` for an
    upstream republished on the same attempt (``Staleness.change``; several joined by ``; ``)."""
    return "; ".join(f"stale: {s.change}" for s in found)


def requirement_pairs(requires: Sequence[Requirement], kind: Period, key: str) -> tuple[Pair, ...]:
    """The upstream (job, period key) pairs the period ``key`` of ``kind`` requires."""
    return tuple((r.job, k) for r in requires for k in r.keys_for(kind, key))
