"""Watching a range run from the process that scheduled it (an adapter over ``progress.py``).

One RangeWatch per range instance, made in the process that plans it (the ``luigi`` command's
main process, where the worker schedules). It observes the ledger and reports; it never
schedules or records anything.

- **The closing line** is logged at INFO, once per invocation, by the first of: the window
  already complete when Luigi checks the range (``Event.DEPENDENCY_PRESENT``, so an idempotent
  rerun says so), the range's ``run()`` ending in this process, or, in the ``luigi`` command,
  the process exiting (``atexit``: tasks that ran in ``--workers N`` children, or a period
  blocked by a failed upstream). When the fill stops earlier (a Luigi FAILURE in this process
  after which it has nothing left to do, as the ledger says, or the watcher thread seeing the
  same) the line is logged then, at once (the process may end there), but it is not the last
  word: Luigi may retry the failed period under its retry policy, and if the window changed by
  the end (a retry filled it), the line is logged again, as the window then stands.
- **A watcher thread** (only in the ``luigi`` command) reads the ledger on its own connection:
  with ``--local-scheduler`` and a terminal on stderr it redraws a one-line progress bar (off
  with ``--no-progress``); under ``luigid`` it sets the range's and every chunk's status
  message and percentage there, per period, in every strategy (a forward fill's chunks wait on
  all their periods at once, so only an observer can show them per period).
"""

from __future__ import annotations

import atexit
import datetime as dt
import logging
import os
import sys
import threading
import weakref
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import luigi

from gatekeeper.core.causes import Requirement
from gatekeeper.core.clock import epoch_seconds
from gatekeeper.core.errors import GatekeeperError
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.progress import (
    Throttle,
    chunk_status,
    closing_line,
    failed_keys,
    fill_over,
    first_obstacle,
    own_keys,
    progress_bar,
    range_status,
)
from gatekeeper.core.records import Attempt
from gatekeeper.ledger import Ledger, open_ledger
from gatekeeper.ledger.profiles import blocked_periods
from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi import config
from gatekeeper.luigi.attempt_run import is_own_run
from gatekeeper.luigi.cascade import republished
from gatekeeper.luigi.fill.chunks import ContiguousChunk
from gatekeeper.luigi.tasks import PeriodTask, shared_ledger

logger = logging.getLogger("luigi-interface.gatekeeper")
UTC = dt.timezone.utc
BAR_POLL = 0.2  # seconds between ledger reads for the terminal bar
REMOTE_POLL = 1.0  # ... and for luigid's status messages
CLOSE_WAIT = 10.0  # seconds the exiting process waits for the watcher thread's closing line
_open: weakref.WeakSet[RangeWatch] = weakref.WeakSet()
_atexit = threading.Lock()
_atexit_registered: list[bool] = []


