"""Job profiles (``gk_jobs``): what a job is known to be besides its attempts.

A range records its job's profile as it takes a fill up (``JobProfiles.record``: one upsert,
written only when something changed); an attempt, and a range reaching a task class through
``requires()``, record the job's own kind, calendar and zone (``JobProfiles.record_schedule``:
no window invented, a range's kept); ``gatekeeper status`` and the report read it
(``JobProfiles.of``) to plan a job's window as its range did, and to name what blocks a period.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from gatekeeper.core.causes import Cause, JobProfile, Requirement, blocking_cause
from gatekeeper.core.periods import Period, kind_of_key, parse_period
from gatekeeper.core.records import Attempt
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.run_lines import bridges
from gatekeeper.ledger.runs import CompleteRuns
from gatekeeper.ledger.sql import SqlCore

if TYPE_CHECKING:
    from gatekeeper.ledger.protocols import LedgerReads

COLUMNS = (
    "job, period_kind, timezone, lateness, catchup, strategy, window_start, window_stop, requires, "
    "freshness, calendar"
)
_UPSERT = (
    f"INSERT INTO gk_jobs ({COLUMNS}, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (job) DO UPDATE SET period_kind = excluded.period_kind, "
    "timezone = excluded.timezone, lateness = excluded.lateness, catchup = excluded.catchup, "
    "strategy = excluded.strategy, window_start = excluded.window_start, "
    "window_stop = excluded.window_stop, requires = excluded.requires, "
    "freshness = excluded.freshness, calendar = excluded.calendar, "
    "updated_at = excluded.updated_at"
)
#: A job's first and last period with an attempt, or as a consumer with a publication.
_SPAN = (
    "SELECT MIN(period), MAX(period) FROM gk_attempts WHERE job = ? "
    "UNION ALL SELECT MIN(period), MAX(period) FROM gk_publications WHERE consumer = ?"
)


class JobProfiles:
    """Read and record job profiles on the ledger's SQL core."""

    def __init__(self, sql: SqlCore):
        self.sql = sql

    def of(self, job: str) -> JobProfile | None:
        """The recorded profile of ``job``, or None; one query, reads only."""
        rows = self.sql.read(
            f"SELECT {COLUMNS} FROM gk_jobs WHERE job = ?", (check_name(job, "job"),)
        )
        return profile_of(rows[0]) if rows else None

    def requiring(self, job: str) -> list[JobProfile]:
        """The recorded profiles whose requirements name ``job`` (the ranges it ran under as
        a dependency), by job name; one query, reads only."""
        wanted = check_name(job, "job")
        rows = self.sql.read(
            f"SELECT {COLUMNS} FROM gk_jobs WHERE requires LIKE ? ESCAPE '!' ORDER BY job",
            (f"%{_like(json.dumps(wanted))}%",),  # as requires_json writes it
        )
        found = [profile_of(row) for row in rows]  # SQLite's LIKE ignores case: exactly, here
        return [p for p in found if any(r.job == wanted for r in p.requires)]

    def freshness(self) -> dict[str, str]:
        """Job -> the ``freshness`` its task class declared (recorded by its range), for every
        job whose profile has one; one query, reads only."""
        rows = self.sql.read("SELECT job, freshness FROM gk_jobs WHERE freshness IS NOT NULL")
        return {str(job): str(text) for job, text in rows}

    def record(self, profile: JobProfile) -> bool:
        """Record ``profile`` (replacing the job's earlier one); False, writing nothing, when
        the ledger already holds exactly it. One read, and one upsert when it changed; when
        its calendar moves the line of the job's runs (``run_lines.bridges``), the job's runs
        are rebuilt in the same transaction, under its runs lock."""
        if self.of(profile.job) == profile:
            return False
        self._write(profile)
        return True

    def record_schedule(self, schedule: JobProfile) -> bool:
        """Record the job's own period kind, calendar and zone (``schedule``: its class's,
        with no window), keeping what a range planned for it (window, lateness, catch-up,
        requirements, freshness; and its zone, which the range's flags may have set). False,
        writing nothing, when the ledger already holds them. One read, and one upsert when
        they changed (``record``'s, rebuilding the job's runs when its calendar moves them)."""
        held = self.of(schedule.job)
        if held is None:
            self._write(schedule)
            return True
        zone = held.timezone if held.start is not None else schedule.timezone
        own = (schedule.period, schedule.calendar, zone)
        if (held.period, held.calendar, held.timezone) == own:
            return False
        self._write(
            replace(held, period=schedule.period, calendar=schedule.calendar, timezone=zone)
        )
        return True

    def _write(self, profile: JobProfile) -> None:
        """Upsert ``profile`` in one transaction (see ``record``)."""
        values = (
            profile.job,
            profile.period.name,
            profile.timezone,
            profile.lateness,
            profile.catchup,
            profile.strategy,
            profile.start,
            profile.stop,
            profile.requires_json(),
            profile.freshness,
            profile.calendar,
        )

        def upsert() -> None:
            runs = CompleteRuns(self.sql)  # a new calendar may move the job's runs' line
            self.sql.lock_key("complete runs", profile.job, clock=False)
            was = runs.bridged(profile.job)
            self.sql.execute(_UPSERT, (*values, self.sql.ts_in(self.sql.db_now())))
            if was != bridges(profile.calendar):
                runs.rebuild([profile.job])

        self.sql.run_in_transaction(upsert, f"the profile of {profile.job}")

    def span(self, job: str) -> tuple[str, str] | None:
        """``job``'s first and last recorded period key (attempts, or publications as a
        consumer), of the kind of its first; None when the ledger has none. One query."""
        return span_of(self.sql.read(_SPAN, (job, job)))


