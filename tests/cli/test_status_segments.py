"""``status``'s text in proportion to what is not complete (issue 49, item 1): drawn from the
windows' segments (``coverages``: long runs of complete periods as one), it is the text the
windows' periods judged one by one (``window_states``) give, for one job and for a grid."""

from __future__ import annotations

import dataclasses
import datetime as dt

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.cli.status_text import JobStates, status_text
from gatekeeper.core.periods import DAILY
from gatekeeper.core.schedule import Schedule
from gatekeeper.report.coverage import coverages
from gatekeeper.report.segments import Run
from gatekeeper.report.states import window_states
from gatekeeper.report.windows import JobWindow
from tests.helpers.examples import examples
from tests.helpers.histories import OUTCOMES, History, histories, write_window
from tests.helpers.stale import long_repaired_upstream

#: mostly complete periods (some published, some of those stale), so that runs form between
#: the others
held_lists = st.lists(
    st.sampled_from((*OUTCOMES, ("published",), ("stale",)))
    | st.just(("succeeded",))
    | st.just(("published",)),
    max_size=20,
)


def both_texts(
    ledger: gk.Ledger, windows: dict[str, JobWindow], now: dt.datetime, shortest: int
) -> tuple[str, str, int]:
    """The text of ``windows``' jobs drawn from their segments, the text of their periods
    one by one, and how many runs the segments held."""
    covered = coverages(ledger, windows, now, shortest)
    segments: list[JobStates] = [(job, *covered[job]) for job in windows]
    periods: list[JobStates] = [
        (job, *window_states(ledger, job, now=now, task_limit=None, window=window))
        for job, window in windows.items()
    ]
    runs = sum(isinstance(s, Run) for _, _, found in segments for s in found)
    return status_text(segments), status_text(periods), runs


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    drawn=histories(held_lists, 22),
    other=held_lists,
    shift=st.integers(-3, 25),
    shortest=st.integers(1, 4),
)
def test_status_text_from_segments_is_the_text_of_every_period(
    ledger: gk.Ledger,
    drawn: tuple[History, dt.datetime],
    other: list[tuple[str, ...]],
    shift: int,
    shortest: int,
) -> None:
    """A job alone, and beside a second of its kind whose window starts ``shift`` periods
    later (overlapping, touching or apart: the grid's axis is their union)."""
    history, now = drawn
    job, window = write_window(ledger, history, now, size=20)
    new, old, _ = both_texts(ledger, {job: window}, now, shortest)
    assert new == old
    kind = history.kind
    later = kind.key(kind.at(kind.rank(history.first) + shift))
    second = dataclasses.replace(history, first=later, held=other)
    job2, window2 = write_window(ledger, second, now, size=20)
    new, old, _ = both_texts(ledger, {job: window, job2: window2}, now, shortest)
    assert new == old


def test_status_text_of_a_long_window_draws_runs(ledger: gk.Ledger) -> None:
    """Two years of two daily jobs with a failure, a gap, days off and publications: the
    segments hold runs, and the text is the one of every period."""
    kind = DAILY.on("weekdays")
    now = dt.datetime(2026, 1, 1, 1, tzinfo=dt.timezone.utc)
    held = [("succeeded",)] * 100 + [("failed",), ()] + [("published",)] * 200 + [("running",)]
    history = History(kind, "2025-01-01", held, [], None, "all", "0s", True)
    windows = dict([write_window(ledger, history, now, size=len(held)) for _ in range(2)])
    new, old, runs = both_texts(ledger, windows, now, 32)
    assert runs >= 4
    assert new == old
    assert "revision 1" in new


def test_status_text_of_a_stale_period_inside_a_long_run(ledger: gk.Ledger) -> None:
    """A stale period inside a long run of complete ones: the text from segments (the run
    cut around it) is the text of every period, and both count and list it."""
    keys = long_repaired_upstream(ledger)
    now = dt.datetime(2026, 3, 23, 1, tzinfo=dt.timezone.utc)
    window = JobWindow(Schedule.parse(start=keys[0], period=DAILY), (), keys[-1])
    new, old, runs = both_texts(ledger, {"Report": window}, now, 32)
    assert runs == 2
    assert new == old
    assert new.splitlines()[0].endswith("; 1 stale")
    assert f"stale {keys[40]}: upstream Orders {keys[40]} attempt 1 → 2" in new.splitlines()


def test_status_grid_marks_a_stale_period_cut_out_of_a_long_run(ledger: gk.Ledger) -> None:
    """A grid short enough for strips, a stale period of ``Report`` after a long run of
    complete ones: drawn from segments (the run cut before it), the strip marks it ``~`` as
    the text of every period does."""
    keys = long_repaired_upstream(ledger, days=60, repaired=40)
    now = dt.datetime(2026, 3, 2, 1, tzinfo=dt.timezone.utc)
    window = JobWindow(Schedule.parse(start=keys[0], period=DAILY), (), keys[-1])
    new, old, runs = both_texts(ledger, {"Report": window, "Orders": window}, now, 32)
    assert runs == 2
    assert new == old
    strips = {line.split()[0]: line.split()[1] for line in new.splitlines()[7:9]}
    assert strips == {"Report": "#" * 40 + "~" + "#" * 19, "Orders": "#" * 60}
