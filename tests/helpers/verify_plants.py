"""Ledgers for the ``verify`` tests: a healthy one written through the API, and for each
invariant the plant that breaks it alone (SQL, or the API where it permits the state).

The healthy ledger holds what every invariant speaks of: an upstream ``U`` (two periods, the
first repaired by attempt 2 after it was published from: the publications of ``C`` become
stale, never wrong), a consumer ``C`` publishing with a fenced producer and republishing as
revision 2, a consumer ``X`` publishing through a committed reservation (a Delta table), and
a job ``W`` whose attempt runs, holding a live lease.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import gatekeeper as gk
from tests.helpers.ledgers import T0

D1, D2 = "2026-10-23", "2026-10-24"
LEASE = 3600.0


def healthy(ledger: gk.Ledger) -> None:
    """The healthy ledger of the module's docstring, written through the API."""
    ledger.record("U", D1, 1, "u1", "succeeded", T0)
    ledger.record("U", D2, 1, "u2", "succeeded", T0)
    ledger.begin_attempt("C", D1, "c1", lease_seconds=LEASE)
    ledger.publish("C", D1, ["U"], "fp-1", producer="c1")
    ledger.record("C", D1, 1, "c1", "succeeded", T0)
    ledger.begin_attempt("C", D1, "c2", lease_seconds=LEASE, attempt=2)
    ledger.republish("C", D1, ["U"], "fp-2", reason="late rows", producer="c2")
    ledger.record("C", D1, 2, "c2", "succeeded", T0)
    ledger.begin_attempt("X", D1, "x1", lease_seconds=LEASE)
    pending = ledger.reservations.reserve(
        "X", D1, ["U"], "fp-x", producer="x1", location="delta://t", table_version=None
    )
    ledger.reservations.commit(
        "X", D1, pending.revision, producer="x1", table_version=0, writer="x1"
    )
    ledger.record("X", D1, 1, "x1", "succeeded", T0)
    ledger.begin_attempt("W", D1, "w1", lease_seconds=LEASE)
    ledger.record("U", D1, 2, "u1-repair", "succeeded", T0)  # C's publications: stale


def sql(*statements: str) -> Callable[[gk.Ledger], None]:
    def plant(ledger: gk.Ledger) -> None:
        with ledger.transaction():
            for statement in statements:
                ledger.execute(statement)

    return plant


def unpublished_success(ledger: gk.Ledger) -> None:
    # the API records it (a job's success is an observation); C publishes, D2 is unpublished
    ledger.record("C", D2, 1, "c-d2", "succeeded", T0)


#: invariant -> (the plant, the job and period it breaks)
PLANTS: dict[str, tuple[Callable[[gk.Ledger], None], str, str]] = {
    "publication-revisions": (
        sql(
            "INSERT INTO gk_publications (consumer, period, revision, fingerprint, "
            "required_jobs, published_at) SELECT consumer, period, 4, fingerprint, "
            f"required_jobs, published_at FROM gk_publications WHERE consumer = 'C' "
            f"AND period = '{D1}' AND revision = 2"
        ),
        "C",
        D1,
    ),
    "evidence": (
        sql("UPDATE gk_evidence SET run_id = 'ghost' WHERE consumer = 'C' AND revision = 1"),
        "C",
        D1,
    ),
    "publication-producer": (
        sql(
            "UPDATE gk_publications SET producer_attempt = 9 WHERE consumer = 'C' AND revision = 1"
        ),
        "C",
        D1,
    ),
    "success-published": (unpublished_success, "C", D2),
    "attempt-numbers": (
        sql(f"UPDATE gk_attempts SET attempt = 3 WHERE job = 'U' AND period = '{D2}'"),
        "U",
        D2,
    ),
    "attempt-non-terminal": (
        sql(
            "INSERT INTO gk_attempts (job, period, attempt, run_id, state, started_at, "
            "updated_at, lease_expires_at) SELECT job, period, 2, 'w2', state, started_at, "
            "updated_at, lease_expires_at FROM gk_attempts WHERE run_id = 'w1'"
        ),
        "W",
        D1,
    ),
    "attempt-lease": (
        sql("UPDATE gk_attempts SET lease_expires_at = NULL WHERE run_id = 'w1'"),
        "W",
        D1,
    ),
    "complete-runs": (
        sql(
            "UPDATE gk_complete_runs SET last_period = first_period WHERE job = 'U' "
            "AND published = 0"
        ),
        "U",
        D1,
    ),
    "reservation-expired": (
        sql(
            "INSERT INTO gk_reservations (consumer, period, revision, fingerprint, "
            "required_jobs, evidence, reason, location, producer_run_id, producer_attempt, "
            "state, reserved_at) SELECT consumer, period, 2, 'fp-x2', required_jobs, evidence, "
            "'again', location, producer_run_id, producer_attempt, 'reserved', reserved_at "
            "FROM gk_reservations WHERE consumer = 'X'"
        ),
        "X",
        D1,
    ),
    "reservation-committed": (
        sql("UPDATE gk_reservations SET fingerprint = 'fp-other' WHERE consumer = 'X'"),
        "X",
        D1,
    ),
}


def every_row(ledger: gk.Ledger) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every ledger table (``gk_jobs`` and ``gk_reservations`` too)."""
    tables = (
        "gk_schema",
        "gk_attempts",
        "gk_publications",
        "gk_evidence",
        "gk_complete_runs",
        "gk_jobs",
        "gk_reservations",
    )
    return {
        t: sorted(tuple(map(str, r)) for r in ledger.read(f"SELECT * FROM {t}")) for t in tables
    }
