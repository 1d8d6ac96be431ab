"""The names a ledger knows (ledger/names.py), on both backends."""

from __future__ import annotations

import pytest

import gatekeeper as gk
from gatekeeper.core.causes import JobProfile
from gatekeeper.core.periods import DAILY
from tests.helpers.ledgers import T0, snapshot, succeed


def reserve_directly(ledger: gk.Ledger, consumer: str) -> None:
    """A reservation row of ``consumer`` with nothing else of it in the ledger."""
    with ledger.transaction():
        ledger.execute(
            "INSERT INTO gk_reservations (consumer, period, revision, fingerprint, "
            "required_jobs, evidence, location, producer_run_id, producer_attempt, state, "
            "reserved_at) VALUES (?, '2026-10-23', 1, 'fp', '[]', '{}', 'loc', 'run-x', 1, "
            "'reserved', ?)",
            (consumer, ledger.sql.ts_in(T0)),
        )


def test_ledger_names_known_are_jobs_profiles_consumers_and_reservations(ledger: gk.Ledger) -> None:
    succeed(ledger, "A", "2026-10-22")
    succeed(ledger, "A", "2026-10-23")
    ledger.record("Refunds(region=eu)", "2026-10-23T05", 1, "r-h", "failed", T0)
    ledger.publish("Sales", "2026-10-23", ["A"], "fp-1")
    reserve_directly(ledger, "DeltaSales")
    ledger.record_profile(JobProfile("Planned", DAILY, "UTC"))  # a range planned it, nothing due
    assert ledger.known_names() == ["A", "DeltaSales", "Planned", "Refunds(region=eu)", "Sales"]
    asked = ["Sales", "B", "A", "DeltaSales", "Refunds", "Planned", "B"]
    assert ledger.unknown_names(asked) == ["B", "Refunds"]
    assert ledger.unknown_names(["Refunds(region=eu)"]) == []


def test_ledger_names_of_an_empty_ledger(ledger: gk.Ledger) -> None:
    assert ledger.known_names() == []
    assert ledger.unknown_names(["A"]) == ["A"]
    assert ledger.unknown_names([]) == []


def test_ledger_names_many_at_once(ledger: gk.Ledger) -> None:
    for n in range(0, 60, 2):
        succeed(ledger, f"Job{n:02d}", "2026-10-23")
    asked = [f"Job{n:02d}" for n in range(60)]
    assert ledger.unknown_names(asked) == asked[1::2]
    assert ledger.known_names() == asked[::2]


@pytest.mark.parametrize("name", ["", " A", "a\x00b"])
def test_ledger_names_malformed_name_is_refused_and_nothing_written(
    ledger: gk.Ledger, name: str
) -> None:
    succeed(ledger, "A", "2026-10-23")
    before = snapshot(ledger)
    with pytest.raises(gk.InvalidInput, match="invalid consumer"):
        ledger.unknown_names(["A", name], "consumer")
    assert snapshot(ledger) == before
