"""The runs of complete periods the ledger keeps equal the full scan, after every change.

Random histories (successes, failures, explicit repairs, out-of-order arrivals, takeovers of
expired leases, fenced and unfenced publications, republishes, refused writes) are driven on a
real SQLite file and a real PostgreSQL schema; after every step, for the job and for the job
as a publisher, the runs read from ``gk_complete_runs`` equal the keys of the full scan
(``completed_periods``), the stored runs are disjoint and never adjacent, and a plan made from
the runs equals the plan made from the full scan.
"""

from __future__ import annotations

import datetime as dt
import itertools
import threading
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.errors import (
    InvalidInput,
    LeaseHeld,
    LeaseLost,
    NotReady,
    PublicationConflict,
    StateConflict,
)
from gatekeeper.core.periods import DAILY, HOURLY, Period
from gatekeeper.core.planning import plan_from_ledger
from gatekeeper.core.schedule import Schedule
from gatekeeper.core.spans import PeriodRuns
from gatekeeper.ledger.schema import SCHEMA_VERSION
from tests.helpers.examples import examples
from tests.helpers.ledgers import T0

SPAN = 5  # periods in the window the histories touch
REFUSALS = (LeaseHeld, LeaseLost, NotReady, PublicationConflict, StateConflict)
STATES = ("running", "succeeded", "failed", "abandoned")

succeed = st.tuples(st.just("succeed"), st.integers(0, SPAN - 1))
steps = st.one_of(
    succeed,
    succeed,
    succeed,
    st.tuples(st.just("begin"), st.integers(0, SPAN - 1), st.integers(0, 3), st.integers(0, 3)),
    st.tuples(
        st.just("record"),
        st.integers(0, SPAN - 1),
        st.integers(1, 4),
        st.sampled_from(STATES),
        st.integers(0, 3),
    ),
    st.tuples(st.just("finish"), st.integers(0, SPAN - 1), st.sampled_from(STATES[1:])),
    st.tuples(st.just("publish"), st.integers(0, SPAN - 1), st.booleans()),
    st.tuples(st.just("republish"), st.integers(0, SPAN - 1)),
    st.tuples(st.just("abandon"), st.integers(0, SPAN - 1)),
    st.tuples(
        st.just("upstream"), st.integers(0, SPAN - 1), st.integers(2, 3), st.sampled_from(STATES)
    ),
)


