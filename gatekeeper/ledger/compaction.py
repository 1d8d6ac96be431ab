"""Compaction (``Ledger.compact``, ``gatekeeper compact``): remove the attempts no promise needs.

An attempt is removed when every one of these holds:

- it ended ``failed`` or ``abandoned`` (never a ``running`` or ``succeeded`` one);
- a later attempt of its (job, period) is recorded (it is superseded: the latest attempt of a
  period, which readiness, planning and the runs read, is always kept);
- its period is older than the horizon (``Horizon``);
- no evidence row names it (by run ID, or by job, period and attempt), no publication names
  it as producer, and no reservation as producer or writer.

Each (job, period) that loses attempts has the count added to ``gk_compacted``, so that
``verify`` still knows its attempts were numbered 1..n (the kept ones keep their ordinals;
the next attempt is still the greatest plus one). A late observation of a removed attempt
(a collector's replay) records it again, as it would any attempt not yet recorded; verify
allows that (at most the counted ones missing), and the next compaction removes it again.
The complete runs need no change: they derive from each period's latest attempt, which
stays. One write transaction, under one ledger-wide lock (two compactions never count the
same attempt twice); a dry run selects the same rows in a read transaction and writes
nothing.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import PERIODS, kind_of_key, period_key

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore

#: the migration to schema 12: how many attempts compaction removed from each (job, period)
#: (``IF NOT EXISTS``: a ledger taken back to an older version may keep it)
TABLE = """CREATE TABLE IF NOT EXISTS gk_compacted (
    job TEXT NOT NULL,
    period TEXT NOT NULL,
    removed INTEGER NOT NULL CHECK (removed > 0),
    PRIMARY KEY (job, period)
)"""

#: each kind's keys, told apart by shape in SQL (``period`` is the attempt's key column)
_SHAPES = {
    "daily": "length(a.period) = 10",
    "hourly": "length(a.period) = 17",
    "weekly": "a.period LIKE '____-W__'",
    "monthly": "length(a.period) = 7 AND a.period NOT LIKE '%Q%'",
    "quarterly": "a.period LIKE '____-Q_'",
}

#: the runs something names: evidence, a publication's producer, a reservation's producer or
#: writer (one set, anti-joined: a hash join on PostgreSQL, an automatic index on SQLite)
_NAMED_RUNS = (
    "SELECT run_id FROM gk_evidence UNION SELECT producer_run_id FROM gk_publications "
    "WHERE producer_run_id IS NOT NULL UNION SELECT producer_run_id FROM gk_reservations "
    "UNION SELECT writer_run_id FROM gk_reservations WHERE writer_run_id IS NOT NULL"
)
_CANDIDATES = (
    "SELECT a.job, a.period, a.attempt, a.state FROM gk_attempts a "
    f"LEFT JOIN ({_NAMED_RUNS}) n ON n.run_id = a.run_id "
    "WHERE n.run_id IS NULL AND a.state IN ('failed', 'abandoned') AND ({horizon}) "
    "AND a.attempt < (SELECT MAX(b.attempt) FROM gk_attempts b "
    "WHERE b.job = a.job AND b.period = a.period) "
    "AND NOT EXISTS (SELECT 1 FROM gk_evidence e WHERE e.job = a.job "
    "AND e.job_period = a.period AND e.attempt = a.attempt) "
    "AND NOT EXISTS (SELECT 1 FROM gk_publications p WHERE p.consumer = a.job "
    "AND p.period = a.period AND p.producer_attempt = a.attempt) "
    "AND NOT EXISTS (SELECT 1 FROM gk_reservations r WHERE r.consumer = a.job "
    "AND r.period = a.period AND r.producer_attempt = a.attempt)"
)
_DELETE = "DELETE FROM gk_attempts WHERE job = ? AND period = ? AND attempt = ? AND state = ?"
_COUNT = (
    "INSERT INTO gk_compacted (job, period, removed) VALUES (?, ?, ?) ON CONFLICT (job, period) "
    "DO UPDATE SET removed = gk_compacted.removed + excluded.removed"
)


@dataclass(frozen=True, slots=True)
class Horizon:
    """Where compaction stops: the period ``before`` names (a key of any kind: a date, an hour
    ``YYYY-MM-DDTHH:00Z``, a week, month or quarter key) and the instant it starts. A period
    of any kind is older than the horizon when it ends at or before that instant, every kind
    read on UTC's clock (a day, week, month or quarter from UTC midnight; hours are UTC
    already), so a job's business zone never moves the line by more than its offset."""

    key: str
    start: dt.datetime

    @classmethod
    def parse(cls, before: object, field: str = "before") -> Horizon:
        """The horizon ``before`` names; InvalidInput naming ``field`` for anything else."""
        if not isinstance(before, str | dt.date) or isinstance(before, dt.datetime):
            raise InvalidInput(field, before, "expected a period key (a date, an hour, ...)")
        key = period_key(before, field)
        return cls(key, kind_of_key(key).interval(key, field=field).start)

    def condition(self) -> tuple[str, tuple[str, ...]]:
        """A SQL condition on ``a.period`` true for the keys older than the horizon, of
        every kind, and its parameters: each kind's last key that ends by ``start``."""
        parts, params = [], []
        for kind in PERIODS:
            last = kind.last_closed(self.start)
            if last is not None:
                parts.append(f"({_SHAPES[kind.name]} AND a.period <= ?)")
                params.append(kind.key(last))
        return " OR ".join(parts) or "1 = 0", tuple(params)