@dataclass(slots=True)
class Invocation:
    """What one range instance has done in this process (Luigi keeps one instance per
    parameters in a process; a forked worker gets a copy): the range's ``invocation``."""

    checked: bool = False  # complete() has answered once, from the session's plan
    watch: RangeWatch | None = None  # made where the range is scheduled (``watch()``)
    closed: bool = False  # the last closing line is written (an early one: ``RangeWatch.early``)
    metrics: bool = False  # the RangeEvent figures are fired (once, as luigi's RangeBase does)
    final: RangePlan | None = None  # the plan after the fill (``final_plan``), made once
    requires: tuple[Requirement, ...] = ()  # what a period requires (its job's profile)


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The window as the ledger holds it now, seen from one run."""

    plan: RangePlan
    done: frozenset[str]  # scheduled keys now complete
    failed: frozenset[str]  # scheduled keys failed (or abandoned) since the run started
    latest: Mapping[str, Attempt]  # the latest attempt of each scheduled or refreshed key


class RangeWatch:
    """What one range invocation reports; see the module docstring."""

    def __init__(self, rng: Any, *, bar: bool, remote: str | None):
        self.range, self.pid = rng, os.getpid()
        session = rng.session
        self.initial: RangePlan = session.plan
        self.keys: list[str] = list(session.keys)
        self.refreshed: list[str] = [task.period_key for task in session.refreshes]
        self.started = float(session.started)
        self.since = dt.datetime.fromtimestamp(self.started, UTC)
        self.bar, self.remote = bar, remote
        self.closed = False
        self.early: RangePlan | None = None  # the plan an early closing line was written from
        self._early_claimed = False
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # one closing line at a time
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._sent: dict[str, tuple[str, int]] = {}
        self._written = threading.Event()  # the closing line is written (or not to be)
        self._writer: threading.Thread | None = None  # the thread writing it

    def snapshot(self, ledger: Ledger, plan: RangePlan | None = None) -> Snapshot:
        """Read the window (two queries; one with ``plan``, made by the caller); reads only."""
        plan = self.range.plan(ledger) if plan is None else plan
        gaps = {plan.key(label) for label in plan.gaps}
        latest = ledger.latest_of(self.range.job(), [*self.keys, *self.refreshed])
        failed = failed_keys(latest, self.since) & set(self.keys)
        return Snapshot(
            plan,
            frozenset(k for k in self.keys if k not in gaps),
            frozenset(failed),
            latest,
        )

    # -- the closing line ----------------------------------------------------------------------
    def close(self, ledger: Ledger) -> None:
        """Stop watching and log the invocation's last closing line (once: a later call
        returns, or, from a thread other than the watcher's, waits until the line is written).
        After an early line (``close_early``) it is logged only if the window changed since."""
        with self._lock:
            first = not (self.closed or self.range.invocation.closed)
            if not self.closed and not first:  # another path wrote this invocation's line
                self._written.set()
            self.closed = self.range.invocation.closed = True
        if not first:
            self.wait_written()
            return
        try:
            with self._writing:
                self._write_closing(ledger, final=True)
        finally:
            self._written.set()
            _open.discard(self)

    def close_early(self, ledger: Ledger) -> None:
        """Stop watching and log the closing line as the fill stops (a failure with nothing
        left to do): at once, for the process may end here, but not as the invocation's last
        word, since Luigi may yet retry the period; ``close`` says how the window ended. Once
        per invocation, and nothing once ``close`` was called."""
        with self._lock:
            if self.closed or self.range.invocation.closed or self._early_claimed:
                return
            self._early_claimed = True
        with self._writing:
            if not self.closed:
                self._write_closing(ledger, final=False)

    def wait_written(self) -> None:
        """Wait (bounded) for the closing line another thread is writing: the process exiting
        must not kill the watcher's daemon thread half way through it."""
        if threading.current_thread() is not self._thread:
            self._written.wait(timeout=CLOSE_WAIT)

    def _write_closing(self, ledger: Ledger, *, final: bool) -> None:
        """Log the closing line of the window as the ledger holds it now: ``final``, from the
        plan after the fill (``final_plan``, which ``complete()`` then answers from), and after
        an early line only if the gaps changed since; else (early) from a fresh plan, which
        a retry may still change."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=5)
        early = self.early
        try:
            plan = self.range.final_plan(ledger) if final else self.range.plan(ledger)
            snap = self.snapshot(ledger, plan)
        except GatekeeperError as exc:
            if final and early is None:  # an early line stands; an early miss, the final says
                logger.warning(
                    "gatekeeper: %s %s: no closing summary, the ledger could not be read: %s",
                    self.range.task_family,
                    self.range.job(),
                    exc,
                )
            return
        if not final:
            self.early = snap.plan
        if self.bar and early is None:  # the bar ends once
            self._draw(snap, force=True)
            sys.stderr.write("\n")
            sys.stderr.flush()
        if self.remote:
            self._send(snap)
        if early is None or early.gaps != snap.plan.gaps:
            logger.info(self.closing(ledger, snap))

    def closing(self, ledger: Ledger, snap: Snapshot) -> str:
        """The closing line of ``snap``: this invocation's own fills and republications and the
        first obstacle in fill order, which is period order, newest first for ``reverse`` (a
        failure, another run's lease on the period or on an upstream, a failed or missing
        upstream; reads the upstreams: one query per required job)."""
        own = own_keys(snap.latest, self.since, is_own_run)
        kind = self.range.period_kind
        gaps = [key for key in self.keys if key not in snap.done]
        now = ledger.db_now()
        unattempted = [key for key in gaps if key not in snap.latest]
        causes = blocked_periods(
            ledger, kind, unattempted, self.range.invocation.requires, now, held=True
        )
        by = self.filled_by() if snap.plan.gaps else None
        # a period another run holds is named with its holder even while another worker fills
        # the range: luigid lists a worker killed with -9 as running until it times out, and a
        # later period's cause would then stand in for the held one
        return closing_line(
            self.range.task_family,
            self.range.job(),
            snap.plan,
            filled_now=len(own & set(self.keys)),
            obstacle=first_obstacle(gaps, snap.latest, self.since, now, is_own_run, causes),
            filled_by=by,
            republished=len(own & set(self.refreshed)),
            reprocess=self.range.session.policy.value,
            cascade=republished(self.range.session.cascade, ledger, self.since, is_own_run),
        )

    def filled_by(self) -> str | None:
        """Under luigid, the worker running this range, one of its chunks or (scheduled) one of
        its periods as this process closes (so not this process's: it is done), or None;
        reads luigid, never fails."""
        if not self.remote:
            return None
        ids = {self.range.task_id} | {chunk.task_id for chunk in self.range.chunk_tasks()}
        if not self.range.session.filler.inline:  # a scheduled fill's worker runs its periods
            ids |= {self.range.task_for(label).task_id for label in self.initial.scheduled}
        scheduler = luigi_compat.remote_scheduler(str(self.remote))
        try:
            running = scheduler.task_list(status="RUNNING", upstream_status="", limit=False)
        except Exception:  # luigid gone: the line says gaps remain
            return None
        finally:
            scheduler.close()
        workers = sorted(
            {
                str(task.get("worker_running"))
                for task_id, task in running.items()
                if task_id in ids and task.get("worker_running")
            }
        )
        return ", ".join(workers) or None

    def over(self, snap: Snapshot) -> bool:
        return fill_over(self.initial.strategy, self.keys, snap.done, snap.failed)

    # -- the watcher thread --------------------------------------------------------------------
    def start(self) -> None:
        self._throttle = Throttle(0.1)
        self._thread = threading.Thread(
            target=self._watch, name="gatekeeper-range-watch", daemon=True
        )
        self._thread.start()

    def _watch(self) -> None:
        interval = BAR_POLL if self.bar else REMOTE_POLL
        ledger = open_ledger(config.ledger_url())
        try:
            while not self._stop.wait(interval):
                snap = self.snapshot(ledger)
                if self._stop.is_set():
                    return
                if self.bar:
                    self._draw(snap)
                if self.remote:
                    self._send(snap)
                if self.over(snap):
                    self.close_early(ledger)
                    return
        except Exception as exc:  # an observer never fails the run; say why it stopped
            logger.warning("gatekeeper: %s progress stopped: %s", self.range.job(), exc)
        finally:
            ledger.close()

    def _draw(self, snap: Snapshot, force: bool = False) -> None:
        now = epoch_seconds()
        if not (self._throttle.ready(now) or force):
            return
        line = progress_bar(
            len(snap.done), len(self.keys), now - self.started, failed=len(snap.failed - snap.done)
        )
        sys.stderr.write(f"\r{self.range.job()} {line}\x1b[K")
        sys.stderr.flush()

    def _send(self, snap: Snapshot) -> None:
        """Under luigid: the range's and each chunk's status, where it changed."""
        statuses = {self.range.task_id: range_status(snap.plan)}
        for chunk in self.range.chunk_tasks():
            statuses[chunk.task_id] = chunk_status(list(chunk.keys), snap.done, snap.failed)
        scheduler = luigi_compat.remote_scheduler(str(self.remote))
        try:
            for task_id, shown in statuses.items():
                if self._sent.get(task_id) != shown:
                    scheduler.set_task_status_message(task_id, shown[0])
                    scheduler.set_task_progress_percentage(task_id, shown[1])
                    self._sent[task_id] = shown
        finally:
            scheduler.close()


def scheduler_url(core: Any) -> str:
    if core.scheduler_url:
        return str(core.scheduler_url)
    return f"http://{core.scheduler_host}:{core.scheduler_port}/"


def watch(rng: Any) -> RangeWatch:
    """The range's watch, made (and its thread started) on first use in this process."""
    found: RangeWatch | None = rng.invocation.watch
    if found is not None:
        return found
    core = luigi_compat.command_core()
    bar = bool(
        core is not None and core.local_scheduler and not rng.no_progress and sys.stderr.isatty()
    )
    remote = None if core is None or core.local_scheduler else scheduler_url(core)
    made = rng.invocation.watch = RangeWatch(rng, bar=bar, remote=remote)
    _open.add(made)
    if core is not None:
        with _atexit:
            if not _atexit_registered:
                atexit.register(_close_at_exit)
                _atexit_registered.append(True)
    if bar or remote:
        made.start()
    return made


def reports_remotely(rng: Any) -> bool:
    """True when the range's watch sets its status in luigid (so the range must not)."""
    found = rng.invocation.watch
    return found is not None and found.remote is not None


def close_complete(rng: Any) -> None:
    """The closing line of a range whose window was complete when Luigi checked it."""
    if rng.invocation.closed or rng.invocation.watch is not None:
        return
    rng.invocation.closed = True
    plan = rng.session.plan if rng.invocation.final is None else rng.invocation.final
    logger.info(closing_line(rng.task_family, rng.job(), plan, filled_now=0))


def close_after_run(rng: Any) -> None:
    """The range's run() ended: log its closing line if this process made its watch."""
    found = rng.invocation.watch
    if found is not None and found.pid == os.getpid():
        found.close(rng.ledger())


def _job_of(task: luigi.Task) -> str | None:
    if isinstance(task, PeriodTask):
        return str(task.job_id)
    if isinstance(task, ContiguousChunk):
        return task.fill_job()
    return None


def _on_failure(task: luigi.Task, exc: BaseException) -> None:
    """A period or chunk failed in this process: close the watches it ends."""
    job = _job_of(task)
    for found in list(_open):
        if found.pid != os.getpid() or found.closed or found.range.job() != job:
            continue
        ledger = shared_ledger()
        try:
            over = found.over(found.snapshot(ledger))
        except GatekeeperError as exc:  # the closing line then comes at exit, if at all
            logger.warning("gatekeeper: %s: could not read the ledger: %s", job, exc)
            continue
        if over:  # Luigi may yet retry it: the last word is close()'s
            found.close_early(ledger)


# on gatekeeper's own classes only: the failures that can end a fill are its periods' and chunks'
PeriodTask.event_handler(luigi.Event.FAILURE)(_on_failure)
ContiguousChunk.event_handler(luigi.Event.FAILURE)(_on_failure)


def _close_at_exit() -> None:
    for found in list(_open):
        if found.pid != os.getpid():
            continue
        if found.closed:  # another thread is writing its line: let it finish
            found.wait_written()
            continue
        try:
            found.close(found.range.ledger())
        except Exception as exc:  # at exit: report, never raise
            logger.warning("gatekeeper: %s: no closing summary: %s", found.range.job(), exc)