class History:
    """One random history of job ``job`` (its upstream ``up``) on a shared ledger."""

    def __init__(self, ledger: gk.Ledger, kind: Period, span: int = SPAN):
        tag = uuid.uuid4().hex[:8]
        self.ledger, self.kind = ledger, kind
        self.job, self.up = f"J{tag}", f"U{tag}"
        base = kind.ordinal("2026-03-01" if kind is DAILY else "2026-03-01T00:00Z")
        self.keys = [kind.key(kind.at(base + i)) for i in range(span)]
        self.runs = itertools.count()
        self.clock = T0
        for key in self.keys:  # ready to publish until an upstream step says otherwise
            ledger.record(self.up, key, 1, f"{self.up}-{key}", "succeeded", T0)

    def run_id(self, salt: int) -> str:
        return f"{self.job}-r{salt}" if salt else f"{self.job}-{next(self.runs)}"

    def apply(self, step: tuple[Any, ...]) -> None:
        """Apply one step; a refusal (a held lease, a conflict, not ready) writes nothing and
        is part of the history."""
        self.clock += dt.timedelta(seconds=20)
        try:
            self._apply(step)
        except REFUSALS:  # never a LedgerError: a failed write of the runs is a bug
            pass

    def _apply(self, step: tuple[Any, ...]) -> None:
        what, i = step[0], step[1]
        key, ledger = self.keys[i], self.ledger
        if what == "begin":  # attempt 0 is the next one; a late clock takes over a lease
            later = self.clock + dt.timedelta(seconds=120 * step[3])
            ledger.begin_attempt(
                self.job, key, self.run_id(0), lease_seconds=60, attempt=step[2], now=later
            )
        elif what == "record":  # any attempt, out of order, maybe a run ID already used
            ledger.record(self.job, key, step[2], self.run_id(step[4]), step[3], T0)
        elif what == "succeed":  # the next attempt, recorded succeeded at once
            latest = ledger.latest(self.job, key)
            number = 1 if latest is None else latest.attempt + 1
            ledger.record(self.job, key, number, self.run_id(0), "succeeded", T0)
        elif what == "finish":  # the latest attempt's outcome
            latest = ledger.latest(self.job, key)
            if latest is not None:
                ledger.record(self.job, key, latest.attempt, latest.run_id, step[2], T0)
        elif what == "publish":  # fenced by the running attempt, or an API publication
            latest = ledger.latest(self.job, key)
            fenced = step[2] and latest is not None
            producer = latest.run_id if fenced and latest else None
            ledger.publish(self.job, key, [self.up], "fp", producer=producer, now=self.clock)
        elif what == "abandon":  # an operator's `gatekeeper abandon`, lease live or not
            ledger.abandon(self.job, key, reason="operator", now=self.clock)
        elif what == "republish":
            ledger.republish(self.job, key, [self.up], f"fp{i}", reason="repair", now=self.clock)
        else:  # a newer attempt of the upstream the publication requires
            ledger.record(self.up, key, step[2], f"{self.up}-{i}-{step[2]}", step[3], T0)

    def check(self) -> None:
        """Runs == full scan for both flags and a few windows; stored runs coalesced; plans
        from runs and from the full scan agree."""
        end = len(self.keys) - 1
        for a, b in ((0, end), (1, end - 2), (2, 2), (end, end)):
            first, last = self.keys[a], self.keys[b]
            for consumer in (None, self.job):
                runs = self.ledger.complete_runs(self.job, first, last, consumer)
                scan = self.ledger.completed_periods(self.job, first, last, consumer)
                assert set(runs.keys()) == scan, (first, last, consumer)
        self._check_stored()
        self._check_plans()

    def _check_stored(self) -> None:
        for flag in (0, 1):
            rows = self.ledger.read(
                "SELECT first_period, last_period FROM gk_complete_runs WHERE job = ? "
                "AND published = ? ORDER BY first_period",
                (self.job, flag),
            )
            spans = [(self.kind.ordinal(a), self.kind.ordinal(b)) for a, b in rows]
            for (a, b), (c, _) in itertools.pairwise(spans):
                assert a <= b < c - 1, spans  # disjoint, a gap between neighbours

    def _check_plans(self) -> None:
        stop = self.kind.at(self.kind.ordinal(self.keys[-1]) + 1)
        now = self.kind.closes_at(stop, "UTC")
        for consumer in (None, self.job):
            request: dict[str, Any] = {
                "schedule": Schedule.parse(
                    start=self.keys[0], stop=self.kind.key(stop), period=self.kind
                ),
                "now": now,
                "consumer": consumer,
                "task_limit": None,
            }

            def scan(first: str, last: str, who: str | None = consumer) -> set[str]:
                return self.ledger.completed_periods(self.job, first, last, who)

            from_runs = plan_from_ledger(self.ledger, self.job, **request)
            from_scan = plan_from_ledger(self.ledger, self.job, complete=scan, **request)
            assert from_runs == from_scan


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def shared_ledger(request: pytest.FixtureRequest, tmp_path_factory: Any) -> Any:
    """One ledger per backend for every example (each history has jobs of its own)."""
    from tests.helpers.ledgers import fresh_pg_schema

    if request.param == "sqlite":
        with gk.open_ledger(f"sqlite:///{tmp_path_factory.mktemp('runs') / 'l.db'}") as led:
            yield led
        return
    with fresh_pg_schema() as url, gk.open_ledger(url) as led:
        yield led


@pytest.mark.parametrize("kind", [DAILY, HOURLY], ids=["daily", "hourly"])
@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(history=st.lists(steps, min_size=8, max_size=40))
def test_runs_equal_the_full_scan_after_every_step(
    shared_ledger: gk.Ledger, kind: Period, history: list[tuple[Any, ...]]
) -> None:
    story = History(shared_ledger, kind)
    for step in history:
        story.apply(step)
        story.check()


def test_runs_are_built_by_the_migration_from_an_existing_history(ledger_url: str) -> None:
    """A ledger written before schema 6 (its runs table emptied, version set back) is
    migrated forward with its runs built once from the attempts and publications."""
    with gk.open_ledger(ledger_url) as led:
        story = History(led, DAILY, span=10)
        for i, state in enumerate(["succeeded"] * 4 + ["failed"] + ["succeeded"] * 5):
            led.record(story.job, story.keys[i], 1, f"r{i}", state, T0)
            if i % 3 == 0:
                led.publish(story.job, story.keys[i], [story.up], "fp")
        led.record(story.job, story.keys[7], 2, "r7b", "failed", T0)  # a failed repair
        with led.transaction():
            led.execute("DROP TABLE gk_complete_runs")
            led.execute("UPDATE gk_schema SET version = 5")
    with gk.open_ledger(ledger_url) as migrated:
        assert migrated.schema_version() == SCHEMA_VERSION
        first, last = story.keys[0], story.keys[-1]
        runs = migrated.complete_runs(story.job, first, last)
        assert runs == PeriodRuns.from_keys(
            DAILY,
            [(story.keys[0], story.keys[3]), (story.keys[5], story.keys[6])]
            + [(story.keys[8], story.keys[9])],
        )
        published = migrated.complete_runs(story.job, first, last, story.job)
        assert set(published.keys()) == {story.keys[0], story.keys[3], story.keys[6], story.keys[9]}
        story.check()


