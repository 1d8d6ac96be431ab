"""Readiness reads and atomic publication: output and evidence in one transaction."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from typing import Any

from gatekeeper.core.errors import NotReady, PublicationConflict
from gatekeeper.core.periods import kind_of_key, parse_period, period_key
from gatekeeper.core.readiness import Requirement, Watermarks, evaluate_readiness
from gatekeeper.core.records import Attempt, EvidenceItem, Publication, Readiness, requirement_label
from gatekeeper.core.spans import PeriodRuns
from gatekeeper.core.validation import (
    check_name,
    check_requirements,
)
from gatekeeper.ledger import readback
from gatekeeper.ledger.attempts import AttemptStore
from gatekeeper.ledger.handle import WriteHandle
from gatekeeper.ledger.requests import Output, PublicationRequest
from gatekeeper.ledger.sql import SqlCore


class PublicationStore:
    """Publications of (consumer, period): readiness, the atomic publish and republish, and
    the reads of publications."""

    def __init__(self, sql: SqlCore, attempts: AttemptStore):
        self.sql = sql
        self.attempts = attempts

    def readiness(
        self, jobs: Iterable[Any], period: Any, watermarks: Watermarks | None = None
    ) -> Readiness:
        """``Ledger.readiness``: the Readiness of ``jobs`` for the period (one query)."""
        key = period_key(period)
        required = check_requirements(jobs, key)
        latest = self.attempts.latest_outcomes(required)
        return evaluate_readiness(key, required, latest, watermarks)

    def publish(self, request: PublicationRequest) -> bool:
        """``Ledger.publish_request``: True for the first publication (or a new revision),
        False for a retry. ``_publish`` in a transaction; when its COMMIT's answer is lost,
        the truth read back (``readback.py``): True when the revision it wrote committed,
        else it runs again. UnknownOutcome when the read-back cannot be made either."""
        written = readback.Written()
        probe = readback.publication_probe(
            self.sql,
            request.consumer,
            request.period,
            request.output.fingerprint,
            request.producer,
            written,
        )
        return readback.settle(
            self.sql,
            lambda: self.sql.run_in_transaction(
                lambda: self._publish(request, written), request.where
            ),
            probe,
            f"publication {request.consumer} {request.period}",
        )

    def _publish(self, request: PublicationRequest, written: readback.Written) -> bool:
        consumer, period = request.consumer, request.period
        written.forget()
        self.sql.lock_key("publication", consumer, period)  # pragma: no mutate
        producer = None
        if request.producer is not None:
            producer = self.attempts.fence(consumer, period, request.producer, request.now)
        newest = self.newest(consumer, period)
        if newest is not None and request.reason is None:
            return self.judge_retry(newest, request.required, request.output)
        latest, revisions = self.attempts.latest_published(request.required)
        readiness = evaluate_readiness(request.period, request.required, latest, request.watermarks)
        if not readiness:
            raise NotReady(readiness)
        if newest is not None and _same_revision(newest, request, latest, revisions):
            return False
        if request.output.write is not None:
            handle = WriteHandle(self.sql, request.where)
            try:
                request.output.write(handle)
            except BaseException:
                # the callback's own error goes first (raising=None: as falsy, equivalent)
                handle.finish(raising=False)  # pragma: no mutate
                raise
            handle.finish()
        revision = 1 if newest is None else newest.revision + 1
        at = request.now if request.now is not None else self.sql.db_now()
        self._insert_publication(request, revision, latest, revisions, at, producer)
        written.wrote(revision, at)
        if newest is None:
            # with None it reads the latest attempt itself: equivalent, one read more
            self.attempts.first_publication(consumer, period, producer)  # pragma: no mutate
        return True

    def judge_retry(
        self, current: Publication, required: tuple[Requirement, ...], output: Output
    ) -> bool:
        """False for a retry of the newest revision; PublicationConflict for anything else.
        Required jobs are compared as (job, period) pairs, never as joined labels."""
        differences = [
            (what, old, new)
            for what, old, new in (
                ("fingerprint", current.fingerprint, output.fingerprint),
                ("required jobs", _pairs(current.requirements), _pairs(required)),
                ("location", current.location, output.location),
            )
            if old != new
        ]
        if not differences:
            return False
        what, old, new = differences[0]
        raise PublicationConflict(
            f"{current.consumer} {current.business_date}: revision {current.revision} was "
            f"published with {what} {old}, refusing {new}; a correction is an explicit "
            "republish",
            consumer=current.consumer,
            period=current.business_date,
            revision=current.revision,
        )

    def _insert_publication(
        self,
        request: PublicationRequest,
        revision: int,
        latest: dict[Requirement, Attempt],
        revisions: dict[Requirement, int | None],
        at: dt.datetime,
        producer: Attempt | None,
    ) -> None:
        period = request.period
        self.sql.execute(
            "INSERT INTO gk_publications (consumer, period, revision, fingerprint, "
            "required_jobs, published_at, reason, location, producer_run_id, producer_attempt) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                request.consumer,
                period,
                revision,
                request.output.fingerprint,
                json.dumps([list(pair) for pair in request.required]),
                self.sql.ts_in(at),
                request.reason,
                request.output.location,
                None if producer is None else producer.run_id,
                None if producer is None else producer.attempt,
            ),
        )
        observed = request.watermarks.observed if request.watermarks else {}
        self.sql.executemany(
            "INSERT INTO gk_evidence (consumer, period, revision, job, job_period, run_id, "
            "attempt, watermark, job_revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    request.consumer,
                    period,
                    revision,
                    job,
                    job_period,
                    latest[(job, job_period)].run_id,
                    latest[(job, job_period)].attempt,
                    self.sql.ts_in(observed.get(requirement_label(job, job_period, period))),
                    revisions.get((job, job_period)),
                )
                for job, job_period in request.required
            ],
        )

    def completed_periods(
        self, job: str, first: str, last: str, consumer: str | None = None
    ) -> set[str]:
        """Period keys in [first, last] of ``first``'s kind (daily or hourly) whose latest
        attempt of ``job`` succeeded and, with ``consumer``, that have a publication by it; one
        query, reads only. Keys of the other kind (never written since a job keeps one kind)
        are left out, so a planner never meets them."""
        published = (
            " AND EXISTS (SELECT 1 FROM gk_publications p WHERE p.consumer = ? "
            "AND p.period = a.period)"
            if consumer
            else ""
        )
        rows = self.sql.read(
            "SELECT a.period FROM gk_attempts a WHERE a.job = ? AND a.period >= ? "
            "AND a.period <= ? AND length(a.period) = ? AND a.state = 'succeeded' "
            "AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)" + published,
            (job, first, last, len(first), *((consumer,) if consumer else ())),
        )
        return {r[0] for r in rows}

    def complete_runs(
        self, job: str, first: str, last: str, consumer: str | None = None, *, period: Any = None
    ) -> PeriodRuns:
        """``completed_periods`` as runs of ``period`` (default: the keys' kind; on a calendar,
        its business periods alone): from the runs the ledger keeps (``runs.py``) when
        ``consumer`` is None or ``job`` itself (one query over the runs overlapping the
        window), else from the full scan."""
        base = kind_of_key(first)
        kind = base if period is None else parse_period(period)  # refused naming "period"
        if consumer is None or consumer == job:
            published = consumer is not None
            return self.attempts.runs.between(job, first, last, published, kind)
        done = self.completed_periods(job, first, last, consumer)
        runs = PeriodRuns.of(base, (base.ordinal(key) for key in done))
        return runs.on(kind)  # itself on the base kind

    def publication(self, consumer: str, period: Any) -> Publication | None:
        """The newest revision of the publication for the period, or None; reads only."""
        return self.newest(check_name(consumer, "consumer"), period_key(period))

    def publications(self, consumer: str, period: Any) -> list[Publication]:
        """Every revision of the publication for the period, newest first; reads only."""
        return self._revisions(check_name(consumer, "consumer"), period_key(period))

    def has_published(self, consumer: str) -> bool:
        """True when ``consumer`` has published any period; one index probe, reads only."""
        rows = self.sql.read(
            "SELECT 1 FROM gk_publications WHERE consumer = ? LIMIT 1",
            (check_name(consumer, "consumer"),),
        )
        return bool(rows)

    def newest(self, consumer: str, period: str) -> Publication | None:
        """The newest revision of a checked consumer and period key, or None."""
        # every revision, newest first, would give the same first one, slower: equivalent
        found = self._revisions(consumer, period, newest_only=True)  # pragma: no mutate
        return found[0] if found else None

    def _revisions(
        self, consumer: str, period: str, newest_only: bool = False
    ) -> list[Publication]:
        rows = self.sql.read(
            "SELECT revision, fingerprint, required_jobs, published_at, reason, location, "
            "producer_run_id, producer_attempt FROM "
            "gk_publications WHERE consumer = ? AND period = ? ORDER BY revision DESC"
            + (" LIMIT 1" if newest_only else ""),
            (consumer, period),
        )
        return [self._to_publication(consumer, period, row) for row in rows]

    def _to_publication(self, consumer: str, period: str, row: Any) -> Publication:
        revision = int(row[0])
        items = self.sql.read(
            "SELECT job, job_period, run_id, attempt, watermark, job_revision FROM gk_evidence "
            "WHERE consumer = ? AND period = ? AND revision = ? ORDER BY job, job_period",
            (consumer, period, revision),
        )
        published = self.sql.ts_out(row[3])
        assert published is not None
        return Publication(
            consumer,
            period,
            revision,
            row[1],
            _labels(json.loads(row[2]), period),
            tuple(_evidence_item(self.sql, i) for i in items),
            published,
            row[4],
            row[5],
            row[6],
            None if row[7] is None else int(row[7]),
        )


def _same_revision(
    newest: Publication,
    request: PublicationRequest,
    latest: dict[Requirement, Attempt],
    revisions: dict[Requirement, int | None],
) -> bool:
    """A republish identical to the newest revision (a retry of the republish): the same
    output and reason, on the same upstream runs and upstream revisions (one recorded as
    None, before schema 15, matches any: such evidence is never stale by revision)."""
    stored = {(i.job, i.business_date): (i.run_id, i.revision) for i in newest.items}
    read = {key: (a.run_id, revisions.get(key)) for key, a in latest.items()}
    return (
        newest.fingerprint == request.output.fingerprint
        and newest.location == request.output.location
        and newest.reason == request.reason
        and stored.keys() == read.keys()
        and all(stored[k][0] == read[k][0] and stored[k][1] in (None, read[k][1]) for k in stored)
    )


def _evidence_item(sql: SqlCore, row: Any) -> EvidenceItem:
    """The EvidenceItem of a row (job, job_period, run_id, attempt, watermark, job_revision)."""
    revision = None if row[5] is None else int(row[5])
    return EvidenceItem(row[0], row[1], row[2], int(row[3]), sql.ts_out(row[4]), revision)


def _pairs(pairs: tuple[Requirement, ...]) -> list[str]:
    """Pairs as shown in a conflict message: ``job for period``."""
    return [f"{job} for {period}" for job, period in pairs]


def _labels(stored: list[Any], period: str) -> tuple[str, ...]:
    """Requirement labels of a stored ``required_jobs``: [job, period] pairs since schema 4,
    labels before."""
    return tuple(
        requirement_label(item[0], item[1], period) if isinstance(item, list) else str(item)
        for item in stored
    )
