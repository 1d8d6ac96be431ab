"""Job profiles in the ledger (``gk_jobs``), on both backends: recorded once (a repeat writes
nothing), replaced when a range plans differently, read back whole; a job's recorded span."""

from __future__ import annotations

import gatekeeper as gk
from gatekeeper.core.causes import Requirement, profile
from tests.helpers.ledgers import T0, snapshot


def test_profile_is_recorded_once_and_replaced_when_it_changes(ledger: gk.Ledger) -> None:
    assert ledger.job_profile("Total") is None
    first = profile(
        "Total",
        "daily",
        "Pacific/Kiritimati",
        [Requirement("Orders"), Requirement("Orders", -1)],
        lateness="2h",
        catchup="all",
        strategy="contiguous",
        start="2026-10-01",
        stop=None,
    )
    assert ledger.record_profile(first) is True
    assert ledger.job_profile("Total") == first
    before = snapshot(ledger)
    assert ledger.record_profile(first) is False  # the same again: nothing written
    assert snapshot(ledger) == before
    moved = profile("Total", "daily", "UTC", [], start="2026-09-01", stop="2026-12-01")
    assert ledger.record_profile(moved) is True
    assert ledger.job_profile("Total") == moved


def test_period_span_covers_attempts_and_publications_of_one_kind(ledger: gk.Ledger) -> None:
    assert ledger.period_span("Total") is None
    ledger.record("Total", "2026-10-03", 1, "t-3", "succeeded", T0)
    ledger.record("Total", "2026-10-01", 1, "t-1", "failed", T0)
    assert ledger.period_span("Total") == ("2026-10-01", "2026-10-03")
    ledger.record("Orders", "2026-10-09", 1, "o-9", "succeeded", T0)
    ledger.publish("Total", "2026-10-09", ["Orders"], "fp")  # a consumer's publication
    assert ledger.period_span("Total") == ("2026-10-01", "2026-10-09")


def test_a_version_7_ledger_gains_freshness_keeping_its_profiles(ledger_url: str) -> None:
    """Migration 8 adds ``gk_jobs.freshness`` (None for profiles recorded before it)."""
    from gatekeeper.ledger.schema import MIGRATIONS, SCHEMA_VERSION

    kept = profile("Total", "daily", "UTC", [Requirement("Orders")], lateness="2h")
    with gk.open_ledger(ledger_url) as fresh:  # rebuild it as a version-7 ledger
        with fresh.transaction():
            fresh.execute("DROP TABLE gk_jobs")
            for statement in MIGRATIONS[6]:
                fresh.execute(str(statement).replace("{ts}", fresh.ts_type))
            fresh.execute(
                "INSERT INTO gk_jobs (job, period_kind, timezone, lateness, requires, "
                "updated_at) VALUES ('Total', 'daily', 'UTC', '2h', ?, ?)",
                (kept.requires_json(), fresh.ts_in(T0)),
            )
            fresh.execute("UPDATE gk_schema SET version = 7")
    with gk.open_ledger(ledger_url) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION == 10
        assert migrated.job_profile("Total") == kept and kept.freshness is None
        assert migrated.recorded_freshness() == {}
        fresher = profile("Total", "daily", "UTC", [Requirement("Orders")], freshness="6h")
        assert migrated.record_profile(fresher) is True
        assert migrated.recorded_freshness() == {"Total": "6h"}
