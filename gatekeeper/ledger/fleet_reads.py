"""Reads over many jobs at once, in set-based statements: what the readers of a fleet need
(``report/fleet.py``: ``/metrics``, ``/api/jobs``, serve's summaries).

Each read takes every job (or every (job, period) pair) it is asked about in statements of
``BATCH`` rows (``batches.py``), joined to the ledger's tables through a ``VALUES`` list (a
common table expression on both dialects), so it costs one round trip per ``BATCH`` jobs, and index
lookups of what is asked, never a scan of every job's periods:

- ``profiles(jobs)``: the recorded profile of each (``gk_jobs``);
- ``spans(jobs)``: each one's first and last recorded period (``JobProfiles.span``'s rule);
- ``complete_runs(windows, published=...)``: each one's complete (and published) periods
  over its window, as runs of its kind (``CompleteRuns.between``'s rule), reading the runs
  that overlap the window;
- ``latest(pairs)``: the latest attempt of each (job, period key) pair that has one;
- ``publishers(jobs)``: those that have published a period (``has_published``);
- ``published(pairs)``: the (job, period key) pairs the job has published (any revision);
- ``revisions(pairs)``: the current (newest) revision of each pair the job has published;
- ``recent_successes(jobs, count)``: each one's ``count`` latest-finished succeeded attempts;
- ``stale(since)``: the stale newest publications of each consumer from a period on
  (``staleness.py``'s one statement, ``Ledger.stale``'s rule);
- ``evidence(pairs)``: the upstream pairs (and attempts) the newest revision of each
  published pair names: the publications a cascade walks down (``core/cascade.py``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence

from gatekeeper.core.causes import JobProfile
from gatekeeper.core.periods import Period, kind_of_key
from gatekeeper.core.records import Attempt, Staleness
from gatekeeper.core.spans import PeriodRuns
from gatekeeper.ledger.attempt_reads import AttemptReads
from gatekeeper.ledger.batches import batches, values
from gatekeeper.ledger.profiles import COLUMNS, profile_of, span_of
from gatekeeper.ledger.run_lines import read_runs
from gatekeeper.ledger.sql import ATTEMPT_COLUMNS, SqlCore
from gatekeeper.ledger.staleness import StalenessStore

#: a request of ``complete_runs``: the job, the first and last key of its window (inclusive,
#: of its base kind) and the kind to count its runs on
Window = tuple[str, str, str, Period]

_ATTEMPT = ", ".join("a." + c.strip() for c in ATTEMPT_COLUMNS.split(","))


class FleetReads:
    """The reads of many jobs at once on one SQL core (see the module)."""

    def __init__(self, sql: SqlCore):
        self.sql = sql
        self._attempts = AttemptReads(sql)
        self._staleness = StalenessStore(sql)

    def profiles(self, jobs: Iterable[str]) -> dict[str, JobProfile]:
        """Job -> its recorded profile, for those of ``jobs`` that have one."""
        found: dict[str, JobProfile] = {}
        kinds: dict[tuple[str, str], Period] = {}  # resolved once per kind and calendar
        for some in batches(sorted(set(jobs))):
            rows = self.sql.read(
                f"WITH w(job) AS (VALUES {values(1, len(some))}) "
                f"SELECT {COLUMNS} FROM gk_jobs WHERE job IN (SELECT job FROM w)",
                tuple(some),
            )
            found.update((row[0], profile_of(row, kinds)) for row in rows)
        return found

    def spans(self, jobs: Iterable[str]) -> dict[str, tuple[str, str]]:
        """Job -> its first and last recorded period key (``JobProfiles.span``), for those
        of ``jobs`` that have one: four index probes a job, in one statement per batch."""
        found: dict[str, tuple[str, str]] = {}
        for some in batches(sorted(set(jobs))):
            rows = self.sql.read(
                f"WITH w(job) AS (VALUES {values(1, len(some))}) SELECT w.job, "
                "(SELECT MIN(period) FROM gk_attempts a WHERE a.job = w.job), "
                "(SELECT MAX(period) FROM gk_attempts a WHERE a.job = w.job), "
                "(SELECT MIN(period) FROM gk_publications p WHERE p.consumer = w.job), "
                "(SELECT MAX(period) FROM gk_publications p WHERE p.consumer = w.job) FROM w",
                tuple(some),
            )
            for job, *ends in rows:
                span = span_of([(ends[0], ends[1]), (ends[2], ends[3])])
                if span is not None:
                    found[job] = span
        return found

    def complete_runs(
        self, windows: Sequence[Window], published: bool = False
    ) -> dict[str, PeriodRuns]:
        """Job -> its complete periods (latest attempt succeeded; with ``published``, and
        published by it) among the keys of its window, as runs of the window's kind clipped
        to it (``CompleteRuns.between``)."""
        rows: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
        for some in batches(windows):
            for name, *run in self.sql.read(
                f"WITH w(job, first, last) AS (VALUES {values(3, len(some))}) "
                "SELECT r.job, r.calendar, r.first_period, r.last_period FROM w "
                "JOIN gk_complete_runs r ON r.job = w.job AND r.published = ? "
                "AND r.last_period >= w.first AND r.first_period <= w.last "
                "AND length(r.first_period) = length(w.first) ORDER BY r.job, r.first_period",
                (*(v for job, first, last, _ in some for v in (job, first, last)), int(published)),
            ):
                rows[name].append((run[0], run[1], run[2]))
        found = {}
        for job, first, last, kind in windows:
            base = kind_of_key(first)
            base.ordinal(first, "first")
            base.ordinal(last, "last")
            found[job] = read_runs(kind, first, last, rows.get(job, ()))
        return found

    def latest(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], Attempt]:
        """(job, period key) -> the latest attempt of the job for it, for the pairs that
        have one; an index lookup per pair."""
        found: dict[tuple[str, str], Attempt] = {}
        for some in batches(sorted(set(pairs))):
            rows = self.sql.read(
                f"WITH w(job, period) AS (VALUES {values(2, len(some))}) SELECT {_ATTEMPT} "
                "FROM w JOIN gk_attempts a ON a.job = w.job AND a.period = w.period "
                "WHERE a.attempt = (SELECT MAX(b.attempt) FROM gk_attempts b "
                "WHERE b.job = a.job AND b.period = a.period)",
                tuple(v for pair in some for v in pair),
            )
            for row in rows:
                found[(row[0], row[1])] = self._attempts.to_attempt(row)
        return found

    def publishers(self, jobs: Iterable[str]) -> set[str]:
        """Those of ``jobs`` that have published a period as a consumer (``has_published``):
        an index probe a job."""
        found: set[str] = set()
        for some in batches(sorted(set(jobs))):
            rows = self.sql.read(
                f"WITH w(job) AS (VALUES {values(1, len(some))}) SELECT w.job FROM w "
                "WHERE EXISTS (SELECT 1 FROM gk_publications p WHERE p.consumer = w.job)",
                tuple(some),
            )
            found.update(row[0] for row in rows)
        return found

    def published(self, pairs: Iterable[tuple[str, str]]) -> set[tuple[str, str]]:
        """Those (job, period key) pairs the job has published (any revision, as a
        consumer): an index probe a pair."""
        found: set[tuple[str, str]] = set()
        for some in batches(sorted(set(pairs))):
            rows = self.sql.read(
                f"WITH w(job, period) AS (VALUES {values(2, len(some))}) "
                "SELECT w.job, w.period FROM w WHERE EXISTS (SELECT 1 FROM gk_publications p "
                "WHERE p.consumer = w.job AND p.period = w.period)",
                tuple(v for pair in some for v in pair),
            )
            found.update((row[0], row[1]) for row in rows)
        return found

    def revisions(self, pairs: Iterable[tuple[str, str]]) -> dict[tuple[str, str], int]:
        """(job, period key) -> the newest revision the job has published of it (as a
        consumer), for the pairs it has published: an index probe a pair."""
        found: dict[tuple[str, str], int] = {}
        for some in batches(sorted(set(pairs))):
            rows = self.sql.read(
                f"WITH w(job, period) AS (VALUES {values(2, len(some))}) "
                "SELECT p.consumer, p.period, MAX(p.revision) FROM w JOIN gk_publications p "
                "ON p.consumer = w.job AND p.period = w.period GROUP BY p.consumer, p.period",
                tuple(v for pair in some for v in pair),
            )
            found.update(((row[0], row[1]), int(row[2])) for row in rows)
        return found

    def recent_successes(self, jobs: Iterable[str], count: int) -> dict[str, list[Attempt]]:
        """Job -> its ``count`` succeeded attempts that finished last (by ``updated_at``,
        newest first), for those of ``jobs`` that have one: what an estimate of a run's
        duration reads."""
        found: dict[str, list[Attempt]] = defaultdict(list)
        for some in batches(sorted(set(jobs))):
            rows = self.sql.read(
                f"WITH w(job) AS (VALUES {values(1, len(some))}) SELECT {_ATTEMPT} FROM "
                "(SELECT b.*, ROW_NUMBER() OVER (PARTITION BY b.job ORDER BY b.updated_at DESC, "
                "b.period DESC, b.attempt DESC) AS n FROM gk_attempts b "
                "WHERE b.job IN (SELECT job FROM w) AND b.state = 'succeeded') a "
                "WHERE a.n <= ? ORDER BY a.job, a.n",
                (*some, count),
            )
            for row in rows:
                found[row[0]].append(self._attempts.to_attempt(row))
        return dict(found)

    def stale(self, since: Iterable[tuple[str, str]]) -> dict[tuple[str, str], list[Staleness]]:
        """(consumer, period key) -> its Staleness entries (one per superseded upstream
        pair, as ``Ledger.stale``), for each (consumer, first period key) of ``since``, of
        the stale newest publications from that key on: one statement per BATCH consumers,
        reading their publications and evidence (a job that never published has none)."""
        found: dict[tuple[str, str], list[Staleness]] = defaultdict(list)
        for entry in self._staleness.stale_of(sorted(set(since))):
            found[(entry.consumer, entry.business_date)].append(entry)
        return dict(found)

    def evidence(
        self, pairs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], tuple[tuple[tuple[str, str], int], ...]]:
        """(consumer, period key) -> ((upstream job, its period key), the attempt) of each
        upstream pair its newest revision's evidence names, ordered by upstream pair, for
        those of ``pairs`` published: one statement per BATCH pairs, index lookups."""
        found: dict[tuple[str, str], list[tuple[tuple[str, str], int]]] = defaultdict(list)
        for some in batches(sorted(set(pairs))):
            rows = self.sql.read(
                f"WITH w(consumer, period) AS (VALUES {values(2, len(some))}) "
                "SELECT e.consumer, e.period, e.job, e.job_period, e.attempt FROM w "
                "JOIN gk_evidence e ON e.consumer = w.consumer AND e.period = w.period "
                "WHERE e.revision = (SELECT MAX(p.revision) FROM gk_publications p "
                "WHERE p.consumer = w.consumer AND p.period = w.period) "
                "ORDER BY e.consumer, e.period, e.job, e.job_period",
                tuple(v for pair in some for v in pair),
            )
            for row in rows:
                found[(row[0], row[1])].append(((row[2], row[3]), int(row[4])))
        return {pair: tuple(ev) for pair, ev in found.items()}
