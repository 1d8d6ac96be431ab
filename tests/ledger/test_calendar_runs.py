"""Runs of complete periods for a job on a business calendar equal the full scan.

A job whose profile names a calendar other than ``all`` keeps its complete weekdays as runs
that bridge weekends (``ledger/run_lines.py``). Random histories (those of
``test_complete_runs``, over ten days with two weekends and a holiday, plus profile changes
between ``all``, ``weekdays`` and ``holidays:US``) are driven on a real SQLite file and a
real PostgreSQL schema; after every step, for the job and the job as a publisher, the runs
read on every day, on weekdays, on ``holidays:US`` and on a calendar with a Saturday session
equal the full scan restricted to that kind's business days, the stored rows keep their
lines' rules, and plans from the runs equal plans from the full scan.
"""

from __future__ import annotations

import datetime as dt
import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.causes import JobProfile
from gatekeeper.core.periods import DAILY, Period
from gatekeeper.core.periods.calendars import WEEKDAYS, AdjustedCalendar
from gatekeeper.core.planning import plan_from_ledger
from gatekeeper.core.schedule import Schedule
from gatekeeper.ledger.run_lines import WEEKDAY_DAYS
from gatekeeper.ledger.schema import SCHEMA_VERSION
from tests.helpers.examples import examples
from tests.helpers.ledgers import T0
from tests.ledger.test_complete_runs import SPAN, History, shared_ledger, steps

__all__ = ["shared_ledger"]  # the fixture, shared with test_complete_runs

FIRST = "2026-05-21"  # a Thursday: two weekends and Memorial Day (Monday 25th) in ten days
DAYS = 10
CALENDARS = ("all", "weekdays", "holidays:US")
SATURDAYS = AdjustedCalendar("with-saturday", WEEKDAYS, (), [dt.date(2026, 5, 23)])
READERS = (
    DAILY,
    DAILY.on("weekdays"),
    DAILY.on("holidays:US"),
    DAILY.on(SATURDAYS),  # not weekdays only: a bridged run is split at its weekends
)
#: a step of test_complete_runs (or a new calendar) and which of two days its index names
calendar_steps = st.tuples(
    st.one_of(
        steps,
        st.tuples(st.just("calendar"), st.integers(0, SPAN - 1), st.sampled_from(CALENDARS)),
    ),
    st.integers(0, 1),
)


def _key(i: int) -> str:
    return DAILY.key(DAILY.at(DAILY.ordinal(FIRST) + i))


class CalendarHistory(History):
    """A History over ten days from a Thursday whose job's profile may name a calendar."""

    def __init__(self, ledger: gk.Ledger, calendar: str | None):
        super().__init__(ledger, DAILY, span=DAYS)
        self.keys = [_key(i) for i in range(DAYS)]
        for key in self.keys:
            ledger.record(self.up, key, 1, f"{self.up}-{key}", "succeeded", T0)
        self.calendar = "all"
        if calendar is not None:
            self.profile(calendar)

    def profile(self, calendar: str) -> None:
        kind = DAILY.on(calendar)
        self.ledger.record_profile(JobProfile(self.job, kind, "UTC", calendar=calendar))
        self.calendar = calendar

    def _apply(self, step: tuple[Any, ...]) -> None:
        if step[0] == "calendar":
            self.profile(step[2])
            return
        super()._apply(step)

    def check(self) -> None:
        end = len(self.keys) - 1
        for a, b in ((0, end), (1, end - 2), (2, 2), (4, 4), (2, 5), (end, end)):
            first, last = self.keys[a], self.keys[b]
            for consumer in (None, self.job):
                scan = self.ledger.completed_periods(self.job, first, last, consumer)
                for kind in READERS:
                    runs = self.ledger.complete_runs(self.job, first, last, consumer, period=kind)
                    assert runs.period is kind
                    wanted = {k for k in scan if kind.is_business(k)}
                    assert set(runs.keys()) == wanted, (first, last, consumer, kind)
        self._check_stored()
        self._check_plans()

    def _check_stored(self) -> None:
        bridged = self.calendar != "all"
        for flag in (0, 1):
            rows = self.ledger.read(
                "SELECT calendar, first_period, last_period FROM gk_complete_runs WHERE job = ? "
                "AND published = ? ORDER BY first_period",
                (self.job, flag),
            )
            for tag in ("all", "weekdays"):
                line: Period = WEEKDAY_DAYS if tag == "weekdays" else DAILY
                mine = [(a, b) for t, a, b in rows if t == tag]
                assert bridged or tag == "all" or not mine, rows
                for a, b in mine:  # a bridged job's plain rows hold weekends alone
                    if bridged and tag == "all":
                        assert all(DAILY.at(n).weekday() >= 5 for n in _days(a, b)), rows
                spans = [(line.ordinal(a), line.ordinal(b)) for a, b in mine]
                for (a, b), (c, _) in itertools.pairwise(spans):
                    assert a <= b < c - 1, (tag, spans)

    def _check_plans(self) -> None:
        stop = DAILY.key(DAILY.at(DAILY.ordinal(self.keys[-1]) + 1))
        now = DAILY.closes_at(DAILY.label(stop), "UTC")
        for calendar in CALENDARS:
            for consumer in (None, self.job):
                window = Schedule.parse(
                    start=self.keys[0], stop=stop, period=DAILY, calendar=calendar
                )
                request: dict[str, Any] = {
                    "schedule": window,
                    "now": now,
                    "consumer": consumer,
                    "task_limit": None,
                }

                def scan(first: str, last: str, who: str | None = consumer) -> set[str]:
                    return self.ledger.completed_periods(self.job, first, last, who)

                from_runs = plan_from_ledger(self.ledger, self.job, **request)
                from_scan = plan_from_ledger(self.ledger, self.job, complete=scan, **request)
                assert from_runs == from_scan, calendar


