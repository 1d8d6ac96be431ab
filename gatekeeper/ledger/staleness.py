"""Stale publications: evidence that a newer succeeded upstream attempt, or a newer
publication revision of the upstream pair, has replaced.

One rule, one statement (``_STALE_SQL``): the newest revision of each publication of the
consumers asked about (from a period key on), joined to its evidence, to the succeeded
attempts of the same upstream pair with a greater ordinal, and to that pair's newest
publication revision when it is greater than the one the evidence recorded (recorded since
schema 15; NULL before: never stale by revision). ``Ledger.stale`` asks it of one
consumer, ``Ledger.fleet.stale`` of many, ``BATCH`` consumers a statement (``batches.py``):
it reads publications and evidence, which only publishing jobs have.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gatekeeper.core.periods import period_key
from gatekeeper.core.records import Staleness
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.batches import batches, values
from gatekeeper.ledger.sql import SqlCore

#: the upstream pair's newest publication revision (an index probe of its primary key)
_UPSTREAM_REVISION = (
    "(SELECT MAX(u.revision) FROM gk_publications u "
    "WHERE u.consumer = e.job AND u.period = e.job_period)"
)

_STALE_SQL = (
    """
WITH w(consumer, since) AS (VALUES {values})
SELECT p.consumer, p.period, p.revision, e.job, e.job_period, e.run_id, e.attempt,
       COALESCE(a.run_id, e.run_id), COALESCE(a.attempt, e.attempt), e.job_revision, """
    + _UPSTREAM_REVISION
    + """
FROM w
JOIN gk_publications p ON p.consumer = w.consumer AND p.period >= w.since
JOIN gk_evidence e
  ON e.consumer = p.consumer AND e.period = p.period AND e.revision = p.revision
LEFT JOIN gk_attempts a
  ON a.job = e.job AND a.period = e.job_period AND a.state = 'succeeded' AND a.attempt > e.attempt
WHERE p.revision = (SELECT MAX(q.revision) FROM gk_publications q
                    WHERE q.consumer = p.consumer AND q.period = p.period)
  AND (a.attempt IS NOT NULL OR """
    + _UPSTREAM_REVISION
    + """ > e.job_revision)
ORDER BY p.consumer, p.period, e.job, e.job_period, a.attempt
"""
)


class StalenessStore:
    """Publications whose evidence a newer succeeded upstream attempt, or a newer upstream
    publication revision, has replaced."""

    def __init__(self, sql: SqlCore):
        self.sql = sql

    def stale(self, consumer: str, since: Any = None) -> list[Staleness]:
        """``Ledger.stale``: one entry per (period, upstream) whose evidence is superseded."""
        first = "" if since is None else period_key(since, "since")
        return self.stale_of([(check_name(consumer, "consumer"), first)])

    def stale_of(self, since: Sequence[tuple[str, str]]) -> list[Staleness]:
        """One entry per (consumer, period, upstream pair) whose evidence is superseded (by a
        newer succeeded attempt: the newest named; else by a newer upstream revision), for
        each (consumer, first period key) of ``since`` (``""``: every period), ordered by
        consumer, period and upstream: one statement per BATCH consumers. Reads only."""
        newest: dict[tuple[str, str, str, str], Any] = {}
        for some in batches(since):
            sql = _STALE_SQL.format(values=values(2, len(some)))
            for row in self.sql.read(sql, tuple(v for pair in some for v in pair)):
                # ordered by attempt: the last one per (consumer, period, job) is the newest
                # (a row without a newer attempt, NULL, is its pair's only one);
                # the evidence's run ID names its upstream period as well (mutants: equivalent)
                newest[(row[0], row[1], row[3], row[4])] = row  # pragma: no mutate
        return [_staleness(r) for r in newest.values()]


def _staleness(r: Any) -> Staleness:
    """The Staleness of one row of ``_STALE_SQL``."""
    old, new = (None if v is None else int(v) for v in (r[9], r[10]))
    return Staleness(r[0], r[1], int(r[2]), r[3], r[4], r[5], int(r[6]), r[7], int(r[8]), old, new)
