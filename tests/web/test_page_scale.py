"""Serve's page grows with the jobs, not with the periods of the window: a row is a job's
summary, its strip of cells is asked of ``/api/jobs?cells=1&job=...`` when shown (issue 49,
item 2: 5,000 jobs in at most 5 MB)."""

from __future__ import annotations

import datetime as dt

import pytest

import gatekeeper as gk
from gatekeeper.web import page, views
from tests.helpers.ledgers import snapshot

pytest.importorskip("starlette")
NOW = dt.datetime(2026, 11, 30, 12, tzinfo=dt.timezone.utc)
#: what a row may cost, at most: 5 MB for 5,000 jobs
PER_JOB = 1000


def pages(url: str, *windows: int) -> list[tuple[int, int]]:
    """(bytes of the page, cells judged) for each window of ``windows`` days."""
    found = []
    with gk.open_ledger(url, create=False) as ledger:
        for days in windows:
            shown, skipped = views.job_views(ledger, dt.timedelta(days=days), NOW)
            text = page.render(shown, skipped, dt.timedelta(days=days), ledger.describe())
            found.append((len(text.encode()), sum(v.cell_count for v in shown)))
    return found


def test_page_bytes_grow_per_job_not_per_cell(sqlite_url: str) -> None:
    first = (NOW - dt.timedelta(days=400)).date()
    with gk.open_ledger(sqlite_url) as ledger:
        for n in range(100):
            for key in (first, first + dt.timedelta(days=n % 7), NOW.date()):
                ledger.record(f"Job{n:04d}", str(key), 1, f"r-{n}-{key}", "succeeded", NOW)
        before = snapshot(ledger)
    (month, few), (year, many) = pages(sqlite_url, 30, 365)
    assert (few, many) == (100 * 31, 100 * 366)  # the window is judged in full (today too)
    assert year - month < 8000  # ... but 33,500 more cells add only the axis's labels
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before  # the page reads only
    with gk.open_ledger(sqlite_url) as ledger:
        for n in range(100, 200):
            ledger.record(f"Job{n:04d}", str(first), 1, f"r-{n}", "succeeded", NOW)
    ((more, _),) = pages(sqlite_url, 365)
    assert 0 < (more - year) / 100 < PER_JOB
    assert month < 100 * PER_JOB
