"""Serve shows a stale period: ``/metrics`` counts each publishing job's stale periods
(``gatekeeper_stale_publications``, 0 for a publisher with none, absent for a job that never
published) and ``/api/jobs`` says the same. The application in a thread, both backends."""

from __future__ import annotations

import datetime as dt
import json

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import snapshot
from tests.helpers.serve import in_thread, read
from tests.helpers.stale import repaired_upstream
from tests.web.test_serve import metric_values

pytest.importorskip("starlette")
NOW = dt.datetime(2026, 10, 26, 6, tzinfo=dt.timezone.utc)


def test_serve_metrics_count_the_stale_periods_of_each_publisher(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        repaired_upstream(ledger)
        before = snapshot(ledger)
    with in_thread(ledger_url, lambda: NOW) as base:
        samples = metric_values(read(base + "/metrics"))
        jobs = {j["job"]: j for j in json.loads(read(base + "/api/jobs"))["jobs"]}
    stale = {
        labels[0][1]: value
        for (name, labels), value in samples.items()
        if name == "gatekeeper_stale_publications"
    }
    assert stale == {"Report": 1, "Other": 0}
    assert {job: j["stale_publications"] for job, j in jobs.items()} == {
        "Report": 1,
        "Other": 0,
        "Orders": None,
        "Customers": None,
    }
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before
