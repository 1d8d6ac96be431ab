"""The pure rules of ``core/causes.py``: what blocks a period, and how it is said; and the
job profile's stored requirements."""

from __future__ import annotations

import datetime as dt

import pytest

from gatekeeper.core.causes import Cause, JobProfile, Requirement, blocking_cause, profile
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, HOURLY
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
