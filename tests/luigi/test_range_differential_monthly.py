"""Differential: months through Luigi's ``RangeMonthly`` and gatekeeper's
``RangeBusinessMonthly`` (the daily and hourly cases, and how the two are driven, are in
test_range_differential.py). Over windows that have ended, both require the same months in the
same order and fire the same events; an open window requires the months that have ended on
both (Luigi's monthly range, unlike its daily one, does not require the month that has only
begun)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from luigi.tools.range import RangeMonthly

import gatekeeper as gk
from tests.luigi.test_range_differential import epoch, events, seed, take_up

pytestmark = pytest.mark.luigi

JOBS = ("ViaLuigiMonthly", "ViaGatekeeperMonthly")


class ViaLuigiMonthly(gk.BusinessMonthTask):
    def run(self) -> None:
        pass


class ViaGatekeeperMonthly(gk.BusinessMonthTask):
    def run(self) -> None:
        pass


def months(*pairs: tuple[int, int]) -> list[dt.date]:
    return [dt.date(y, m, 1) for y, m in pairs]


def luigi_monthly(**params: Any) -> dict[str, Any]:
    return {"of": ViaLuigiMonthly, "param_name": "business_month", "months_back": 1200, **params}


CASES = [
    pytest.param(  # 2025, three months complete: the other nine, oldest first
        {"start": dt.date(2025, 1, 1), "stop": dt.date(2026, 1, 1), "task_limit": 50},
        ["2025-02", "2025-06", "2025-07"],
        months(*[(2025, m) for m in (1, 3, 4, 5, 8, 9, 10, 11, 12)]),
        id="gaps",
    ),
    pytest.param(
        {"start": dt.date(2025, 1, 1), "stop": dt.date(2026, 1, 1), "task_limit": 2},
        ["2025-01"],
        months((2025, 2), (2025, 3)),
        id="task-limit",
    ),
    pytest.param(
        {
            "start": dt.date(2025, 1, 1),
            "stop": dt.date(2025, 7, 1),
            "reverse": True,
            "task_limit": 2,
        },
        ["2025-06"],
        months((2025, 5), (2025, 4)),
        id="reverse",
    ),
    pytest.param(
        {"start": dt.date(2025, 3, 1), "stop": dt.date(2025, 3, 1)},
        [],
        [],
        id="empty-window",
    ),
]


@pytest.mark.parametrize(("window", "complete", "required"), CASES)
def test_monthly_range_requires_what_luigis_range_monthly_requires(
    ledger_cfg: gk.Ledger, window: dict[str, Any], complete: list[str], required: list[dt.date]
) -> None:
    seed(ledger_cfg, JOBS, complete)
    now = epoch(2026, 6, 15)
    theirs, their_events = take_up(RangeMonthly, "luigi", **luigi_monthly(now=now, **window))
    ours, our_events = take_up(
        gk.RangeBusinessMonthly, "gatekeeper", of=ViaGatekeeperMonthly, now=now, **window
    )
    assert theirs == required  # the reference: Luigi's own range
    assert ours == theirs
    assert our_events == [(e, "ViaGatekeeperMonthly", v) for e, _, v in their_events]


def test_an_open_window_requires_the_months_that_ended_on_both(ledger_cfg: gk.Ledger) -> None:
    """On 2026-06-15, [2026-04, ...): both require April and May; June has begun but not
    ended, and Luigi's open window stops at the current month too (``months_forward`` 0),
    unlike its daily range, which requires the day that has begun."""
    window = {"start": dt.date(2026, 4, 1), "now": epoch(2026, 6, 15)}
    theirs, their_events = take_up(RangeMonthly, "luigi", **luigi_monthly(**window))
    ours, our_events = take_up(
        gk.RangeBusinessMonthly, "gatekeeper", of=ViaGatekeeperMonthly, **window
    )
    assert theirs == ours == months((2026, 4), (2026, 5))
    assert our_events == [(e, "ViaGatekeeperMonthly", v) for e, _, v in their_events]
    assert our_events == events("ViaGatekeeperMonthly", 2, 0, 0.0)
