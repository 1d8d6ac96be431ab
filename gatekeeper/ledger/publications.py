"""Readiness reads and atomic publication: output and evidence in one transaction."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import InvalidInput, LeaseLost, NotReady, PublicationConflict
from gatekeeper.core.periods import period_key
from gatekeeper.core.readiness import Requirement, Watermarks, evaluate_readiness
from gatekeeper.core.records import Attempt, EvidenceItem, Publication, Readiness, requirement_label
from gatekeeper.core.validation import check_name, check_optional_name, check_requirements
from gatekeeper.ledger.attempts import AttemptStore
from gatekeeper.ledger.base import ATTEMPT_COLUMNS
from gatekeeper.ledger.handle import WriteHandle

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
    producer: str | None

    @property
    def where(self) -> str:
        return f"publication {self.consumer} {self.period}"


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
        required = check_requirements(jobs, period)
        return evaluate_readiness(period, required, self._latest_many(required), watermarks)

    def _latest_many(self, required: tuple[Requirement, ...]) -> dict[Requirement, Attempt]:
        """The latest attempt of each requirement, in one query whatever their number: the
        jobs and the periods as two IN lists (no expression-depth limit), pairs kept after."""
        jobs = sorted({job for job, _ in required})
        periods = sorted({period for _, period in required})
        columns = ", ".join("a." + c.strip() for c in ATTEMPT_COLUMNS.split(","))
        rows = self.read(
            f"SELECT {columns} FROM gk_attempts a WHERE a.job IN ({_marks(jobs)}) "
            f"AND a.period IN ({_marks(periods)}) AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)",
            (*jobs, *periods),
        )
        wanted = set(required)
        found = (self.to_attempt(r) for r in rows)
        return {(a.job, a.business_date): a for a in found if (a.job, a.business_date) in wanted}

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
        producer: str | None = None,
    ) -> bool:
        """Publish ``consumer``'s output for the date with its evidence, in one transaction.

        With ``producer`` (the run ID of the consumer's attempt) the publication is fenced: the
        producer must be the latest attempt of (consumer, date), running with a lease live by
        the database's clock, else LeaseLost. Then reads readiness, calls ``write(tx)`` (a
        WriteHandle on this transaction) for the caller's own rows, stores the publication, its
        producer and the authorizing run IDs (and watermarks), and commits. Returns True for
        the first publication and False for a retry (same fingerprint, required jobs and
        location: nothing is written, ``write`` is not called). Raises NotReady when the gate
        is closed, PublicationConflict for a different fingerprint, required jobs or location
        (a correction is ``republish``), InvalidInput for bad values; any exception rolls back
        the output rows and the evidence together. ``location``: where an output outside the
        database lives (a file).
        """
        request = self._request(
            consumer,
            business_date,
            required_jobs,
            fingerprint,
            write,
            location,
            watermarks,
            None,
            producer,
        )
        fixed = None if now is None else utc_now(now)
        return bool(self.run_in_transaction(lambda: self._publish(request, fixed), request.where))

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
        producer: str | None = None,
    ) -> bool:
        """Publish a correction as revision n+1 with fresh evidence, in one transaction.

        Earlier revisions and their evidence stay. Returns False (nothing written) when the
        newest revision already has this fingerprint, location, reason and evidence; True
        otherwise. Fenced by ``producer`` as ``publish`` is (LeaseLost). Raises InvalidInput
        for an empty ``reason`` and NotReady when the gate is closed.
        """
        request = self._request(
            consumer,
            business_date,
            required_jobs,
            fingerprint,
            write,
            location,
            watermarks,
            check_name(reason, "reason"),
            producer,
        )
        fixed = None if now is None else utc_now(now)
        return bool(self.run_in_transaction(lambda: self._publish(request, fixed), request.where))

    def _request(
        self,
        consumer: str,
        business_date: Any,
        required_jobs: Iterable[Any],
        fingerprint: str,
        write: WriteFn | None,
        location: str | None,
        watermarks: Watermarks | None,
        reason: str | None,
        producer: str | None,
    ) -> Request:
        period = period_key(business_date)
        consumer = check_name(consumer, "consumer")
        if write is not None and not callable(write):
            raise InvalidInput("write", write, "expected a callable taking the write handle")
        return Request(
            consumer,
            period,
            check_requirements(required_jobs, period),
            Output(
                check_name(fingerprint, "fingerprint"),
                check_optional_name(location, "location"),
                write,
            ),
            watermarks,
            reason,
            check_optional_name(producer, "producer"),
        )

    def _publish(self, request: Request, fixed: dt.datetime | None) -> bool:
        self._lock_key("publication", request.consumer, request.period)  # pragma: no mutate
        producer = self._fence(request, fixed) if request.producer is not None else None
        existing = self._publications(request.consumer, request.period, newest_only=True)
        newest = existing[0] if existing else None
        if newest is not None and request.reason is None:
            return self._judge_retry(newest, request.required, request.output)
        latest = self._latest_many(request.required)
        readiness = evaluate_readiness(request.period, request.required, latest, request.watermarks)
        if not readiness:
            raise NotReady(readiness)
        if newest is not None and self._same_revision(newest, request, latest):
            return False
        if request.output.write is not None:
            handle = WriteHandle(self, request.where)
            try:
                request.output.write(handle)
            except BaseException:
                handle.finish(raising=False)  # the callback's own error goes first
                raise
            handle.finish()
        revision = 1 if newest is None else newest.revision + 1
        at = fixed if fixed is not None else self.db_now()
        self._insert_publication(request, revision, latest, at, producer)
        return True

    def _fence(self, request: Request, fixed: dt.datetime | None) -> Attempt:
        """The producer's attempt, if it still owns (consumer, period): the latest attempt,
        running, its lease live by the database's clock. Else LeaseLost (nothing written).

        Takes the attempt key's lock too, so no takeover can slip between this check and the
        commit; lock order is always publication, then attempt.
        """
        self._lock_key("attempt", request.consumer, request.period)  # pragma: no mutate
        attempts = self._attempts(request.consumer, request.period)
        mine = next((a for a in attempts if a.run_id == request.producer), None)
        latest = attempts[-1] if attempts else None
        now = fixed if fixed is not None else self.db_now()
        if mine is not None and mine is latest and mine.lease_live(now):
            return mine
        named = (
            f"attempt {mine.attempt} (run {mine.run_id})"
            if mine is not None
            else f"run {request.producer}"
        )
        if mine is None:
            why = "is not an attempt of this consumer and date"
        elif latest is not None and latest is not mine:
            why = f"was taken over by attempt {latest.attempt} (run {latest.run_id})"
        elif mine.state.terminal:
            why = f"is already {mine.state.value}"
        else:
            expired = mine.lease_expires_at.isoformat() if mine.lease_expires_at else "never set"
            why = (
                f"lost its lease (expired {expired}; the database's clock reads {now.isoformat()})"
            )
        taken = latest if latest is not None and latest is not mine else None
        raise LeaseLost(
            f"{request.consumer} {request.period}: {named} {why}; refusing to publish",
            run_id=str(request.producer),
            taken_over_by=taken,
            job=request.consumer,
            period=request.period,
            attempt=None if mine is None else mine.attempt,
        )

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
        request: Request,
        revision: int,
        latest: dict[Requirement, Attempt],
        at: dt.datetime,
        producer: Attempt | None,
    ) -> None:
        period = request.period
        self.execute(
            "INSERT INTO gk_publications (consumer, period, revision, fingerprint, "
            "required_jobs, published_at, reason, location, producer_run_id, producer_attempt) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                request.consumer,
                period,
                revision,
                request.output.fingerprint,
                json.dumps([list(pair) for pair in request.required]),
                self.ts_in(at),
                request.reason,
                request.output.location,
                None if producer is None else producer.run_id,
                None if producer is None else producer.attempt,
            ),
        )
        observed = request.watermarks.observed if request.watermarks else {}
        self.executemany(
            "INSERT INTO gk_evidence (consumer, period, revision, job, job_period, run_id, "
            "attempt, watermark) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (
                    request.consumer,
                    period,
                    revision,
                    job,
                    job_period,
                    latest[(job, job_period)].run_id,
                    latest[(job, job_period)].attempt,
                    self.ts_in(observed.get(requirement_label(job, job_period, period))),
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
        rows = self.read(
            "SELECT a.period FROM gk_attempts a WHERE a.job = ? AND a.period >= ? "
            "AND a.period <= ? AND length(a.period) = ? AND a.state = 'succeeded' "
            "AND a.attempt = (SELECT MAX(b.attempt) "
            "FROM gk_attempts b WHERE b.job = a.job AND b.period = a.period)" + published,
            (job, first, last, len(first), *((consumer,) if consumer else ())),
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
            "SELECT revision, fingerprint, required_jobs, published_at, reason, location, "
            "producer_run_id, producer_attempt FROM "
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
            consumer,
            period,
            revision,
            row[1],
            _labels(json.loads(row[2]), period),
            tuple(EvidenceItem(i[0], i[1], i[2], int(i[3]), self.ts_out(i[4])) for i in items),
            published,
            row[4],
            row[5],
            row[6],
            None if row[7] is None else int(row[7]),
        )


def _marks(values: list[str]) -> str:
    return ", ".join("?" for _ in values)


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
