"""``Ledger.fleet.stale``: many consumers' stale publications in a few statements, by the rule
``Ledger.stale`` applies to one (ledger/staleness.py's one statement). Both backends."""

from __future__ import annotations

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import succeed
from tests.helpers.stale import CHANGE, STALE_DAY, repaired_upstream


def test_fleet_stale_is_each_consumers_stale_in_batches(
    ledger: gk.Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Asked in batches of one consumer (a statement each), the fleet read gives each
    consumer's entries as ``Ledger.stale`` does, keyed by (consumer, period); a job that
    never published, and a consumer none of whose evidence is superseded, have none."""
    from gatekeeper.ledger import batches

    repaired_upstream(ledger)
    succeed(ledger, "Customers", "2026-10-19", attempt=2)  # Other's 19th stale too
    monkeypatch.setattr(batches, "BATCH", 1)
    since = [("Report", ""), ("Other", "2026-10-18"), ("Orders", "")]
    found = ledger.fleet.stale(since)
    assert sorted(found) == [("Other", "2026-10-19"), ("Report", STALE_DAY)]
    for consumer, first in since:
        each = [(s.business_date, s) for s in ledger.stale(consumer, first or None)]
        assert each == [
            (k, s) for (c, k), some in sorted(found.items()) if c == consumer for s in some
        ]
    assert [s.change for s in found[("Report", STALE_DAY)]] == [CHANGE]


def test_fleet_stale_reads_from_each_consumers_first_period(ledger: gk.Ledger) -> None:
    """A consumer's entries before its first period key are not read."""
    repaired_upstream(ledger)
    assert ledger.fleet.stale([("Report", "2026-10-23")]) == {}
    assert list(ledger.fleet.stale([("Report", STALE_DAY)])) == [("Report", STALE_DAY)]
