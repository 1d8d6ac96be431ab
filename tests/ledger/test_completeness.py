"""Greatest attempt wins for *completeness* too: ``completed_periods`` (and so
``bulk_complete``, range plans and chunks) agrees with ``complete()`` when a later attempt
failed or is running. Both backends.

A ``Fails if`` comment names the single-point bug its test was checked to fail with (and to
pass without): hand-made mutation testing, docs/mutation.md."""

from __future__ import annotations

import datetime as dt

import gatekeeper as gk
from tests.helpers.ledgers import T0, succeed
from tests.helpers.luigi_tasks import Trivial

UTC = dt.timezone.utc


# -- greatest attempt wins for completeness ---------------------------------------------------
# Fails if completed_periods took MAX(attempt) over succeeded attempts only.
# (states of attempts 1..n of one date, complete?)
HISTORIES: list[tuple[tuple[str, ...], bool]] = [
    ((), False),
    (("succeeded",), True),
    (("failed",), False),
    (("running",), False),
    (("succeeded", "failed"), False),
    (("succeeded", "running"), False),
    (("succeeded", "abandoned"), False),
    (("failed", "succeeded"), True),
    (("succeeded", "failed", "succeeded"), True),
    (("succeeded", "succeeded", "failed"), False),
]


DATES = [(dt.date(2026, 10, 1) + dt.timedelta(days=i)).isoformat() for i in range(len(HISTORIES))]


def record_histories(ledger: gk.Ledger, job: str) -> set[str]:
    """Record HISTORIES for ``job``, one date each; return the dates that must be complete."""
    for day, (states, _) in zip(DATES, HISTORIES, strict=True):
        for number, state in enumerate(states, start=1):
            ledger.record(job, day, number, f"{job}-{day}-{number}", state, T0)
    return {day for day, (_, done) in zip(DATES, HISTORIES, strict=True) if done}


def test_completed_periods_counts_only_a_succeeded_latest_attempt(ledger: gk.Ledger) -> None:
    expected = record_histories(ledger, "Load")
    assert ledger.completed_periods("Load", DATES[0], DATES[-1]) == expected
    for day in DATES:  # the same rule as readiness, date by date
        assert (day in expected) is bool(gk.check_ready(ledger, ["Load"], day))


def test_completed_periods_with_consumer_needs_the_latest_attempt_succeeded(
    ledger: gk.Ledger,
) -> None:
    """A publication made while attempt 1 stood does not make a failed attempt 2 complete."""
    for day in DATES[:3]:
        succeed(ledger, "Up", day)
        ledger.record("Report", day, 1, f"report-{day}-1", "succeeded", T0)
        ledger.publish("Report", day, ["Up"], f"fp-{day}")
    ledger.record("Report", DATES[1], 2, "report-2-2", "failed", T0)
    ledger.record("Report", DATES[2], 2, "report-3-2", "running", T0)
    assert ledger.completed_periods("Report", DATES[0], DATES[2], consumer="Report") == {DATES[0]}


def test_bulk_complete_and_range_plan_agree_with_complete(ledger_cfg: gk.Ledger) -> None:
    expected = record_histories(ledger_cfg, "Trivial")
    one_by_one = {
        day for day in DATES if Trivial(business_date=dt.date.fromisoformat(day)).complete()
    }
    assert one_by_one == expected
    bulk = Trivial.bulk_complete([dt.date.fromisoformat(day) for day in DATES])
    assert {d.isoformat() for d in bulk} == expected
    now = int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp())
    plan = gk.RangeBusinessDaily(
        of=Trivial,
        start=dt.date.fromisoformat(DATES[0]),
        stop=dt.date.fromisoformat(DATES[-1]) + dt.timedelta(days=1),
        now=now,
    ).plan()
    assert {d.isoformat() for d in plan.gaps} == set(DATES) - expected
