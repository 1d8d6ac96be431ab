"""Publications whose output commits in another system (a Delta table): reserve, then commit.

The output and the ledger cannot share one transaction, so a publication takes two:

1. ``ledger.reservations.reserve``: the gate is open, the producer still owns (consumer,
   period) (fencing), and revision N is reserved with its fingerprint, location and evidence,
   and the table version the external commit will be made against; nothing is published yet.
2. (the caller commits the output elsewhere, tagged with revision N, idempotently, against
   that table version; each further try first re-enters the fence with ``claim``)
3. ``commit``: revision N is recorded as published, with the external table version, the
   evidence reserved in step 1 and the run that wrote the external commit.

A reservation is never adopted by a producer whose output (fingerprint, location, reason)
differs; ``release`` drops one the caller proved never reached the output. No external client
here: the ledger only stores what the caller observed (``docs/ownership.md``).
"""

from __future__ import annotations

import datetime as dt
import functools
import json
from collections.abc import Iterable
from typing import Any

from gatekeeper.core.errors import NotReady, StateConflict
from gatekeeper.core.periods import period_key
from gatekeeper.core.readiness import Watermarks, evaluate_readiness
from gatekeeper.core.records import Attempt, requirement_label
from gatekeeper.core.validation import check_name, check_optional_reason
from gatekeeper.ledger import readback
from gatekeeper.ledger.attempts import AttemptStore
from gatekeeper.ledger.publications import PublicationStore
from gatekeeper.ledger.requests import Output, PublicationRequest, ReservationCommit, fixed_clock
from gatekeeper.ledger.reservation_records import (
    COLUMNS,
    COMMITTED,
    RESERVED,
    Evidence,
    Reservation,
    check_table_version,
    iso,
    refuse_other_output,
    same_republish,
    to_reservation,
)
from gatekeeper.ledger.sql import SqlCore

__all__ = ["COMMITTED", "RESERVED", "Reservation", "ReservationStore"]


