"""Stale by upstream revision (issue 50, item 1): evidence records the upstream pair's newest
publication revision, read with its run; a republished upstream (a new revision, the same
attempt) makes the consumers built on the older revision stale. Both backends."""

from __future__ import annotations

import pytest

import gatekeeper as gk
from gatekeeper.core.backfill import stale_reason
from gatekeeper.core.records import Staleness
from gatekeeper.ledger.schema import SCHEMA_VERSION
from tests.helpers.ledgers import T0, succeed

D = "2026-10-22"


def published_upstream(ledger: gk.Ledger) -> None:
    """Upstream (requiring Raw) succeeded and published revision 1 of D; Report published
    on it."""
    succeed(ledger, "Raw", D, run_id="raw-1")
    succeed(ledger, "Upstream", D, run_id="up-1")
    assert ledger.publish("Upstream", D, ["Raw"], "up-fp-1")
    assert ledger.publish("Report", D, ["Upstream"], "fp-1")


def recorded(ledger: gk.Ledger, consumer: str) -> list[tuple[int, str, object]]:
    """(revision, upstream job, recorded upstream revision) of each evidence row."""
    rows = ledger.read(
        "SELECT revision, job, job_revision FROM gk_evidence WHERE consumer = ? "
        "ORDER BY revision, job",
        (consumer,),
    )
    return [(int(r[0]), r[1], None if r[2] is None else int(r[2])) for r in rows]


def test_evidence_records_the_upstream_revision_it_read_or_none(ledger: gk.Ledger) -> None:
    published_upstream(ledger)
    assert recorded(ledger, "Upstream") == [(1, "Raw", None)]  # Raw does not publish
    assert recorded(ledger, "Report") == [(1, "Upstream", 1)]
    publication = ledger.publication("Report", D)
    assert publication is not None and [i.revision for i in publication.items] == [1]
    assert ledger.stale("Report") == []


# Fails if _STALE_SQL leaves the revision out (only a newer attempt is stale).
def test_a_republished_upstream_makes_its_consumer_stale_by_revision(ledger: gk.Ledger) -> None:
    published_upstream(ledger)
    assert ledger.republish("Upstream", D, ["Raw"], "up-fp-2", reason="late rows")
    [stale] = ledger.stale("Report")
    assert (stale.old_run_id, stale.new_run_id, stale.old_attempt, stale.new_attempt) == (
        "up-1",
        "up-1",
        1,
        1,
    )
    assert stale.change == f"upstream Upstream {D} revision 1 → 2"
    assert stale.reason == "upstream republished: Upstream revision 2"
    assert stale_reason([stale]) == f"stale: upstream Upstream {D} revision 1 → 2"
    assert stale.upstream_json() == {
        "job": "Upstream",
        "period": D,
        "old_attempt": 1,
        "new_attempt": 1,
        "old_revision": 1,
        "new_revision": 2,
    }
    assert ledger.fleet.stale([("Report", "")]) == {("Report", D): [stale]}  # once


# Fails if _same_revision compares the upstream runs alone (the refresh is taken for a retry).
def test_republishing_the_consumer_clears_it_and_a_later_republish_is_no_retry(
    ledger: gk.Ledger,
) -> None:
    published_upstream(ledger)
    ledger.republish("Upstream", D, ["Raw"], "up-fp-2", reason="late rows")
    assert ledger.republish("Report", D, ["Upstream"], "fp-1", reason="refresh")
    assert ledger.stale("Report") == []
    assert recorded(ledger, "Report") == [(1, "Upstream", 1), (2, "Upstream", 2)]
    # the same republish again is a retry: no new revision
    assert not ledger.republish("Report", D, ["Upstream"], "fp-1", reason="refresh")
    ledger.republish("Upstream", D, ["Raw"], "up-fp-3", reason="later rows")
    assert [s.change for s in ledger.stale("Report")] == [f"upstream Upstream {D} revision 2 → 3"]
    # the same output and reason on another upstream revision is a new revision
    assert ledger.republish("Report", D, ["Upstream"], "fp-1", reason="refresh")
    assert ledger.stale("Report") == []


def test_an_upstream_with_a_new_attempt_and_revision_is_named_by_its_attempt(
    ledger: gk.Ledger,
) -> None:
    published_upstream(ledger)
    succeed(ledger, "Upstream", D, attempt=2, run_id="up-2")
    ledger.republish("Upstream", D, ["Raw"], "up-fp-2", reason="repaired")
    [stale] = ledger.stale("Report")
    assert stale.change == f"upstream Upstream {D} attempt 1 → 2"
    assert (stale.new_run_id, stale.old_revision, stale.new_revision) == ("up-2", 1, 2)
    assert stale.reason == "upstream repaired: Upstream attempt 2"


