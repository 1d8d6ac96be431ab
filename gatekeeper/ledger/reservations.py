"""Publications whose output commits in another system (a Delta table): reserve, then commit.

The output and the ledger cannot share one transaction, so a publication takes two:

1. ``reserve``: the gate is open, the producer still owns (consumer, period) (fencing), and
   revision N is reserved with its fingerprint, location and evidence; nothing is published yet.
2. (the caller commits the output elsewhere, tagged with revision N, idempotently)
3. ``commit``: revision N is recorded as published, with the external table version, the
   evidence reserved in step 1 and the run that wrote the external commit.

A reservation is never adopted by a producer whose output (fingerprint, location, reason)
differs; ``release`` drops one the caller proved never reached the output. No import of any
external client here: the ledger only stores what the caller observed.
"""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import InvalidInput, NotReady, PublicationConflict, StateConflict
from gatekeeper.core.periods import period_key
from gatekeeper.core.readiness import Watermarks, evaluate_readiness
from gatekeeper.core.records import EvidenceItem, requirement_label
from gatekeeper.core.validation import check_name, check_optional_name
from gatekeeper.ledger.publications import Output, PublicationStore, Request

RESERVED, COMMITTED = "reserved", "committed"
_COLUMNS = (
    "revision, fingerprint, required_jobs, evidence, reason, location, producer_run_id, "
    "producer_attempt, state, table_version, writer_run_id"
)


@dataclass(frozen=True, slots=True)
class Reservation:
    """Revision ``revision`` of (consumer, period): ``reserved`` (its external commit may or may
    not have happened) or ``committed`` (published, at ``table_version``)."""

    consumer: str
    business_date: str
    revision: int
    fingerprint: str
    required: tuple[tuple[str, str], ...]
    items: tuple[EvidenceItem, ...]
    reason: str | None
    location: str
    producer_run_id: str
    producer_attempt: int
    state: str
    table_version: int | None = None
    writer_run_id: str | None = None

    @property
    def committed(self) -> bool:
        return self.state == COMMITTED

    @property
    def evidence(self) -> dict[str, str]:
        """Requirement label -> authorizing run ID, as ``Publication.evidence``."""
        return {
            requirement_label(i.job, i.business_date, self.business_date): i.run_id
            for i in self.items
        }


def reserve(
    ledger: PublicationStore,
    consumer: str,
    business_date: Any,
    required_jobs: Iterable[Any],
    fingerprint: str,
    *,
    producer: str,
    location: str,
    reason: str | None = None,
    watermarks: Watermarks | None = None,
    now: dt.datetime | None = None,
) -> Reservation:
    """Step 1, one transaction: fence ``producer``, open the gate, reserve the next revision.

    Returns the pending reservation (new, or adopted from an earlier attempt of the same output:
    its evidence is kept, the producer becomes ``producer``), or, for a retry of what is
    already published (no ``reason``, same output), that committed revision: nothing to write.
    Raises LeaseLost (fencing), NotReady (gate closed), PublicationConflict (a published or
    pending revision with another output; a correction is an explicit ``reason``), InvalidInput.
    Writes only the reservation.
    """
    request = ledger._request(
        consumer,
        business_date,
        required_jobs,
        fingerprint,
        None,
        check_name(location, "location"),
        watermarks,
        check_optional_name(reason, "reason"),
        check_name(producer, "producer"),
    )
    fixed = None if now is None else utc_now(now)
    reservation: Reservation = ledger.run_in_transaction(
        lambda: _reserve(ledger, request, fixed), request.where
    )
    return reservation


