"""Attempt records: observations, allocation with leases, heartbeats, fencing and reads."""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from typing import Any, TypeVar, cast

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
    check_optional_reason,
    check_same_kind,
    check_text,
)
from gatekeeper.ledger import abandons, fencing, readback
from gatekeeper.ledger.attempt_reads import AttemptReads
from gatekeeper.ledger.one_trip import OneTrip
from gatekeeper.ledger.requests import AttemptObservation, AttemptStart, fixed_clock
from gatekeeper.ledger.runs import CompleteRuns
from gatekeeper.ledger.sql import ATTEMPT_COLUMNS, SqlCore

__all__ = ["AttemptStore", "utc_now"]

T = TypeVar("T")


_INSERT = (
    f"INSERT INTO gk_attempts ({ATTEMPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (run_id) DO NOTHING"
)


class AttemptStore(AttemptReads):
    """Attempts of (job, period): the writes of ``Ledger.record``, ``begin_attempt`` and
    ``heartbeat``, the fence of a publication, and the reads of attempts."""

    def __init__(self, sql: SqlCore):
        super().__init__(sql)
        self.runs = CompleteRuns(sql)
        self.fast = OneTrip(sql, self.runs)
        self._kind_keys: dict[str, str] = {}  # job -> one of its period keys

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
        finish = self.fast.finish_statements(request) if request.state.terminal else None

        def work() -> bool:
            if finish is None:
                return self.sql.run_in_transaction(lambda: self._record(request), request.where)
            return self._fast_or_read(
                lambda: True if self.fast.finished(request, finish) else None,
                lambda: self._record(request),
                request.where,
            )

        probe = readback.finished_probe(
            self.sql, request.job, request.period, request.run_id, request.state
        )
        return readback.settle(self.sql, work, probe, f"{request.where} {request.attempt}")

    def _fast_or_read(self, fast: Callable[[], T | None], read: Callable[[], T], where: str) -> T:
        """``fast()`` (statements that judge in SQL what they write), else ``read()`` (which
        reads and judges): in one transaction, or in a second one when the first's COMMIT
        went with ``fast``'s statements (``SqlCore.commits_with``: nothing was written)."""

        def first() -> T | None:
            done = fast()
            return done if done is not None or self.sql.committed else read()

        def transaction(work: Callable[[], T | None]) -> T | None:
            return self.sql.run_in_transaction(work, where)

        done = transaction(first)
        return done if done is not None else cast(T, transaction(read))

    def _record(self, request: AttemptObservation) -> bool:
        job, period, number = request.job, request.period, request.attempt
        where = f"{job} {period} attempt {number}"
        fields: dict[str, Any] = {"job": job, "period": period, "attempt": number}
        # A success will settle the runs: it locks them too. On SQLite lock_key does nothing
        # (BEGIN IMMEDIATE serializes every writer), so mutmut cannot see these keys: they were
        # mutated by hand on PostgreSQL (docs/mutation.md, test_key_locks.py); a success comes
        # here after the one-round-trip finish took the same two locks (one_trip.py).
        success = request.state is RunState.SUCCEEDED  # pragma: no mutate
        then = ("complete runs", job) if success else None  # pragma: no mutate
        self.sql.lock_key("attempt", job, period, then=then)  # pragma: no mutate
        existing = self.of_period(job, period)
        current = next((a for a in existing if a.attempt == number), None)
        if not existing:  # the period's first attempt: its kind must be the job's
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
            self._insert((*row, None, request.error, None))
        else:
            self.sql.execute(
                "UPDATE gk_attempts SET state = ?, updated_at = ?, error = ?, "
                "lease_expires_at = NULL WHERE job = ? AND period = ? AND attempt = ?",
                (request.state.value, at, request.error, job, period, number),
            )
        top = existing[-1] if existing else None
        if top is None or number >= top.attempt:  # the period's latest attempt changed
            self._settle(job, period, top, request.state)
        return True

    def _insert(self, row: tuple[Any, ...], asked: int | None = None) -> None:
        """Insert an attempt; a run ID that another attempt holds is refused by the table's
        unique constraint (no read first): StateConflict naming the holder and the attempt
        ``asked`` for (default: the row's), nothing written."""
        cursor = self.sql.execute(_INSERT, row)
        if cursor.rowcount == 1:
            return
        run_id, key = row[3], (row[0], row[1], row[2] if asked is None else asked)
        rows = self.sql.execute(
            "SELECT job, period, attempt FROM gk_attempts WHERE run_id = ?", (run_id,)
        ).fetchall()
        # gone only when a compaction removed it between the INSERT and this read (mutants of
        # the fallback: equivalent in every test)
        job, period, number = rows[0] if rows else ("?", "?", "?")  # pragma: no mutate
        raise StateConflict(
            f"run ID {run_id} already belongs to {job} {period} attempt {number}; "
            f"refusing it for {key[0]} {key[1]} attempt {key[2]}",
            job=key[0],
            period=key[1],
            attempt=key[2],
        )

    def _settle(self, job: str, period: str, before: Attempt | None, state: RunState) -> None:
        """The period's latest attempt is now in ``state`` (it was ``before``): keep the runs
        of complete periods (``runs.py``) in this transaction; nothing is read or written when
        the period's completeness did not change."""
        was = before is not None and before.state is RunState.SUCCEEDED
        now = state is RunState.SUCCEEDED
        if was != now:  # whether the job published it is read with the runs beside it
            self.runs.settle(job, period, succeeded=now)

    def first_publication(self, job: str, period: str, latest: Attempt | None) -> None:
        """(job, period) was published for the first time in this transaction: when ``job``'s
        latest attempt for it (``latest``, read here when None) succeeded, the period joins the
        runs of complete and published periods."""
        if latest is None:
            found = self.of_period(job, period)
            latest = found[-1] if found else None
        if latest is not None and latest.state is RunState.SUCCEEDED:
            # published=None would read the publication this transaction wrote: equivalent
            self.runs.settle(job, period, succeeded=True, published=True)  # pragma: no mutate

    def _check_kind(self, job: str, period: str) -> None:
        """A job keeps one period kind: refuse an hourly key for a daily job and vice versa.
        A key of the job, once read, is remembered (attempts are never deleted)."""
        known = self._kind_keys.get(job)
        if known is None:
            rows = self.sql.execute(
                "SELECT period FROM gk_attempts WHERE job = ? LIMIT 1", (job,)
            ).fetchall()
            if rows:
                known = self._kind_keys[job] = rows[0][0]
        check_same_kind(job, period, known)

    # -- begin, heartbeat ----------------------------------------------------------------------
    def begin_attempt(
        self,
        job: str,
        period: Any,
        run_id: str,
        *,
        lease_seconds: float,
        attempt: int,
        now: dt.datetime | None,
        skip_succeeded: bool,
        reason: str | None,
    ) -> Attempt:
        """``Ledger.begin_attempt``: the new running Attempt (or the succeeded one kept);
        its defaults are the contract's alone."""
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
            reason=check_optional_reason(reason, "reason"),
        )
        known = self._kind_keys.get(job)

        def work() -> Attempt:
            if wanted == 0 and known is not None and len(known) == len(key):
                return self._fast_or_read(
                    lambda: self.fast.start(request), lambda: self._begin(request), request.where
                )
            return self.sql.run_in_transaction(lambda: self._begin(request), request.where)

        probe = readback.started_probe(self.sql, job, key, request.run_id)
        return readback.settle(self.sql, work, probe, f"the start of {request.where}")

    def _begin(self, request: AttemptStart) -> Attempt:
        job, period, wanted = request.job, request.period, request.attempt
        self.sql.lock_key("attempt", job, period)  # pragma: no mutate
        at = request.now if request.now is not None else self.sql.db_now()
        existing = self.of_period(job, period)
        if not existing:  # the period's first attempt: its kind must be the job's
            self._check_kind(job, period)
        latest = existing[-1] if existing else None
        if request.skip_succeeded and latest and latest.state is RunState.SUCCEEDED:
            return latest
        if (
            latest is not None
            and latest.state is RunState.RUNNING
            and latest.run_id == request.run_id
            and wanted in (0, latest.attempt)
        ):  # this very start, committed by a try whose connection dropped (_begin_next)
            return latest
        top_run = existing[-1].run_id if existing else None
        existing = [
            self._expire(a, at, a.run_id == top_run) if a.state is RunState.RUNNING else a
            for a in existing
        ]
        latest = existing[-1] if existing else None
        if request.skip_succeeded and latest and latest.state is RunState.SUCCEEDED:
            return latest  # it published before its worker stopped: it succeeded
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
        row = (job, period, number, request.run_id, running, *times, None, request.reason)
        self._insert(row, wanted)
        if existing:  # a newer attempt: the period is no longer complete
            # any state but succeeded says the same to _settle (mutants: equivalent)
            self._settle(job, period, existing[-1], RunState.RUNNING)  # pragma: no mutate
        started = (request.run_id, RunState.RUNNING, at, at, expires)
        return Attempt(job, period, number, *started, reason=request.reason)

    def _expire(self, old: Attempt, at: dt.datetime, latest: bool) -> Attempt:
        """A running attempt met by a new start: LeaseHeld while its lease is live; once it
        expired, recorded ``succeeded`` when a publication names it as producer (its worker
        stopped after the publication committed, before its success was recorded), else
        ``abandoned`` (``_abandon_if_expired``); in this transaction. ``latest``: it is the
        period's latest attempt. The attempt as it now is."""
        self._abandon_if_expired(old, at, dry=True)
        if not readback.names_as_producer(self.sql, old):
            self._abandon_if_expired(old, at)
            # its caller reads only whether it succeeded (mutants of these lines: equivalent)
            gone = RunState.ABANDONED  # pragma: no mutate
            return dataclasses.replace(old, state=gone, updated_at=at)  # pragma: no mutate
        return self.succeed_published(old, at, latest)

    def succeed_published(self, old: Attempt, at: dt.datetime, latest: bool) -> Attempt:
        """Record running ``old``, whose publication committed, ``succeeded`` (in the caller's
        transaction): the attempt as it now is. When it is its period's latest, the runs are
        settled, under the job's runs lock (``CompleteRuns.settle``), the last lock taken."""
        job, period = old.job, old.business_date
        self.sql.execute(
            "UPDATE gk_attempts SET state = ?, updated_at = ?, error = NULL, "
            "lease_expires_at = NULL WHERE job = ? AND period = ? AND attempt = ? AND state = ?",
            (RunState.SUCCEEDED.value, self.sql.ts_in(at), job, period, old.attempt, "running"),
        )
        if latest:  # its period is complete now
            # old is running: None (no attempt before) says the same (mutants: equivalent)
            self._settle(job, period, old, RunState.SUCCEEDED)  # pragma: no mutate
        done = RunState.SUCCEEDED
        return dataclasses.replace(old, state=done, updated_at=at, lease_expires_at=None)

    def _abandon_if_expired(self, old: Attempt, at: dt.datetime, dry: bool = False) -> None:
        """LeaseHeld while ``old``'s lease is live (or it has none); else, unless ``dry``,
        record it ``abandoned``."""
        if old.lease_expires_at is None:
            raise LeaseHeld(
                f"{old.job} {old.business_date} attempt {old.attempt} is running without a "
                f"lease (run ID {old.run_id}); record its outcome before starting another",
                holder=old,
                job=old.job,
                period=old.business_date,
                attempt=old.attempt,
            )
        if old.lease_live(at):
            raise LeaseHeld(
                f"{old.job} {old.business_date} attempt {old.attempt} holds a live lease until "
                f"{old.lease_expires_at.isoformat()} (run ID {old.run_id}; the database's "
                f"clock reads {at.isoformat()})",
                holder=old,
                job=old.job,
                period=old.business_date,
                attempt=old.attempt,
            )
        if dry:
            return
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

    # -- abandon -------------------------------------------------------------------------------
    def abandon(
        self, job: str, period: Any, *, reason: str, now: dt.datetime | None = None
    ) -> Attempt | None:
        """``Ledger.abandon``: the latest attempt, now abandoned; None when there is none
        (``abandons.py``)."""
        return abandons.abandon(self, job, period, reason=reason, now=now)

    # -- fencing -------------------------------------------------------------------------------
    def fence(self, consumer: str, period: str, producer: str, now: dt.datetime | None) -> Attempt:
        """The producer's attempt, if it still owns (consumer, period); else LeaseLost
        (``fencing.fence_producer``)."""
        return fencing.fence_producer(self, consumer, period, producer, now)