def test_a_reserved_publication_records_the_revision_its_reservation_read(
    ledger: gk.Ledger,
) -> None:
    """A reservation reads its evidence (and the upstream's revision) when it reserves: an
    upstream republished before the external commit leaves the committed one stale."""
    published_upstream(ledger)
    ledger.begin_attempt("Delta", D, "delta-1", lease_seconds=3600, now=T0)
    reserved = ledger.reservations.reserve(
        "Delta", D, ["Upstream"], "fp-d", producer="delta-1", location="delta://t", now=T0
    )
    assert [i.revision for i in reserved.items] == [1]
    ledger.republish("Upstream", D, ["Raw"], "up-fp-2", reason="late rows")
    ledger.reservations.commit(
        "Delta", D, 1, producer="delta-1", table_version=0, writer="delta-1", now=T0
    )
    ledger.record("Delta", D, 1, "delta-1", "succeeded", T0)
    assert recorded(ledger, "Delta") == [(1, "Upstream", 1)]
    assert [s.change for s in ledger.stale("Delta")] == [f"upstream Upstream {D} revision 1 → 2"]
    assert ledger.verify() == []


def test_a_version_14_ledger_migrates_its_evidence_never_stale_by_revision(
    ledger_url: str,
) -> None:
    with gk.open_ledger(ledger_url) as fresh:
        published_upstream(fresh)
        with fresh.transaction():  # the evidence as schema 14 held it: no job_revision
            fresh.execute("ALTER TABLE gk_evidence DROP COLUMN job_revision")
            fresh.execute("UPDATE gk_schema SET version = 14")
    with gk.open_ledger(ledger_url) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION >= 15
        assert recorded(migrated, "Report") == [(1, "Upstream", None)]
        migrated.republish("Upstream", D, ["Raw"], "up-fp-2", reason="late rows")
        assert migrated.stale("Report") == []  # recorded before: never stale by revision
        assert migrated.verify() == []
        # republished, it records the upstream's revision, which the next republish supersedes
        assert migrated.republish("Report", D, ["Upstream"], "fp-1", reason="refresh")
        assert recorded(migrated, "Report") == [(1, "Upstream", None), (2, "Upstream", 2)]
        migrated.republish("Upstream", D, ["Raw"], "up-fp-3", reason="later rows")
        assert [s.change for s in migrated.stale("Report")] == [
            f"upstream Upstream {D} revision 2 → 3"
        ]


@pytest.mark.parametrize("given", [None, 1])
def test_staleness_of_a_new_attempt_names_the_attempt(given: int | None) -> None:
    stale = Staleness("R", D, 1, "U", D, "u-1", 1, "u-2", 2, given, given)
    assert stale.change == f"upstream U {D} attempt 1 → 2"


# Fails if verify's evidence check leaves out the recorded revision.
@pytest.mark.parametrize(
    ("recorded_revision", "what"), [(3, "its newest is revision 1"), (1, None)]
)
def test_verify_names_evidence_recording_a_revision_the_upstream_never_had(
    ledger: gk.Ledger, recorded_revision: int, what: str | None
) -> None:
    published_upstream(ledger)
    with ledger.transaction():
        ledger.execute(
            "UPDATE gk_evidence SET job_revision = ? WHERE consumer = 'Report'",
            (recorded_revision,),
        )
    found = ledger.verify()
    if what is None:
        assert found == []
        return
    [violation] = found
    assert (violation.invariant, violation.job, violation.period) == ("evidence", "Report", D)
    assert violation.detail == f"evidence names Upstream {D} revision 3; {what}"
    with ledger.transaction():  # an upstream that never published
        ledger.execute("UPDATE gk_evidence SET job_revision = 1 WHERE consumer = 'Upstream'")
    assert [v.detail for v in ledger.verify(["Raw"])] == [
        f"evidence names Raw {D} revision 1; it never published"
    ]


def test_a_reservation_made_before_schema_15_commits_without_a_revision(
    ledger: gk.Ledger,
) -> None:
    """Its evidence JSON has five elements an item (no revision): committed, NULL."""
    published_upstream(ledger)
    ledger.begin_attempt("Delta", D, "delta-1", lease_seconds=3600, now=T0)
    ledger.reservations.reserve(
        "Delta", D, ["Upstream"], "fp-d", producer="delta-1", location="delta://t", now=T0
    )
    old = f'[["Upstream", "{D}", "up-1", 1, null]]'
    with ledger.transaction():
        ledger.execute("UPDATE gk_reservations SET evidence = ?", (old,))
    [pending] = ledger.reservations.of("Delta", D)
    assert [i.revision for i in pending.items] == [None]
    ledger.reservations.commit(
        "Delta", D, 1, producer="delta-1", table_version=0, writer="delta-1", now=T0
    )
    assert recorded(ledger, "Delta") == [(1, "Upstream", None)]
