"""What a job is known to be, and why one of its periods is blocked (pure).

- A **JobProfile** is what the ledger keeps of a job besides its attempts: its period kind,
  the business zone, lateness, catch-up, strategy and window its range planned with, and its
  **requirements** (the upstream jobs its task requires, each at a period offset: 0 for the
  same period, -1 for the one before; or, for a week, month or quarter, every business day
  of a daily job within one of its periods: ``Requirement.within``, from ``requirements``).
  A range records it when it takes a fill up, so ``gatekeeper status JOB`` plans the window
  as the range did, with no flags.
- A period is **blocked** when it has no attempt of its own and a required upstream is failed,
  abandoned (or running on an expired lease) or missing for it. ``blocking_cause`` names the
  first failed or abandoned upstream (else the first missing one), in the order the task
  requires them (a requirement's days oldest first): the cause an operator acts on. Asked
  with ``held=True`` (the closing line, status, the report and serve) it also names an
  upstream running on another run's live lease (``held``: the period waits on it), after
  failures and before missing upstreams.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import SupportsInt, cast

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import Period, parse_period
from gatekeeper.core.periods.calendar_paths import calendar_ref
from gatekeeper.core.periods.coarse import CoarsePeriod, last_day
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.validation import check_name


@dataclass(frozen=True, slots=True)
class Requirement:
    """An upstream job the task requires, ``offset`` periods from its own (0: the same).

    With ``kind`` (an upstream of finer, daily periods: a month's trading days; made with
    ``within``) it requires every business period of ``kind`` within that period of its own,
    each a (job, period) pair; ``calendar`` is the name of ``kind``'s calendar, kept beside it
    (a kind compares by its name only).
    """

    job: str
    offset: int = 0
    kind: Period | None = None
    calendar: str | None = None

    @classmethod
    def within(cls, job: str, kind: Period, offset: int = 0) -> Requirement:
        """Every business period of ``kind`` (daily, on its calendar) within the dependent's
        period ``offset`` periods from its own; InvalidInput for a kind other than daily."""
        if kind.base.name != "daily":
            raise InvalidInput("requires.kind", kind.name, "expected daily periods")
        return cls(check_name(job, "requires.job"), offset, kind, calendar_ref(kind.calendar))

    def key_for(self, kind: Period, key: str) -> str:
        """The upstream's ledger key for the dependent's ``key`` (a requirement of its kind)."""
        return key if self.offset == 0 else kind.key(kind.at(kind.ordinal(key) + self.offset))

    def keys_for(self, kind: Period, key: str) -> tuple[str, ...]:
        """The upstream's ledger keys the dependent's period ``key`` (of ``kind``) requires,
        oldest first: one, or with ``self.kind`` each of its business days in that period."""
        if self.kind is None:
            return (self.key_for(kind, key),)
        first = kind.at(kind.ordinal(key) + self.offset)
        stop = last_day(kind, first) + dt.timedelta(days=1)
        return tuple(self.kind.key(day) for day in self.kind.between(first, stop))

    def to_list(self) -> list[object]:
        """As stored: ``["Orders", -1]``, or ``["Trades", 0, "daily", "weekdays"]``."""
        found: list[object] = [self.job, self.offset]
        return found if self.kind is None else [*found, self.kind.name, self.calendar]

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {"job": self.job, "offset": self.offset}
        if self.kind is not None:
            found.update(kind=self.kind.name, calendar=self.calendar)
        return found

    @classmethod
    def from_list(cls, found: Sequence[object]) -> Requirement:
        """The requirement ``to_list`` stored; ValueError/TypeError/InvalidInput otherwise."""
        job, offset, *kind = found
        number = cast("str | SupportsInt", offset)  # int() refuses what is neither
        if not kind:
            return cls(check_name(job, "requires.job"), int(number))
        name, calendar = kind
        period = parse_period(name, "requires.kind").on(calendar)
        return cls.within(cast(str, job), period, int(number))  # within checks the name


def requirements(
    kind: Period, key: str, upstream: Sequence[tuple[str, Period, str]]
) -> tuple[Requirement, ...]:
    """What a task of ``kind`` for period ``key`` requires, from the (job, kind, key) of each
    period task its ``requires()`` returns, in that order (pure): an upstream of its own kind
    at its offset (a business period of ``kind``); the days of a daily job, when they are
    every business day of one of its weekly, monthly or quarterly periods
    (``Requirement.within``). Other upstreams (a few days of a month, hours) are not
    recorded: their causes are not named."""
    own = kind.ordinal(key)
    found: list[Requirement] = []
    days: dict[Requirement, set[str]] = {}
    for job, up, wanted in upstream:
        if up.base is kind.base and kind.is_business(wanted):
            found.append(Requirement(job, kind.ordinal(wanted) - own))
        elif up.base.name == "daily" and isinstance(kind.base, CoarsePeriod):
            holder = kind.base.containing(up.parse(wanted))
            within = Requirement.within(job, up, kind.rank(holder) - own)
            found.append(within)
            days.setdefault(within, set()).add(wanted)
    whole = {r for r, keys in days.items() if keys == set(r.keys_for(kind, key))}
    return tuple(dict.fromkeys(r for r in found if r.kind is None or r in whole))


@dataclass(frozen=True, slots=True)
class JobProfile:
    """What the ledger knows of a job besides its attempts (see the module docstring).

    ``start``/``stop`` are the ledger keys of the window the range last planned (None when not
    planned by a range, or open-ended); ``lateness``, ``catchup`` and ``strategy`` its texts;
    ``freshness`` the task class's deadline (``6h``), None when it declares none.
    """

    job: str
    period: Period
    timezone: str
    lateness: str | None = None
    catchup: str | None = None
    strategy: str | None = None
    start: str | None = None
    stop: str | None = None
    requires: tuple[Requirement, ...] = ()
    freshness: str | None = None  # the task class's ``freshness`` (core/freshness.py)
    calendar: str = "all"  # the name of the calendar ``period`` follows (core/periods/calendars.py)

    def requires_json(self) -> str:
        """The requirements as stored: ``[["Orders", 0], ["Trades", 0, "daily", "weekdays"]]``
        (``Requirement.to_list``)."""
        return json.dumps([r.to_list() for r in self.requires])

    @staticmethod
    def parse_requires(text: str | None) -> tuple[Requirement, ...]:
        """The stored requirements; InvalidInput for anything but a list of [job, offset]
        (or [job, offset, kind, calendar])."""
        try:
            return tuple(Requirement.from_list(found) for found in json.loads(text or "[]"))
        except (ValueError, TypeError) as exc:
            raise InvalidInput("requires", text, f"not a list of [job, offset] ({exc})") from None

    def to_json(self) -> dict[str, object]:
        return {
            "job": self.job,
            "period": self.period.name,
            "timezone": self.timezone,
            "lateness": self.lateness,
            "catchup": self.catchup,
            "strategy": self.strategy,
            "start": self.start,
            "stop": self.stop,
            "requires": [r.to_json() for r in self.requires],
            "freshness": self.freshness,
        }


def profile(
    job: str,
    period: object,
    timezone: str,
    requires: Sequence[Requirement] = (),
    **planned: str | None,
) -> JobProfile:
    """A checked JobProfile (``planned``: lateness, catchup, strategy, start, stop,
    freshness)."""
    kind = parse_period(period)
    return JobProfile(
        check_name(job, "job"),
        kind,
        str(timezone),
        **planned,
        requires=tuple(requires),
        calendar=calendar_ref(kind.calendar),
    )


@dataclass(frozen=True, slots=True)
class Cause:
    """Why a period is blocked: its upstream ``job`` is ``state`` for ``period``."""

    job: str
    period: str
    state: str  # failed, abandoned, missing, or held (running on a live lease)
    attempt: int | None = None
    run_id: str | None = None
    error: str | None = None
    until: dt.datetime | None = None  # held: when the holder's lease expires

    def describe(self, of: str | None = None) -> str:
        """``Orders 2026-11-18 failed (attempt 1: disk full)``, ``Orders 2026-11-18 missing``,
        ``waiting on Orders 2026-11-18, held by run R until T``; the period left out when it
        is ``of`` (the blocked period's own)."""
        period = "" if self.period == of else f" {self.period}"
        if self.state == HELD:
            until = "" if self.until is None else f" until {self.until.isoformat()}"
            return f"waiting on {self.job}{period}, held by run {self.run_id}{until}"
        head = f"{self.job}{period} {self.state}"
        if self.attempt is None:
            return head
        if not self.error:
            return f"{head} (attempt {self.attempt})"
        error = " ".join(self.error.split())
        error = error if len(error) <= 200 else error[:197] + "..."
        return f"{head} (attempt {self.attempt}: {error})"

    @property
    def lead(self) -> str:
        """What a blocked period's line says before ``describe()``: ``by `` (a held
        upstream's description says ``waiting on`` itself)."""
        return "" if self.state == HELD else "by "

    def reason(self) -> str:
        """``by Orders 2026-11-18 failed (...)`` or ``waiting on Orders ..., held by ...``."""
        return self.lead + self.describe()

    def to_json(self) -> dict[str, object]:
        found: dict[str, object] = {
            "job": self.job,
            "period": self.period,
            "state": self.state,
            "attempt": self.attempt,
            "run_id": self.run_id,
            "error": self.error,
        }
        if self.until is not None:
            found["until"] = self.until.isoformat()
        return found


#: The state of an upstream running on a live lease, as a closing line names it.
HELD = "held"


def upstream_state(attempt: Attempt | None, now: dt.datetime, *, held: bool = False) -> str | None:
    """``failed``, ``abandoned`` or ``missing`` when ``attempt`` (an upstream's latest for a
    period) blocks its dependents at ``now``; None when it succeeded or is running on a live
    lease (the dependent is waiting, not blocked), or with ``held`` ``held`` for the latter."""
    if attempt is None:
        return "missing"
    if attempt.state is RunState.RUNNING:
        if attempt.lease_live(now):
            return HELD if held else None
        return "abandoned"
    if attempt.state is RunState.SUCCEEDED:
        return None
    return str(attempt.state.value)


def blocking_cause(
    kind: Period,
    key: str,
    requires: Sequence[Requirement],
    upstream: Mapping[str, Mapping[str, Attempt]],
    now: dt.datetime,
    *,
    held: bool = False,
) -> Cause | None:
    """What blocks period ``key`` at ``now``, or None: the first requirement (in the order the
    task requires them) that failed or was abandoned, else (with ``held``) the first running
    on a live lease, else the first that is missing (a failure is what the operator acts on;
    a missing upstream may itself be its effect).

    ``upstream`` maps each required job to its latest attempt per ledger key (the keys the
    requirements need; a key absent is a missing upstream).
    """
    waiting = missing = None
    for requirement in requires:
        for wanted in requirement.keys_for(kind, key):
            attempt = upstream.get(requirement.job, {}).get(wanted)
            state = upstream_state(attempt, now, held=held)
            if state is None:
                continue
            if attempt is None:
                missing = missing or Cause(requirement.job, wanted, state)
                continue
            found = Cause(
                requirement.job,
                wanted,
                state,
                attempt.attempt,
                attempt.run_id,
                attempt.error,
                until=attempt.lease_expires_at if state == HELD else None,
            )
            if state != HELD:
                return found
            waiting = waiting or found
    return waiting or missing
