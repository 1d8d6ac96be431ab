"""Twin task classes for the differential fleet tests: the same body and the same Luigi
settings as a plain Luigi task (filled by luigi's own ``RangeDaily``) and as a gatekeeper task
(filled by ``RangeBusinessDaily``).

The body is steered by files in the control folder (an insignificant parameter): ``fail-<date>``
fails every run of that date, ``flaky-<date>`` fails its first run only, ``message-<date>``
holds a status message each run of that date sets first (Luigi's ``set_status_message``),
``sleep`` holds the seconds each run sleeps, ``sleep-<date>`` the seconds each run of that date
sleeps (after ``sleep``), ``until-<date>`` holds another date: each run of the first sleeps
until a run of the second succeeded (at most 60 s); ``hold-<date>``: the first run of that date
(the one that makes ``held-<date>``) waits until ``release-<date>`` exists (at most 60 s), the
others do not; ``priority-<date>`` holds that date's Luigi
priority (the ``Retry3`` twins; else 0). Every run appends
``<date> <start> <end> <pid> <parent pid> <outcome>`` to ``<control>/runs`` (times:
``time.time()``), and
every Luigi event of a period appends ``<event> <date>`` to ``<control>/events``.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import luigi

import gatekeeper as gk

EVENTS = (
    luigi.Event.START,
    luigi.Event.SUCCESS,
    luigi.Event.FAILURE,
    luigi.Event.TIMEOUT,
    luigi.Event.DEPENDENCY_DISCOVERED,
)


def body(task: luigi.Task, control: str, date: Any) -> None:
    """The one body both twins run (``task``: the twin running it)."""
    folder = Path(control)
    started = time.time()
    message = folder / f"message-{date}"
    if message.exists():
        task.set_status_message(message.read_text())
    sleep = folder / "sleep"
    if sleep.exists():
        time.sleep(float(sleep.read_text()))
    sleep_date = folder / f"sleep-{date}"
    if sleep_date.exists():
        time.sleep(float(sleep_date.read_text()))
    until = folder / f"until-{date}"
    if until.exists():
        wait_for_success(folder, until.read_text().strip())
    if (folder / f"hold-{date}").exists():
        hold_first(folder, str(date))
    outcome = "ok"
    flaky, flaked = folder / f"flaky-{date}", folder / f"flaked-{date}"
    if (folder / f"fail-{date}").exists() or (flaky.exists() and not flaked.exists()):
        outcome = "failed"
        flaked.touch()
    with (folder / "runs").open("a") as runs:
        runs.write(
            f"{date} {started:.6f} {time.time():.6f} {os.getpid()} {os.getppid()} {outcome}\n"
        )
    if outcome == "failed":
        raise RuntimeError(f"injected failure for {date}")


def wait_for_success(folder: Path, date: str, limit: float = 60.0) -> None:
    """Sleep until ``runs`` holds a successful run of ``date`` (at most ``limit`` seconds)."""
    runs, deadline = folder / "runs", time.monotonic() + limit
    while time.monotonic() < deadline:
        lines = runs.read_text().splitlines() if runs.exists() else []
        if any(line.startswith(f"{date} ") and line.endswith(" ok") for line in lines):
            return
        time.sleep(0.05)


def hold_first(folder: Path, date: str, limit: float = 60.0) -> None:
    """The first run of ``date`` (it makes ``held-<date>``) sleeps until ``release-<date>``
    exists (at most ``limit`` seconds); a later run goes on at once."""
    try:
        (folder / f"held-{date}").touch(exist_ok=False)
    except FileExistsError:
        return
    release, deadline = folder / f"release-{date}", time.monotonic() + limit
    while not release.exists() and time.monotonic() < deadline:
        time.sleep(0.05)


def note(control: str, event: str, date: Any) -> None:
    with (Path(control) / "events").open("a") as events:
        events.write(f"{event} {date}\n")


class PlainDay(luigi.Task):
    """The plain Luigi twin: complete when its output file exists."""

    date = luigi.DateParameter()
    control = luigi.Parameter(significant=False)

    def output(self) -> luigi.LocalTarget:
        return luigi.LocalTarget(str(Path(self.control) / "plain" / f"{self.date}"))

    def run(self) -> None:
        body(self, self.control, self.date)
        with self.output().open("w") as out:
            out.write("done\n")


class GkDay(gk.BusinessDateTask):
    """The gatekeeper twin: complete when its latest attempt succeeded."""

    control = luigi.Parameter(significant=False)

    def run(self) -> None:
        body(self, self.control, self.business_date)


def _period(task: Any) -> Any:
    return getattr(task, "date", None) or getattr(task, "business_date", None)


def _handler_for(event: str) -> Any:
    def handler(task: Any, *args: Any) -> None:
        if event == luigi.Event.DEPENDENCY_DISCOVERED:
            task = args[0]  # (dependent, dependency): the period is the dependency
        if isinstance(task, (PlainDay, GkDay, GkBatched)):
            note(task.control, event, _period(task))

    return handler


for _event in EVENTS:  # DEPENDENCY_DISCOVERED fires on the dependent (a range or a chunk)
    luigi.Task.event_handler(_event)(_handler_for(_event))


class PlainRetry2(PlainDay):
    retry_count = 2


class GkRetry2(GkDay):
    retry_count = 2


def control_priority(control: str, date: Any) -> int:
    """The priority ``priority-<date>`` in the control folder gives the date, else 0: Luigi's
    scheduler offers ready tasks by priority, then by the order it first heard of them (for a
    ``RangeDaily``, the order of a set of task ids: random per luigid process)."""
    path = Path(control) / f"priority-{date}"
    return int(path.read_text()) if path.exists() else 0


class PlainRetry3(PlainDay):
    retry_count = 3

    @property
    def priority(self) -> int:  # type: ignore[override]
        return control_priority(self.control, self.date)


class GkRetry3(GkDay):
    retry_count = 3

    @property
    def priority(self) -> int:  # type: ignore[override]
        return control_priority(self.control, self.business_date)


class PlainTimeout(PlainDay):
    worker_timeout = 2


class GkTimeout(GkDay):
    worker_timeout = 2


class PlainDb(PlainDay):
    resources = {"db": 1}


class GkDb(GkDay):
    resources = {"db": 1}
    lane = luigi.Parameter(default="a")


class PlainPriority(PlainDay):
    priority = 10


class GkPriority(GkDay):
    priority = 10


#: the first period of ``GkChained``: it requires nothing
CHAIN_FIRST = "2026-10-01"


class GkChained(GkDay):
    """Requires its own previous period (from ``CHAIN_FIRST`` on): a previous-period upstream."""

    def requires(self) -> list[GkChained]:
        if str(self.business_date) <= CHAIN_FIRST:
            return []
        previous = self.period_kind.shift(self.business_date, -1)
        return [GkChained(business_date=previous, control=self.control)]


class GkBatched(gk.BusinessDateTask):
    """Batches a parameter: refused by the range (one attempt cannot cover several periods)."""

    region = luigi.Parameter(default="eu", batch_method=",".join)
    control = luigi.Parameter(significant=False)

    def run(self) -> None:
        body(self, self.control, self.business_date)