def _reserve(ledger: PublicationStore, request: Request, fixed: dt.datetime | None) -> Reservation:
    ledger._lock_key("publication", request.consumer, request.period)
    owner = ledger._fence(request, fixed)
    found = _reservations(ledger, request.consumer, request.period)
    newest = found[0] if found else None
    pending = newest if newest is not None and not newest.committed else None
    published = ledger._publications(request.consumer, request.period, newest_only=True)
    if pending is None and published and request.reason is None:
        ledger._judge_retry(published[0], request.required, request.output)
        if newest is not None and newest.revision == published[0].revision:
            return newest
        raise StateConflict(
            f"{request.where}: revision {published[0].revision} is published "
            "without a reservation; it was not published to an external table",
            job=request.consumer,
            period=request.period,
        )
    latest = ledger._latest_many(request.required)
    readiness = evaluate_readiness(request.period, request.required, latest, request.watermarks)
    if not readiness:
        raise NotReady(readiness)
    if pending is not None:
        _refuse_other_output(pending, request)
        ledger.execute(
            "UPDATE gk_reservations SET producer_run_id = ?, producer_attempt = ? "
            "WHERE consumer = ? AND period = ? AND revision = ?",
            (owner.run_id, owner.attempt, request.consumer, request.period, pending.revision),
        )
        return _reservations(ledger, request.consumer, request.period)[0]
    evidence = {key: (a.run_id, a.attempt) for key, a in latest.items()}
    if newest is not None and _same_republish(newest, request, evidence):
        return newest
    revision = 1 + max(newest.revision if newest else 0, published[0].revision if published else 0)
    observed = request.watermarks.observed if request.watermarks else {}
    items = [
        [
            job,
            period,
            run_id,
            attempt,
            _iso(observed.get(requirement_label(job, period, request.period))),
        ]
        for (job, period), (run_id, attempt) in sorted(evidence.items())
    ]
    at = fixed if fixed is not None else ledger.db_now()
    ledger.execute(
        "INSERT INTO gk_reservations (consumer, period, revision, fingerprint, required_jobs, "
        "evidence, reason, location, producer_run_id, producer_attempt, state, reserved_at) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
            ledger.ts_in(at),
        ),
    )
    return _reservations(ledger, request.consumer, request.period)[0]


def _refuse_other_output(pending: Reservation, request: Request) -> None:
    """A pending reservation is adopted only by the same output, requirements and reason."""
    differences = [
        (what, old, new)
        for what, old, new in (
            ("fingerprint", pending.fingerprint, request.output.fingerprint),
            ("location", pending.location, request.output.location),
            ("required jobs", pending.required, request.required),
            ("reason", pending.reason, request.reason),
        )
        if old != new
    ]
    if not differences:
        return
    what, old, new = differences[0]
    raise PublicationConflict(
        f"{request.where}: revision {pending.revision} is reserved by run "
        f"{pending.producer_run_id} with {what} {old} and not recorded committed; refusing "
        f"{new} (the reservation is adopted only by the same output; one that never reached "
        "the table is released by the task that checks the table)",
        consumer=pending.consumer,
        period=pending.business_date,
        revision=pending.revision,
    )


def _same_republish(
    newest: Reservation, request: Request, evidence: dict[tuple[str, str], tuple[str, int]]
) -> bool:
    """A republish identical to the newest committed revision (a retry of the republish)."""
    return (
        newest.fingerprint == request.output.fingerprint
        and newest.location == request.output.location
        and newest.reason == request.reason
        and {(i.job, i.business_date): i.run_id for i in newest.items}
        == {key: run_id for key, (run_id, _) in evidence.items()}
    )


def commit(
    ledger: PublicationStore,
    consumer: str,
    business_date: Any,
    revision: int,
    *,
    producer: str,
    table_version: int,
    writer: str,
    now: dt.datetime | None = None,
) -> bool:
    """Step 3, one transaction: record reserved ``revision`` as published at ``table_version``.

    Fenced by ``producer`` (LeaseLost). ``writer`` is the run ID the external commit names
    (this producer, or an earlier attempt that committed and died): the publication's producer.
    The evidence is the one reserved. Returns True when recorded, False when it already was at
    this table version; raises StateConflict for another table version or no such reservation.
    """
    consumer = check_name(consumer, "consumer")
    period = period_key(business_date)
    if isinstance(table_version, bool) or not isinstance(table_version, int) or table_version < 0:
        raise InvalidInput("table_version", table_version, "expected an integer >= 0")
    fixed = None if now is None else utc_now(now)
    return bool(
        ledger.run_in_transaction(
            lambda: _commit(
                ledger,
                consumer,
                period,
                revision,
                check_name(producer, "producer"),
                table_version,
                check_name(writer, "writer"),
                fixed,
            ),
            f"publication {consumer} {period}",
        )
    )


