"""A task class's ``freshness`` reaches the ledger through its range (the job's profile), so
``gatekeeper check`` knows it without importing the class; a bad one is refused by the range
before anything is written."""

from __future__ import annotations

import datetime as dt

import luigi
import pytest

import gatekeeper as gk
from gatekeeper.luigi.freshness import freshness_rules
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import build

pytestmark = pytest.mark.luigi

UTC = dt.timezone.utc
START = dt.date(2026, 10, 1)
NOW = int(dt.datetime(2026, 10, 3, 12, tzinfo=UTC).timestamp())


class FreshDaily(gk.BusinessDateTask):
    freshness = "6h"

    def run(self) -> None:
        pass


class BadFreshness(gk.BusinessDateTask):
    freshness = "6 hours"

    def run(self) -> None:
        pass


def test_range_records_class_freshness_in_profile(ledger_cfg: gk.Ledger) -> None:
    result = build(gk.RangeBusinessDaily(of=FreshDaily, start=START, now=NOW))
    assert result.scheduling_succeeded, result.summary_text
    found = ledger_cfg.job_profile("FreshDaily")
    assert found is not None and found.freshness == "6h"
    assert freshness_rules(ledger_cfg) == {"FreshDaily": (dt.timedelta(hours=6), "task class")}


def test_range_refuses_bad_class_freshness_writing_nothing(ledger_cfg: gk.Ledger) -> None:
    before = snapshot(ledger_cfg)
    errors: list[BaseException] = []
    handler = luigi.Task.event_handler(luigi.Event.BROKEN_TASK)(lambda _t, e: errors.append(e))
    try:
        result = build(gk.RangeBusinessDaily(of=BadFreshness, start=START, now=NOW))
    finally:
        luigi.Task._event_callbacks[luigi.Task][luigi.Event.BROKEN_TASK].discard(handler)
    assert not result.scheduling_succeeded
    assert any("BadFreshness.freshness" in str(e) and "6 hours" in str(e) for e in errors), errors
    assert snapshot(ledger_cfg) == before
