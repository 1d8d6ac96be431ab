"""Differential tests: each range case of Luigi's own test/range_test.py (an empty window, a
start after now, a stop in the future, long windows, hourly, reverse, task_limit) run through
Luigi's ``RangeDaily``/``RangeHourly`` and through gatekeeper's ``RangeBusinessDaily``/
``Hourly`` by a real Luigi worker (``luigi.build``, local scheduler), over two gatekeeper task
classes whose ledgers hold the same complete periods.

Both must require the same periods in the same order and fire each ``event.tools.range.*``
event once per worker take-up. Where gatekeeper differs on purpose, a test pins both numbers
(docs/inline.md, "Range events and windows, beside Luigi's"):

- Luigi's figures are over ``[start, stop)`` whatever is due, counting the dates not yet due
  (after ``now``) as complete; gatekeeper's count due periods only;
- Luigi requires a date once it has begun (``now`` past its midnight), gatekeeper once it has
  ended (plus ``lateness``);
- Luigi checks only ``days_back`` (default 100) days back and counts the older ones of the
  window as complete, unchecked; gatekeeper checks the whole window from ``start``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import luigi
import luigi.tools.range
import pytest
from luigi.task_register import Register
from luigi.tools.range import RangeDaily, RangeEvent, RangeHourly

import gatekeeper as gk
from gatekeeper.core.periods import HOURLY
from gatekeeper.luigi.range import RangeBusinessBase

pytestmark = pytest.mark.luigi  # the Luigi adapter's fidelity: run on every supported Luigi

UTC = dt.timezone.utc
EVENTS = (RangeEvent.DELAY, RangeEvent.COMPLETE_COUNT, RangeEvent.COMPLETE_FRACTION)
FIRED: dict[str, list[tuple[str, str, Any]]] = {"luigi": [], "gatekeeper": []}


def _sink(side: str, event: str) -> Any:
    return lambda family, value: FIRED[side].append((event, family, value))


for _event in EVENTS:
    luigi.tools.range.RangeBase.event_handler(_event)(_sink("luigi", _event))
    RangeBusinessBase.event_handler(_event)(_sink("gatekeeper", _event))


class ViaLuigiDaily(gk.BusinessDateTask):
    def run(self) -> None:
        pass


class ViaGatekeeperDaily(gk.BusinessDateTask):
    def run(self) -> None:
        pass


class ViaLuigiHourly(gk.BusinessHourTask):
    def run(self) -> None:
        pass


class ViaGatekeeperHourly(gk.BusinessHourTask):
    def run(self) -> None:
        pass


def epoch(*at: int) -> int:
    return int(dt.datetime(*at, tzinfo=UTC).timestamp())  # type: ignore[misc]


def seed(ledger: gk.Ledger, jobs: tuple[str, str], keys: list[Any]) -> None:
    """The same complete periods for both jobs."""
    at = dt.datetime(2000, 1, 1, tzinfo=UTC)
    for job in jobs:
        for key in keys:
            ledger.record(job, key, 1, f"{job}-{key}", "succeeded", at)


def take_up(range_class: Any, side: str, **params: Any) -> tuple[list[Any], list[Any]]:
    """Build the range with a real worker; (the periods it required, in order; the events it
    fired). Luigi's required periods are its ``requires()`` (cached, fires nothing again);
    gatekeeper's are its session's scheduled periods, in fill order."""
    FIRED[side].clear()
    Register.clear_instance_cache()
    rng = range_class(**params)
    assert luigi.build([rng], local_scheduler=True, log_level="WARNING")
    if side == "luigi":
        name = rng.param_name  # the of class's period parameter (given)
        required = [getattr(task, name) for task in rng.requires()]
    else:
        required = [rng.label_to_param(label) for label in rng.session.plan.scheduled]
    return required, list(FIRED[side])


def luigi_daily(**params: Any) -> dict[str, Any]:
    return {"of": ViaLuigiDaily, "param_name": "business_date", **params}


def luigi_hourly(**params: Any) -> dict[str, Any]:
    return {"of": ViaLuigiHourly, "param_name": "business_hour", **params}


def events(family: str, delay: int, count: int, fraction: float) -> list[tuple[str, str, Any]]:
    return [
        (RangeEvent.DELAY, family, delay),
        (RangeEvent.COMPLETE_COUNT, family, count),
        (RangeEvent.COMPLETE_FRACTION, family, fraction),
    ]


def days(first: dt.date, n: int) -> list[dt.date]:
    return [first + dt.timedelta(days=i) for i in range(n)]


# -- the same required periods and the same events --------------------------------------------
DAILY_CASES = [
    pytest.param(  # Luigi's test_stop_before_days_back: nothing to do, stop is earlier
        {"start": dt.date(2014, 3, 20), "stop": dt.date(2014, 3, 20), "reverse": True},
        {"days_back": 4, "days_forward": 20},
        epoch(2015, 1, 1, 4),
        [],
        id="empty-window",
    ),
    pytest.param(  # start after now: nothing due
        {"start": dt.date(2014, 3, 20)},
        {},
        epoch(2000, 1, 1),
        [],
        id="start-after-now",
    ),
    pytest.param(  # a gap in the middle, filled oldest first
        {"start": dt.date(2026, 10, 1), "stop": dt.date(2026, 10, 11)},
        {},
        epoch(2026, 11, 30),
        [*days(dt.date(2026, 10, 1), 3), *days(dt.date(2026, 10, 6), 2)],
        id="gaps",
    ),
    pytest.param(  # task_limit: the first N missing, skipping complete ones
        {"start": dt.date(2026, 10, 1), "stop": dt.date(2026, 10, 11), "task_limit": 2},
        {},
        epoch(2026, 11, 30),
        [dt.date(2026, 10, 1), dt.date(2026, 10, 3)],
        id="task-limit",
    ),
    pytest.param(  # reverse: the newest N missing, newest first
        {
            "start": dt.date(2026, 10, 1),
            "stop": dt.date(2026, 10, 11),
            "task_limit": 3,
            "reverse": True,
        },
        {},
        epoch(2026, 11, 30),
        [dt.date(2026, 10, 9), dt.date(2026, 10, 10)],
        id="reverse",
    ),
    pytest.param(  # Luigi's long window (start long before, task_limit 4), days_back covering it
        {"start": dt.date(2011, 3, 20), "stop": dt.date(2017, 10, 22), "task_limit": 4},
        {"days_back": 10 * 365},
        epoch(2017, 10, 22),
        days(dt.date(2011, 3, 20), 2),
        id="long-window",
    ),
]


@pytest.mark.parametrize(("window", "luigi_only", "now", "complete"), DAILY_CASES)
def test_daily_range_requires_what_luigis_range_requires_and_fires_the_same_events(
    ledger_cfg: gk.Ledger,
    window: dict[str, Any],
    luigi_only: dict[str, Any],
    now: int,
    complete: list[dt.date],
) -> None:
    seed(ledger_cfg, ("ViaLuigiDaily", "ViaGatekeeperDaily"), complete)
    theirs, their_events = take_up(
        RangeDaily, "luigi", **luigi_daily(now=now, **window, **luigi_only)
    )
    ours, our_events = take_up(
        gk.RangeBusinessDaily, "gatekeeper", of=ViaGatekeeperDaily, now=now, **window
    )
    assert ours == theirs
    rename = [(e, "ViaGatekeeperDaily", v) for e, _, v in their_events]
    assert our_events == rename  # once each, in Luigi's order, with Luigi's figures
    assert len(our_events) == len(EVENTS)


HOURLY_CASES = [
    pytest.param(  # Luigi's test_start_after_hours_forward
        {"start": dt.datetime(2014, 3, 20, 17)},
        {"hours_back": 4, "hours_forward": 20},
        epoch(2000, 1, 1, 4),
        [],
        id="start-after-now",
    ),
    pytest.param(  # Luigi's test_start_after_long_hours_back (task_limit 4), aligned now
        {"start": dt.datetime(2014, 3, 20, 17), "task_limit": 4},
        {"hours_back": 365 * 24},
        epoch(2014, 3, 22, 12),
        [dt.datetime(2014, 3, 20, 18, tzinfo=UTC)],
        id="task-limit",
    ),
    pytest.param(
        {"start": dt.datetime(1999, 12, 31, 20), "reverse": True, "task_limit": 3},
        {},
        epoch(2000, 1, 1, 4),
        [dt.datetime(2000, 1, 1, 2, tzinfo=UTC)],
        id="reverse",
    ),
]


@pytest.mark.parametrize(("window", "luigi_only", "now", "complete"), HOURLY_CASES)
def test_hourly_range_requires_what_luigis_range_requires_and_fires_the_same_events(
    ledger_cfg: gk.Ledger,
    window: dict[str, Any],
    luigi_only: dict[str, Any],
    now: int,
    complete: list[dt.datetime],
) -> None:
    keys = [HOURLY.key(hour) for hour in complete] if complete else []
    seed(ledger_cfg, ("ViaLuigiHourly", "ViaGatekeeperHourly"), keys)
    theirs, their_events = take_up(
        RangeHourly, "luigi", **luigi_hourly(now=now, **window, **luigi_only)
    )
    ours, our_events = take_up(
        gk.RangeBusinessHourly, "gatekeeper", of=ViaGatekeeperHourly, now=now, **window
    )
    assert ours == theirs
    assert our_events == [(e, "ViaGatekeeperHourly", v) for e, _, v in their_events]


def test_events_fire_once_per_worker_take_up(ledger_cfg: gk.Ledger) -> None:
    """Each build is a take-up: one of each event, on both sides, every time (the second
    sees the window the first filled)."""
    window = {
        "start": dt.date(2026, 10, 1),
        "stop": dt.date(2026, 10, 6),
        "now": epoch(2026, 11, 30),
    }
    for expected in ((5, 0, 0.0), (0, 5, 1.0)):
        _, theirs = take_up(RangeDaily, "luigi", **luigi_daily(**window))
        _, ours = take_up(gk.RangeBusinessDaily, "gatekeeper", of=ViaGatekeeperDaily, **window)
        assert theirs == events("ViaLuigiDaily", *expected)
        assert ours == events("ViaGatekeeperDaily", *expected)


# -- where gatekeeper differs on purpose: both numbers, pinned -------------------------------
def test_a_stop_in_the_future_luigi_counts_not_yet_due_dates_as_complete(
    ledger_cfg: gk.Ledger,
) -> None:
    """[2026-10-01, 2027-01-01) at 2026-11-30, 10-01..10-10 complete: both require
    10-11..11-29 (50 dates); Luigi's figures are over the 92 dates of the window, the 32 not
    yet due (11-30..12-31) counted complete: count 42, fraction 42/92; gatekeeper's over the
    60 due dates: count 10, fraction 10/60. The delay (due dates from the first missing one)
    is 50 for gatekeeper, 82 for Luigi (it runs to 12-31)."""
    done = days(dt.date(2026, 10, 1), 10)
    seed(ledger_cfg, ("ViaLuigiDaily", "ViaGatekeeperDaily"), done)
    window = {
        "start": dt.date(2026, 10, 1),
        "stop": dt.date(2027, 1, 1),
        "now": epoch(2026, 11, 30),
        "task_limit": 100,
    }
    theirs, their_events = take_up(RangeDaily, "luigi", **luigi_daily(**window))
    ours, our_events = take_up(gk.RangeBusinessDaily, "gatekeeper", of=ViaGatekeeperDaily, **window)
    assert ours == theirs == days(dt.date(2026, 10, 11), 50)
    assert their_events == events("ViaLuigiDaily", 82, 42, 42 / 92)
    assert our_events == events("ViaGatekeeperDaily", 50, 10, 10 / 60)


def test_luigi_requires_a_date_once_begun_gatekeeper_once_ended(ledger_cfg: gk.Ledger) -> None:
    """At 2026-10-05T12:00 Luigi requires 10-05 (its midnight has passed: 5 dates), gatekeeper
    not until 10-06T00:00 plus lateness (4 dates)."""
    window = {"start": dt.date(2026, 10, 1), "now": epoch(2026, 10, 5, 12)}
    theirs, their_events = take_up(RangeDaily, "luigi", **luigi_daily(**window))
    ours, our_events = take_up(gk.RangeBusinessDaily, "gatekeeper", of=ViaGatekeeperDaily, **window)
    assert theirs == days(dt.date(2026, 10, 1), 5)
    assert ours == days(dt.date(2026, 10, 1), 4)
    assert their_events == events("ViaLuigiDaily", 5, 0, 0.0)
    assert our_events == events("ViaGatekeeperDaily", 4, 0, 0.0)


def test_luigi_leaves_dates_before_days_back_unchecked_gatekeeper_checks_them(
    ledger_cfg: gk.Ledger,
) -> None:
    """[2026-01-01, 2026-11-30) at 2026-11-30 with Luigi's default days_back (100): Luigi
    requires from 2026-08-22 and counts the 233 older dates complete, unchecked (count 233 of
    333); gatekeeper requires from 2026-01-01 (count 0 of 333)."""
    window = {
        "start": dt.date(2026, 1, 1),
        "stop": dt.date(2026, 11, 30),
        "now": epoch(2026, 11, 30),
        "task_limit": 2,
    }
    theirs, their_events = take_up(RangeDaily, "luigi", **luigi_daily(**window))
    ours, our_events = take_up(gk.RangeBusinessDaily, "gatekeeper", of=ViaGatekeeperDaily, **window)
    assert theirs == days(dt.date(2026, 8, 22), 2)
    assert ours == days(dt.date(2026, 1, 1), 2)
    assert their_events == events("ViaLuigiDaily", 100, 233, 233 / 333)
    assert our_events == events("ViaGatekeeperDaily", 333, 0, 0.0)
