"""The ledger's invariants, checked read-only: ``verify`` returns each violation, named.

Every check is one set-based query over the whole ledger (or the jobs asked for), never a
query per key, all in one read transaction (``SqlCore.read_transaction``: one snapshot;
read-only on PostgreSQL), so a ledger being written is judged as of one moment. The
invariants (``INVARIANTS``; docs/ownership.md says what each means and how to repair it):

- ``publication-revisions``: the revisions of each (consumer, period) are 1..n, so exactly one
  (the greatest) is current;
- ``evidence``: each evidence row names an attempt of that upstream job, for the period it
  names (which may be another period than the publication's), with that attempt number, that
  is ``succeeded``, and the upstream revision it records (if any) is one that pair published;
  a later attempt or revision of the upstream makes the publication *stale*, not wrong;
- ``publication-producer``: a publication's producing attempt (when it names one) is an
  attempt of that consumer and period, with that number, ``succeeded`` (or ``running`` with a
  live lease: its publication committed and its success is being recorded);
- ``success-published``: each ``succeeded`` attempt of a job that publishes (a consumer of
  some publication or reservation) has a publication for its period;
- ``attempt-numbers``, ``attempt-non-terminal``, ``attempt-lease``: the attempts of each (job,
  period) are numbered 1..n, at most k of them missing where ``gk_compacted`` counts k
  removed (``compaction.py``), at most one is ``running``, and a ``running`` one has a lease;
- ``complete-runs``: ``gk_complete_runs`` holds exactly the runs a full scan of attempts and
  publications derives (``runs.derive``, the migrations' own derivation), on every line;
- ``reservation-expired``: no ``reserved`` row outlives its producer's lease (its producer
  is not running, or its lease expired, by the database's clock) without being committed or
  released;
- ``reservation-committed``: each ``committed`` reservation has its publication, with the
  same fingerprint, required jobs, location, reason and producer (the run that wrote it), and
  the evidence it reserved is its publication's evidence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from gatekeeper.ledger.runs import BRIDGED_JOBS, SCAN, derive
from gatekeeper.ledger.sql import SqlCore
from gatekeeper.ledger.violations import Row, Violation, plain

__all__ = ["INVARIANTS", "Row", "Violation", "verify"]

Rows = Callable[[str, tuple[Any, ...]], list[Any]]

INVARIANTS: dict[str, str] = {
    "publication-revisions": "the revisions of a publication are numbered 1..n",
    "evidence": "an evidence row names a succeeded attempt (and a published revision) of "
    "that upstream for that period",
    "publication-producer": "a publication's producing attempt exists and succeeded",
    "success-published": "a succeeded attempt of a job that publishes has its publication",
    "attempt-numbers": "the attempts of a (job, period) are 1..n but those compacted",
    "attempt-non-terminal": "at most one attempt of a (job, period) is running",
    "attempt-lease": "a running attempt holds a lease",
    "complete-runs": "the stored runs of complete periods equal a full scan's",
    "reservation-expired": "no reserved revision outlives its producer's lease",
    "reservation-committed": "a committed reservation matches its publication",
}


def verify(sql: SqlCore, jobs: Sequence[str] = ()) -> list[Violation]:
    """Every violation of the ledger's invariants (of ``jobs`` alone when given: those a job
    is named by, as consumer, upstream or attempt's job), ordered by invariant, job and
    period. One read transaction, one query per check; writes nothing."""
    now = sql.ts_in(sql.db_now())
    found: list[Violation] = []
    with sql.read_transaction() as rows:
        for check in CHECKS:
            found += check(rows, _Among(tuple(jobs)), now)
    order = list(INVARIANTS)
    return sorted(found, key=lambda v: (order.index(v.invariant), v.job, v.period, v.detail))


@dataclass(frozen=True, slots=True)
class _Among:
    """The jobs asked for: a SQL condition on columns naming a job, and its parameters."""

    jobs: tuple[str, ...]

    def where(self, *columns: str) -> tuple[str, tuple[Any, ...]]:
        """`` AND (c1 IN (...) OR c2 IN (...))``, or nothing when every job is asked for."""
        if not self.jobs:
            return "", ()
        marks = ", ".join("?" * len(self.jobs))
        return " AND (" + " OR ".join(f"{c} IN ({marks})" for c in columns) + ")", (
            self.jobs * len(columns)
        )


def _revisions(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    where, params = among.where("p.consumer")
    found = rows(
        "SELECT p.consumer, p.period, p.revision FROM gk_publications p JOIN (SELECT consumer, "
        "period FROM gk_publications GROUP BY consumer, period HAVING MIN(revision) <> 1 OR "
        "MAX(revision) <> COUNT(*)) v ON v.consumer = p.consumer AND v.period = p.period "
        "WHERE 1 = 1" + where + " ORDER BY p.consumer, p.period, p.revision",
        params,
    )
    grouped: dict[tuple[str, str], list[int]] = {}
    for consumer, period, revision in found:
        grouped.setdefault((consumer, period), []).append(int(revision))
    return [
        Violation(
            "publication-revisions",
            consumer,
            period,
            f"revisions {', '.join(map(str, numbers))}, not 1..{len(numbers)}",
            tuple(Row("gk_publications", (("revision", n),)) for n in numbers),
        )
        for (consumer, period), numbers in grouped.items()
    ]


def _evidence(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    where, params = among.where("e.consumer", "e.job")
    found = rows(
        "SELECT e.consumer, e.period, e.revision, e.job, e.job_period, e.run_id, e.attempt, "
        f"e.job_revision, {_PUBLISHED} AS published, a.job, a.period, a.attempt, a.state "
        "FROM gk_evidence e LEFT JOIN gk_attempts a ON a.run_id = e.run_id WHERE (a.run_id IS "
        "NULL OR a.job <> e.job OR a.period <> e.job_period OR a.attempt <> e.attempt OR "
        f"a.state <> 'succeeded' OR e.job_revision > {_PUBLISHED})" + where,
        params,
    )
    out = []
    for consumer, period, revision, job, job_period, run_id, attempt, *named in found:
        upstream, published, *named = named
        fields = (("revision", revision), ("job", job), ("job_period", job_period))
        row = Row("gk_evidence", (*fields, ("run_id", run_id), ("attempt", attempt)))
        what, found_row = _run_is(run_id, named)
        detail = f"evidence names {job} {job_period} attempt {attempt} (run {run_id}); {what}"
        if named == [job, job_period, attempt, "succeeded"]:  # the run is right: the revision
            row = Row("gk_evidence", (*fields, ("job_revision", upstream)))
            what = f"its newest is revision {published}" if published else "it never published"
            detail = f"evidence names {job} {job_period} revision {upstream}; {what}"
        out.append(Violation("evidence", consumer, period, detail, (row, *found_row)))
    return out


#: how many revisions the evidence's upstream pair published (0: none)
_PUBLISHED = (
    "COALESCE((SELECT MAX(u.revision) FROM gk_publications u "
    "WHERE u.consumer = e.job AND u.period = e.job_period), 0)"
)


def _run_is(run_id: str, named: list[Any]) -> tuple[str, tuple[Row, ...]]:
    """What run ``run_id`` is (``named``: its attempt's job, period, number and state, or
    Nones where it is not recorded): a phrase, and the attempt's row."""
    if named[0] is None:
        return "that run is not recorded", ()
    job, period, attempt, state = named
    fields = (("job", job), ("period", period), ("attempt", attempt))
    row = Row("gk_attempts", (*fields, ("run_id", run_id), ("state", state)))
    return f"that run is {job} {period} attempt {attempt}, {state}", (row,)


