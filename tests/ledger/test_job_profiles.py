"""Job profiles in the ledger (``gk_jobs``), on both backends: recorded once (a repeat writes
nothing), replaced when a range plans differently, read back whole; a job's recorded span; a
job's own schedule (``record_schedule``) written once, keeping the window its range planned."""

from __future__ import annotations

from dataclasses import replace

import pytest

import gatekeeper as gk
from gatekeeper.core.causes import JobProfile, Requirement, profile
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY
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
                (kept.requires_json(), fresh.sql.ts_in(T0)),
            )
            fresh.execute("UPDATE gk_schema SET version = 7")
    with gk.open_ledger(ledger_url) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION >= 14
        assert migrated.job_profile("Total") == kept and kept.freshness is None
        assert migrated.recorded_freshness() == {}
        fresher = profile("Total", "daily", "UTC", [Requirement("Orders")], freshness="6h")
        assert migrated.record_profile(fresher) is True
        assert migrated.recorded_freshness() == {"Total": "6h"}


def jobs_rows(ledger: gk.Ledger) -> list[tuple[str, ...]]:
    return [tuple(map(str, r)) for r in ledger.read("SELECT * FROM gk_jobs ORDER BY job")]


def test_record_schedule_writes_a_job_own_calendar_once_and_keeps_a_range_window(
    ledger: gk.Ledger,
) -> None:
    weekdays = DAILY.on("weekdays")
    own = profile("Load", weekdays, "UTC")
    assert ledger.record_schedule(own) is True  # reached only as a dependency: no window
    assert ledger.job_profile("Load") == own
    before = jobs_rows(ledger)
    assert ledger.record_schedule(own) is False  # the same again: nothing written
    assert jobs_rows(ledger) == before

    planned = profile(
        "Total", "daily", "Europe/Berlin", [Requirement("Load")], lateness="2h", start="2026-10-01"
    )
    ledger.record_profile(planned)
    assert ledger.record_schedule(profile("Total", weekdays, "UTC")) is True
    found = ledger.job_profile("Total")
    assert found == replace(planned, period=weekdays, calendar="weekdays")  # its range's zone
    before = jobs_rows(ledger)
    assert ledger.record_schedule(profile("Total", weekdays, "UTC")) is False
    assert jobs_rows(ledger) == before


def test_record_schedule_refuses_a_bad_job_name_writing_nothing(ledger: gk.Ledger) -> None:
    before = jobs_rows(ledger)
    with pytest.raises(InvalidInput) as refused:
        ledger.record_schedule(JobProfile("Load\x1b[2J", DAILY, "UTC"))
    assert refused.value.field == "job"
    assert jobs_rows(ledger) == before == []


def test_a_version_10_ledger_migrates_to_11_keeping_profiles_and_holds_days_within(
    ledger_url: str,
) -> None:
    """Migration 11 changes no table: a version-10 ledger's profiles read as they were, and
    what only 11 may hold (a requirement of every day within a month, a calendar object's
    import path) is recorded and read back; a gatekeeper knowing up to 10 refuses it."""
    from gatekeeper.ledger.schema import SCHEMA_VERSION

    kept = profile("Total", "daily", "UTC", [Requirement("Orders", -1)], lateness="2h")
    with gk.open_ledger(ledger_url) as fresh:
        fresh.record_profile(kept)
        with fresh.transaction():
            fresh.execute("UPDATE gk_schema SET version = 10")
    within = Requirement.within("Trades", DAILY.on("weekdays"))
    month = profile("MonthEnd", "monthly", "UTC", [within], start="2026-09", stop="2026-11")
    with gk.open_ledger(ledger_url) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION >= 14
        assert migrated.job_profile("Total") == kept
        assert migrated.record_profile(month) is True
        assert migrated.job_profile("MonthEnd") == month
        assert [p.job for p in migrated.profiles_requiring("Trades")] == ["MonthEnd"]
