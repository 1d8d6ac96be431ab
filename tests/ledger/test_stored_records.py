"""What the ledger reads back: the ``--json`` records, exactly, and a publication stored before
schema 4. Both backends."""

from __future__ import annotations

import datetime as dt

import gatekeeper as gk
from gatekeeper.core.readiness import Watermarks
from tests.helpers.ledgers import T0, succeed

UTC = dt.timezone.utc


D = "2026-10-22"


END = dt.datetime(2026, 10, 23, tzinfo=UTC)  # end of D's interval in UTC


# -- the --json records, exactly (otherwise only the CLI subprocess tests read them, and a
# subprocess runs the unmutated package: mutmut's mutants never reach it) ---------------------
def test_records_to_json_is_the_documented_shape(ledger: gk.Ledger) -> None:
    began = ledger.begin_attempt("Dim", D, "dim-1", lease_seconds=60, now=T0)
    ledger.record("Dim", D, 1, "dim-1", "succeeded", T0, now=T0)
    ledger.record("Dim", "2026-10-21", 1, "dim-0", "failed", T0, error="boom", now=T0)
    assert began.to_json()["lease_expires_at"] == (T0 + dt.timedelta(seconds=60)).isoformat()
    attempt = ledger.latest("Dim", "2026-10-21")
    assert attempt is not None and attempt.to_json() == {
        "job": "Dim",
        "business_date": "2026-10-21",
        "attempt": 1,
        "run_id": "dim-0",
        "state": "failed",
        "started_at": T0.isoformat(),
        "updated_at": T0.isoformat(),
        "lease_expires_at": None,
        "error": "boom",
        "reason": None,
    }
    marks = Watermarks.parse(END, {"Dim": END})
    assert ledger.publish(
        "Report", D, ["Dim"], "fp", watermarks=marks, location="/out/r.csv", now=T0
    )
    publication = ledger.publication("Report", D)
    assert publication is not None and publication.to_json() == {
        "consumer": "Report",
        "business_date": D,
        "revision": 1,
        "fingerprint": "fp",
        "required_jobs": ["Dim"],
        "evidence": {"Dim": "dim-1"},
        "evidence_attempts": {"Dim": 1},
        "watermarks": {"Dim": END.isoformat()},
        "published_at": T0.isoformat(),
        "reason": None,
        "location": "/out/r.csv",
        "run_id": None,
        "attempt": None,
    }
    succeed(ledger, "Dim", D, attempt=2, run_id="dim-2")
    [stale] = ledger.stale("Report")
    assert stale.to_json() == {
        "consumer": "Report",
        "business_date": D,
        "revision": 1,
        "job": "Dim",
        "job_date": D,
        "old_run_id": "dim-1",
        "old_attempt": 1,
        "new_run_id": "dim-2",
        "new_attempt": 2,
        "old_revision": None,  # Dim does not publish
        "new_revision": None,
    }
    readiness = gk.check_ready(ledger, ["Dim", "Other"], D)
    assert readiness.to_json() == {
        "business_date": D,
        "ready": False,
        "required": ["Dim", "Other"],
        "evidence": {"Dim": "dim-2"},
        "blockers": {"Other": "missing"},
        "attempts": {"Dim": 2},
        "details": {},
    }


def test_publication_stored_before_schema_4_reads_its_labels(ledger: gk.Ledger) -> None:
    """Before schema 4 ``required_jobs`` held labels; they are read back as they were."""
    succeed(ledger, "Dim", D, run_id="dim-1")
    ledger.publish("Report", D, ["Dim"], "fp", now=T0)
    with ledger.transaction():
        ledger.execute("UPDATE gk_publications SET required_jobs = ?", ('["Dim", "Feed"]',))
    publication = ledger.publication("Report", D)
    assert publication is not None and publication.required_jobs == ("Dim", "Feed")
