"""Each job's complete periods as coalesced runs, kept in the same transaction as every change.

A period P of job J is *complete* when J's latest attempt for P succeeded (``published = 0``),
and *complete and published* when, besides, a publication by consumer J exists for P
(``published = 1``): the rule ``PublicationStore.completed_periods`` applies by a full scan.
``gk_complete_runs`` holds those sets as ``[first_period, last_period]`` runs (inclusive
keys), disjoint and never adjacent, so planning a window reads the runs overlapping it (7
gaps in 10 years: 8 rows) instead of every key.

Every write that can change whether P is complete (an attempt inserted or its state changed,
the first publication of P) calls ``settle`` inside its transaction with what P now is;
``settle`` reads the runs beside P and writes only when membership changed: a success
extends or joins runs, anything else that ends P's completeness splits the run holding it.
Writers of different periods of one job touch the same runs, so ``settle`` first takes the
job's runs lock (PostgreSQL; SQLite serializes every writer already), always the last lock a
transaction takes.
``rebuild`` makes every job's runs from the full scan once (the migration to schema 6).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import Period, kind_of_key
from gatekeeper.core.spans import PeriodRuns

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore

#: the statements of the migration that creates the table (``schema.MIGRATIONS[5]``)
TABLE = (
    """CREATE TABLE gk_complete_runs (
        job TEXT NOT NULL,
        published INTEGER NOT NULL CHECK (published IN (0, 1)),
        first_period TEXT NOT NULL,
        last_period TEXT NOT NULL CHECK (last_period >= first_period),
        PRIMARY KEY (job, published, first_period)
    )""",
    "CREATE INDEX gk_complete_runs_by_last ON gk_complete_runs (job, published, last_period)",
)

#: the read of planning: the runs of (job, published) overlapping [first, last] of one kind
BETWEEN = (
    "SELECT first_period, last_period FROM gk_complete_runs WHERE job = ? AND published = ? "
    "AND last_period >= ? AND first_period <= ? AND length(first_period) = ? "
    "ORDER BY first_period"
)
_BESIDE = (
    "SELECT published, first_period, last_period FROM (SELECT published, first_period, "
    "last_period FROM gk_complete_runs WHERE job = ? AND published = {flag} AND "
    "first_period <= ? AND length(first_period) = ? ORDER BY first_period DESC LIMIT 2) AS r{flag}"
)
_BESIDE_BOTH = _BESIDE.format(flag=0) + " UNION ALL " + _BESIDE.format(flag=1)
_PUBLISHED = (  # a row flagged 2 when the job has published the period
    " UNION ALL SELECT 2, period, period FROM (SELECT period FROM gk_publications "
    "WHERE consumer = ? AND period = ? LIMIT 1) AS p"
)


class CompleteRuns:
    """The runs of ``gk_complete_runs``: read by planning, settled by every write."""

    def __init__(self, sql: SqlCore):
        self.sql = sql

    # -- reads ---------------------------------------------------------------------------------
    def between(self, job: str, first: str, last: str, published: bool) -> PeriodRuns:
        """The complete (``published``: and published) periods of ``job`` among the keys
        ``[first, last]`` of ``first``'s kind, as runs clipped to the window; one query over the
        runs that overlap it."""
        kind = kind_of_key(first)
        rows = self.sql.read(BETWEEN, (job, int(published), first, last, len(first)))
        lo, hi = kind.ordinal(first, "first"), kind.ordinal(last, "last") + 1
        spans = []
        ordinal = kind.key_ordinal
        for a, b in rows:
            start, end = max(lo, ordinal(a)), min(hi, ordinal(b) + 1)
            if start < end:
                spans.append((start, end))
        return PeriodRuns(kind, tuple(spans))

    # -- writes (inside the caller's transaction) ----------------------------------------------
    def settle(
        self,
        job: str,
        period: str,
        *,
        succeeded: bool,
        published: bool | None = None,
    ) -> None:
        """Make the runs hold ``period`` as it now is: complete when its latest attempt
        ``succeeded``, complete and published when also ``published`` (None: whether job has
        published it is read in the same statement as the runs beside it). One read; a write
        only where membership changes."""
        self.sql.lock_key("complete runs", job, clock=False)  # pragma: no mutate
        kind = kind_of_key(period)
        n = kind.ordinal(period)
        after = _key(kind, n + 1) or period
        if succeeded and not published:
            extension = self.extension(job, period)
            if extension is not None and self.sql.execute(*extension).rowcount == 1:
                return
        params: tuple[object, ...] = (job, after, len(period), job, after, len(period))
        ask = succeeded and published is None
        sql = _BESIDE_BOTH + (_PUBLISHED if ask else "")
        rows = self.sql.execute(sql, (*params, job, period) if ask else params).fetchall()
        beside: dict[int, list[tuple[int, int, str]]] = {0: [], 1: [], 2: []}
        for flag, a, b in rows:
            beside[int(flag)].append((kind.ordinal(a), kind.ordinal(b), a))
        if ask:
            published = bool(beside[2])
        for flag, wanted in ((0, succeeded), (1, succeeded and bool(published))):
            self._set(job, flag, kind, n, wanted, beside[flag])

    def extension(self, job: str, period: str) -> tuple[str, tuple[object, ...]] | None:
        """The common success as one statement, no read (None for the first period of the
        calendar): ``period`` (not complete until now) extends the run that ends just before
        it, when no run starts just after it and the job has not published it (so only the
        job's plain runs change); one row changed when it applied, none (nothing written) in
        any other case."""
        before, after = self.neighbours(period)
        if before is None:
            return None
        sql = (
            "UPDATE gk_complete_runs SET last_period = ? WHERE job = ? AND published = 0 "
            "AND last_period = ? AND NOT EXISTS (SELECT 1 FROM gk_complete_runs r "
            "WHERE r.job = ? AND r.published = 0 AND r.first_period = ?) AND NOT EXISTS "
            "(SELECT 1 FROM gk_publications p WHERE p.consumer = ? AND p.period = ?)"
        )
        return sql, (period, job, before, job, after, job, period)

    @staticmethod
    def neighbours(period: str) -> tuple[str | None, str]:
        """The keys of the periods just before ``period`` (None at the calendar's first) and
        just after it (``period`` itself at the calendar's last)."""
        kind = kind_of_key(period)
        n = kind.ordinal(period)
        return _key(kind, n - 1), _key(kind, n + 1) or period

    def _set(
        self,
        job: str,
        flag: int,
        kind: Period,
        n: int,
        wanted: bool,
        beside: list[tuple[int, int, str]],
    ) -> None:
        """Add ordinal ``n`` to (``wanted``) or take it out of the runs of (job, flag), given
        the (at most two) runs whose first period is at or before ``n + 1``, newest first."""
        holding = next(((a, b, k) for a, b, k in beside if a <= n <= b), None)
        if wanted == (holding is not None):
            return
        if not wanted:
            assert holding is not None
            self._split(job, flag, kind, n, holding)
            return
        left = next(((a, b, k) for a, b, k in beside if b == n - 1), None)
        right = next(((a, b, k) for a, b, k in beside if a == n + 1), None)
        key = kind.key(kind.at(n))
        if left and right:
            self._delete(job, flag, right[2])
            self._last(job, flag, left[2], kind.key(kind.at(right[1])))
        elif left:
            self._last(job, flag, left[2], key)
        elif right:
            self._first(job, flag, right[2], key)
        else:
            self._insert(job, flag, key, key)

    def _split(self, job: str, flag: int, kind: Period, n: int, run: tuple[int, int, str]) -> None:
        a, b, first = run
        if a == b:
            self._delete(job, flag, first)
            return
        if n == a:
            self._first(job, flag, first, kind.key(kind.at(n + 1)))
            return
        self._last(job, flag, first, kind.key(kind.at(n - 1)))
        if n < b:
            self._insert(job, flag, kind.key(kind.at(n + 1)), kind.key(kind.at(b)))

    def _insert(self, job: str, flag: int, first: str, last: str) -> None:
        self.sql.execute(
            "INSERT INTO gk_complete_runs (job, published, first_period, last_period) "
            "VALUES (?, ?, ?, ?)",
            (job, flag, first, last),
        )

    def _first(self, job: str, flag: int, first: str, new_first: str) -> None:
        self.sql.execute(
            "UPDATE gk_complete_runs SET first_period = ? WHERE job = ? AND published = ? "
            "AND first_period = ?",
            (new_first, job, flag, first),
        )

    def _last(self, job: str, flag: int, first: str, last: str) -> None:
        self.sql.execute(
            "UPDATE gk_complete_runs SET last_period = ? WHERE job = ? AND published = ? "
            "AND first_period = ?",
            (last, job, flag, first),
        )

    def _delete(self, job: str, flag: int, first: str) -> None:
        self.sql.execute(
            "DELETE FROM gk_complete_runs WHERE job = ? AND published = ? AND first_period = ?",
            (job, flag, first),
        )

    # -- the migration -------------------------------------------------------------------------
    def rebuild(self) -> None:
        """Replace every job's runs by those of a full scan of its attempts and publications
        (the migration to schema 6; inside its transaction)."""
        self.sql.execute("DELETE FROM gk_complete_runs")
        rows = self.sql.execute(
            "SELECT a.job, a.period, EXISTS (SELECT 1 FROM gk_publications p "
            "WHERE p.consumer = a.job AND p.period = a.period) FROM gk_attempts a "
            "WHERE a.state = 'succeeded' AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)"
        ).fetchall()
        found: dict[tuple[str, int, Period], list[int]] = {}
        for job, period, published in rows:
            kind = kind_of_key(period)
            n = kind.ordinal(period)
            found.setdefault((job, 0, kind), []).append(n)
            if published:
                found.setdefault((job, 1, kind), []).append(n)
        for (job, flag, kind), ordinals in sorted(found.items()):
            for first, last in PeriodRuns.of(kind, ordinals).key_pairs():
                self._insert(job, flag, first, last)


def _key(kind: Period, n: int) -> str | None:
    """The key of the period at ordinal ``n``, or None beyond the calendar."""
    try:
        return kind.key(kind.at(n))
    except InvalidInput:
        return None
