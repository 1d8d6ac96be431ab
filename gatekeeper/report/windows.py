"""The window ``status``, ``report``, ``check`` and ``serve`` judge a job over: its Schedule,
resolved from what is given and what the ledger knows of the job (reads only).

Each field of the Schedule, in order (``core/schedule.py resolve_schedule``): what is given
(a command-line flag, a query parameter), the job's recorded profile (what its range planned
with: ``core/causes.py`` JobProfile), then ``settings`` (the ``[gatekeeper]`` zone and
lateness: the environment over luigi.cfg, which the caller reads), else the defaults.
``start`` defaults to the window the range planned, else the job's first recorded period. The
period kind is the ledger's (its profile's, with its calendar, else that of its recorded
keys); a given ``period`` only sets it for a job the ledger does not know, and contradicting
the ledger is an error, as is a given ``calendar`` contradicting the job's own profile. The
window runs on through the job's last recorded period.

A job's period kind, calendar and zone are its own: recorded from its class whenever it is
attempted or planned (``luigi/own_schedule.py``), never taken from whoever required it. A job
with no window of its own that the recorded profiles of other jobs require (run only as a
dependency of their ranges) takes its window from theirs (``required_window``): the lateness
and catch-up of the first of them (by name) of its recorded keys' kind, and the window that
covers each one's window shifted by each requirement's period offset (open-ended when one of
them is), on its own recorded kind, calendar and zone (``on_own_schedule``). A weekly,
monthly or quarterly range that requires every day of a daily job within its periods
(``Requirement.within``) gives it the days of its window, mapped by time: from the first day
of its first period to the first day after its last (``_window_of``). Its upstreams
are its profile's, else the (job, period) pairs of its newest publication (``_published``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, cast

from gatekeeper.core.causes import JobProfile, Requirement, requirements
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, Period, kind_of_key, parse_period
from gatekeeper.core.periods.calendar_paths import calendar_ref
from gatekeeper.core.periods.calendars import parse_calendar
from gatekeeper.core.schedule import Schedule, ScheduleInput, resolve_schedule

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads


#: a source that says nothing
NOTHING = ScheduleInput()


@dataclass(frozen=True, slots=True)
class JobWindow:
    """A job's Schedule, what its periods require, and its last recorded period (``through``,
    when it is of the schedule's kind: a window open at its end runs on through it)."""

    schedule: Schedule
    requires: tuple[Requirement, ...] = ()
    through: str | None = None


def job_window(
    ledger: LedgerReads,
    job: str,
    given: ScheduleInput = NOTHING,
    settings: ScheduleInput = NOTHING,
) -> JobWindow:
    """``job``'s window (see the module docstring); two to four queries. Raises
    InvalidInput for a ``period`` that contradicts the ledger, no ``start`` for a job with no
    recorded period, or a bad field (naming it)."""
    own = ledger.job_profile(job)
    span = ledger.period_span(job)
    found = own
    planned = own is not None and own.start is not None  # a range of its own planned it
    if not planned and span is not None:  # run only as a dependency of ranges?
        found = on_own_schedule(required_window(job, span, ledger.profiles_requiring(job)), own)
    kind = _kind(job, given.period, found, span, planned)
    _check_calendar(job, given.calendar, own)
    recorded = ScheduleInput(
        start=span[0] if span else None,
    )
    if given.start is None and (found is None or found.start is None) and span is None:
        raise InvalidInput("start", None, f"{job} has no period in the ledger; give --start")
    schedule = resolve_schedule(
        ScheduleInput(
            start=given.start,
            stop=given.stop,
            period=kind,
            calendar=given.calendar,  # a job the ledger knows no calendar of (a dependency)
            timezone=given.timezone,
            lateness=given.lateness,
            catchup=given.catchup,
            strategy=given.strategy,
        ),
        _profile_input(found),
        settings,
        recorded,
    )
    return JobWindow(
        schedule=schedule,
        requires=_requires(ledger, job, own, span, kind),
        through=span[1] if span and schedule.period.owns_key(span[1]) else None,
    )


def _profile_input(found: JobProfile | None) -> ScheduleInput:
    if found is None:
        return ScheduleInput()
    return ScheduleInput(
        start=found.start,
        stop=found.stop,
        timezone=found.timezone,
        lateness=found.lateness,
        catchup=found.catchup,
        strategy=found.strategy,
    )


def required_window(
    job: str, span: tuple[str, str], consumers: list[JobProfile]
) -> JobProfile | None:
    """The profile of ``job`` (no profile of its own, recorded keys ``span``) that the
    profiles of ``consumers`` (those requiring it) say: see the module docstring. None when
    none of them planned a window over periods of the kind of its keys. Pure."""
    base = kind_of_key(span[0]).base
    found = [w for c in consumers if (w := _window_of(job, base, c)) is not None]
    if not found:
        return None
    first, kind = found[0][0], found[0][1]
    start = min(w[2] for w in found)
    stops = [w[3] for w in found]
    stop = None if None in stops else max(s for s in stops if s is not None)
    return JobProfile(
        job,
        kind,
        first.timezone,
        lateness=first.lateness,
        catchup=first.catchup,
        strategy=first.strategy,
        start=kind.key(start),
        stop=None if stop is None else kind.key(stop),
        calendar=first.calendar if kind is first.period else calendar_ref(kind.calendar),
    )


