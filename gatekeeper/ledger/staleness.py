"""Stale publications: evidence that a newer succeeded upstream attempt has replaced."""

from __future__ import annotations

from typing import Any

from gatekeeper.core.periods import period_key
from gatekeeper.core.records import Staleness
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.sql import SqlCore

_STALE_SQL = """
SELECT p.period, p.revision, e.job, e.job_period, e.run_id, e.attempt, a.run_id, a.attempt
FROM gk_publications p
JOIN gk_evidence e
  ON e.consumer = p.consumer AND e.period = p.period AND e.revision = p.revision
JOIN gk_attempts a
  ON a.job = e.job AND a.period = e.job_period AND a.state = 'succeeded' AND a.attempt > e.attempt
WHERE p.consumer = ? AND p.period >= ?
  AND p.revision = (SELECT MAX(q.revision) FROM gk_publications q
                    WHERE q.consumer = p.consumer AND q.period = p.period)
ORDER BY p.period, e.job, e.job_period, a.attempt
"""


class StalenessStore:
    """Publications whose evidence a newer succeeded upstream attempt has replaced."""

    def __init__(self, sql: SqlCore):
        self.sql = sql

    def stale(self, consumer: str, since: Any = None) -> list[Staleness]:
        """``Ledger.stale``: one entry per (period, upstream) whose evidence is superseded."""
        first = "" if since is None else period_key(since, "since")
        rows = self.sql.read(_STALE_SQL, (check_name(consumer, "consumer"), first))
        newest: dict[tuple[str, str, str], Any] = {}
        for row in rows:  # ordered by attempt: the last one per (period, job) is the newest
            # the evidence's run ID names its upstream period as well (mutants: equivalent)
            newest[(row[0], row[2], row[3])] = row  # pragma: no mutate
        return [
            Staleness(consumer, r[0], int(r[1]), r[2], r[3], r[4], int(r[5]), r[6], int(r[7]))
            for r in newest.values()
        ]