def _days(first: str, last: str) -> range:
    return range(DAILY.ordinal(first), DAILY.ordinal(last) + 1)


@settings(
    max_examples=examples(50),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    calendar=st.sampled_from((None, *CALENDARS)),
    history=st.lists(calendar_steps, min_size=8, max_size=40),
)
def test_calendar_runs_equal_the_full_scan_after_every_step(
    shared_ledger: gk.Ledger, calendar: str | None, history: list[tuple[tuple[Any, ...], int]]
) -> None:
    story = CalendarHistory(shared_ledger, calendar)
    for step, half in history:  # a step's index names one of five days: here one of ten
        story.apply((step[0], step[1] * 2 + half, *step[2:]))
        story.check()


def test_a_weekday_job_without_gaps_is_one_run(ledger: gk.Ledger) -> None:
    """Four weeks of weekdays complete: one row; a failed repair of a Wednesday splits it in
    two; a Saturday recorded before the calendar was set stays complete on every day, never
    on weekdays; a bridged weekend is never read as complete on every day."""
    story = CalendarHistory(ledger, "weekdays")
    job = story.job
    days = [DAILY.at(DAILY.ordinal("2026-06-01") + i) for i in range(28)]  # from a Monday
    ledger.record(job, "2026-06-06", 1, f"{job}-sat", "succeeded", T0)  # a Saturday
    for i, day in enumerate(days):
        if day.weekday() < 5:
            ledger.record(job, DAILY.key(day), 1, f"{job}-{i}", "succeeded", T0)
    rows = ledger.read(
        "SELECT calendar, first_period, last_period FROM gk_complete_runs "
        "WHERE job = ? AND published = 0 ORDER BY first_period",
        (job,),
    )
    assert rows == [("weekdays", "2026-06-01", "2026-06-26"), ("all", "2026-06-06", "2026-06-06")]
    weekdays = ledger.complete_runs(job, "2026-06-01", "2026-06-28", period=DAILY.on("weekdays"))
    assert len(weekdays.spans) == 1 and len(weekdays) == 20
    every = ledger.complete_runs(job, "2026-06-01", "2026-06-28")
    assert "2026-06-06" in every and "2026-06-07" not in every and "2026-06-13" not in every
    assert len(every) == 21
    ledger.record(job, "2026-06-10", 2, f"{job}-wed", "failed", T0)
    rows = ledger.read(
        "SELECT first_period, last_period FROM gk_complete_runs WHERE job = ? "
        "AND published = 0 AND calendar = 'weekdays' ORDER BY first_period",
        (job,),
    )
    assert rows == [("2026-06-01", "2026-06-09"), ("2026-06-11", "2026-06-26")]
    story.check()


def test_a_new_calendar_rebuilds_the_jobs_runs(ledger: gk.Ledger) -> None:
    """A job planned on every day, then given a calendar (its range records the profile):
    its runs are rebuilt bridged, in the profile's transaction; given ``all`` again, plain."""
    story = CalendarHistory(ledger, None)
    for i, key in enumerate(story.keys):
        if DAILY.label(key).weekday() < 5:
            ledger.record(story.job, key, 1, f"{story.job}-{i}", "succeeded", T0)

    def rows() -> list[tuple[str, str, str]]:
        return ledger.read(
            "SELECT calendar, first_period, last_period FROM gk_complete_runs "
            "WHERE job = ? AND published = 0 ORDER BY first_period",
            (story.job,),
        )

    plain = rows()
    assert len(plain) == 2 and {r[0] for r in plain} == {"all"}
    story.profile("holidays:US")
    assert rows() == [("weekdays", story.keys[0], story.keys[-2])]
    story.check()
    story.profile("weekdays")  # the same line: nothing rebuilt, still exact
    assert rows() == [("weekdays", story.keys[0], story.keys[-2])]
    story.profile("all")
    assert rows() == plain
    story.check()


def test_a_ledger_of_the_previous_version_migrates_to_bridged_runs(ledger_url: str) -> None:
    """A ledger at schema 9 (runs of every day, no line column) with a weekday job's profile
    opens, migrates, keeps its answers and plans, and holds that job's runs bridged."""
    with gk.open_ledger(ledger_url) as led:
        story = CalendarHistory(led, "weekdays")
        for i, key in enumerate(story.keys):
            if DAILY.label(key).weekday() < 5 and i != 6:
                led.record(story.job, key, 1, f"{story.job}-{i}", "succeeded", T0)
                if i % 3 == 0:
                    led.publish(story.job, key, [story.up], "fp")
        led.record(story.job, story.keys[3], 1, f"{story.job}-sun", "succeeded", T0)  # Sunday
        from gatekeeper.ledger.runs import CompleteRuns

        with led.transaction():
            led.execute("ALTER TABLE gk_complete_runs DROP COLUMN calendar")
            CompleteRuns(led.sql).rebuild(tagged=False)  # as schema 9 holds them
            led.execute("UPDATE gk_schema SET version = 9")
    with gk.open_ledger(ledger_url) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION
        story.ledger = migrated
        tags = migrated.read(
            "SELECT calendar, COUNT(*) FROM gk_complete_runs WHERE job = ? AND published = 0 "
            "GROUP BY calendar ORDER BY calendar",
            (story.job,),
        )
        assert tags == [("all", 1), ("weekdays", 2)]  # the Sunday; weekdays split at the 27th
        story.check()
