"""serve's period panel (``/api/jobs/JOB/periods/PERIOD``) shows why each attempt was asked
for (``--rerun REASON``): in process, on both backends."""

from __future__ import annotations

import datetime as dt

import gatekeeper as gk
from gatekeeper.web.detail import period_detail
from tests.helpers.ledgers import T0

D = "2026-10-22"


def test_period_detail_shows_the_reason_of_each_attempt(ledger: gk.Ledger) -> None:
    ledger.record("A", D, 1, "r1", "succeeded", T0)
    ledger.begin_attempt("A", D, "r2", lease_seconds=60, reason="late rows")
    ledger.record("A", D, 2, "r2", "succeeded", T0)
    detail = period_detail(ledger, "A", D, T0 + dt.timedelta(days=2))
    assert [(a["attempt"], a["reason"]) for a in detail["attempts"]] == [
        (1, None),
        (2, "late rows"),
    ]
