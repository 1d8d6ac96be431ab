"""Attempt records: observations, allocation with leases, heartbeats, fencing and reads."""

from __future__ import annotations

import datetime as dt
from typing import Any

from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import LeaseHeld, LeaseLost, StateConflict
from gatekeeper.core.periods import period_key
from gatekeeper.core.readiness import Requirement
from gatekeeper.core.records import Attempt, RunState, transition
from gatekeeper.core.validation import (
    MAX_ATTEMPT,
    check_attempt,
    check_datetime,
    check_lease,
    check_name,
    check_same_kind,
    check_text,
)
from gatekeeper.ledger.requests import AttemptObservation, AttemptStart, fixed_clock
from gatekeeper.ledger.sql import ATTEMPT_COLUMNS, SqlCore

__all__ = ["AttemptStore", "utc_now"]

_INSERT = f"INSERT INTO gk_attempts ({ATTEMPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"


class AttemptStore:
    """Attempts of (job, period): the writes of ``Ledger.record``, ``begin_attempt`` and
    ``heartbeat``, the fence of a publication, and the reads of attempts."""

    def __init__(self, sql: SqlCore):
        self.sql = sql

    # -- record --------------------------------------------------------------------------------
    def record(
        self,
        job: str,
        period: Any,
        attempt: int,
        run_id: str,
        state: Any,
        started_at: dt.datetime,
        *,
        error: str | None = None,
        now: dt.datetime | None = None,
    ) -> bool:
        """``Ledger.record``: True when the ledger changed, False for a harmless replay."""
        request = AttemptObservation(
            job=check_name(job, "job"),
            period=period_key(period),
            attempt=check_attempt(attempt),
            run_id=check_name(run_id, "run_id"),
            state=RunState.parse(state),
            started_at=check_datetime(started_at, "started_at"),
            now=fixed_clock(now),
            error=None if error is None else check_text(error, "error"),
        )
        return self.sql.run_in_transaction(lambda: self._record(request), request.where)

    def _record(self, request: AttemptObservation) -> bool:
        job, period, number = request.job, request.period, request.attempt
        where = f"{job} {period} attempt {number}"
        fields: dict[str, Any] = {"job": job, "period": period, "attempt": number}
        self.sql.lock_key("attempt", job, period)  # pragma: no mutate
        self._check_run_id(request.run_id, (job, period, number))
        current = self._attempt(job, period, number)
        if current is None:
            self._check_kind(job, period)
        if current is not None and current.run_id != request.run_id:
            raise StateConflict(
                f"{where}: recorded with run ID {current.run_id}, not {request.run_id}", **fields
            )
        try:
            if not transition(current.state if current else None, request.state, where):
                return False
        except StateConflict as exc:
            raise StateConflict(str(exc), **fields) from None
        at = self.sql.ts_in(request.now if request.now is not None else self.sql.db_now())
        if current is None:
            started = self.sql.ts_in(request.started_at)
            row = (job, period, number, request.run_id, request.state.value, started, at)
            self.sql.execute(_INSERT, (*row, None, request.error))
        else:
            self.sql.execute(
                "UPDATE gk_attempts SET state = ?, updated_at = ?, error = ?, "
                "lease_expires_at = NULL WHERE job = ? AND period = ? AND attempt = ?",
                (request.state.value, at, request.error, job, period, number),
            )
        return True

    def _check_kind(self, job: str, period: str) -> None:
        """A job keeps one period kind: refuse an hourly key for a daily job and vice versa."""
        rows = self.sql.execute(
            "SELECT period FROM gk_attempts WHERE job = ? LIMIT 1", (job,)
        ).fetchall()
        check_same_kind(job, period, rows[0][0] if rows else None)

    def _check_run_id(self, run_id: str, key: tuple[str, str, int]) -> None:
        rows = self.sql.execute(
            "SELECT job, period, attempt FROM gk_attempts WHERE run_id = ?", (run_id,)
        ).fetchall()
        if rows and tuple(rows[0]) != key:
            job, period, number = rows[0]
            raise StateConflict(
                f"run ID {run_id} already belongs to {job} {period} attempt {number}; "
                f"refusing it for {key[0]} {key[1]} attempt {key[2]}",
                job=key[0],
                period=key[1],
                attempt=key[2],
            )

    # -- begin, heartbeat ----------------------------------------------------------------------
    def begin_attempt(
        self,
        job: str,
        period: Any,
        run_id: str,
        *,
        lease_seconds: float,
        attempt: int = 0,
        now: dt.datetime | None = None,
        skip_succeeded: bool = False,
    ) -> Attempt:
        """``Ledger.begin_attempt``: the new running Attempt (or the succeeded one kept)."""
        job = check_name(job, "job")
        key = period_key(period)
        wanted = check_attempt(attempt, allow_zero=True)
        request = AttemptStart(
            job=job,
            period=key,
            attempt=wanted,
            run_id=check_name(run_id, "run_id"),
            lease_seconds=check_lease(lease_seconds),
            now=fixed_clock(now),
            skip_succeeded=skip_succeeded and wanted == 0,
        )
        return self.sql.run_in_transaction(lambda: self._begin(request), request.where)

    def _begin(self, request: AttemptStart) -> Attempt:
        job, period, wanted = request.job, request.period, request.attempt
        self.sql.lock_key("attempt", job, period)  # pragma: no mutate
        at = request.now if request.now is not None else self.sql.db_now()
        self._check_run_id(request.run_id, (job, period, wanted))
        existing = self.of_period(job, period)
        if not existing:  # the period's first attempt: its kind must be the job's
            self._check_kind(job, period)
        if request.skip_succeeded and existing and existing[-1].state is RunState.SUCCEEDED:
            return existing[-1]
        for old in existing:
            if old.state is RunState.RUNNING:
                self._abandon_if_expired(old, at)
        top = max((a.attempt for a in existing), default=0)
        number = top + 1 if wanted == 0 else wanted
        if number <= top:
            raise StateConflict(
                f"{job} {period}: attempt {wanted} refused, attempt {top} is already recorded; "
                f"use an attempt greater than {top} or 0 for the next one",
                job=job,
                period=period,
                attempt=wanted,
            )
        if number > MAX_ATTEMPT:
            raise StateConflict(
                f"{job} {period}: attempt {top} is the last ordinal there is",
                job=job,
                period=period,
                attempt=top,
            )
        expires = at + dt.timedelta(seconds=request.lease_seconds)
        running = RunState.RUNNING.value
        times = (self.sql.ts_in(at), self.sql.ts_in(at), self.sql.ts_in(expires))
        self.sql.execute(_INSERT, (job, period, number, request.run_id, running, *times, None))
        return Attempt(job, period, number, request.run_id, RunState.RUNNING, at, at, expires)

    def _abandon_if_expired(self, old: Attempt, at: dt.datetime) -> None:
        where = {"job": old.job, "period": old.business_date, "attempt": old.attempt}
        if old.lease_expires_at is None:
            raise LeaseHeld(
                f"{old.job} {old.business_date} attempt {old.attempt} is running without a "
                f"lease (run ID {old.run_id}); record its outcome before starting another",
                holder=old,
                **where,
            )
        if old.lease_live(at):
            raise LeaseHeld(
                f"{old.job} {old.business_date} attempt {old.attempt} holds a live lease until "
                f"{old.lease_expires_at.isoformat()} (run ID {old.run_id}; the database's "
                f"clock reads {at.isoformat()})",
                holder=old,
                **where,
            )
        self.sql.execute(
            "UPDATE gk_attempts SET state = ?, updated_at = ?, error = ? "
            "WHERE job = ? AND period = ? AND attempt = ? AND state = ?",
            (
                RunState.ABANDONED.value,
                self.sql.ts_in(at),
                f"lease expired at {old.lease_expires_at.isoformat()}",
                old.job,
                old.business_date,
                old.attempt,
                RunState.RUNNING.value,
            ),
        )

    def heartbeat(
        self, run_id: str, *, lease_seconds: float, now: dt.datetime | None = None
    ) -> bool:
        """``Ledger.heartbeat``: False when the attempt is no longer running."""
        run_id = check_name(run_id, "run_id")
        lease = check_lease(lease_seconds)
        fixed = fixed_clock(now)

        def renew() -> bool:  # the clock is read inside the transaction
            at = fixed if fixed is not None else self.sql.db_now()
            cursor = self.sql.execute(
                "UPDATE gk_attempts SET lease_expires_at = ?, updated_at = ? "
                "WHERE run_id = ? AND state = ?",
                (
                    self.sql.ts_in(at + dt.timedelta(seconds=lease)),
                    self.sql.ts_in(at),
                    run_id,
                    RunState.RUNNING.value,
                ),
            )
            return bool(cursor.rowcount == 1)

        return self.sql.run_in_transaction(renew, f"the lease of run {run_id}")

    # -- fencing -------------------------------------------------------------------------------
    def fence(self, consumer: str, period: str, producer: str, now: dt.datetime | None) -> Attempt:
        """The producer's attempt, if it still owns (consumer, period): the latest attempt,
        running, its lease live by the database's clock (or ``now``). Else LeaseLost (nothing
        written). In a transaction: takes the attempt key's lock too, so no takeover can slip
        between this check and the commit; lock order is always publication, then attempt.
        """
        self.sql.lock_key("attempt", consumer, period)  # pragma: no mutate
        attempts = self.of_period(consumer, period)
        mine = next((a for a in attempts if a.run_id == producer), None)
        latest = attempts[-1] if attempts else None
        at = now if now is not None else self.sql.db_now()
        if mine is not None and mine is latest and mine.lease_live(at):
            return mine
        named = f"attempt {mine.attempt} (run {mine.run_id})" if mine else f"run {producer}"
        if mine is None:
            why = "is not an attempt of this consumer and date"
        elif latest is not None and latest is not mine:
            why = f"was taken over by attempt {latest.attempt} (run {latest.run_id})"
        elif mine.state.terminal:
            why = f"is already {mine.state.value}"
        else:
            expired = mine.lease_expires_at.isoformat() if mine.lease_expires_at else "never set"
            why = f"lost its lease (expired {expired}; the database's clock reads {at.isoformat()})"
        raise LeaseLost(
            f"{consumer} {period}: {named} {why}; refusing to publish",
            run_id=producer,
            taken_over_by=latest if latest is not None and latest is not mine else None,
            job=consumer,
            period=period,
            attempt=None if mine is None else mine.attempt,
        )

    # -- reads ---------------------------------------------------------------------------------
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

    def latest_many(self, required: tuple[Requirement, ...]) -> dict[Requirement, Attempt]:
        """The latest attempt of each requirement, in one query whatever their number: the
        jobs and the periods as two IN lists (no expression-depth limit), pairs kept after."""
        jobs = sorted({job for job, _ in required})
        periods = sorted({period for _, period in required})
        columns = ", ".join("a." + c.strip() for c in ATTEMPT_COLUMNS.split(","))
        rows = self.sql.read(
            f"SELECT {columns} FROM gk_attempts a WHERE a.job IN ({_marks(jobs)}) "
            f"AND a.period IN ({_marks(periods)}) AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)",
            (*jobs, *periods),
        )
        wanted = set(required)
        found = (self.to_attempt(r) for r in rows)
        return {(a.job, a.business_date): a for a in found if (a.job, a.business_date) in wanted}

    def of_period(self, job: str, period: str) -> list[Attempt]:
        """Every attempt of a checked job and period key, ordered by attempt."""
        rows = self.sql.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts WHERE job = ? AND period = ? "
            "ORDER BY attempt",
            (job, period),
        )
        return [self.to_attempt(r) for r in rows]

    def _attempt(self, job: str, period: str, number: int) -> Attempt | None:
        rows = self.sql.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts WHERE job = ? AND period = ? "
            "AND attempt = ?",
            (job, period, number),
        )
        return self.to_attempt(rows[0]) if rows else None

    def to_attempt(self, row: Any) -> Attempt:
        """The Attempt of a row of ``ATTEMPT_COLUMNS``."""
        started, updated, lease = (self.sql.ts_out(v) for v in (row[5], row[6], row[7]))
        assert started is not None and updated is not None
        return Attempt(
            row[0], row[1], int(row[2]), row[3], RunState(row[4]), started, updated, lease, row[8]
        )


def _marks(values: list[str]) -> str:
    return ", ".join("?" for _ in values)
