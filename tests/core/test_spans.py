"""PeriodSpan (a plan's due periods, made on demand) and PeriodRuns (complete periods as
coalesced runs) behave as the tuple and the set they stand for."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, HOURLY
from gatekeeper.core.planning import plan_range
from gatekeeper.core.spans import PeriodRuns, PeriodSpan

BASE = DAILY.ordinal("2026-03-01")
UTC = dt.timezone.utc


@given(st.sets(st.integers(0, 60)), st.integers(0, 60), st.integers(0, 60))
def test_runs_hold_exactly_their_ordinals_and_the_missing_ones_are_the_rest(
    held: set[int], lo: int, hi: int
) -> None:
    runs = PeriodRuns.of(DAILY, {BASE + n for n in held})
    assert list(runs.missing(BASE + lo, BASE + hi)) == [
        BASE + n for n in range(lo, hi) if n not in held
    ]
    assert len(runs) == len(held)
    for n in range(-1, 62):
        assert (DAILY.at(BASE + n) in runs) == (n in held)
        assert (DAILY.key(DAILY.at(BASE + n)) in runs) == (n in held)
    for (_, end), (start, _) in zip(runs.spans, runs.spans[1:], strict=False):
        assert end < start  # never adjacent: coalesced
    assert PeriodRuns.from_keys(DAILY, runs.key_pairs()) == runs


def test_runs_from_overlapping_pairs_coalesce_and_a_bad_pair_is_refused() -> None:
    runs = PeriodRuns.from_keys(
        DAILY,
        [("2026-03-05", "2026-03-07"), ("2026-03-01", "2026-03-04"), ("2026-03-06", "2026-03-09")],
    )
    assert runs.key_pairs() == [("2026-03-01", "2026-03-09")]
    with pytest.raises(InvalidInput, match="last"):
        PeriodRuns.from_keys(DAILY, [("2026-03-05", "2026-03-04")])
    with pytest.raises(InvalidInput, match="first"):
        PeriodRuns.from_keys(DAILY, [("2026-3-5", "2026-03-04")])


def test_a_span_is_the_tuple_of_its_labels() -> None:
    span = PeriodSpan(
        HOURLY, HOURLY.ordinal("2026-03-01T22:00Z"), HOURLY.ordinal("2026-03-02T02:00Z")
    )
    hours = tuple(dt.datetime(2026, 3, 1, 22, tzinfo=UTC) + dt.timedelta(hours=h) for h in range(4))
    assert span == hours and list(span) == list(hours) and len(span) == 4
    assert span[-1] == hours[-1] and span[1:3] == hours[1:3] and span[5:] == ()
    assert span.index(hours[2]) == 2 and span.index("2026-03-02T00:00Z") == 2
    assert hours[0] in span and dt.datetime(2026, 3, 2, 2, tzinfo=UTC) not in span
    assert "not an hour" not in span
    with pytest.raises(IndexError):
        span[4]
    with pytest.raises(ValueError):
        span.index(dt.datetime(2026, 3, 3, tzinfo=UTC))
    assert PeriodSpan(DAILY, 5, 2) == () and hash(span) == hash(hours)


def test_a_plan_from_runs_equals_the_plan_from_keys_and_is_refused_for_the_other_kind() -> None:
    done = {DAILY.key(DAILY.at(BASE + n)) for n in range(40) if n % 7}
    request = {
        "start": "2026-03-01",
        "stop": "2026-04-10",
        "now": dt.datetime(2026, 5, 1, tzinfo=UTC),
    }
    runs = PeriodRuns.of(DAILY, (DAILY.ordinal(k) for k in done))
    assert plan_range(runs, **request) == plan_range(done, **request)
    with pytest.raises(InvalidInput, match="complete"):
        plan_range(PeriodRuns.of(HOURLY, [1]), **request)
