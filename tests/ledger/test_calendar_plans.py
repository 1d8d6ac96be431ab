"""Planning a calendar job over a real ledger, on both backends, against the reference
libraries: over 1990-2040, the due periods a range plans are exactly the reference's business
days, the gaps exactly those without a succeeded attempt, and ``previous_period`` walks the
same days back (the pure differential is tests/core/test_calendars.py)."""

from __future__ import annotations

import datetime as dt

import pytest

import gatekeeper as gk
from gatekeeper.core.periods import DAILY
from gatekeeper.core.planning import plan_from_ledger
from gatekeeper.core.schedule import Schedule
from tests.core.test_calendars import FIRST, STOP, _reference
from tests.helpers.ledgers import succeed

NOW = dt.datetime(2041, 1, 2, tzinfo=dt.timezone.utc)


@pytest.mark.parametrize("name", ["weekdays", "holidays:US", "holidays:GB-ENG", "exchange:XNYS"])
def test_a_calendar_plan_over_the_ledger_equals_the_reference(ledger: gk.Ledger, name: str) -> None:
    expected = _reference(name)
    done = expected[::173]  # about 75 succeeded days spread over the 51 years
    job = f"Load-{name.replace(':', '-')}"
    for day in done:
        succeed(ledger, job, day.isoformat())
    schedule = Schedule.parse(start=FIRST, stop=STOP, calendar=name)
    plan = plan_from_ledger(ledger, job, schedule=schedule, now=NOW, task_limit=None)
    assert list(plan.due) == expected
    assert set(plan.gaps) == set(expected) - set(done) and len(plan.gaps) == len(expected) - len(
        done
    )
    assert plan.complete_count == len(done)
    kind = DAILY.on(name)
    for i in range(1, len(expected), 997):  # previous_period's walk, sampled
        assert kind.shift(expected[i], -1) == expected[i - 1]
