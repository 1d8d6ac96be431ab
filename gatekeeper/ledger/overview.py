"""Read-only overviews of the ledger: newest publications of a window, every job at a glance.

The SQL behind three named reads of the ledger contract (``Ledger.newest_publications``,
``jobs_overview``, ``running_attempts``; ``gatekeeper status``, ``gatekeeper jobs``, the HTML
report and ``gatekeeper serve`` call them there), each on the ledger's SQL core. Each reads a
fixed number of queries whatever the size of the window or the ledger, and writes nothing.
"""

from __future__ import annotations

import datetime as dt
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from gatekeeper.core.periods import kind_of_key
from gatekeeper.core.records import EvidenceItem, Publication, RunState
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.publications import _labels

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore

#: The newest revision of each (consumer, period): one correlated subquery, on both backends.
_NEWEST = (
    "{t}.consumer = ? AND {t}.period >= ? AND {t}.period <= ? AND length({t}.period) = ? "
    "AND {t}.revision = (SELECT MAX(q.revision) FROM gk_publications q "
    "WHERE q.consumer = {t}.consumer AND q.period = {t}.period)"
)

_PUBLICATIONS_SQL = (
    "SELECT p.period, p.revision, p.fingerprint, p.required_jobs, p.published_at, p.reason, "
    "p.location, p.producer_run_id, p.producer_attempt FROM gk_publications p WHERE "
    + _NEWEST.format(t="p")
)
_EVIDENCE_SQL = (
    "SELECT e.period, e.job, e.job_period, e.run_id, e.attempt, e.watermark FROM gk_evidence e "
    "WHERE " + _NEWEST.format(t="e") + " ORDER BY e.period, e.job, e.job_period"
)

#: Per job, the state of each period's latest attempt; a running attempt whose lease is not
#: live at ``now`` (expired or never set) is counted apart, as ``status`` shows it abandoned.
_STATES_SQL = """
SELECT a.job, a.state,
       CASE WHEN a.state = 'running' AND (a.lease_expires_at IS NULL OR a.lease_expires_at <= ?)
            THEN 1 ELSE 0 END AS expired,
       COUNT(*)
FROM gk_attempts a
WHERE a.attempt = (SELECT MAX(b.attempt) FROM gk_attempts b
                   WHERE b.job = a.job AND b.period = a.period)
GROUP BY a.job, a.state, expired
"""

#: Per job (attempts) and per consumer (publications): first and last period, last activity,
#: and how many periods are published.
_ACTIVITY_SQL = """
SELECT job, MIN(period), MAX(period), MAX(updated_at), 0 FROM gk_attempts GROUP BY job
UNION ALL
SELECT consumer, MIN(period), MAX(period), MAX(published_at), COUNT(DISTINCT period)
FROM gk_publications GROUP BY consumer
"""


def newest_publications(
    core: SqlCore, consumer: str, first: str, last: str
) -> dict[str, Publication]:
    """Period key -> the newest revision of ``consumer``'s publication, for keys in
    [first, last] of ``first``'s kind, with its evidence. Two queries (the second only when
    something is published); reads only. Raises InvalidInput for a bad consumer name."""
    consumer = check_name(consumer, "consumer")
    window = (consumer, first, last, len(first))
    rows = core.read(_PUBLICATIONS_SQL, window)
    if not rows:
        return {}
    items: dict[str, list[EvidenceItem]] = defaultdict(list)
    for e in core.read(_EVIDENCE_SQL, window):
        items[e[0]].append(EvidenceItem(e[1], e[2], e[3], int(e[4]), core.ts_out(e[5])))
    found = {}
    for row in rows:
        period, published = row[0], core.ts_out(row[4])
        assert published is not None
        found[period] = Publication(
            consumer,
            period,
            int(row[1]),
            row[2],
            _labels(json.loads(row[3]), period),
            tuple(items.get(period, ())),
            published,
            row[5],
            row[6],
            row[7],
            None if row[8] is None else int(row[8]),
        )
    return found


#: The order in which ``jobs`` reports the states of latest attempts.
JOB_STATES = tuple(
    s.value for s in (RunState.SUCCEEDED, RunState.FAILED, RunState.RUNNING, RunState.ABANDONED)
)


@dataclass(frozen=True, slots=True)
class JobOverview:
    """One job of the ledger at a glance.

    ``kind`` is ``daily`` or ``hourly`` (from its period keys); ``first_period`` and
    ``last_period`` span its attempts and publications; ``states`` counts its periods by the
    state of their latest attempt (succeeded, failed, running, abandoned: a running attempt
    without a live lease counts as abandoned); ``published`` counts its periods with a
    publication (a consumer); ``last_updated`` is its latest attempt update or publication.
    """

    job: str
    kind: str
    first_period: str
    last_period: str
    states: tuple[tuple[str, int], ...]
    last_updated: dt.datetime
    published: int = 0

    def count(self, state: str) -> int:
        """How many periods' latest attempt is in ``state``."""
        return dict(self.states).get(state, 0)

    def to_json(self) -> dict[str, Any]:
        return {
            "job": self.job,
            "kind": self.kind,
            "first_period": self.first_period,
            "last_period": self.last_period,
            "states": dict(self.states),
            "published": self.published,
            "last_updated": self.last_updated.isoformat(),
        }


def jobs_overview(core: SqlCore, now: dt.datetime | None = None) -> list[JobOverview]:
    """Every job of the ledger (each job of an attempt, each consumer of a publication),
    sorted by name. Leases are judged at ``now`` (default: the database's clock). Two
    queries; reads only."""
    at = core.db_now() if now is None else now
    counts: dict[str, dict[str, int]] = defaultdict(lambda: dict.fromkeys(JOB_STATES, 0))
    for job, state, expired, n in core.read(_STATES_SQL, (core.ts_in(at),)):
        counts[job][RunState.ABANDONED.value if int(expired) else state] += int(n)
    spans: dict[str, list[Any]] = {}
    for job, first, last, updated, published in core.read(_ACTIVITY_SQL):
        when = core.ts_out(updated)
        seen = spans.setdefault(job, [first, last, when, 0])
        seen[0], seen[1] = min(seen[0], first), max(seen[1], last)
        seen[2] = max(seen[2], when)
        seen[3] += int(published)
    return [
        JobOverview(
            job,
            kind_of_key(first),
            first,
            last,
            tuple(counts[job].items()) if job in counts else tuple((s, 0) for s in JOB_STATES),
            updated,
            published,
        )
        for job, (first, last, updated, published) in sorted(spans.items())
    ]


#: Per job, its running attempts: with a live lease at ``now`` (0) or not (1: expired or never
#: set; the next attempt will record them abandoned). Its condition is the partial index's of
#: schema 13 (``schema.RUNNING_INDEX``): it reads the running attempts alone.
_RUNNING_SQL = """
SELECT job, CASE WHEN lease_expires_at IS NOT NULL AND lease_expires_at > ? THEN 0 ELSE 1 END,
       COUNT(*)
FROM gk_attempts WHERE state = 'running' GROUP BY 1, 2
"""


def running_attempts(core: SqlCore, now: dt.datetime) -> dict[str, tuple[int, int]]:
    """Job -> (running attempts with a live lease at ``now``, running attempts whose lease
    expired or was never set), over the whole ledger; jobs with none are left out. One
    query; reads only."""
    found: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for job, expired, n in core.read(_RUNNING_SQL, (core.ts_in(now),)):
        found[job][int(expired)] += int(n)
    return {job: (live, expired) for job, (live, expired) in found.items()}