def test_planning_reads_the_runs_not_the_keys(sqlite_url: str) -> None:
    """Planning a window of 3,000 complete days with 3 gaps reads the 4 runs, whatever the
    window's length: the statement the planner sends touches runs only."""
    with gk.open_ledger(sqlite_url) as led:
        keys = [DAILY.key(DAILY.at(DAILY.ordinal("2016-01-01") + i)) for i in range(3000)]
        with led.transaction():
            for i, key in enumerate(keys):
                if i not in (500, 1500, 2500):
                    led.record("Big", key, 1, f"big-{i}", "succeeded", T0)
        statements: list[str] = []
        led.connection.set_trace_callback(statements.append)
        stop = DAILY.key(DAILY.at(DAILY.ordinal(keys[-1]) + 1))
        window = Schedule.parse(start=keys[0], stop=stop)
        plan = plan_from_ledger(led, "Big", schedule=window, now=T0, task_limit=None)
        led.connection.set_trace_callback(None)
        assert [plan.key(p) for p in plan.gaps] == [keys[500], keys[1500], keys[2500]]
        reads = [s for s in statements if s.startswith("SELECT")]
        assert len(reads) == 1 and "gk_complete_runs" in reads[0], statements
        rows = led.read("SELECT COUNT(*) FROM gk_complete_runs WHERE job = 'Big'")
        assert rows[0][0] == 4


def test_concurrent_writers_of_one_job_keep_its_runs_exact(ledger_url: str) -> None:
    """Four connections at once succeed, repair and fail neighbouring periods of one job (each
    change reads and rewrites the same runs): afterwards the runs equal the full scan and are
    coalesced, on both backends."""
    keys = [DAILY.key(DAILY.at(DAILY.ordinal("2026-01-01") + i)) for i in range(48)]
    with gk.open_ledger(ledger_url) as led:
        story = History(led, DAILY)
        story.keys = keys

    def writer(lane: int) -> None:
        with gk.open_ledger(ledger_url) as own:
            for i in range(lane, len(keys), 4):
                own.record(story.job, keys[i], 1, f"{story.job}-{i}-1", "succeeded", T0)
            for i in range(lane, len(keys), 8):  # a repair that fails splits a run
                own.record(story.job, keys[i], 2, f"{story.job}-{i}-2", "failed", T0)

    threads = [threading.Thread(target=writer, args=(lane,)) for lane in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with gk.open_ledger(ledger_url) as led:
        story.ledger = led
        scan = led.completed_periods(story.job, keys[0], keys[-1])
        assert len(scan) == 24  # each lane repaired 6 of its 12 periods, and the repair failed
        story.check()


def test_complete_runs_for_another_consumer_are_the_jobs_successes_it_published(
    ledger: gk.Ledger,
) -> None:
    """For a consumer other than the job (read from the full scan, not the job's runs): the
    periods whose latest attempt of the job succeeded and that the consumer published, as
    runs of the kind asked for; a kind that is no period kind is refused naming ``period``."""
    days = [f"2026-10-{d}" for d in range(12, 20)]  # Monday 12th to Monday 19th
    for day in days:
        if day != "2026-10-14":
            ledger.record("Load", day, 1, f"l-{day}", "succeeded", T0)
    ledger.record("Load", "2026-10-15", 2, "l-15-2", "failed", T0)
    published = ["2026-10-12", "2026-10-13", "2026-10-16", "2026-10-19"]
    for day in published:
        ledger.publish("Total", day, ["Load"], f"fp-{day}")
    assert ledger.has_published("Total") and not ledger.has_published("Load")
    first, last = days[0], days[-1]
    found = ledger.complete_runs("Load", first, last, "Total")
    assert found == PeriodRuns.of(DAILY, (DAILY.ordinal(d) for d in published))
    weekdays = DAILY.on("weekdays")
    on_calendar = ledger.complete_runs("Load", first, last, "Total", period=weekdays)
    assert on_calendar == PeriodRuns.of(weekdays, (weekdays.ordinal(d) for d in published))
    assert (len(found.spans), len(on_calendar.spans)) == (3, 2)  # Friday, Monday adjacent
    assert ledger.complete_runs("Load", first, last, "Load") == PeriodRuns.of(DAILY, [])
    own = ledger.complete_runs("Load", first, last, period=weekdays)
    assert own == on_calendar  # the 15th's latest attempt failed; the weekend is not counted
    with pytest.raises(InvalidInput) as caught:
        ledger.complete_runs("Load", first, last, "Total", period="fortnightly")
    assert (caught.value.field, caught.value.value) == ("period", "fortnightly")
