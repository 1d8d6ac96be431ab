"""A plan file as applied: what ``gatekeeper plan -o FILE`` wrote, and whether it still holds
(pure).

``ReviewedPlan.parse`` reads the file's JSON once into typed values (the job, the policy, the
clock it was made at, the periods it acts on in order with their action and reason, the
facts and their digest). ``refusal`` judges it against the facts the ledger holds now and
the applying range's job and clock: the reason it must not be applied (another job; older
than ``max_age``; a fact changed, the first one named with what it was and what it is), or
None. Nothing is read or written here.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import cast

from gatekeeper.core.backfill import Action, PlannedPeriod, Reprocess
from gatekeeper.core.cascade import Step
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.intervals import duration_text
from gatekeeper.core.plan_facts import Fact, digest
from gatekeeper.core.validation import check_timestamp

FIELD = "plan_file"


@dataclass(frozen=True, slots=True)
class ReviewedPlan:
    """A reviewed plan: ``job``'s periods to act on (``todo``, in its order) under ``policy``,
    made at ``now``, from ``facts`` whose digest was ``digest``; ``source`` names the file;
    ``cascade`` the republishes of ``stale``'s cascade, in order (the job's own among them)."""

    source: str
    job: str
    policy: Reprocess
    now: dt.datetime
    todo: tuple[PlannedPeriod, ...]
    digest: str
    facts: tuple[Fact, ...]
    cascade: tuple[Step, ...] = ()

    @property
    def pairs(self) -> tuple[tuple[str, str], ...]:
        """The (job, period) pairs whose facts the plan read."""
        return tuple((f.job, f.period) for f in self.facts)

    @classmethod
    def parse(cls, text: str, source: str) -> ReviewedPlan:
        """The plan in ``text`` (a plan file's JSON); InvalidInput naming ``plan_file`` for
        anything else."""
        try:
            data = json.loads(text)
            by_key = {p["period"]: p for p in data["periods"]}
            todo = tuple(_planned(by_key[key]) for key in data["order"])
            facts = tuple(Fact(*row) for row in data["facts"])
            cascade = tuple(_step(row) for row in data.get("cascade", ()))
            return cls(
                source,
                str(data["job"]),
                Reprocess.parse(data["reprocess"]),
                check_timestamp(data["window"]["now"], "now"),
                todo,
                str(data["digest"]),
                facts,
                cascade,
            )
        except (ValueError, KeyError, TypeError) as exc:
            reason = f"not a plan file of gatekeeper plan -o ({type(exc).__name__}: {exc})"
            raise InvalidInput(FIELD, source, reason) from None


def _planned(row: Mapping[str, object]) -> PlannedPeriod:
    """One period of a plan file's ``periods``, as the planner made it."""
    upstream = row.get("upstream", [])
    rows = cast("list[list[str]]", upstream)  # pragma: no mutate (cast returns its value)
    pairs = tuple((str(job), str(key)) for job, key in rows)
    return PlannedPeriod(str(row["period"]), Action(row["action"]), str(row["reason"]), pairs)


def _step(row: Mapping[str, object]) -> Step:
    """One republish of a plan file's ``cascade``."""
    return Step(str(row["job"]), str(row["period"]), str(row["reason"]), int(str(row["layer"])))


def refusal(
    plan: ReviewedPlan, job: str, now: dt.datetime, max_age: dt.timedelta, current: Sequence[Fact]
) -> str | None:
    """Why ``plan`` must not be applied by ``job``'s range at ``now``, whose ledger holds
    ``current`` (the facts of ``plan.pairs`` read now), or None when it may."""
    if plan.job != job:
        return f"a plan of {plan.job}, not of {job}"
    age = now - plan.now
    if age > max_age:
        return (
            f"made at {plan.now.isoformat()}, {duration_text(age)} before this run's clock "
            f"{now.isoformat()}: older than --max-age {duration_text(max_age)}; plan again"
        )
    if digest(current) == plan.digest:
        return None
    now_by_pair = {(f.job, f.period): f for f in current}
    for was in sorted(plan.facts, key=lambda f: (f.job, f.period)):
        found = now_by_pair.get((was.job, was.period))
        if found != was:
            what = "not read" if found is None else found.describe()
            return (
                f"the ledger changed since it was made: {was.job} {was.period} was "
                f"{was.describe()}, is {what}; plan again"
            )
    return f"its digest {plan.digest} is not that of its facts; plan again"
