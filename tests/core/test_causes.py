"""The pure rules of ``core/causes.py``: what blocks a period, and how it is said; and the
job profile's stored requirements."""

from __future__ import annotations

import datetime as dt

import pytest

from gatekeeper.core.causes import (
    Cause,
    JobProfile,
    Requirement,
    blocking_cause,
    profile,
    requirements,
)
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, HOURLY, parse_period
from gatekeeper.core.records import Attempt, RunState

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 11, 20, tzinfo=UTC)


def attempt(job: str, key: str, state: str, lease: float | None = None) -> Attempt:
    expires = None if lease is None else NOW + dt.timedelta(seconds=lease)
    return Attempt(
        job, key, 1, f"run-{job}-{key}", RunState(state), NOW, NOW, expires, error="disk full"
    )


ORDERS, PRICES = Requirement("Orders"), Requirement("Prices")


@pytest.mark.parametrize(
    ("upstream", "expected"),
    [
        ({}, ("Orders", "missing")),  # nothing recorded: the first requirement, missing
        ({"Orders": "succeeded", "Prices": "succeeded"}, None),
        ({"Orders": "succeeded"}, ("Prices", "missing")),
        ({"Orders": "running+", "Prices": "succeeded"}, None),  # live lease: waiting, not blocked
        ({"Orders": "running-", "Prices": "succeeded"}, ("Orders", "abandoned")),  # expired lease
        ({"Orders": "failed", "Prices": "succeeded"}, ("Orders", "failed")),
        ({"Prices": "failed"}, ("Prices", "failed")),  # a failure before a missing upstream
        ({"Orders": "abandoned", "Prices": "failed"}, ("Orders", "abandoned")),  # in order
    ],
)
def test_blocking_cause_names_a_failure_first_then_the_first_missing(
    upstream: dict[str, str], expected: tuple[str, str] | None
) -> None:
    key = "2026-11-18"
    found = {}
    for job, state in upstream.items():
        lease = {"running+": 60.0, "running-": -60.0}.get(state)
        found[job] = {key: attempt(job, key, state.rstrip("+-"), lease)}
    cause = blocking_cause(DAILY, key, (ORDERS, PRICES), found, NOW)
    assert (None if cause is None else (cause.job, cause.state)) == expected


@pytest.mark.parametrize(
    ("upstream", "expected"),
    [
        ({"Orders": "running+", "Prices": "succeeded"}, ("Orders", "held")),
        ({"Prices": "running+"}, ("Prices", "held")),  # held before a missing upstream
        ({"Orders": "running+", "Prices": "failed"}, ("Prices", "failed")),  # a failure first
        ({"Orders": "running+", "Prices": "running+"}, ("Orders", "held")),  # in order
        ({"Orders": "running-", "Prices": "running+"}, ("Orders", "abandoned")),
    ],
)
def test_blocking_cause_with_held_names_a_live_lease_after_failures(
    upstream: dict[str, str], expected: tuple[str, str]
) -> None:
    key = "2026-11-18"
    found = {}
    for job, state in upstream.items():
        lease = {"running+": 60.0, "running-": -60.0}.get(state)
        found[job] = {key: attempt(job, key, state.rstrip("+-"), lease)}
    cause = blocking_cause(DAILY, key, (ORDERS, PRICES), found, NOW, held=True)
    assert cause is not None and (cause.job, cause.state) == expected
    if cause.state == "held":
        assert cause.until == NOW + dt.timedelta(seconds=60)
        assert cause.describe(key) == (
            f"waiting on {cause.job}, held by run run-{cause.job}-{key} "
            f"until {cause.until.isoformat()}"
        )
        assert cause.to_json()["until"] == cause.until.isoformat()


def test_blocking_cause_reads_each_requirement_at_its_offset() -> None:
    yesterday = Requirement("Orders", -1)
    failed = {"Orders": {"2026-11-17": attempt("Orders", "2026-11-17", "failed")}}
    cause = blocking_cause(DAILY, "2026-11-18", (yesterday,), failed, NOW)
    assert cause is not None and (cause.period, cause.state) == ("2026-11-17", "failed")
    hour = HOURLY.key("2026-11-18T05:00:00+00:00")
    assert Requirement("Feed", -2).key_for(HOURLY, hour) == HOURLY.key("2026-11-18T03:00:00+00:00")


@pytest.mark.parametrize(
    ("cause", "of", "text"),
    [
        (Cause("Orders", "2026-11-18", "missing"), None, "Orders 2026-11-18 missing"),
        (Cause("Orders", "2026-11-18", "missing"), "2026-11-18", "Orders missing"),
        (
            Cause("Orders", "2026-11-17", "failed", 2, "r", "disk\n  full"),
            "2026-11-18",
            "Orders 2026-11-17 failed (attempt 2: disk full)",
        ),
        (
            Cause("Orders", "2026-11-18", "abandoned", 1, "r"),
            None,
            "Orders 2026-11-18 abandoned (attempt 1)",
        ),
        (
            Cause("Orders", "2026-11-18", "failed", 1, "r", "x" * 300),
            "2026-11-18",
            "Orders failed (attempt 1: " + "x" * 197 + "...)",
        ),
    ],
)
def test_cause_describe_is_one_line_and_leaves_out_its_own_period(
    cause: Cause, of: str | None, text: str
) -> None:
    assert cause.describe(of) == text