def span_of(rows: Sequence[Sequence[str | None]]) -> tuple[str, str] | None:
    """The span of a job's rows of (first, last) keys (its attempts', its publications'; None
    where it has none): the first and last of the kind of the first row's keys."""
    found = [r for r in rows if r[0] is not None]
    if not found:
        return None
    kind = kind_of_key(found[0][0])
    keys = [k for r in found for k in r if k is not None and kind.owns_key(k)]
    return min(keys), max(keys)


def _like(text: str) -> str:
    """``text`` as a LIKE pattern matching itself (escape character ``!``)."""
    return text.replace("!", "!!").replace("%", "!%").replace("_", "!_")


def profile_of(
    row: Sequence[Any], kinds: dict[tuple[str, str], Period] | None = None
) -> JobProfile:
    """The JobProfile of one ``gk_jobs`` row (``COLUMNS``); ``kinds`` holds the period kinds
    already resolved by (kind, calendar) for the rows of one read (many jobs share one)."""
    calendar = row[10] or "all"
    kind = None if kinds is None else kinds.get((row[1], calendar))
    if kind is None:
        kind = parse_period(row[1], "gk_jobs.period_kind").on(_calendar(calendar))
        if kinds is not None:
            kinds[(row[1], calendar)] = kind
    return JobProfile(
        row[0],
        kind,
        row[2],
        lateness=row[3],
        catchup=row[4],
        strategy=row[5],
        start=row[6],
        stop=row[7],
        requires=JobProfile.parse_requires(row[8]),
        freshness=row[9],
        calendar=calendar,
    )


def _calendar(name: str) -> Any:
    """The built-in calendar a profile names; InvalidInput naming it otherwise (a job on a
    calendar of its own is read as the calendar is known only where its class is)."""
    from gatekeeper.core.periods.calendars import parse_calendar

    return parse_calendar(name, "gk_jobs.calendar")


def blocked_periods(
    ledger: LedgerReads,
    kind: Period,
    keys: Sequence[str],
    requires: Sequence[Requirement],
    now: dt.datetime,
    *,
    held: bool = False,
) -> dict[str, Cause]:
    """Key -> what blocks it, for each of ``keys`` (periods with no attempt of their own)
    that a requirement blocks at ``now`` (``causes.blocking_cause``; with ``held`` an
    upstream on another run's live lease too). One query per required job, over just the
    keys the requirements need; reads only."""
    if not keys or not requires:
        return {}
    upstream: dict[str, dict[str, Attempt]] = {}
    for job in dict.fromkeys(r.job for r in requires):
        wanted = {
            k for r in requires if r.job == job for key in keys for k in r.keys_for(kind, key)
        }
        upstream[job] = ledger.latest_of(job, sorted(wanted))
    found = {}
    for key in keys:
        cause = blocking_cause(kind, key, requires, upstream, now, held=held)
        if cause is not None:
            found[key] = cause
    return found
