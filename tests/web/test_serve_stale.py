"""Serve shows a stale period: ``/metrics`` counts each publishing job's stale periods
(``gatekeeper_stale_publications``, 0 for a publisher with none, absent for a job that never
published) and ``/api/jobs`` says the same; a strip names its stale periods (the page marks
their cells), and the period panel says what changed upstream. The application in a thread,
both backends."""

from __future__ import annotations

import datetime as dt
import json

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import snapshot
from tests.helpers.serve import in_thread, read
from tests.helpers.stale import CHANGE, STALE_DAY, repaired_upstream
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


def test_serve_strip_and_period_panel_show_a_stale_period(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        repaired_upstream(ledger)
    with in_thread(ledger_url, lambda: NOW) as base:
        strips = {
            j["job"]: j
            for j in json.loads(read(base + "/api/jobs?cells=1&job=Report&job=Other"))["jobs"]
        }
        panel = json.loads(read(f"{base}/api/jobs/Report/periods/{STALE_DAY}"))
        fresh = json.loads(read(f"{base}/api/jobs/Other/periods/{STALE_DAY}"))
        periods = json.loads(read(base + "/api/jobs/Report/periods"))["periods"]
        page = read(base + "/")
    assert strips["Report"]["stale_periods"] == [STALE_DAY]
    assert strips["Other"]["stale_periods"] == []
    assert [STALE_DAY, "succeeded"] in strips["Report"]["cells"]
    assert panel["state"] == "succeeded" and panel["stale_reason"] == f"stale: {CHANGE}"
    assert panel["stale"] == [
        {
            "job": "Orders",
            "period": STALE_DAY,
            "old_attempt": 1,
            "new_attempt": 2,
            "old_revision": None,  # Orders does not publish
            "new_revision": None,
        }
    ]
    assert fresh["stale"] == [] and fresh["stale_reason"] is None
    assert [p["period"] for p in periods if p.get("stale")] == [STALE_DAY]
    assert "classList.toggle('stale'" in page and "d.stale_reason" in page
