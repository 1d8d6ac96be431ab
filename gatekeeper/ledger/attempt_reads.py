"""Reads of attempts: one period's, a job's history, the latest of a window or of given
periods, and what readiness judges of the latest (``AttemptStore`` adds the writes)."""

from __future__ import annotations

from typing import Any

from gatekeeper.core.periods import period_key
from gatekeeper.core.readiness import Outcome, Requirement
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.sql import ATTEMPT_COLUMNS, SqlCore

_LATEST_COLUMNS = ", ".join("a." + c.strip() for c in ATTEMPT_COLUMNS.split(","))
#: the newest publication revision of an attempt's (job, period), as a column of its row
_NEWEST_REVISION = (
    "(SELECT MAX(u.revision) FROM gk_publications u WHERE u.consumer = a.job "
    "AND u.period = a.period)"
)
BATCH = 500  # period keys per query of ``latest_of`` (well under every backend's parameters)


class AttemptReads:
    """The reads of ``gk_attempts`` on one SQL core."""

    def __init__(self, sql: SqlCore):
        self.sql = sql

    def attempts(self, job: str, period: Any) -> list[Attempt]:
        """Every attempt of ``job`` for the period, ordered by attempt; reads only."""
        return self.of_period(check_name(job, "job"), period_key(period))

    def latest(self, job: str, period: Any) -> Attempt | None:
        """The greatest recorded attempt of ``job`` for the period, or None; reads only."""
        found = self.attempts(job, period)
        return found[-1] if found else None

    def history(self, job: str, period: Any = None) -> list[Attempt]:
        """Attempts of ``job`` (for one period, or all) by period then attempt; reads only."""
        if period is not None:
            return self.attempts(job, period)
        rows = self.sql.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts WHERE job = ? ORDER BY period, attempt",
            (check_name(job, "job"),),
        )
        return [self.to_attempt(r) for r in rows]

    def latest_between(self, job: str, first: str, last: str) -> dict[str, Attempt]:
        """Period key -> the latest attempt of ``job``, for keys in [first, last] of ``first``'s
        kind (daily or hourly); one query."""
        rows = self.sql.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts a WHERE a.job = ? AND a.period >= ? "
            "AND a.period <= ? AND length(a.period) = ? AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)",
            (job, first, last, len(first)),
        )
        found = (self.to_attempt(r) for r in rows)
        return {a.business_date: a for a in found}

    def latest_of(self, job: str, keys: list[str] | tuple[str, ...]) -> dict[str, Attempt]:
        """Period key -> the latest attempt of ``job``, for the given keys (those with one):
        index lookups of those keys only, in batches of BATCH, however far apart they are."""
        found: dict[str, Attempt] = {}
        ordered = sorted(set(keys))
        for at in range(0, len(ordered), BATCH):
            pairs = tuple((job, key) for key in ordered[at : at + BATCH])
            found.update({key: a for (_, key), a in self.latest_many(pairs).items()})
        return found

    def latest_many(self, required: tuple[Requirement, ...]) -> dict[Requirement, Attempt]:
        """The latest attempt of each requirement, in one query whatever their number: the
        jobs and the periods as two IN lists (no expression-depth limit), pairs kept after."""
        rows = self._latest_rows(_LATEST_COLUMNS, required)
        found = (self.to_attempt(r) for r in rows)
        return {(a.job, a.business_date): a for a in found}

    def latest_published(
        self, required: tuple[Requirement, ...]
    ) -> tuple[dict[Requirement, Attempt], dict[Requirement, int | None]]:
        """``latest_many``, and each requirement's newest publication revision (None when the
        upstream pair has none): the same one query, the revision a column of it, so that a
        publication's evidence names the run and the revision it read together."""
        rows = self._latest_rows(f"{_LATEST_COLUMNS}, {_NEWEST_REVISION}", required)
        latest = {(r[0], r[1]): self.to_attempt(r) for r in rows}
        return latest, {(r[0], r[1]): None if r[10] is None else int(r[10]) for r in rows}

    def latest_outcomes(self, required: tuple[Requirement, ...]) -> dict[Requirement, Outcome]:
        """``latest_many`` reduced to what readiness judges (attempt, run ID, state): the
        same query, three columns fewer converted."""
        rows = self._latest_rows("a.job, a.period, a.attempt, a.run_id, a.state", required)
        return {(r[0], r[1]): Outcome(int(r[2]), r[3], RunState(r[4])) for r in rows}

    def _latest_rows(self, columns: str, required: tuple[Requirement, ...]) -> list[Any]:
        """Rows (job and period first) of the latest attempt of each requirement."""
        jobs = sorted({job for job, _ in required})
        periods = sorted({period for _, period in required})
        rows = self.sql.read(
            f"SELECT {columns} FROM gk_attempts a WHERE a.job IN ({_marks(jobs)}) "
            f"AND a.period IN ({_marks(periods)}) AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)",
            (*jobs, *periods),
        )
        wanted = set(required)
        return [r for r in rows if (r[0], r[1]) in wanted]

    def of_period(self, job: str, period: str) -> list[Attempt]:
        """Every attempt of a checked job and period key, ordered by attempt."""
        rows = self.sql.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts WHERE job = ? AND period = ? "
            "ORDER BY attempt",
            (job, period),
        )
        return [self.to_attempt(r) for r in rows]

    def to_attempt(self, row: Any) -> Attempt:
        """The Attempt of a row of ``ATTEMPT_COLUMNS``."""
        return attempt_of_row(self.sql, row)


def attempt_of_row(sql: SqlCore, row: Any) -> Attempt:
    """The Attempt of a row of ``ATTEMPT_COLUMNS`` (its timestamps read by ``sql``)."""
    started, updated, lease = (sql.ts_out(v) for v in (row[5], row[6], row[7]))
    assert started is not None and updated is not None
    state = RunState(row[4])
    return Attempt(
        row[0], row[1], int(row[2]), row[3], state, started, updated, lease, row[8], row[9]
    )


def _marks(values: list[str]) -> str:
    return ", ".join("?" for _ in values)
