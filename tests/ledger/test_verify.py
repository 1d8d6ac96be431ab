"""``Ledger.verify`` can fail: on each backend, a healthy ledger passes, and each invariant,
broken alone (``tests/helpers/verify_plants.py``), is named, and only it."""

from __future__ import annotations

import pytest

import gatekeeper as gk
from gatekeeper.core.errors import LedgerError
from gatekeeper.ledger.verify import INVARIANTS
from tests.helpers.ledgers import T0
from tests.helpers.verify_plants import D1, PLANTS, healthy


def test_verify_plants_cover_every_invariant() -> None:
    assert set(PLANTS) == set(INVARIANTS)


def test_verify_passes_a_healthy_ledger(ledger: gk.Ledger) -> None:
    healthy(ledger)
    assert ledger.stale("C")  # a repaired upstream makes it stale, not a violation
    assert ledger.verify() == []


@pytest.mark.parametrize("invariant", sorted(PLANTS))
def test_verify_names_the_planted_violation_and_only_it(ledger: gk.Ledger, invariant: str) -> None:
    healthy(ledger)
    plant, job, period = PLANTS[invariant]
    plant(ledger)
    found = ledger.verify()
    assert found, f"{invariant} planted, nothing found"
    assert {v.invariant for v in found} == {invariant}, [v.describe() for v in found]
    assert {(v.job, v.period) for v in found} == {(job, period)}
    for violation in found:
        assert violation.rows and all(r.fields for r in violation.rows)
        assert violation.describe().startswith(f"{invariant}: {job} {period}: ")
        assert violation.to_json()["rows"]


def test_verify_of_a_job_reports_only_what_names_it(ledger: gk.Ledger) -> None:
    healthy(ledger)
    PLANTS["attempt-lease"][0](ledger)
    PLANTS["evidence"][0](ledger)  # names C, and U as the upstream
    assert {v.invariant for v in ledger.verify(["W"])} == {"attempt-lease"}
    assert {v.invariant for v in ledger.verify(["U"])} == {"evidence"}
    assert {v.invariant for v in ledger.verify(["X"])} == set()


def test_verify_expired_producer_lease_leaves_a_reservation_dangling(ledger: gk.Ledger) -> None:
    ledger.record("U", D1, 1, "u1", "succeeded", T0)
    ledger.begin_attempt("X", D1, "x1", lease_seconds=1, now=T0)
    ledger.reservations.reserve("X", D1, ["U"], "fp-x", producer="x1", location="delta://t", now=T0)
    (found,) = ledger.verify()  # its lease ran out years before the database's clock
    assert (found.invariant, found.job, found.period) == ("reservation-expired", "X", D1)


def test_verify_read_transaction_writes_nothing(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        healthy(ledger)
    with gk.open_ledger(ledger_url, create=False) as reader:
        with reader.sql.read_transaction() as rows:
            assert rows("SELECT COUNT(*) FROM gk_attempts", ())[0][0] == 7
            with pytest.raises(LedgerError):
                rows("DELETE FROM gk_attempts", ())
        assert reader.verify() == []


def test_verify_committed_reservation_with_other_evidence_is_named(ledger: gk.Ledger) -> None:
    """The reservation-committed check also compares the evidence the reservation holds with
    its publication's evidence rows."""
    healthy(ledger)
    with ledger.transaction():
        ledger.execute("UPDATE gk_reservations SET evidence = '[]' WHERE consumer = 'X'")
    (found,) = ledger.verify()
    assert (found.invariant, found.job, found.period) == ("reservation-committed", "X", D1)
    assert "committed with other evidence than its publication: reserved none, published U" in (
        found.detail
    )
