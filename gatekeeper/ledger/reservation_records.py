"""The reservation record of a two-phase publication (``ledger/reservations.py``) and the rules
that judge a publication request against the newest reservation of its key: pure, no SQL
beyond the column list the store selects."""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass
from typing import Any

from gatekeeper.core.errors import InvalidInput, PublicationConflict
from gatekeeper.core.records import EvidenceItem, requirement_label
from gatekeeper.ledger.requests import PublicationRequest

RESERVED, COMMITTED = "reserved", "committed"
#: what a reservation read of one upstream pair: run ID, attempt, newest publication revision
Evidence = tuple[str, int, int | None]
COLUMNS = (
    "revision, fingerprint, required_jobs, evidence, reason, location, producer_run_id, "
    "producer_attempt, state, table_version, writer_run_id"
)


@dataclass(frozen=True, slots=True)
class Reservation:
    """Revision ``revision`` of (consumer, period): ``reserved`` (its external commit may or may
    not have happened) or ``committed`` (published, at ``table_version``).

    ``table_version``: once committed, the external table version of its commit; while
    reserved, the table version its producer read before it was last fenced, which the
    external commit is made against (it lands after that version or not at all); None while
    reserved when there was no table yet (the commit creates it) or nobody said.
    """

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


def check_table_version(value: Any) -> int:
    """``value`` as an external table version (an int >= 0); InvalidInput naming
    ``table_version`` otherwise."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidInput("table_version", value, "expected an integer >= 0")
    return value


def refuse_other_output(pending: Reservation, request: PublicationRequest) -> None:
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


def same_republish(
    newest: Reservation,
    request: PublicationRequest,
    evidence: dict[tuple[str, str], Evidence],
) -> bool:
    """A republish identical to the newest committed revision (a retry of the republish): on
    the same upstream runs and revisions (one reserved as None, before schema 15, matches
    any)."""
    stored = {(i.job, i.business_date): (i.run_id, i.revision) for i in newest.items}
    return (
        newest.fingerprint == request.output.fingerprint
        and newest.location == request.output.location
        and newest.reason == request.reason
        and stored.keys() == evidence.keys()
        and all(
            stored[k][0] == evidence[k][0] and stored[k][1] in (None, evidence[k][2])
            for k in stored
        )
    )


def to_reservation(consumer: str, period: str, row: Any) -> Reservation:
    """The Reservation of one row of ``COLUMNS``."""
    items = tuple(
        EvidenceItem(
            job,
            job_period,
            run_id,
            int(attempt),
            None if mark is None else dt.datetime.fromisoformat(mark),
            # the upstream's revision, a sixth element since schema 15
            None if not revision or revision[0] is None else int(revision[0]),
        )
        for job, job_period, run_id, attempt, mark, *revision in json.loads(row[3])
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


def iso(value: dt.datetime | None) -> str | None:
    return None if value is None else value.astimezone(dt.timezone.utc).isoformat()
