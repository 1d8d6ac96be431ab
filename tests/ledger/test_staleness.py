"""Staleness: one entry per (date, upstream) of every publication, refusals naming the field,
and ``--refresh-stale`` never refreshing the range's exclusive ``stop`` date. Both backends.

A ``Fails if`` comment names the single-point bug its test was checked to fail with (and to
pass without): hand-made mutation testing, docs/mutation.md."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad, DimCustomer
from gatekeeper.luigi.cascade import layers
from tests.helpers.ledgers import snapshot, succeed
from tests.helpers.luigi_support import build

UTC = dt.timezone.utc
NEVER = dt.datetime.max.replace(tzinfo=UTC)  # no attempt is this invocation's


D = "2026-10-22"


# -- staleness: one entry per (date, upstream) (rules of ledger/staleness.py) -----------------
def test_stale_lists_every_repaired_upstream_of_every_date(ledger: gk.Ledger) -> None:
    days = ["2026-10-21", D]
    for day in days:  # the same revision and the same upstreams on both dates
        for job in ("Dim", "Fact"):
            succeed(ledger, job, day, run_id=f"{job}-{day}-1")
        ledger.publish("Report", day, ["Dim", "Fact"], f"fp-{day}")
        for job in ("Dim", "Fact"):
            succeed(ledger, job, day, attempt=2, run_id=f"{job}-{day}-2")
    found = [(s.business_date, s.job, s.old_run_id, s.new_run_id) for s in ledger.stale("Report")]
    assert found == [
        (day, job, f"{job}-{day}-1", f"{job}-{day}-2") for day in days for job in ("Dim", "Fact")
    ]
    assert [s.business_date for s in ledger.stale("Report", since=D)] == [D, D]


def test_stale_lists_a_shared_upstream_date_once_per_publication(ledger: gk.Ledger) -> None:
    """Two dates' publications (both revision 1) rest on the same upstream date: both stale."""
    succeed(ledger, "Dim", "2026-10-20", run_id="dim-20-1")
    days = ["2026-10-21", D]
    for day in days:
        ledger.publish("Weekly", day, [("Dim", "2026-10-20")], f"fp-{day}")
    succeed(ledger, "Dim", "2026-10-20", attempt=2, run_id="dim-20-2")
    found = [
        (s.business_date, s.revision, s.job_date, s.new_run_id) for s in ledger.stale("Weekly")
    ]
    assert found == [(day, 1, "2026-10-20", "dim-20-2") for day in days]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"consumer": ""}, "consumer"),
        ({"consumer": "Report", "since": "2026-13-01"}, "since"),
    ],
)
def test_stale_names_the_refused_field(
    ledger: gk.Ledger, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        ledger.stale(**kwargs)
    assert caught.value.field == field


# -- --refresh-stale and the exclusive stop ---------------------------------------------------
# Fails if the stale republications compared with ``<= last``.
def test_refresh_stale_leaves_the_exclusive_stop_date_alone(ledger_cfg: gk.Ledger) -> None:
    start, stop = dt.date(2026, 10, 1), dt.date(2026, 10, 3)
    days = [start + dt.timedelta(days=i) for i in range(3)]  # the 3rd is the stop date
    assert build(*[DailySalesLoad(business_date=day) for day in days]).scheduling_succeeded
    assert build(DimCustomer(business_date=stop, attempt=2)).scheduling_succeeded
    now = int(dt.datetime(2026, 11, 1, tzinfo=UTC).timestamp())

    def window(first: dt.date = start) -> gk.RangeBusinessDaily:
        return gk.RangeBusinessDaily(
            of=DailySalesLoad, start=first, stop=stop, now=now, refresh_stale=True
        )

    def first_layer(rng: gk.RangeBusinessDaily) -> list[tuple[dt.date, str]]:
        """What the range's cascade republishes first (``--refresh-stale``: ``stale``)."""
        found = next(layers(rng.session.cascade, lambda: ledger_cfg, NEVER, bool), [])
        return [(t.business_date, t.republish_reason) for t in found]  # type: ignore[attr-defined]

    assert [s.business_date for s in ledger_cfg.stale("DailySalesLoad")] == [stop.isoformat()]
    assert first_layer(window()) == []
    assert window().complete()
    assert build(DimCustomer(business_date=start, attempt=2)).scheduling_succeeded
    assert first_layer(window()) == [
        (start, "stale: upstream DimCustomer 2026-10-01 attempt 1 → 2")
    ]
    assert first_layer(window(days[1])) == []  # start inclusive, stop exclusive
    rows = snapshot(ledger_cfg)["gk_publications"]
    assert build(window()).scheduling_succeeded
    published = {
        day: [p.revision for p in ledger_cfg.publications("DailySalesLoad", day)] for day in days
    }
    assert published == {days[0]: [2, 1], days[1]: [1], days[2]: [1]}
    assert len(snapshot(ledger_cfg)["gk_publications"]) == len(rows) + 1
