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

Since schema 10 a row is tagged with its line (``run_lines.py``): a job on a business
calendar (its profile's ``calendar``, other than ``all``) keeps its complete weekdays as runs
that bridge weekends, so ten years of a weekday job with no gaps is one row; ``settle`` finds
a weekday's neighbours on the weekday line (Friday and Monday are adjacent), and a reader on
another calendar, or on every day, splits a bridged row at its weekends. The line a job's
writes use is read from its profile in the writing transaction (the one-round-trip success
assumes the line it last saw and guards on it in SQL); recording a profile that changes the
line rebuilds that job's runs in the same transaction, under the job's runs lock.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, Period, kind_of_key
from gatekeeper.core.spans import PeriodRuns
from gatekeeper.ledger.run_lines import ALL_LINE, bridges, line_of, read_runs

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

#: the statement of the migration to schema 10: every row so far counts every period
LINE_COLUMN = "ALTER TABLE gk_complete_runs ADD COLUMN calendar TEXT NOT NULL DEFAULT 'all'"

#: the read of planning: the runs of (job, published) overlapping [first, last] of one kind
BETWEEN = (
    "SELECT calendar, first_period, last_period FROM gk_complete_runs WHERE job = ? "
    "AND published = ? AND last_period >= ? AND first_period <= ? AND length(first_period) = ? "
    "ORDER BY first_period"
)
_BESIDE = (
    "SELECT published, first_period, last_period FROM (SELECT published, first_period, "
    "last_period FROM gk_complete_runs WHERE job = ? AND published = {flag} AND calendar = ? "
    "AND first_period <= ? AND length(first_period) = ? ORDER BY first_period DESC LIMIT 2) "
    "AS r{flag}"
)
#: true while job ``?``'s profile bridges weekends (``run_lines.bridges``)
BRIDGED = (
    "EXISTS (SELECT 1 FROM gk_jobs j WHERE j.job = ? AND j.calendar IS NOT NULL "
    "AND j.calendar <> 'all')"
)
_BESIDE_BOTH = _BESIDE.format(flag=0) + " UNION ALL " + _BESIDE.format(flag=1)
_PUBLISHED = (  # a row flagged 2 when the job has published the period
    " UNION ALL SELECT 2, period, period FROM (SELECT period FROM gk_publications "
    "WHERE consumer = ? AND period = ? LIMIT 1) AS p"
)

#: the full scan the runs must equal: each (job, period) whose latest attempt succeeded, and
#: whether the job has published it (``AND a.job ...`` may follow)
SCAN = (
    "SELECT a.job, a.period, EXISTS (SELECT 1 FROM gk_publications p "
    "WHERE p.consumer = a.job AND p.period = a.period) FROM gk_attempts a "
    "WHERE a.state = 'succeeded' AND a.attempt = (SELECT MAX(b.attempt) "
    "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)"
)

#: the jobs whose profile bridges weekends (``run_lines.bridges``)
BRIDGED_JOBS = "SELECT job FROM gk_jobs WHERE calendar IS NOT NULL AND calendar <> 'all'"

#: a run as stored: (job, published flag, line tag) -> its (first, last) key pairs, ascending
Derived = dict[tuple[str, int, str], list[tuple[str, str]]]


def derive(rows: Iterable[tuple[str, str, object]], bridged: set[str]) -> Derived:
    """The runs ``gk_complete_runs`` holds for the rows of ``SCAN`` (job, period, published),
    each on the line its job's profile gives (``bridged``: the jobs that bridge weekends):
    the one derivation the migrations, a profile's new calendar and ``verify.py`` share."""
    found: dict[tuple[str, int, str, Period], list[int]] = {}
    for job, period, published in rows:
        tag, kind = line_of(job in bridged, period)
        n = kind.ordinal(period)
        found.setdefault((job, 0, tag, kind), []).append(n)
        if published:
            found.setdefault((job, 1, tag, kind), []).append(n)
    derived: Derived = {}
    for (job, flag, tag, kind), ordinals in found.items():
        derived.setdefault((job, flag, tag), []).extend(PeriodRuns.of(kind, ordinals).key_pairs())
    return {key: sorted(pairs) for key, pairs in derived.items()}


@dataclass(frozen=True, slots=True)
class Line:
    """Where a period of a job sits among its runs: the rows' ``tag``, the ``kind`` whose
    ordinals they count, the keys just ``before`` (None at the calendar's first) and
    ``after`` it (itself at the last), and a SQL condition (with its parameters) true while
    the job's profile still puts it there (``"1 = 1"`` where the profile cannot move it)."""

    tag: str
    kind: Period
    before: str | None
    after: str
    still: str
    still_params: tuple[object, ...]


class CompleteRuns:
    """The runs of ``gk_complete_runs``: read by planning, settled by every write."""

    def __init__(self, sql: SqlCore):
        self.sql = sql
        self._bridged: dict[str, bool] = {}  # job -> its profile bridged weekends, last seen

    # -- reads ---------------------------------------------------------------------------------
    def between(
        self, job: str, first: str, last: str, published: bool, kind: Period | None = None
    ) -> PeriodRuns:
        """The complete (``published``: and published) periods of ``job`` among the keys
        ``[first, last]`` of ``first``'s kind, as runs of ``kind`` (that kind or it on a
        calendar; default the base kind) clipped to the window; one query over the runs that
        overlap it (``run_lines.read_runs``)."""
        base = kind_of_key(first)
        base.ordinal(first, "first")
        base.ordinal(last, "last")
        rows = self.sql.read(BETWEEN, (job, int(published), first, last, len(first)))
        return read_runs(base if kind is None else kind, first, last, rows)

    def bridged(self, job: str) -> bool:
        """Whether ``job``'s profile bridges weekends (``run_lines.bridges``), read now (in
        the caller's transaction) and remembered for ``line``."""
        rows = self.sql.execute("SELECT calendar FROM gk_jobs WHERE job = ?", (job,)).fetchall()
        found = self._bridged[job] = bridges(rows[0][0] if rows else None)
        return found

    def line(self, job: str, period: str, *, read: bool = True) -> Line:
        """Where ``period`` of ``job`` sits among its runs (``Line``): the job's profile read
        in this transaction when ``read`` (and the period is a weekday, which alone it can
        move), else as last seen (default: not bridged), with the condition that it is so."""
        kind = kind_of_key(period)
        movable = kind is DAILY and line_of(True, period)[0] != ALL_LINE
        still, params = "1 = 1", cast(tuple[object, ...], ())
        if movable:
            known = self.bridged(job) if read else self._bridged.get(job, False)
            still, params = (BRIDGED if known else f"NOT {BRIDGED}"), (job,)
            tag, kind = line_of(known, period)
        else:
            tag = ALL_LINE
        n = kind.ordinal(period)
        return Line(tag, kind, _key(kind, n - 1), _key(kind, n + 1) or period, still, params)

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
        published it is read in the same statement as the runs beside it). The job's profile
        read for a weekday (``line``), then one read; a write only where membership changes."""
        self.sql.lock_key("complete runs", job, clock=False)  # pragma: no mutate
        line = self.line(job, period)
        kind, tag = line.kind, line.tag
        n = kind.ordinal(period)
        if succeeded and not published:
            extension = self.extension(job, period, line)
            if extension is not None and self.sql.execute(*extension).rowcount == 1:
                return
        params: tuple[object, ...] = (job, tag, line.after, len(period))
        ask = succeeded and published is None
        sql = _BESIDE_BOTH + (_PUBLISHED if ask else "")
        params = (*params, *params, *((job, period) if ask else ()))
        rows = self.sql.execute(sql, params).fetchall()
        beside: dict[int, list[tuple[int, int, str]]] = {0: [], 1: [], 2: []}
        for flag, a, b in rows:
            beside[int(flag)].append((kind.ordinal(a), kind.ordinal(b), a))
        if ask:
            published = bool(beside[2])
        for flag, wanted in ((0, succeeded), (1, succeeded and bool(published))):
            self._set(_Runs(job, flag, tag, kind), n, wanted, beside[flag])

    def extension(self, job: str, period: str, line: Line) -> tuple[str, tuple[object, ...]] | None:
        """The common success as one statement, no read (None for the first period of the
        calendar): ``period`` (not complete until now) extends the run of its ``line`` that
        ends just before it, when no run starts just after it and the job has not published
        it (so only the job's plain runs change); one row changed when it applied, none
        (nothing written) in any other case."""
        if line.before is None:
            return None
        sql = (
            "UPDATE gk_complete_runs SET last_period = ? WHERE job = ? AND published = 0 "
            "AND calendar = ? AND last_period = ? AND NOT EXISTS (SELECT 1 FROM "
            "gk_complete_runs r WHERE r.job = ? AND r.published = 0 AND r.calendar = ? AND "
            "r.first_period = ?) AND NOT EXISTS (SELECT 1 FROM gk_publications p "
            f"WHERE p.consumer = ? AND p.period = ?) AND {line.still}"
        )
        tag = line.tag
        params = (period, job, tag, line.before, job, tag, line.after, job, period)
        return sql, (*params, *line.still_params)

    def _set(self, runs: _Runs, n: int, wanted: bool, beside: list[tuple[int, int, str]]) -> None:
        """Add ordinal ``n`` to (``wanted``) or take it out of ``runs``, given the (at most
        two) runs whose first period is at or before ``n + 1``, newest first."""
        holding = next(((a, b, k) for a, b, k in beside if a <= n <= b), None)
        if wanted == (holding is not None):
            return
        if not wanted:
            assert holding is not None
            self._split(runs, n, holding)
            return
        left = next(((a, b, k) for a, b, k in beside if b == n - 1), None)
        right = next(((a, b, k) for a, b, k in beside if a == n + 1), None)
        key = runs.key(n)
        if left and right:
            self._delete(runs, right[2])
            self._last(runs, left[2], runs.key(right[1]))
        elif left:
            self._last(runs, left[2], key)
        elif right:
            self._first(runs, right[2], key)
        else:
            self._insert(runs, key, key)

    def _split(self, runs: _Runs, n: int, run: tuple[int, int, str]) -> None:
        a, b, first = run
        if a == b:
            self._delete(runs, first)
            return
        if n == a:
            self._first(runs, first, runs.key(n + 1))
            return
        self._last(runs, first, runs.key(n - 1))
        if n < b:
            self._insert(runs, runs.key(n + 1), runs.key(b))

    def _insert(self, runs: _Runs, first: str, last: str) -> None:
        if runs.tag is None:  # a ledger before schema 10 (its migration to 6)
            self.sql.execute(
                "INSERT INTO gk_complete_runs (job, published, first_period, last_period) "
                "VALUES (?, ?, ?, ?)",
                (runs.job, runs.flag, first, last),
            )
            return
        self.sql.execute(
            "INSERT INTO gk_complete_runs (job, published, first_period, last_period, calendar) "
            "VALUES (?, ?, ?, ?, ?)",
            (runs.job, runs.flag, first, last, runs.tag),
        )

    def _first(self, runs: _Runs, first: str, new_first: str) -> None:
        self.sql.execute(
            "UPDATE gk_complete_runs SET first_period = ? WHERE job = ? AND published = ? "
            "AND first_period = ?",
            (new_first, runs.job, runs.flag, first),
        )

    def _last(self, runs: _Runs, first: str, last: str) -> None:
        self.sql.execute(
            "UPDATE gk_complete_runs SET last_period = ? WHERE job = ? AND published = ? "
            "AND first_period = ?",
            (last, runs.job, runs.flag, first),
        )

    def _delete(self, runs: _Runs, first: str) -> None:
        self.sql.execute(
            "DELETE FROM gk_complete_runs WHERE job = ? AND published = ? AND first_period = ?",
            (runs.job, runs.flag, first),
        )

    # -- the migrations and a profile's new calendar -------------------------------------------
    def rebuild(self, jobs: Iterable[str] | None = None, *, tagged: bool = True) -> None:
        """Replace the runs of ``jobs`` (default: every job) by those of a full scan of their
        attempts and publications, each on the line its profile gives (inside the caller's
        transaction: the migrations to schemas 6 and 10, a profile whose calendar moved the
        job's line). ``tagged`` False: a ledger before schema 10 (no ``calendar`` column)."""
        wanted = None if jobs is None else sorted(set(jobs))
        if wanted == []:
            return
        among = "" if wanted is None else f"job IN ({', '.join('?' * len(wanted))})"
        params = () if wanted is None else tuple(wanted)
        self.sql.execute(
            "DELETE FROM gk_complete_runs" + (f" WHERE {among}" if among else ""), params
        )
        where = f" AND a.{among}" if among else ""
        rows = self.sql.execute(SCAN + where, params).fetchall()
        bridged = self.bridged_jobs() if tagged else set()
        for (job, flag, tag), pairs in sorted(derive(rows, bridged).items()):
            runs = _Runs(job, flag, tag if tagged else None, DAILY)  # the kind is not used
            for first, last in pairs:
                self._insert(runs, first, last)

    def bridged_jobs(self) -> set[str]:
        """The jobs whose profile bridges weekends (``run_lines.bridges``); one read."""
        return {str(row[0]) for row in self.sql.execute(BRIDGED_JOBS).fetchall()}


@dataclass(frozen=True, slots=True)
class _Runs:
    """The rows of one job, flag and line: ``tag`` None before schema 10."""

    job: str
    flag: int
    tag: str | None
    kind: Period

    def key(self, n: int) -> str:
        return self.kind.key(self.kind.at(n))


def _key(kind: Period, n: int) -> str | None:
    """The key of the period at ordinal ``n``, or None beyond the calendar."""
    try:
        return kind.key(kind.at(n))
    except InvalidInput:
        return None