def _producers(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    where, params = among.where("p.consumer")
    found = rows(
        "SELECT p.consumer, p.period, p.revision, p.producer_run_id, p.producer_attempt, "
        "a.job, a.period, a.attempt, a.state FROM gk_publications p LEFT JOIN gk_attempts a "
        "ON a.run_id = p.producer_run_id WHERE p.producer_run_id IS NOT NULL AND "
        "(a.run_id IS NULL OR a.job <> p.consumer OR a.period <> p.period OR "
        "p.producer_attempt IS NULL OR a.attempt <> p.producer_attempt OR (a.state <> "
        "'succeeded' AND NOT (a.state = 'running' AND a.lease_expires_at >= ?)))" + where,
        (now, *params),
    )
    out = []
    for consumer, period, revision, run_id, attempt, *named in found:
        fields = (("revision", revision), ("producer_run_id", run_id))
        pub = Row("gk_publications", (*fields, ("producer_attempt", attempt)))
        what, found_row = _run_is(run_id, named)
        detail = f"revision {revision} names producer run {run_id} (attempt {attempt}); {what}"
        out.append(Violation("publication-producer", consumer, period, detail, (pub, *found_row)))
    return out


def _unpublished(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    where, params = among.where("a.job")
    found = rows(
        "SELECT a.job, a.period, a.attempt, a.run_id FROM gk_attempts a WHERE a.state = "
        "'succeeded' AND a.job IN (SELECT consumer FROM gk_publications UNION SELECT consumer "
        "FROM gk_reservations) AND NOT EXISTS (SELECT 1 FROM gk_publications p WHERE "
        "p.consumer = a.job AND p.period = a.period)" + where,
        params,
    )
    return [
        Violation(
            "success-published",
            job,
            period,
            f"attempt {attempt} (run {run_id}) succeeded; {job} publishes, and has no "
            "publication for this period",
            (_attempt_row((job, period, attempt, run_id, "succeeded")),),
        )
        for job, period, attempt, run_id in found
    ]


def _attempts(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    where, params = among.where("a.job")
    found = rows(
        "SELECT a.job, a.period, a.attempt, a.run_id, a.state, a.lease_expires_at, v.gaps, "
        "v.running, v.leaseless, v.removed FROM gk_attempts a JOIN (SELECT * FROM (SELECT "
        "t.job, t.period, COALESCE(MAX(c.removed), 0) AS removed, CASE WHEN MIN(t.attempt) "
        "< 1 OR MAX(t.attempt) > COUNT(*) + COALESCE(MAX(c.removed), 0) THEN 1 ELSE 0 END "
        "AS gaps, SUM(CASE WHEN t.state = 'running' THEN 1 ELSE 0 END) AS running, SUM(CASE "
        "WHEN t.state = 'running' AND t.lease_expires_at IS NULL THEN 1 ELSE 0 END) AS "
        "leaseless FROM gk_attempts t LEFT JOIN gk_compacted c ON c.job = t.job AND c.period "
        "= t.period GROUP BY t.job, t.period) g WHERE g.gaps = 1 OR g.running > 1 OR "
        "g.leaseless > 0) v ON v.job = a.job AND v.period = a.period "
        "WHERE 1 = 1" + where + " ORDER BY a.job, a.period, a.attempt",
        params,
    )
    keys: dict[tuple[str, str], list[Any]] = {}
    for row in found:
        keys.setdefault((row[0], row[1]), []).append(row)
    out = []
    for (job, period), attempts in keys.items():
        _, _, _, _, _, _, gaps, running, leaseless, removed = attempts[0]
        numbers, n = [int(a[2]) for a in attempts], len(attempts) + int(removed)
        every = tuple(_attempt_row(a) for a in attempts)
        if int(gaps):
            less = f" less {int(removed)} compacted" if int(removed) else ""
            detail = f"attempts {', '.join(map(str, numbers))}, not 1..{n}{less}"
            out.append(Violation("attempt-numbers", job, period, detail, every))
        live = tuple(_attempt_row(a) for a in attempts if a[4] == "running")
        if int(running) > 1:
            detail = f"{int(running)} attempts running, at most one may be"
            out.append(Violation("attempt-non-terminal", job, period, detail, live))
        if int(leaseless):
            bare = tuple(_attempt_row(a) for a in attempts if a[4] == "running" and a[5] is None)
            detail = f"{len(bare)} running attempt(s) without a lease"
            out.append(Violation("attempt-lease", job, period, detail, bare))
    return out


def _attempt_row(row: Any) -> Row:
    return Row("gk_attempts", (("attempt", row[2]), ("run_id", row[3]), ("state", row[4])))


def _runs(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    derived, stored = _derived_runs(rows, among), _stored_runs(rows, among)
    out = []
    for side, extra in (
        ("stored, not derived", stored - derived),
        ("derived, not stored", derived - stored),
    ):
        for job, flag, tag, first, last in sorted(extra):
            fields = (("published", flag), ("calendar", tag))
            run = Row("gk_complete_runs", (*fields, ("first_period", first), ("last_period", last)))
            detail = f"run {first}..{last} (published {flag}, line {tag}): {side} by a full scan"
            out.append(Violation("complete-runs", job, first, detail, (run,)))
    return out


def _derived_runs(rows: Rows, among: _Among) -> set[tuple[str, int, str, str, str]]:
    """The runs a full scan derives (``runs.derive``), as (job, flag, line, first, last)."""
    where, params = among.where("a.job")
    bridged = {str(r[0]) for r in rows(BRIDGED_JOBS, ())}
    return {
        (job, flag, tag, first, last)
        for (job, flag, tag), pairs in derive(rows(SCAN + where, params), bridged).items()
        for first, last in pairs
    }


def _stored_runs(rows: Rows, among: _Among) -> set[tuple[str, int, str, str, str]]:
    """The runs ``gk_complete_runs`` holds, as (job, flag, line, first, last)."""
    where, params = among.where("job")
    found = rows(
        "SELECT job, published, calendar, first_period, last_period FROM gk_complete_runs "
        "WHERE 1 = 1" + where,
        params,
    )
    return {(str(r[0]), int(r[1]), str(r[2]), str(r[3]), str(r[4])) for r in found}


def _expired(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    where, params = among.where("r.consumer")
    found = rows(
        "SELECT r.consumer, r.period, r.revision, r.producer_run_id, r.producer_attempt, "
        "a.state, a.lease_expires_at FROM gk_reservations r LEFT JOIN gk_attempts a ON "
        "a.run_id = r.producer_run_id WHERE r.state = 'reserved' AND (a.run_id IS NULL OR "
        "a.state <> 'running' OR a.lease_expires_at IS NULL OR a.lease_expires_at < ?)" + where,
        (now, *params),
    )
    out = []
    for consumer, period, revision, run_id, attempt, state, expires in found:
        reserved = Row("gk_reservations", (("revision", revision), ("state", "reserved")))
        producer = Row(
            "gk_attempts",
            (
                ("attempt", attempt),
                ("run_id", run_id),
                ("state", state),
                ("lease_expires_at", expires),
            ),
        )
        held = "not recorded" if state is None else f"{state}, lease until {plain(expires)}"
        detail = (
            f"revision {revision} reserved by run {run_id} (attempt {attempt}: {held}); "
            "neither committed nor released"
        )
        out.append(Violation("reservation-expired", consumer, period, detail, (reserved, producer)))
    return out


def _committed(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    where, params = among.where("r.consumer")
    found = rows(
        "SELECT r.consumer, r.period, r.revision, r.writer_run_id, p.revision, "
        "p.producer_run_id FROM gk_reservations r LEFT JOIN gk_publications p ON "
        "p.consumer = r.consumer AND p.period = r.period AND p.revision = r.revision "
        "WHERE r.state = 'committed' AND (p.revision IS NULL OR p.fingerprint <> r.fingerprint "
        "OR p.required_jobs <> r.required_jobs OR COALESCE(p.location, '') <> r.location "
        "OR COALESCE(p.reason, '') <> COALESCE(r.reason, '') "
        "OR COALESCE(p.producer_run_id, '') <> COALESCE(r.writer_run_id, ''))" + where,
        params,
    )
    out = []
    for consumer, period, revision, writer, published, producer in found:
        reservation = Row(
            "gk_reservations",
            (("revision", revision), ("state", "committed"), ("writer_run_id", writer)),
        )
        detail = f"revision {revision} committed, not published"
        involved: tuple[Row, ...] = (reservation,)
        if published is not None:
            detail = f"revision {revision} committed with another output than its publication"
            pub = Row("gk_publications", (("revision", published), ("producer_run_id", producer)))
            involved = (reservation, pub)
        out.append(Violation("reservation-committed", consumer, period, detail, involved))
    return out


def _committed_evidence(rows: Rows, among: _Among, now: Any) -> list[Violation]:
    """A committed reservation's evidence (its JSON) names the same (job, period, run,
    attempt) as its publication's evidence rows: two queries over every committed one."""
    where, params = among.where("r.consumer")
    join = (
        "FROM gk_reservations r JOIN gk_publications p ON p.consumer = r.consumer AND "
        "p.period = r.period AND p.revision = r.revision WHERE r.state = 'committed'" + where
    )
    reserved = rows("SELECT r.consumer, r.period, r.revision, r.evidence " + join, params)
    written: dict[tuple[str, str, int], set[tuple[str, str, str, int]]] = {}
    for consumer, period, revision, job, job_period, run_id, attempt in rows(
        "SELECT e.consumer, e.period, e.revision, e.job, e.job_period, e.run_id, e.attempt "
        "FROM gk_evidence e JOIN (SELECT r.consumer, r.period, r.revision " + join + ") k ON "
        "k.consumer = e.consumer AND k.period = e.period AND k.revision = e.revision",
        params,
    ):
        key = (str(consumer), str(period), int(revision))
        written.setdefault(key, set()).add((str(job), str(job_period), str(run_id), int(attempt)))
    out = []
    for consumer, period, revision, evidence in reserved:
        items = {(str(i[0]), str(i[1]), str(i[2]), int(i[3])) for i in json.loads(evidence)}
        published = written.get((str(consumer), str(period), int(revision)), set())
        if items != published:
            detail = (
                f"revision {revision} committed with other evidence than its publication: "
                f"reserved {_runs_of(items)}, published {_runs_of(published)}"
            )
            reservation = Row("gk_reservations", (("revision", revision), ("state", "committed")))
            pub = Row("gk_publications", (("revision", revision),))
            out.append(
                Violation("reservation-committed", consumer, period, detail, (reservation, pub))
            )
    return out


def _runs_of(items: set[tuple[str, str, str, int]]) -> str:
    return ", ".join(f"{j} {p} attempt {a} (run {r})" for j, p, r, a in sorted(items)) or "none"


CHECKS: tuple[Callable[[Rows, _Among, Any], list[Violation]], ...] = (
    _revisions,
    _evidence,
    _producers,
    _unpublished,
    _attempts,
    _runs,
    _expired,
    _committed,
    _committed_evidence,
)
