"""The common start and end of an attempt in one round trip each (PostgreSQL: psycopg's
pipeline): BEGIN, the key lock, statements that judge in SQL what they write, and COMMIT.

Each applies only in the common case, and writes nothing otherwise; ``AttemptStore`` then
reads and judges the case in a transaction of its own (``_fast_or_read``). Each is safe to
run twice: a dropped connection cannot tell whether its COMMIT ran, and the work runs again.
"""

from __future__ import annotations

import datetime as dt
from typing import cast

from gatekeeper.core.errors import LedgerError
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.validation import MAX_ATTEMPT
from gatekeeper.ledger.requests import AttemptObservation, AttemptStart
from gatekeeper.ledger.runs import CompleteRuns
from gatekeeper.ledger.schema import version_guard
from gatekeeper.ledger.sql import ATTEMPT_COLUMNS, SqlCore, Statements


class OneTrip:
    """The one-round-trip writes of ``AttemptStore.begin_attempt`` and ``record``."""

    def __init__(self, sql: SqlCore, runs: CompleteRuns):
        self.sql = sql
        self.runs = runs

    def start(self, request: AttemptStart) -> Attempt | None:
        """The common start, sent with the key's lock and the COMMIT (one round trip where
        the dialect can) and no read: the next attempt (``attempt`` 0) of a period none of
        whose attempts is running or succeeded, at the database's clock. The new running
        Attempt; None, nothing written, for anything else (``_begin`` then reads and judges
        it). A second run of a start that committed finds it (``_begin``)."""
        job, period = request.job, request.period
        clock, stamps = self.sql.dialect.clock_row(request.lease_seconds, request.now)
        insert = (
            f"INSERT INTO gk_attempts ({ATTEMPT_COLUMNS}) SELECT ?, ?, "
            "COALESCE(MAX(a.attempt), 0) + 1, ?, 'running', c.at, c.at, c.until, NULL, ? "
            f"FROM ({clock}) AS c LEFT JOIN gk_attempts a ON a.job = ? AND a.period = ? "
            "WHERE 1 = 1 GROUP BY c.at, c.until HAVING COALESCE(MAX(a.attempt), 0) < ? AND "
            "COALESCE(SUM(CASE WHEN a.state IN ('running', 'succeeded') THEN 1 ELSE 0 END), 0) "
            f"= 0 AND {version_guard()} "
            "ON CONFLICT (run_id) DO NOTHING RETURNING attempt, started_at, lease_expires_at"
        )
        params = (job, period, request.run_id, request.reason, *stamps, job, period, MAX_ATTEMPT)
        cursors = self.sql.lock_key("attempt", job, period, after=[(insert, params)], commit=True)
        rows = cursors[0].fetchall()
        if not rows:
            return None
        self.sql.vouch_version()
        number, started, until = rows[0]
        at, expires = cast(dt.datetime, self.sql.ts_out(started)), self.sql.ts_out(until)
        started = (request.run_id, RunState.RUNNING, at, at, expires)
        return Attempt(job, period, int(number), *started, reason=request.reason)

    def finish_statements(self, request: AttemptObservation) -> Statements:
        """The common outcome, a running attempt's end, as statements sent with the key's
        lock and the COMMIT (``finished``): the attempt, running with this run ID, takes the
        outcome at the database's clock. A success, which makes its period complete, only
        when it is the period's latest attempt and the job has not published the period; its
        run of complete periods is then settled by one of the ``_joins`` statements, each of
        which writes only in its own case. Nothing written otherwise (``_record`` then reads
        and judges it)."""
        job, period, number = request.job, request.period, request.attempt
        clock, stamps = self.sql.dialect.clock_row(0, request.now)
        sql = (
            f"WITH c AS ({clock}) UPDATE gk_attempts SET state = ?, "
            "updated_at = (SELECT at FROM c), error = ?, lease_expires_at = NULL "
            "WHERE job = ? AND period = ? AND attempt = ? AND run_id = ? AND state = 'running' "
            f"AND {version_guard()}"
        )
        returning = " RETURNING attempt"  # a rowcount is not kept for WITH ... UPDATE (sqlite3)
        params = (*stamps, request.state.value, request.error, job, period, number)
        params += (request.run_id,)
        if request.state is not RunState.SUCCEEDED:  # running was not complete: nor is this
            return [(sql + returning, params)]
        cases, case_params, statements = self._joins(job, period, request.run_id)
        sql += (
            " AND attempt = (SELECT MAX(b.attempt) FROM gk_attempts b WHERE b.job = ? AND "
            "b.period = ?) AND NOT EXISTS (SELECT 1 FROM gk_publications p WHERE "
            f"p.consumer = ? AND p.period = ?) AND ({cases}){returning}"
        )
        params += (job, period, job, period, *case_params)
        return [(sql, params), *statements]

    def finished(self, request: AttemptObservation, statements: Statements) -> bool:
        """Send ``finish_statements`` with the key's lock (and the job's runs lock for a
        success) and the COMMIT, in one round trip where the dialect can: True when the
        attempt took its outcome (a second run finds it done: a harmless replay)."""
        job, period = request.job, request.period
        success = request.state is RunState.SUCCEEDED
        runs = ("complete runs", job) if success else None
        cursors = self.sql.lock_key(
            "attempt", job, period, then=runs, after=statements, commit=True
        )
        done = len(cursors[0].fetchall()) == 1
        if done:
            self.sql.vouch_version()
        settled = sum(cursor.rowcount for cursor in cursors[1:])
        if success and settled != int(done):  # one judgement, made twice
            raise LedgerError(
                f"{job} {period}: the runs of complete periods disagree with the attempts "
                "(written behind the ledger's back?); rebuild them: CompleteRuns.rebuild()",
                retryable=False,
            )
        return done

    def _joins(
        self, job: str, period: str, run_id: str
    ) -> tuple[str, tuple[object, ...], Statements]:
        """How a success settles its period's runs in one statement, by the runs beside it:
        extend the run that ends just before it (none starts just after) or prepend to the
        run that starts just after it (none ends just before), one UPDATE; or a single new
        run (neither), one INSERT; joining two runs is left to the read-and-judge way.
        Returns the condition (and its parameters) that one of these cases holds, judged by
        the attempt's end before it writes, and the statements, each of which writes only in
        its case and only where the period's latest attempt is ``run_id``'s and succeeded
        and no run holds the period (so a second run, or an end that did not apply, writes
        nothing), guarded on the schema version."""
        line = self.runs.line(job, period, read=False)  # as last seen: guarded in SQL
        before, after, tag = line.before, line.after, line.tag
        run = (
            "SELECT 1 FROM gk_complete_runs r WHERE r.job = ? AND r.published = 0 AND "
            f"r.calendar = '{tag}' AND r."
        )
        ends: tuple[str, tuple[object, ...]] = (f"EXISTS ({run}last_period = ?)", (job, before))
        starts: tuple[str, tuple[object, ...]] = (f"EXISTS ({run}first_period = ?)", (job, after))
        guard = (
            f" AND NOT EXISTS ({run}first_period <= ? AND r.last_period >= ?) AND EXISTS "
            "(SELECT 1 FROM gk_attempts a WHERE a.job = ? AND a.period = ? AND a.run_id = ? "
            "AND a.state = 'succeeded' AND a.attempt = (SELECT MAX(b.attempt) FROM "
            "gk_attempts b WHERE b.job = ? AND b.period = ?)) AND NOT EXISTS (SELECT 1 FROM "
            f"gk_publications p WHERE p.consumer = ? AND p.period = ?) AND {version_guard()} "
            f"AND {line.still}"
        )
        guarded: tuple[object, ...] = (job, period, period, job, period, run_id, job, period)
        guarded += (job, period, *line.still_params)
        if before is None:  # nothing ends before the calendar's first period
            ends = ("1 = 0", ())
        sides = (  # extend the run before (none after) or prepend to the run after (none before)
            "UPDATE gk_complete_runs SET last_period = CASE WHEN last_period = ? THEN ? ELSE "
            "last_period END, first_period = CASE WHEN first_period = ? THEN ? ELSE "
            f"first_period END WHERE job = ? AND published = 0 AND calendar = '{tag}' AND "
            f"((last_period = ? AND NOT {starts[0]}) OR (first_period = ? AND NOT {ends[0]}))"
        )
        side_params = (before, period, after, period, job, before, *starts[1], after, *ends[1])
        single = (
            "INSERT INTO gk_complete_runs (job, published, first_period, last_period, calendar) "
            f"SELECT ?, 0, ?, ?, '{tag}' WHERE NOT {ends[0]} AND NOT {starts[0]}"
        )
        statements = [
            (sides + guard, (*side_params, *guarded)),
            (single + guard, (job, period, period, *ends[1], *starts[1], *guarded)),
        ]
        cases = f"NOT ({ends[0]} AND {starts[0]}) AND {line.still}"
        return cases, (*ends[1], *starts[1], *line.still_params), statements
