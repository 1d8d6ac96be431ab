"""``gatekeeper_lag_seconds`` counts on the job's calendar (issue 47, item 3): now minus the
due time of the first due business period not filled, 0 when none is. A weekday job walked
across a weekend and a holiday, and a monthly job across a month, each filled an hour after
each period falls due, never lag more than that hour: docs/serve.md's alert rule (lag above
two days) never fires."""

from __future__ import annotations

import datetime as dt
import re
from pathlib import Path

import gatekeeper as gk
from gatekeeper.core.causes import profile
from gatekeeper.core.periods import DAILY, MONTHLY, Period
from gatekeeper.web.views import job_view

UTC = dt.timezone.utc
ROOT = Path(__file__).resolve().parents[2]
HOUR = dt.timedelta(hours=1)


def alert_threshold() -> float:
    """The lag docs/serve.md's GatekeeperLagging rule fires above, in seconds."""
    text = (ROOT / "docs" / "serve.md").read_text(encoding="utf-8")
    found = re.search(r"expr: gatekeeper_lag_seconds > (\d+) \* 86400", text)
    assert found is not None, "docs/serve.md names no lag threshold"
    return int(found.group(1)) * 86400.0


def walk(
    ledger: gk.Ledger, job: str, kind: Period, start: str, until: dt.datetime, step: dt.timedelta
) -> list[float]:
    """The job's lag at every ``step`` from its first period to ``until``, each business
    period recorded succeeded an hour after it falls due (its end: no lateness)."""
    ledger.record_profile(profile(job, kind, "UTC", lateness="0s", start=start))
    base, label = kind.base, kind.label(start)
    now = kind.interval(label, "UTC").start + HOUR / 2  # off the hour every period ends on
    lags = []
    while now < until:
        while kind.interval(label, "UTC").end + HOUR <= now:  # filled an hour after due
            if kind.is_business(label):
                key = kind.key(label)
                ledger.record(job, key, 1, f"{job}-{key}", "succeeded", now)
            label = base.at(base.ordinal(label) + 1)
        lags.append(job_view(ledger, job, dt.timedelta(days=60), now).lag_seconds)
        now += step
    return lags


def test_lag_of_a_weekday_job_across_a_weekend_and_a_holiday_stays_within_an_hour(
    ledger: gk.Ledger,
) -> None:
    kind = DAILY.on("holidays:US")  # Thanksgiving, Thursday 2026-11-26, then a weekend
    lags = walk(ledger, "Load", kind, "2026-11-23", dt.datetime(2026, 12, 2, tzinfo=UTC), 3 * HOUR)
    assert max(lags) <= HOUR.total_seconds() < alert_threshold()
    assert min(lags) == 0 and any(lag > 0 for lag in lags)  # it lags while a day is unfilled


def test_lag_of_a_monthly_job_across_a_month_stays_within_an_hour(ledger: gk.Ledger) -> None:
    # every 8 h from 00:30 on October 1st: a step half an hour after each month falls due
    lags = walk(
        ledger, "Month", MONTHLY, "2026-10", dt.datetime(2026, 12, 15, tzinfo=UTC), 8 * HOUR
    )
    assert max(lags) <= HOUR.total_seconds() < alert_threshold()
    assert any(lag > 0 for lag in lags)


def test_complete_through_and_lag_are_each_jobs_own_zone(ledger: gk.Ledger) -> None:
    """Two jobs with the same days complete and the same first gap, one on UTC and one on
    New York time: each one's complete-through instant and lag are its own zone's (the
    intervals the views remember are remembered per zone)."""
    now = dt.datetime(2026, 3, 20, 12, tzinfo=UTC)
    for job, zone in (("Utc", "UTC"), ("NewYork", "America/New_York")):
        ledger.record_profile(profile(job, DAILY, zone, lateness="0s", start="2026-03-01"))
        for day in range(1, 11):
            key = f"2026-03-{day:02d}"
            ledger.record(job, key, 1, f"{job}-{key}", "succeeded", now)
    utc, new_york = (
        job_view(ledger, job, dt.timedelta(days=60), now) for job in ("Utc", "NewYork")
    )
    assert utc.through_end == dt.datetime(2026, 3, 11, tzinfo=UTC)
    assert new_york.through_end == dt.datetime(2026, 3, 11, 4, tzinfo=UTC)  # EDT from 03-08
    assert utc.lag_seconds - new_york.lag_seconds == 4 * 3600
