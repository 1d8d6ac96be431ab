"""Republishing: a retry writes nothing, anything new (an upstream repair included) is a new
revision; every argument reaches the publication; watermarks gate it. Both backends.

A ``Fails if`` comment names the single-point bug its test was checked to fail with (and to
pass without): hand-made mutation testing, docs/mutation.md."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.core.readiness import Watermarks
from tests.helpers.ledgers import T0, snapshot, succeed

UTC = dt.timezone.utc


D = "2026-10-22"


# -- a republish after an upstream repair ---------------------------------------------------
# Fails if _same_revision left out its evidence comparison.
def test_republish_after_upstream_repair_is_a_new_revision_with_fresh_evidence(
    ledger: gk.Ledger,
) -> None:
    first = succeed(ledger, "Dim", D)
    assert ledger.publish("Report", D, ["Dim"], "fp") is True
    assert ledger.republish("Report", D, ["Dim"], "fp", reason="late rows") is True
    repaired = succeed(ledger, "Dim", D, attempt=2)
    assert [s.new_run_id for s in ledger.stale("Report")] == [repaired]
    written: list[int] = []

    assert (
        ledger.republish(
            "Report", D, ["Dim"], "fp", lambda tx: written.append(1), reason="late rows"
        )
        is True
    )

    assert written == [1]
    revisions = ledger.publications("Report", D)
    assert [(p.revision, p.evidence["Dim"]) for p in revisions] == [
        (3, repaired),
        (2, first),
        (1, first),
    ]
    assert ledger.stale("Report") == []
    rows = snapshot(ledger)  # and now it is a retry: nothing written, write not called
    assert (
        ledger.republish(
            "Report", D, ["Dim"], "fp", lambda tx: written.append(2), reason="late rows"
        )
        is False
    )
    assert snapshot(ledger) == rows and written == [1]


# what differs from revision 2 (fingerprint "fp", location None, reason "late", evidence a1)
SAME_REVISION = [
    ({}, False, False),
    ({"fingerprint": "fp2"}, False, True),
    ({"location": "/out/report.csv"}, False, True),
    ({"reason": "other"}, False, True),
    ({}, True, True),
]


@pytest.mark.parametrize(("change", "repair", "new_revision"), SAME_REVISION)
def test_republish_is_a_retry_only_when_everything_is_the_same(
    ledger: gk.Ledger, change: dict[str, str], repair: bool, new_revision: bool
) -> None:
    succeed(ledger, "Dim", D)
    ledger.publish("Report", D, ["Dim"], "fp")
    ledger.republish("Report", D, ["Dim"], "fp", reason="late")
    if repair:
        succeed(ledger, "Dim", D, attempt=2)
    kwargs: dict[str, Any] = {"fingerprint": "fp", "reason": "late", **change}
    rows = snapshot(ledger)

    assert ledger.republish("Report", D, ["Dim"], **kwargs) is new_revision

    assert len(ledger.publications("Report", D)) == (3 if new_revision else 2)
    if not new_revision:
        assert snapshot(ledger) == rows


# -- republish: every argument reaches the publication, the clock is the database's --------------
def test_republish_is_gated_by_watermarks_and_dated_by_now(ledger: gk.Ledger) -> None:
    succeed(ledger, "Dim", D, run_id="dim-1")
    ledger.publish("Report", D, ["Dim"], "fp", now=T0)
    before = snapshot(ledger)
    end = dt.datetime(2026, 10, 23, tzinfo=UTC)
    behind = Watermarks.parse(end, {"Dim": end - dt.timedelta(minutes=5)})
    with pytest.raises(gk.NotReady):
        ledger.republish("Report", D, ["Dim"], "fp2", reason="late rows", watermarks=behind, now=T0)
    assert snapshot(ledger) == before
    later = T0 + dt.timedelta(hours=3)
    assert ledger.republish("Report", D, ["Dim"], "fp2", reason="late rows", now=later)
    newest = ledger.publication("Report", D)
    assert newest is not None and (newest.revision, newest.published_at) == (2, later)
