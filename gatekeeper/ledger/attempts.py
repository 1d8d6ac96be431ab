"""Attempt records: observations, allocation with leases, heartbeats and reads."""

from __future__ import annotations

import datetime as dt
from typing import Any

from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import LeaseHeld, StateConflict
from gatekeeper.core.periods import period_key
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
from gatekeeper.ledger.base import ATTEMPT_COLUMNS, SqlLedger

__all__ = ["AttemptStore", "utc_now"]


class AttemptStore(SqlLedger):
    """Attempt operations of the ledger contract."""

    def record(
        self,
        job: str,
        business_date: Any,
        attempt: int,
        run_id: str,
        state: Any,
        started_at: dt.datetime,
        *,
        error: str | None = None,
        now: dt.datetime | None = None,
    ) -> bool:
        """Record one observation of an attempt; writes.

        Returns True when the ledger changed and False for a harmless replay. Raises
        InvalidInput (nothing written) for bad values and StateConflict when a terminal state
        would change or the run ID belongs to another (job, date, attempt).
        """
        job = check_name(job, "job")
        period = period_key(business_date)
        number = check_attempt(attempt)
        run_id = check_name(run_id, "run_id")
        new = RunState.parse(state)
        started = check_datetime(started_at, "started_at")
        fixed = None if now is None else utc_now(now)
        error = None if error is None else check_text(error, "error")
        return bool(
            self.run_in_transaction(
                lambda: self._record(job, period, number, run_id, new, started, fixed, error),
                f"attempt {job} {period}",
            )
        )

    def _record(
        self,
        job: str,
        period: str,
        number: int,
        run_id: str,
        new: RunState,
        started: dt.datetime,
        fixed: dt.datetime | None,
        error: str | None,
    ) -> bool:
        where = f"{job} {period} attempt {number}"
        fields: dict[str, Any] = {"job": job, "period": period, "attempt": number}
        self._lock_key("attempt", job, period)  # pragma: no mutate
        self._check_run_id(run_id, (job, period, number))
        current = self._attempt(job, period, number)
        if current is None:
            self._check_kind(job, period)
        if current is not None and current.run_id != run_id:
            raise StateConflict(
                f"{where}: recorded with run ID {current.run_id}, not {run_id}", **fields
            )
        try:
            if not transition(current.state if current else None, new, where):
                return False
        except StateConflict as exc:
            raise StateConflict(str(exc), **fields) from None
        at = fixed if fixed is not None else self.db_now()
        if current is None:
            self.execute(
                f"INSERT INTO gk_attempts ({ATTEMPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    job,
                    period,
                    number,
                    run_id,
                    new.value,
                    self.ts_in(started),
                    self.ts_in(at),
                    None,
                    error,
                ),
            )
        else:
            self.execute(
                "UPDATE gk_attempts SET state = ?, updated_at = ?, error = ?, "
                "lease_expires_at = NULL WHERE job = ? AND period = ? AND attempt = ?",
                (new.value, self.ts_in(at), error, job, period, number),
            )
        return True

    def _check_kind(self, job: str, period: str) -> None:
        """A job keeps one period kind: refuse an hourly key for a daily job and vice versa."""
        rows = self.execute(
            "SELECT period FROM gk_attempts WHERE job = ? LIMIT 1", (job,)
        ).fetchall()
        check_same_kind(job, period, rows[0][0] if rows else None)

    def _check_run_id(self, run_id: str, key: tuple[str, str, int]) -> None:
        rows = self.execute(
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

    def begin_attempt(
        self,
        job: str,
        business_date: Any,
        run_id: str,
        *,
        lease_seconds: float,
        attempt: int = 0,
        now: dt.datetime | None = None,
        skip_succeeded: bool = False,
    ) -> Attempt:
        """Allocate and record a ``running`` attempt holding a lease; writes.

        ``attempt=0`` takes the next ordinal; an explicit ordinal must exceed every recorded
        one (else StateConflict). A live lease of another attempt raises LeaseHeld and writes
        nothing; running attempts whose lease expired are recorded ``abandoned`` first.
        With ``skip_succeeded`` (and ``attempt=0``), a period whose latest attempt succeeded
        gets no new attempt: that succeeded Attempt is returned and nothing is written.
        Leases are judged by the database's clock, read once the key's lock is held (so time
        spent waiting for another writer neither shortens the new lease nor predates the
        previous attempt); ``now`` replaces it (a fake clock). Returns the Attempt.
        """
        job = check_name(job, "job")
        period = period_key(business_date)
        wanted = check_attempt(attempt, allow_zero=True)
        run_id = check_name(run_id, "run_id")
        lease = check_lease(lease_seconds)
        fixed = None if now is None else utc_now(now)
        skip = skip_succeeded and wanted == 0
        result = self.run_in_transaction(
            lambda: self._begin(job, period, wanted, run_id, lease, fixed, skip),
            f"attempt {job} {period}",
        )
        assert isinstance(result, Attempt)
        return result

    def _begin(
        self,
        job: str,
        period: str,
        wanted: int,
        run_id: str,
        lease: float,
        fixed: dt.datetime | None,
        skip: bool,
    ) -> Attempt:
        self._lock_key("attempt", job, period)  # pragma: no mutate
        at = fixed if fixed is not None else self.db_now()
        self._check_run_id(run_id, (job, period, wanted))
        existing = self._attempts(job, period)
        if not existing:  # the period's first attempt: its kind must be the job's
            self._check_kind(job, period)
        if skip and existing and existing[-1].state is RunState.SUCCEEDED:
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
        expires = at + dt.timedelta(seconds=lease)
        self.execute(
            f"INSERT INTO gk_attempts ({ATTEMPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                job,
                period,
                number,
                run_id,
                RunState.RUNNING.value,
                self.ts_in(at),
                self.ts_in(at),
                self.ts_in(expires),
                None,
            ),
        )
        return Attempt(job, period, number, run_id, RunState.RUNNING, at, at, expires)

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
        self.execute(
            "UPDATE gk_attempts SET state = ?, updated_at = ?, error = ? "
            "WHERE job = ? AND period = ? AND attempt = ? AND state = ?",
            (
                RunState.ABANDONED.value,
                self.ts_in(at),
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
        """Extend a running attempt's lease by the database's clock; writes. False when the
        attempt is no longer running (it finished, or a later attempt marked it abandoned)."""
        run_id = check_name(run_id, "run_id")
        lease = check_lease(lease_seconds)
        fixed = None if now is None else utc_now(now)

        def renew() -> bool:  # the clock is read inside the transaction
            at = fixed if fixed is not None else self.db_now()
            cursor = self.execute(
                "UPDATE gk_attempts SET lease_expires_at = ?, updated_at = ? "
                "WHERE run_id = ? AND state = ?",
                (
                    self.ts_in(at + dt.timedelta(seconds=lease)),
                    self.ts_in(at),
                    run_id,
                    RunState.RUNNING.value,
                ),
            )
            return bool(cursor.rowcount == 1)

        return bool(self.run_in_transaction(renew, f"the lease of run {run_id}"))

    # -- reads ---------------------------------------------------------------------------------
    def attempts(self, job: str, business_date: Any) -> list[Attempt]:
        """Every attempt of ``job`` for the date, ordered by attempt; reads only."""
        return self._attempts(check_name(job, "job"), period_key(business_date))

    def latest(self, job: str, business_date: Any) -> Attempt | None:
        """The greatest recorded attempt of ``job`` for the date, or None; reads only."""
        found = self.attempts(job, business_date)
        return found[-1] if found else None

    def history(self, job: str, business_date: Any = None) -> list[Attempt]:
        """Attempts of ``job`` (for one date, or all dates) by date then attempt; reads only."""
        if business_date is not None:
            return self.attempts(job, business_date)
        rows = self.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts WHERE job = ? ORDER BY period, attempt",
            (check_name(job, "job"),),
        )
        return [self.to_attempt(r) for r in rows]

    def latest_between(self, job: str, first: str, last: str) -> dict[str, Attempt]:
        """Period key -> the latest attempt of ``job``, for keys in [first, last] of ``first``'s
        kind (daily or hourly); one query."""
        rows = self.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts a WHERE a.job = ? AND a.period >= ? "
            "AND a.period <= ? AND length(a.period) = ? AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)",
            (job, first, last, len(first)),
        )
        found = (self.to_attempt(r) for r in rows)
        return {a.business_date: a for a in found}

    def _attempts(self, job: str, period: str) -> list[Attempt]:
        rows = self.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts WHERE job = ? AND period = ? "
            "ORDER BY attempt",
            (job, period),
        )
        return [self.to_attempt(r) for r in rows]

    def _attempt(self, job: str, period: str, number: int) -> Attempt | None:
        rows = self.read(
            f"SELECT {ATTEMPT_COLUMNS} FROM gk_attempts WHERE job = ? AND period = ? "
            "AND attempt = ?",
            (job, period, number),
        )
        return self.to_attempt(rows[0]) if rows else None

    def to_attempt(self, row: Any) -> Attempt:
        started, updated, lease = (self.ts_out(v) for v in (row[5], row[6], row[7]))
        assert started is not None and updated is not None
        return Attempt(
            row[0], row[1], int(row[2]), row[3], RunState(row[4]), started, updated, lease, row[8]
        )