#: a consumer's window as ``job``'s: (the consumer, the kind of ``job``'s keys it reads,
#: the first of them, the first after them (None: open-ended))
Window = tuple[JobProfile, Period, Any, Any]


def _window_of(job: str, base: Period, consumer: JobProfile) -> Window | None:
    """The periods of ``job`` (keys of ``base``) a range's window of ``consumer`` requires:
    shifted by each requirement's offset when of the consumer's kind; by time when it
    requires every day within its periods (``Requirement.within``: from the first day of its
    first period to the first of the period after its last). None when it planned no window,
    or requires ``job`` on no periods of ``base``."""
    if consumer.start is None:
        return None
    wanted = [r for r in consumer.requires if r.job == job]
    own = consumer.period
    same = [r.offset for r in wanted if r.kind is None]
    within = [r for r in wanted if r.kind is not None and r.kind.base is base]
    if own.base is base and same:
        kind, offsets = own, same
    elif within:
        kind, offsets = cast(Period, within[0].kind), [r.offset for r in within]
    else:
        return None
    start = own.at(own.rank(consumer.start) + min(offsets))
    stop = None if consumer.stop is None else own.at(own.rank(consumer.stop) + max(offsets))
    return consumer, kind, start, stop


def on_own_schedule(derived: JobProfile | None, own: JobProfile | None) -> JobProfile | None:
    """The window ``derived`` from the ranges that required a job, on the job's ``own``
    recorded period kind, calendar and zone (its class's); either alone when the other is
    None. Pure."""
    if derived is None or own is None:
        return derived or own
    return replace(derived, period=own.period, timezone=own.timezone, calendar=own.calendar)


def _kind(
    job: str,
    given: object,
    found: JobProfile | None,
    span: tuple[str, str] | None,
    own: bool = True,
) -> Period:
    """The period kind: the profile's, else that of the job's recorded keys; a given period
    sets a job the ledger does not know, and must agree with one it does."""
    known = found.period if found else kind_of_key(span[0]) if span else None
    if given is None:
        return known or DAILY
    kind = parse_period(given)
    if known is not None and kind.base is known.base:
        return known  # with the calendar the ledger knows
    if known is not None:
        source = (
            ("its range's profile" if own else "the ranges that required it")
            if found
            else "its recorded periods"
        )
        raise InvalidInput(
            "period", given, f"{job} is {known.name} in the ledger ({source}); drop --period"
        )
    return kind


def _check_calendar(job: str, given: object, own: JobProfile | None) -> None:
    """A given calendar must agree with the one the job's own profile records (its range's,
    or its class's, recorded when it was attempted: ``luigi/own_schedule.py``)."""
    if given is None or own is None or given == own.calendar:
        return
    if parse_calendar(given).name != own.calendar:
        source = "its range's profile" if own.start is not None else "its class's calendar"
        raise InvalidInput(
            "calendar",
            given,
            f"{job} follows {own.calendar} in the ledger ({source}); drop --calendar",
        )


def _requires(
    ledger: LedgerReads,
    job: str,
    own: JobProfile | None,
    span: tuple[str, str] | None,
    kind: Period,
) -> tuple[Requirement, ...]:
    """What the job's periods require: its profile's requirements when a range recorded
    them (or its planned window), else its newest publication's (``_published``)."""
    if own is not None and (own.start is not None or own.requires):
        return own.requires
    return _published(ledger, job, span, kind)


def _published(
    ledger: LedgerReads, job: str, span: tuple[str, str] | None, kind: Period
) -> tuple[Requirement, ...]:
    """Without a range's profile: the upstreams of the job's newest publication (a consumer
    run without a range), each (job, period) pair of its evidence at its offset in ``kind``'s
    business periods, or the days of a daily job when they are every business day of its
    period on that job's own recorded calendar (``causes.requirements``); other pairs are left
    out. Never read from a requirement's label."""
    newest = None if span is None else ledger.publication(job, span[1])
    if newest is None or not _business(kind, newest.period_key):
        return ()
    jobs = dict.fromkeys(upstream for upstream, _ in newest.requirements)
    own = {upstream: _own_kind(ledger, upstream) for upstream in jobs}  # with its calendar
    pairs = [
        (upstream, own[upstream] if own[upstream].owns_key(key) else kind_of_key(key), key)
        for upstream, key in newest.requirements
    ]
    return requirements(kind, newest.period_key, pairs)


def _own_kind(ledger: LedgerReads, job: str) -> Period:
    """``job``'s period kind on its own recorded calendar, else daily on every day."""
    found = ledger.job_profile(job)
    return DAILY if found is None else found.period


def _business(kind: Period, key: str) -> bool:
    """True when ``key`` is a key of ``kind`` naming one of its business periods."""
    return kind.owns_key(key) and kind.is_business(key)
