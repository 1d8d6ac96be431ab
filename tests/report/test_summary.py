"""``window_summary`` counts a window's states as ``window_states`` judges them, period by
period, reading only what is not complete (report/summary.py)."""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.causes import profile
from gatekeeper.core.periods import DAILY
from gatekeeper.core.schedule import Schedule
from gatekeeper.report.fleet import window_summary
from gatekeeper.report.states import PeriodState, counts, window_states
from gatekeeper.report.summary import window_counts
from gatekeeper.report.windows import JobWindow
from tests.helpers.examples import examples
from tests.helpers.histories import (
    KINDS,
    OUTCOMES,
    History,
    histories,
    write_history,
    write_window,
)

UTC = dt.timezone.utc
outcomes = st.lists(st.sampled_from(OUTCOMES), max_size=14)


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(drawn=histories(outcomes))
def test_window_summary_counts_what_window_states_judges(
    ledger: gk.Ledger, drawn: tuple[History, dt.datetime]
) -> None:
    history, now = drawn
    job, window = write_window(ledger, history, now)

    _, states = window_states(ledger, job, now=now, task_limit=None, window=window)
    _, found = window_summary(ledger, job, now=now, window=window)
    assert found == counts(states)
    assert list(found) == list(counts(states))  # the same states, in the same order


@pytest.mark.parametrize("calendar", ["all", "weekdays"])
def test_window_counts_needs_no_attempt_of_a_complete_period(
    ledger: gk.Ledger, calendar: str
) -> None:
    """Four years of a daily job with two gaps: the counts read the runs, and the attempts of
    the two gaps only; the latest attempts of the complete days change nothing."""
    kind = DAILY.on(calendar)
    days = [kind.key(d) for d in kind.between("2022-01-01", "2026-01-01")]
    failed, missing = days[100], days[1000]
    with ledger.transaction():
        for n, key in enumerate(days):
            if key != missing:
                state = "failed" if key == failed else "succeeded"
                ledger.record("Load", key, 1, f"r{n}", state, dt.datetime(2026, 1, 2, tzinfo=UTC))
    now = dt.datetime(2026, 1, 1, 1, tzinfo=UTC)
    schedule = Schedule.parse(start="2022-01-01", period=kind, calendar=calendar)
    window = JobWindow(schedule)
    plan, found = window_summary(ledger, "Load", now=now, window=window)
    assert found[PeriodState.FAILED] == found[PeriodState.MISSING] == 1
    assert found[PeriodState.SUCCEEDED] == len(plan.due) - 2
    gaps = ledger.latest_of("Load", [failed, missing])
    assert window_counts(plan, gaps) == found
    assert found == counts(window_states(ledger, "Load", now=now, window=window)[1])


def test_summaries_of_many_jobs_in_batches_are_each_jobs_own(
    ledger: gk.Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Jobs of every kind, some with nothing recorded, read in batches of 2 rows (each read
    spans several statements): each job's counts are those ``window_states`` judges of it,
    and a job with no period in the ledger has no window, saying why."""
    from gatekeeper.ledger import batches
    from gatekeeper.report.fleet import job_windows, summaries

    monkeypatch.setattr(batches, "BATCH", 2)
    now = dt.datetime(2026, 10, 20, 5, tzinfo=UTC)
    held = [("succeeded",), (), ("failed",), ("failed", "succeeded"), ("expired",), ()]
    jobs = []
    for name, (kind, first, _) in sorted(KINDS.items()):
        start = kind.rank(first)
        keys = [kind.key(kind.at(start + i)) for i in range(len(held))]
        for n in range(2):
            job = f"{name}{n}"
            write_history(ledger, job, keys[n:], held[n:], now)
            jobs.append(job)
    ledger.record_profile(profile("daily1", DAILY, "UTC", start="2026-09-01"))
    windows = job_windows(ledger, [*jobs, "Never"])
    assert isinstance(windows.pop("Never"), gk.InvalidInput)
    found = summaries(ledger, windows, now)  # type: ignore[arg-type]
    assert sorted(found) == sorted(jobs)
    for job, window in windows.items():
        assert isinstance(window, JobWindow)
        _, states = window_states(ledger, job, now=now, task_limit=None, window=window)
        assert found[job][1] == counts(states), job
    assert found["daily1"][1][PeriodState.MISSING] == 30 + 19 - 3  # from its profile's start


def test_job_windows_share_a_profile_only_when_all_but_the_name_agrees(
    ledger: gk.Ledger,
) -> None:
    """Jobs whose ranges recorded the same profile over the same span share one window
    (resolved once), yet each is counted on its own attempts; a profile differing only in
    its calendar or its lateness is not shared: each window is the one ``job_window``
    resolves for the job alone."""
    from gatekeeper.report.fleet import job_windows, summaries
    from gatekeeper.report.windows import job_window

    now = dt.datetime(2026, 10, 20, 5, tzinfo=UTC)
    keys = [DAILY.key(DAILY.at(DAILY.rank("2026-10-01") + i)) for i in range(12)]
    shapes = {
        "Same0": {},
        "Same1": {},
        "Weekdays": {"calendar": "weekdays"},
        "Late": {"lateness": "6h"},
    }
    for n, (job, differs) in enumerate(shapes.items()):
        kind = DAILY.on(differs.get("calendar", "all"))
        held = [("succeeded",)] * 12
        held[n + 1] = ("failed",)  # each its own history, over the same span
        write_history(ledger, job, keys, held, now)
        late = differs.get("lateness", "2h")
        ledger.record_profile(profile(job, kind, "UTC", start=keys[0], lateness=late))
    windows = job_windows(ledger, shapes)
    assert windows["Same0"] is windows["Same1"]
    for job in shapes:
        assert windows[job] == job_window(ledger, job), job
    assert windows["Weekdays"].schedule.calendar == "weekdays"  # type: ignore[union-attr]
    assert windows["Late"].schedule.lateness == dt.timedelta(hours=6)  # type: ignore[union-attr]
    assert windows["Same0"].schedule.calendar == "all"  # type: ignore[union-attr]
    found = summaries(ledger, windows, now)  # type: ignore[arg-type]
    for job, window in windows.items():
        assert isinstance(window, JobWindow)
        _, states = window_states(ledger, job, now=now, task_limit=None, window=window)
        assert found[job][1] == counts(states), job
    assert found["Same0"][0].gaps != found["Same1"][0].gaps
    assert found["Weekdays"][1][PeriodState.NON_BUSINESS] > 0
