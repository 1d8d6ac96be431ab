"""The report's windows as segments (report/segments.py, report/coverage.py): long runs of
complete periods as one, read from the ledger's runs, and every other period judged one by
one, give the same state of every period as ``window_states`` judges period by period."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.periods import DAILY
from gatekeeper.core.schedule import Schedule
from gatekeeper.report.coverage import coverages
from gatekeeper.report.html import JobCoverage, render_report
from gatekeeper.report.segments import LONG, Run, expand
from gatekeeper.report.states import PeriodState, PeriodStatus, counts, window_states
from gatekeeper.report.windows import JobWindow
from tests.helpers.examples import examples
from tests.helpers.histories import OUTCOMES, History, histories, write_history, write_window
from tests.helpers.report_browser import NOW, Elements, dump_dom, need_chromium, report_command
from tests.helpers.stale import long_repaired_upstream

UTC = dt.timezone.utc
#: mostly complete periods, so that runs form between the others
held_lists = st.lists(
    st.sampled_from(OUTCOMES) | st.just(("succeeded",)) | st.just(("succeeded",)),
    max_size=20,
)


def same_as_window_states(
    ledger: gk.Ledger, job: str, now: dt.datetime, window: JobWindow, shortest: int
) -> tuple[Run | PeriodStatus, ...]:
    """Assert the segments of ``job`` expand to ``window_states``' states, each period judged
    one by one the same (attempt, error, cause, revision); return the segments."""
    plan, segments = coverages(ledger, {job: window}, now, shortest)[job]
    _, states = window_states(ledger, job, now=now, task_limit=None, window=window)
    assert expand(plan, segments) == [(s.period, s.state) for s in states]
    judged = {s.period: s for s in states}
    for segment in segments:
        if isinstance(segment, PeriodStatus):
            assert segment == judged[segment.period]
        else:
            assert segment.count >= shortest
    return segments


@settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(drawn=histories(held_lists, 22), shortest=st.integers(1, 4))
def test_coverages_give_the_states_window_states_judges(
    ledger: gk.Ledger, drawn: tuple[History, dt.datetime], shortest: int
) -> None:
    history, now = drawn
    job, window = write_window(ledger, history, now, size=20)
    same_as_window_states(ledger, job, now, window, shortest)


@pytest.mark.parametrize("calendar", ["all", "weekdays"])
def test_coverages_draw_long_complete_runs_as_one(ledger: gk.Ledger, calendar: str) -> None:
    """Two years of a daily job with a failed, a missing, an abandoned and a running period:
    the complete stretches between them are runs (non-business days inside them counted),
    the others cells, every period's state the one ``window_states`` judges; the page draws
    a bar per run, with its span and count, and a cell per other period."""
    kind = DAILY.on(calendar)
    days = [kind.key(d) for d in kind.between("2024-01-01", "2026-01-01")]
    now = dt.datetime(2026, 1, 1, 1, tzinfo=UTC)
    special = {days[100]: ("failed",), days[101]: (), days[300]: ("expired",)}
    special[days[-1]] = ("running",)
    held = [special.get(key, ("succeeded",)) for key in days]
    write_history(ledger, "Load", days, held, now)
    schedule = Schedule.parse(start="2024-01-01", period=kind, calendar=calendar)
    window = JobWindow(schedule, (), days[-1])
    segments = same_as_window_states(ledger, "Load", now, window, LONG)
    runs = [s for s in segments if isinstance(s, Run)]
    assert [(r.first, r.last, r.count) for r in runs] == [
        (days[0], days[99], 100),
        (days[102], days[299], 198),
        (days[301], days[-2], len(days) - 302),
    ]
    assert all(r.non_business == 0 for r in runs) == (calendar == "all")
    cells = [s for s in segments if isinstance(s, PeriodStatus)]
    assert len(cells) < 20  # the failed, missing, abandoned and running, and days off
    plan = coverages(ledger, {"Load": window}, now)["Load"][0]
    _, states = window_states(ledger, "Load", now=now, task_limit=None, window=window)
    coverage = JobCoverage("Load", plan, segments)
    assert coverage.counts() == {s.value: n for s, n in counts(states).items()}
    page = Elements(render_report([coverage], generated_at=now))
    bars = [a for tag, a in page.found if "run" in (a.get("class") or "").split()]
    assert [(b["data-first"], b["data-last"], int(b["data-count"])) for b in bars] == [
        (r.first, r.last, r.count)
        for r in reversed(runs)  # newest first
    ]
    assert all(b["data-state"] == PeriodState.SUCCEEDED.value for b in bars)
    assert bars[0]["title"].startswith(f"{runs[-1].first} to {runs[-1].last}: succeeded")
    assert sorted(c["data-period"] for c in page.cells()) == sorted(c.period for c in cells)


@pytest.mark.browser
def test_report_with_runs_in_chromium_counts_every_period(sqlite_url: str, tmp_path: Path) -> None:
    """The real command over two years of a weekday job with a failed and a missing day: in
    Chromium the page's self-check counts each bar's periods (and its days off) with the
    cells, and matches the counts; no console message."""
    need_chromium()
    kind = DAILY.on("weekdays")
    days = [kind.key(d) for d in kind.between("2024-11-01", "2026-11-01")]
    held = [
        ("failed",) if n == 200 else () if n == 400 else ("succeeded",) for n in range(len(days))
    ]
    with gk.open_ledger(sqlite_url) as ledger:
        write_history(ledger, "Load", days, held, NOW)
    out = tmp_path / "report.html"
    done = report_command(
        sqlite_url, out, "Load", extra=("--start", "2024-11-01", "--calendar", "weekdays")
    )
    assert done.returncode == 0, done.stderr
    page = dump_dom(out)
    assert page.console == ()
    dom = Elements(page.dom)
    assert dom.first("body")["data-ready"] == "ok"
    assert len([a for _, a in dom.found if "data-count" in a]) == 3


def test_coverages_cut_a_long_run_at_a_stale_period(ledger: gk.Ledger) -> None:
    """A stale period inside 80 complete days is never hidden in a run: the run is cut
    around it and it is judged one by one, carrying what superseded its evidence, as
    ``window_states`` judges it."""
    keys = long_repaired_upstream(ledger)
    now = dt.datetime(2026, 3, 23, 1, tzinfo=UTC)
    window = JobWindow(Schedule.parse(start=keys[0], period=DAILY), (), keys[-1])
    segments = same_as_window_states(ledger, "Report", now, window, LONG)
    runs = [(s.first, s.last) for s in segments if isinstance(s, Run)]
    assert runs == [(keys[0], keys[39]), (keys[41], keys[79])]
    (cell,) = [s for s in segments if isinstance(s, PeriodStatus) and s.stale]
    assert cell.period == keys[40] and cell.state is PeriodState.SUCCEEDED
    assert [e.change for e in cell.stale] == [f"upstream Orders {keys[40]} attempt 1 → 2"]
