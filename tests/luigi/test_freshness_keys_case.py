"""``[gatekeeper.freshness]`` keys under a Luigi that lowercases luigi.cfg's keys (3.2's
parser: ConfigParser's ``optionxform``): ``TradingDayLoad = 1d`` reaches gatekeeper as
``tradingdayload`` and still names the job; a folded key that fits two jobs is refused naming
both. On the newest Luigi the parser is given 3.2's ``optionxform`` for the test."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from typing import Any

import luigi.configuration
import pytest

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.luigi.freshness import SECTION, check_config, freshness_rules
from tests.helpers.ledgers import T0

pytestmark = pytest.mark.luigi
DAY = dt.timedelta(days=1)


@pytest.fixture
def folded(luigi_config: Any) -> Iterator[Any]:
    """Luigi's parser folding keys to lower case, as Luigi 3.2's does; put back after."""
    cfg = luigi.configuration.get_config()
    had = "optionxform" in vars(cfg)
    saved = cfg.optionxform
    cfg.optionxform = str.lower
    try:
        yield luigi_config
    finally:
        if had:
            cfg.optionxform = saved
        else:
            del cfg.optionxform


def test_freshness_key_folded_to_lower_case_still_names_its_job(
    ledger: gk.Ledger, folded: Any
) -> None:
    ledger.record("TradingDayLoad", "2026-10-23", 1, "r1", "succeeded", T0)
    ledger.record("RegionLoad(region=eu)", "2026-10-23", 1, "r2", "succeeded", T0)
    folded(SECTION, "TradingDayLoad", "1d")
    folded(SECTION, "RegionLoad", "2d")
    assert luigi.configuration.get_config().options(SECTION) == ["tradingdayload", "regionload"]
    assert check_config(ledger) == ()
    rules = freshness_rules(ledger)
    assert {job: rule[0] for job, rule in rules.items()} == {
        "TradingDayLoad": DAY,
        "RegionLoad(region=eu)": 2 * DAY,
    }
    assert freshness_rules(ledger, ["TradingDayLoad"])["TradingDayLoad"][0] == DAY


def test_freshness_key_folded_onto_two_jobs_is_refused_naming_both(
    ledger: gk.Ledger, folded: Any
) -> None:
    ledger.record("Load", "2026-10-23", 1, "r1", "succeeded", T0)
    ledger.record("LOAD", "2026-10-23", 1, "r2", "succeeded", T0)
    folded(SECTION, "Load", "1d")
    with pytest.raises(InvalidInput, match="names LOAD and Load alike"):
        freshness_rules(ledger)
    with pytest.raises(InvalidInput, match="names LOAD and Load alike"):
        check_config(ledger)