class ReservationStore:
    """Two-phase publications (``ledger.reservations``): reserve, commit, release, read."""

    def __init__(self, sql: SqlCore, attempts: AttemptStore, publications: PublicationStore):
        self.sql = sql
        self.attempts = attempts
        self.publications = publications

    def reserve(
        self,
        consumer: str,
        period: Any,
        required_jobs: Iterable[Any],
        fingerprint: str,
        *,
        producer: str,
        location: str,
        reason: str | None = None,
        watermarks: Watermarks | None = None,
        table_version: int | None = None,
        now: dt.datetime | None = None,
    ) -> Reservation:
        """Step 1, one transaction: fence ``producer``, open the gate, reserve the next
        revision, to be committed against the external ``table_version`` (the version the
        producer read before this call; None: no table yet).

        Returns the pending reservation (new, or adopted from an earlier attempt of the same
        output: its evidence is kept, the producer becomes ``producer``, the table version
        ``table_version``), or, for a retry of what is already published (no ``reason``, same
        output), that committed revision: nothing to write. Raises LeaseLost (fencing),
        NotReady (gate closed), PublicationConflict (a published or pending revision with
        another output; a correction is an explicit ``reason``), InvalidInput. Writes only
        the reservation.
        """
        output = Output.checked(fingerprint, check_name(location, "location"), None)
        reason = check_optional_reason(reason, "reason")
        producer = check_name(producer, "producer")
        base = None if table_version is None else check_table_version(table_version)
        request = PublicationRequest.checked(consumer, period, required_jobs, output).having(
            watermarks=watermarks, reason=reason, producer=producer, now=now
        )
        work = functools.partial(self._reserve, request, base)  # adopts what committed
        return readback.settle(
            self.sql,
            lambda: self.sql.run_in_transaction(work, request.where),
            work,
            f"the reservation of {request.where}",
        )

    def _reserve(self, request: PublicationRequest, base: int | None) -> Reservation:
        consumer, period = request.consumer, request.period
        self.sql.lock_key("publication", consumer, period)
        owner = self.attempts.fence(consumer, period, str(request.producer), request.now)
        found = self._of_period(consumer, period)
        newest = found[0] if found else None
        pending = newest if newest is not None and not newest.committed else None
        published = self.publications.newest(consumer, period)
        if pending is None and published is not None and request.reason is None:
            self.publications.judge_retry(published, request.required, request.output)
            if newest is not None and newest.revision == published.revision:
                return newest
            raise StateConflict(
                f"{request.where}: revision {published.revision} is published "
                "without a reservation; it was not published to an external table",
                job=consumer,
                period=period,
            )
        latest, revisions = self.attempts.latest_published(request.required)
        readiness = evaluate_readiness(period, request.required, latest, request.watermarks)
        if not readiness:
            raise NotReady(readiness)
        if pending is not None:
            refuse_other_output(pending, request)
            return self._claimed(pending, owner, base)
        evidence = {key: (a.run_id, a.attempt, revisions.get(key)) for key, a in latest.items()}
        if newest is not None and same_republish(newest, request, evidence):
            return newest
        top = max(newest.revision if newest else 0, published.revision if published else 0)
        self._insert(request, top + 1, evidence, owner, base)
        return self._of_period(consumer, period)[0]

    def _insert(
        self,
        request: PublicationRequest,
        revision: int,
        evidence: dict[tuple[str, str], Evidence],
        owner: Attempt,
        base: int | None,
    ) -> None:
        """Write pending ``revision`` with its evidence (and watermarks) as JSON, to be
        committed against table version ``base``."""
        observed = request.watermarks.observed if request.watermarks else {}
        items = [
            [job, job_period, run_id, attempt, iso(observed.get(label)), upstream_revision]
            for (job, job_period), (run_id, attempt, upstream_revision) in sorted(evidence.items())
            for label in [requirement_label(job, job_period, request.period)]
        ]
        at = request.now if request.now is not None else self.sql.db_now()
        self.sql.execute(
            "INSERT INTO gk_reservations (consumer, period, revision, fingerprint, "
            "required_jobs, evidence, reason, location, producer_run_id, producer_attempt, "
            "state, reserved_at, table_version) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                request.consumer,
                request.period,
                revision,
                request.output.fingerprint,
                json.dumps([list(pair) for pair in request.required]),
                json.dumps(items),
                request.reason,
                request.output.location,
                owner.run_id,
                owner.attempt,
                RESERVED,
                self.sql.ts_in(at),
                base,
            ),
        )

    def _claimed(self, pending: Reservation, owner: Attempt, base: int | None) -> Reservation:
        """Pending reservation ``pending`` now ``owner``'s, committed against ``base``."""
        self.sql.execute(
            "UPDATE gk_reservations SET producer_run_id = ?, producer_attempt = ?, "
            "table_version = ? WHERE consumer = ? AND period = ? AND revision = ? AND state = ?",
            (
                owner.run_id,
                owner.attempt,
                base,
                pending.consumer,
                pending.business_date,
                pending.revision,
                RESERVED,
            ),
        )
        found = self._of_period(pending.consumer, pending.business_date)
        return next(r for r in found if r.revision == pending.revision)

    def claim(
        self,
        consumer: str,
        period: Any,
        revision: int,
        *,
        producer: str,
        table_version: int | None,
        now: dt.datetime | None = None,
    ) -> Reservation:
        """Re-enter the fence before an external commit of pending ``revision``, one
        transaction: ``producer`` must still own (consumer, period) (LeaseLost otherwise,
        nothing written); the reservation becomes ``producer``'s, to be committed against
        ``table_version`` (the version the producer read before this call; None: no table).

        Called before every try of the external commit after the first (``reserve`` fenced
        that one), and by a successor before it shuts a predecessor's commit of the revision
        out of the table. Returns the reservation; StateConflict when ``revision`` is not
        pending (released, or committed since).
        """
        consumer = check_name(consumer, "consumer")
        key = period_key(period)
        producer = check_name(producer, "producer")
        base = None if table_version is None else check_table_version(table_version)
        fixed = fixed_clock(now)
        where = f"publication {consumer} {key} revision {revision}"

        def work() -> Reservation:
            self.sql.lock_key("publication", consumer, key)
            owner = self.attempts.fence(consumer, key, producer, fixed)
            found = self._of_period(consumer, key)
            mine = next((r for r in found if r.revision == revision), None)
            if mine is None or mine.committed:
                what = "no such reservation" if mine is None else "already recorded committed"
                raise StateConflict(f"{where}: {what}", job=consumer, period=key)
            return self._claimed(mine, owner, base)

        return readback.settle(  # a claim again is the same claim
            self.sql,
            lambda: self.sql.run_in_transaction(work, where),
            work,
            f"the claim of {where}",
        )

    def commit(
        self,
        consumer: str,
        period: Any,
        revision: int,
        *,
        producer: str,
        table_version: int,
        writer: str,
        now: dt.datetime | None = None,
    ) -> bool:
        """Step 3, one transaction: record reserved ``revision`` as published at
        ``table_version``.

        Fenced by ``producer`` first (LeaseLost, whatever became of the reservation).
        ``writer`` is the run ID the external commit names
        (this producer, or an earlier attempt that committed and died): the publication's
        producer. The evidence is the one reserved. Returns True when recorded, False when it
        already was at this table version; raises StateConflict for another table version or
        no such reservation.
        """
        consumer = check_name(consumer, "consumer")
        key = period_key(period)
        table_version = check_table_version(table_version)
        request = ReservationCommit(
            consumer=consumer,
            period=key,
            revision=revision,
            now=fixed_clock(now),
            producer=check_name(producer, "producer"),
            table_version=table_version,
            writer=check_name(writer, "writer"),
        )

        def committed() -> bool | None:  # the lost COMMIT recorded this very commit
            self.sql.lock_key("publication", consumer, key)
            mine = [r for r in self._of_period(consumer, key) if r.revision == revision]
            done = bool(mine) and mine[0].committed and mine[0].table_version == table_version
            return True if done else None

        return readback.settle(
            self.sql,
            lambda: self.sql.run_in_transaction(lambda: self._commit(request), request.where),
            committed,
            f"the commit of {request.where}",
        )

    def _commit(self, request: ReservationCommit) -> bool:
        consumer, period, revision = request.consumer, request.period, request.revision
        self.sql.lock_key("publication", consumer, period)
        producer = self.attempts.fence(consumer, period, request.producer, request.now)
        mine = next((r for r in self._of_period(consumer, period) if r.revision == revision), None)
        where = f"publication {consumer} {period} revision {revision}"
        if mine is None:
            raise StateConflict(f"{where}: no such reservation", job=consumer, period=period)
        if mine.committed:
            if mine.table_version == request.table_version:
                return False
            raise StateConflict(
                f"{where}: recorded committed at table version "
                f"{mine.table_version}, not {request.table_version}",
                job=consumer,
                period=period,
            )
        self._publish_reserved(mine, request)
        if mine.revision == 1:  # the first publication of the period: the runs count it
            self.attempts.first_publication(consumer, period, producer)
        return True

    def _publish_reserved(self, mine: Reservation, request: ReservationCommit) -> None:
        """Record reservation ``mine`` published: its publication and evidence rows, and the
        reservation committed at the external table version."""
        consumer, period, revision = mine.consumer, mine.business_date, mine.revision
        at = self.sql.ts_in(request.now if request.now is not None else self.sql.db_now())
        written = self.sql.read(
            "SELECT attempt FROM gk_attempts WHERE run_id = ?", (request.writer,)
        )
        self.sql.execute(
            "INSERT INTO gk_publications (consumer, period, revision, fingerprint, "
            "required_jobs, published_at, reason, location, producer_run_id, producer_attempt) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                consumer,
                period,
                revision,
                mine.fingerprint,
                json.dumps([list(pair) for pair in mine.required]),
                at,
                mine.reason,
                mine.location,
                request.writer,
                int(written[0][0]) if written else None,
            ),
        )
        self.sql.executemany(
            "INSERT INTO gk_evidence (consumer, period, revision, job, job_period, run_id, "
            "attempt, watermark, job_revision) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                (consumer, period, revision, i.job, i.business_date, i.run_id, i.attempt)
                + (self.sql.ts_in(i.watermark), i.revision)
                for i in mine.items
            ],
        )
        self.sql.execute(
            "UPDATE gk_reservations SET state = ?, committed_at = ?, table_version = ?, "
            "writer_run_id = ? WHERE consumer = ? AND period = ? AND revision = ?",
            (COMMITTED, at, request.table_version, request.writer, consumer, period, revision),
        )

    def release(
        self,
        consumer: str,
        period: Any,
        revision: int,
        *,
        producer: str,
        now: dt.datetime | None = None,
    ) -> bool:
        """Drop pending ``revision``, which the caller proved never reached the output (the
        table has no commit of it); fenced by ``producer``. Returns False when there is no
        such pending reservation (nothing written)."""
        consumer = check_name(consumer, "consumer")
        key = period_key(period)
        producer = check_name(producer, "producer")
        fixed = fixed_clock(now)

        def work() -> bool:
            self.sql.lock_key("publication", consumer, key)
            found = self._of_period(consumer, key)
            if not any(r.revision == revision and not r.committed for r in found):
                return False
            self.attempts.fence(consumer, key, producer, fixed)
            self.sql.execute(
                "DELETE FROM gk_reservations WHERE consumer = ? AND period = ? "
                "AND revision = ? AND state = ?",
                (consumer, key, revision, RESERVED),
            )
            return True

        def released() -> bool | None:  # the lost COMMIT dropped it: it is pending no more
            self.sql.lock_key("publication", consumer, key)
            found = self._of_period(consumer, key)
            return None if any(r.revision == revision and not r.committed for r in found) else True

        where = f"publication {consumer} {key}"
        return readback.settle(
            self.sql,
            lambda: self.sql.run_in_transaction(work, where),
            released,
            f"the release of {where} revision {revision}",
        )

    def of(self, consumer: str, period: Any) -> list[Reservation]:
        """Every reservation of (consumer, period), newest revision first; reads only."""
        return self._of_period(check_name(consumer, "consumer"), period_key(period))

    def _of_period(self, consumer: str, period: str) -> list[Reservation]:
        """Every reservation of a checked consumer and period key, newest revision first."""
        rows = self.sql.read(
            f"SELECT {COLUMNS} FROM gk_reservations WHERE consumer = ? AND "
            "period = ? ORDER BY revision DESC",
            (consumer, period),
        )
        return [to_reservation(consumer, period, row) for row in rows]
