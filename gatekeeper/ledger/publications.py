"""Readiness reads and atomic publication: output and evidence in one transaction."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gatekeeper.errors import NotReady, PublicationConflict
from gatekeeper.gate import (
    Requirement,
    Watermarks,
    check_name,
    evaluate_readiness,
    normalize_requirements,
)
from gatekeeper.ledger.attempts import AttemptStore, utc_now
from gatekeeper.ledger.base import ATTEMPT_COLUMNS
from gatekeeper.periods import period_key
from gatekeeper.records import Attempt, EvidenceItem, Publication, Readiness, requirement_label

WriteFn = Callable[[Any], Any]


@dataclass(frozen=True, slots=True)
class Output:
    """What a publisher publishes: its fingerprint, where it lives, how to write it."""

    fingerprint: str
    location: str | None
    write: WriteFn | None


@dataclass(frozen=True, slots=True)
class Request:
    """A validated publish or republish (``reason`` set) of one (consumer, period)."""

    consumer: str
    period: str
    required: tuple[Requirement, ...]
    output: Output
    watermarks: Watermarks | None
    reason: str | None


class PublicationStore(AttemptStore):
    """Readiness and publication operations of the ledger contract."""

    def readiness(
        self, jobs: Iterable[Any], business_date: Any, watermarks: Watermarks | None = None
    ) -> Readiness:
        """Return the Readiness of ``jobs`` for the date; reads only (one query).

        With ``watermarks``, a succeeded upstream whose declared watermark is before the
        period's end blocks with ``watermark``.
        """
        period = period_key(business_date)
        required = normalize_requirements(jobs, period)
        return evaluate_readiness(period, required, self._latest_many(required), watermarks)

    def _latest_many(self, required: tuple[Requirement, ...]) -> dict[Requirement, Attempt]:
        clauses = " OR ".join("(a.job = ? AND a.period = ?)" for _ in required)
        params = [value for pair in required for value in pair]
        rows = self.read(
            f"SELECT {', '.join('a.' + c.strip() for c in ATTEMPT_COLUMNS.split(','))} "
            f"FROM gk_attempts a WHERE ({clauses}) AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)",
            params,
        )
        found = (self.to_attempt(r) for r in rows)
        return {(a.job, a.business_date): a for a in found}

    def publish(
        self,
        consumer: str,
        business_date: Any,
        required_jobs: Iterable[Any],
        fingerprint: str,
        write: WriteFn | None = None,
        *,
        location: str | None = None,
        watermarks: Watermarks | None = None,
        now: dt.datetime | None = None,
    ) -> bool:
        """Publish ``consumer``'s output for the date with its evidence, in one transaction.

        Reads readiness, calls ``write(connection)`` for the caller's own rows, stores the
        publication and the authorizing run IDs (and watermarks), and commits. Returns True for
        the first publication and False for a retry (same fingerprint, required jobs and
        location: nothing is written, ``write`` is not called). Raises NotReady when the gate
        is closed, PublicationConflict for a different fingerprint, required jobs or location
        (a correction is ``republish``), InvalidInput for bad values; any exception rolls back
        the output rows and the evidence together. ``location``: where an output outside the
        database lives (a file).
        """
        request = self._request(consumer, business_date, required_jobs, fingerprint, write,
                                location, watermarks, None)
        at = utc_now(now)
        return bool(self.run_in_transaction(lambda: self._publish(request, at)))

    def republish(
        self,
        consumer: str,
        business_date: Any,
        required_jobs: Iterable[Any],
        fingerprint: str,
        write: WriteFn | None = None,
        *,
        reason: str,
        location: str | None = None,
        watermarks: Watermarks | None = None,
        now: dt.datetime | None = None,
    ) -> bool:
        """Publish a correction as revision n+1 with fresh evidence, in one transaction.

        Earlier revisions and their evidence stay. Returns False (nothing written) when the
        newest revision already has this fingerprint, location and evidence; True otherwise.
        Raises InvalidInput for an empty ``reason`` and NotReady when the gate is closed.
        """
        request = self._request(consumer, business_date, required_jobs, fingerprint, write,
                                location, watermarks, check_name(reason, "reason"))
        at = utc_now(now)
        return bool(self.run_in_transaction(lambda: self._publish(request, at)))

    def _request(
        self, consumer: str, business_date: Any, required_jobs: Iterable[Any], fingerprint: str,
        write: WriteFn | None, location: str | None, watermarks: Watermarks | None,
        reason: str | None,
    ) -> Request:
        period = period_key(business_date)
        return Request(
            check_name(consumer, "consumer"), period,
            normalize_requirements(required_jobs, period),
            Output(check_name(fingerprint, "fingerprint"),
                   None if location is None else check_name(location, "location"), write),
            watermarks, reason,
        )

    def _publish(self, request: Request, at: dt.datetime) -> bool:
        self._lock_key("publication", request.consumer, request.period)
        existing = self._publications(request.consumer, request.period, newest_only=True)
        newest = existing[0] if existing else None
        if newest is not None and request.reason is None:
            return self._judge_retry(newest, request.required, request.output)
        latest = self._latest_many(request.required)
        readiness = evaluate_readiness(request.period, request.required, latest,
                                       request.watermarks)
        if not readiness:
            raise NotReady(readiness)
        if newest is not None and self._same_revision(newest, request, latest):
            return False
        if request.output.write is not None:
            request.output.write(self.connection)
        revision = 1 if newest is None else newest.revision + 1
        self._insert_publication(request, revision, latest, at)
        return True

    def _same_revision(
        self, newest: Publication, request: Request, latest: dict[Requirement, Attempt]
    ) -> bool:
        """A republish identical to the newest revision (a retry of the republish)."""
        evidence = {(i.job, i.business_date): i.run_id for i in newest.items}
        return (
            newest.fingerprint == request.output.fingerprint
            and newest.location == request.output.location
            and newest.reason == request.reason
            and evidence == {key: a.run_id for key, a in latest.items()}
        )

    def _judge_retry(
        self, current: Publication, required: tuple[Requirement, ...], output: Output
    ) -> bool:
        wanted = tuple(requirement_label(j, p, current.business_date) for j, p in required)
        differences = [
            (what, old, new) for what, old, new in (
                ("fingerprint", current.fingerprint, output.fingerprint),
                ("required jobs", list(current.required_jobs), list(wanted)),
                ("location", current.location, output.location),
            ) if old != new
        ]
        if not differences:
            return False
        what, old, new = differences[0]
        raise PublicationConflict(
            f"{current.consumer} {current.business_date}: revision {current.revision} was "
            f"published with {what} {old}, refusing {new}; a correction is an explicit republish"
        )

    def _insert_publication(
        self, request: Request, revision: int, latest: dict[Requirement, Attempt],
        at: dt.datetime,
    ) -> None:
        period = request.period
        labels = [requirement_label(j, p, period) for j, p in request.required]
        self.execute(
            "INSERT INTO gk_publications (consumer, period, revision, fingerprint, "
            "required_jobs, published_at, reason, location) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (request.consumer, period, revision, request.output.fingerprint, json.dumps(labels),
             self.ts_in(at), request.reason, request.output.location),
        )
        observed = request.watermarks.observed if request.watermarks else {}
        for job, job_period in request.required:
            found = latest[(job, job_period)]
            watermark = observed.get(requirement_label(job, job_period, period))
            self.execute(
                "INSERT INTO gk_evidence (consumer, period, revision, job, job_period, run_id, "
                "attempt, watermark) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                (request.consumer, period, revision, job, job_period, found.run_id,
                 found.attempt, self.ts_in(watermark)),
            )

    def completed_periods(
        self, job: str, first: str, last: str, consumer: str | None = None
    ) -> set[str]:
        """Period keys in [first, last] whose latest attempt of ``job`` succeeded and, with
        ``consumer``, that have a publication by it; one query, reads only."""
        published = (
            " AND EXISTS (SELECT 1 FROM gk_publications p WHERE p.consumer = ? "
            "AND p.period = a.period)" if consumer else ""
        )
        rows = self.read(
            "SELECT a.period FROM gk_attempts a WHERE a.job = ? AND a.period >= ? "
            "AND a.period <= ? AND a.state = 'succeeded' AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)" + published,
            (job, first, last, *((consumer,) if consumer else ())),
        )
        return {r[0] for r in rows}

    def publication(self, consumer: str, business_date: Any) -> Publication | None:
        """The newest revision of the publication for the date, or None; reads only."""
        found = self._publications(
            check_name(consumer, "consumer"), period_key(business_date), newest_only=True
        )
        return found[0] if found else None

    def publications(self, consumer: str, business_date: Any) -> list[Publication]:
        """Every revision of the publication for the date, newest first; reads only."""
        return self._publications(check_name(consumer, "consumer"), period_key(business_date))

    def _publications(
        self, consumer: str, period: str, newest_only: bool = False
    ) -> list[Publication]:
        rows = self.read(
            "SELECT revision, fingerprint, required_jobs, published_at, reason, location FROM "
            "gk_publications WHERE consumer = ? AND period = ? ORDER BY revision DESC"
            + (" LIMIT 1" if newest_only else ""),
            (consumer, period),
        )
        return [self._to_publication(consumer, period, row) for row in rows]

    def _to_publication(self, consumer: str, period: str, row: Any) -> Publication:
        revision = int(row[0])
        items = self.read(
            "SELECT job, job_period, run_id, attempt, watermark FROM gk_evidence "
            "WHERE consumer = ? AND period = ? AND revision = ? ORDER BY job, job_period",
            (consumer, period, revision),
        )
        published = self.ts_out(row[3])
        assert published is not None
        return Publication(
            consumer, period, revision, row[1], tuple(json.loads(row[2])),
            tuple(EvidenceItem(i[0], i[1], i[2], int(i[3]), self.ts_out(i[4])) for i in items),
            published, row[4],
            row[5],
        )