def _commit(
    ledger: PublicationStore,
    consumer: str,
    period: str,
    revision: int,
    producer: str,
    table_version: int,
    writer: str,
    fixed: dt.datetime | None,
) -> bool:
    ledger._lock_key("publication", consumer, period)
    found = {r.revision: r for r in _reservations(ledger, consumer, period)}
    mine = found.get(revision)
    where = f"publication {consumer} {period} revision {revision}"
    if mine is None:
        raise StateConflict(f"{where}: no such reservation", job=consumer, period=period)
    ledger._fence(_fence_request(mine, producer), fixed)
    if mine.committed:
        if mine.table_version == table_version:
            return False
        raise StateConflict(
            f"{where}: recorded committed at table version "
            f"{mine.table_version}, not {table_version}",
            job=consumer,
            period=period,
        )
    at = fixed if fixed is not None else ledger.db_now()
    written = ledger.read("SELECT attempt FROM gk_attempts WHERE run_id = ?", (writer,))
    ledger.execute(
        "INSERT INTO gk_publications (consumer, period, revision, fingerprint, required_jobs, "
        "published_at, reason, location, producer_run_id, producer_attempt) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            consumer,
            period,
            revision,
            mine.fingerprint,
            json.dumps([list(pair) for pair in mine.required]),
            ledger.ts_in(at),
            mine.reason,
            mine.location,
            writer,
            int(written[0][0]) if written else None,
        ),
    )
    ledger.executemany(
        "INSERT INTO gk_evidence (consumer, period, revision, job, job_period, run_id, "
        "attempt, watermark) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                consumer,
                period,
                revision,
                i.job,
                i.business_date,
                i.run_id,
                i.attempt,
                ledger.ts_in(i.watermark),
            )
            for i in mine.items
        ],
    )
    ledger.execute(
        "UPDATE gk_reservations SET state = ?, committed_at = ?, table_version = ?, "
        "writer_run_id = ? WHERE consumer = ? AND period = ? AND revision = ?",
        (COMMITTED, ledger.ts_in(at), table_version, writer, consumer, period, revision),
    )
    return True


def release(
    ledger: PublicationStore,
    consumer: str,
    business_date: Any,
    revision: int,
    *,
    producer: str,
    now: dt.datetime | None = None,
) -> bool:
    """Drop pending ``revision``, which the caller proved never reached the output (the table
    has no commit of it); fenced by ``producer``. Returns False when there is no such pending
    reservation (nothing written)."""
    consumer = check_name(consumer, "consumer")
    period = period_key(business_date)
    producer = check_name(producer, "producer")
    fixed = None if now is None else utc_now(now)

    def work() -> bool:
        ledger._lock_key("publication", consumer, period)
        pending = [
            r
            for r in _reservations(ledger, consumer, period)
            if r.revision == revision and not r.committed
        ]
        if not pending:
            return False
        ledger._fence(_fence_request(pending[0], producer), fixed)
        ledger.execute(
            "DELETE FROM gk_reservations WHERE consumer = ? AND period = ? "
            "AND revision = ? AND state = ?",
            (consumer, period, revision, RESERVED),
        )
        return True

    return bool(ledger.run_in_transaction(work, f"publication {consumer} {period}"))


def reservations(ledger: PublicationStore, consumer: str, business_date: Any) -> list[Reservation]:
    """Every reservation of (consumer, date), newest revision first; reads only."""
    return _reservations(ledger, check_name(consumer, "consumer"), period_key(business_date))


def _reservations(ledger: PublicationStore, consumer: str, period: str) -> list[Reservation]:
    rows = ledger.read(
        f"SELECT {_COLUMNS} FROM gk_reservations WHERE consumer = ? AND "
        "period = ? ORDER BY revision DESC",
        (consumer, period),
    )
    return [_to_reservation(ledger, consumer, period, row) for row in rows]


def _to_reservation(ledger: PublicationStore, consumer: str, period: str, row: Any) -> Reservation:
    items = tuple(
        EvidenceItem(
            job,
            job_period,
            run_id,
            int(attempt),
            None if mark is None else dt.datetime.fromisoformat(mark),
        )
        for job, job_period, run_id, attempt, mark in json.loads(row[3])
    )
    return Reservation(
        consumer,
        period,
        int(row[0]),
        row[1],
        tuple(tuple(p) for p in json.loads(row[2])),
        items,
        row[4],
        row[5],
        row[6],
        int(row[7]),
        row[8],
        None if row[9] is None else int(row[9]),
        row[10],
    )


def _fence_request(reservation: Reservation, producer: str) -> Request:
    """The Request ``PublicationStore._fence`` judges: only consumer, period and producer."""
    return Request(
        reservation.consumer,
        reservation.business_date,
        reservation.required,
        Output(reservation.fingerprint, reservation.location, None),
        None,
        reservation.reason,
        producer,
    )


def _iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.timezone.utc).isoformat()