def test_profile_requirements_round_trip_and_bad_ones_are_refused() -> None:
    made = profile("Total", "daily", "Pacific/Kiritimati", [ORDERS, Requirement("Orders", -1)])
    assert isinstance(made, JobProfile) and made.period is DAILY
    assert JobProfile.parse_requires(made.requires_json()) == made.requires
    assert made.to_json()["requires"] == [
        {"job": "Orders", "offset": 0},
        {"job": "Orders", "offset": -1},
    ]
    for bad in ('{"Orders": 0}', '[["Orders"]]', "not json", '[[" Orders", 0]]'):
        with pytest.raises(InvalidInput) as refused:
            JobProfile.parse_requires(bad)
        assert refused.value.field in ("requires", "requires.job")
    with pytest.raises(InvalidInput):
        profile("Total", "fortnightly", "UTC")


WEEKDAYS = parse_period("daily").on("weekdays")
MONTHLY, QUARTERLY = parse_period("monthly"), parse_period("quarterly")


def test_requirement_within_keys_are_the_business_days_of_the_period() -> None:
    every_day = Requirement.within("Trades", WEEKDAYS)
    keys = every_day.keys_for(MONTHLY, "2026-09")
    assert keys[:3] == ("2026-09-01", "2026-09-02", "2026-09-03") and len(keys) == 22
    assert len(every_day.keys_for(QUARTERLY, "2026-Q3")) == 66
    assert Requirement("Prices", -1).keys_for(WEEKDAYS, "2026-09-07") == ("2026-09-04",)
    before = Requirement.within("Trades", WEEKDAYS, offset=-1)
    assert before.keys_for(MONTHLY, "2026-10")[-1] == "2026-09-30"
    with pytest.raises(InvalidInput):
        Requirement.within("Trades", MONTHLY)


def test_requirements_records_days_only_when_they_are_every_day_of_a_period() -> None:
    september = [
        ("Trades", WEEKDAYS, k)
        for k in Requirement.within("T", WEEKDAYS).keys_for(MONTHLY, "2026-09")
    ]
    august = [("Trades", WEEKDAYS, "2026-08-31")]
    same = [("Month0", MONTHLY, "2026-08"), ("Month0", MONTHLY, "2026-08")]
    found = requirements(MONTHLY, "2026-09", [*same, *september, *september[:3]])
    assert found == (Requirement("Month0", -1), Requirement.within("Trades", WEEKDAYS))
    assert requirements(MONTHLY, "2026-09", september[:-1]) == ()  # some days: not recorded
    assert requirements(MONTHLY, "2026-09", august) == ()  # one day of August only
    hours = [("Hour", HOURLY, "2026-09-01T00:00:00+00:00")]
    assert requirements(DAILY, "2026-09-01", hours) == ()


def test_blocking_cause_over_days_names_a_failed_day_before_a_held_earlier_one() -> None:
    every_day = Requirement.within("Trades", WEEKDAYS)
    days = {k: attempt("Trades", k, "succeeded") for k in every_day.keys_for(MONTHLY, "2026-09")}
    days["2026-09-02"] = attempt("Trades", "2026-09-02", "running", lease=60)
    days["2026-09-10"] = attempt("Trades", "2026-09-10", "failed")
    del days["2026-09-01"]
    upstream = {"Trades": days}
    cause = blocking_cause(MONTHLY, "2026-09", [every_day], upstream, NOW, held=True)
    assert cause is not None and (cause.period, cause.state) == ("2026-09-10", "failed")
    assert cause.reason() == "by Trades 2026-09-10 failed (attempt 1: disk full)"
    del days["2026-09-10"]
    held = blocking_cause(MONTHLY, "2026-09", [every_day], upstream, NOW, held=True)
    assert held is not None and (held.period, held.state, held.until) == (
        "2026-09-02",
        "held",
        NOW + dt.timedelta(seconds=60),
    )
    assert held.reason().startswith("waiting on Trades 2026-09-02, held by run run-Trades-")
    missing = blocking_cause(MONTHLY, "2026-09", [every_day], upstream, NOW)
    assert missing == Cause("Trades", "2026-09-01", "missing")


def test_profile_within_requirement_round_trips() -> None:
    made = profile("MonthEnd", "monthly", "UTC", [Requirement.within("Trades", WEEKDAYS)])
    assert made.requires_json() == '[["Trades", 0, "daily", "weekdays"]]'
    back = JobProfile.parse_requires(made.requires_json())
    assert back == made.requires and back[0].kind is WEEKDAYS
    assert made.to_json()["requires"] == [
        {"job": "Trades", "offset": 0, "kind": "daily", "calendar": "weekdays"}
    ]