@dataclass(frozen=True, slots=True)
class CompactedJob:
    """What compaction removed (or would remove) from one job: ``failed`` and ``abandoned``
    attempts, from ``periods`` periods."""

    job: str
    failed: int
    abandoned: int
    periods: int

    @property
    def attempts(self) -> int:
        return self.failed + self.abandoned

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "attempts": self.attempts,
            "failed": self.failed,
            "abandoned": self.abandoned,
            "periods": self.periods,
        }


@dataclass(frozen=True, slots=True)
class CompactResult:
    """A compaction: its horizon's key (``before``) and the instant it ``starts``, whether it
    was a ``dry_run`` (nothing written), and what it removed per job, by job (jobs with
    nothing removed left out)."""

    before: str
    dry_run: bool
    jobs: tuple[CompactedJob, ...]
    starts: dt.datetime

    @property
    def removed(self) -> int:
        """Attempts removed (would be, in a dry run), over every job."""
        return sum(j.attempts for j in self.jobs)

    def to_json(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "starts": self.starts.isoformat(),
            "dry_run": self.dry_run,
            "removed": self.removed,
            "jobs": [j.to_json() for j in self.jobs],
        }


def compact(
    sql: SqlCore, horizon: Horizon, jobs: Sequence[str] = (), *, dry_run: bool = False
) -> CompactResult:
    """Remove the attempts no promise needs (module docstring) of periods older than
    ``horizon``, of ``jobs`` alone when given; one write transaction, or with ``dry_run`` one
    read transaction that writes nothing. Returns what was (would be) removed per job."""
    query, params = _query(horizon, jobs)
    if dry_run:
        with sql.read_transaction() as rows:
            return _result(horizon, True, rows(query, params))

    def work() -> CompactResult:
        sql.lock_key("gatekeeper-compaction", clock=False)  # pragma: no mutate
        found = [tuple(r) for r in sql.execute(query, params).fetchall()]
        if found:
            sql.executemany(_DELETE, found)
            sql.executemany(_COUNT, _per_period(found))
        return _result(horizon, False, found)

    return sql.run_in_transaction(work, "the compaction")


def _query(horizon: Horizon, jobs: Sequence[str]) -> tuple[str, tuple[Any, ...]]:
    condition, params = horizon.condition()
    query = _CANDIDATES.format(horizon=condition)
    if jobs:
        query += f" AND a.job IN ({', '.join('?' * len(jobs))})"
    return query + " ORDER BY a.job, a.period, a.attempt", (*params, *jobs)


def _per_period(found: Sequence[tuple[Any, ...]]) -> list[tuple[str, str, int]]:
    """(job, period, attempts removed) for each (job, period) among the ``found`` rows."""
    counts: dict[tuple[str, str], int] = {}
    for job, period, _, _ in found:
        counts[(job, period)] = counts.get((job, period), 0) + 1
    return [(job, period, n) for (job, period), n in counts.items()]


def _result(horizon: Horizon, dry_run: bool, found: Sequence[Any]) -> CompactResult:
    per_job: dict[str, tuple[int, int, set[str]]] = {}
    for job, period, _, state in found:
        failed, abandoned, periods = per_job.get(job, (0, 0, set()))
        periods.add(period)
        failed, abandoned = failed + (state == "failed"), abandoned + (state == "abandoned")
        per_job[job] = (failed, abandoned, periods)
    return CompactResult(
        horizon.key,
        dry_run,
        tuple(
            CompactedJob(job, failed, abandoned, len(periods))
            for job, (failed, abandoned, periods) in sorted(per_job.items())
        ),
        horizon.start,
    )
