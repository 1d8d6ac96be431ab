"""A heartbeat thread that keeps a running attempt's lease alive while ``run()`` works.

It renews on its own connection (one per process and ledger URL, never used by a task's
transactions), so a ``run()`` that holds ``self.ledger().transaction()`` does not starve it.
Renewal is judged by the database's clock (see ``docs/ownership.md``).
"""

from __future__ import annotations

import logging
import os
import threading
import time

from gatekeeper.core.errors import GatekeeperError, LeaseHeld
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.ledger import Ledger, open_ledger

logger = logging.getLogger("luigi-interface.gatekeeper")
HELD_POLL = 0.2  # seconds between checks of a period another worker's live lease holds
_connections: dict[tuple[int, str], Ledger] = {}
_connections_lock = threading.Lock()


def heartbeat_ledger(url: str) -> Ledger:
    """This process's heartbeat connection to the ledger at ``url``, opened once.

    Keyed by process id too: a worker forked by ``luigi --workers N`` opens its own.
    """
    key = (os.getpid(), url)
    with _connections_lock:
        if key not in _connections:
            _connections[key] = open_ledger(url)
        return _connections[key]


class Heartbeat:
    """Renews ``run_id``'s lease every third of ``lease_seconds`` while the block runs.

    If the lease can no longer be renewed (a later attempt marked it abandoned, or it was
    recorded finished), ``lost`` is set and the beating stops: the attempt must not publish or
    be recorded succeeded (the ledger refuses both: fencing). A failed renewal (the database
    unreachable) is logged and tried again at the next beat. The renewals of every attempt of
    a process are made by one thread (starting a thread per attempt costs a fill of short
    periods more than the periods themselves).
    """

    def __init__(self, url: str, run_id: str, lease_seconds: float):
        self.url, self.run_id, self.lease_seconds = url, run_id, lease_seconds
        self.interval = max(lease_seconds / 3.0, 0.05)
        self.lost = threading.Event()
        self.stopped = False  # the block ended (a flag: an Event per attempt costs a fill)
        self.due = 0.0

    def __enter__(self) -> Heartbeat:
        _beats().add(self)
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped = True
        _beats().remove(self)

    def renew(self) -> bool:
        """One renewal; False once the lease is lost (or the block ended): stop beating."""
        if self.stopped:
            return False
        try:
            alive = heartbeat_ledger(self.url).heartbeat(
                self.run_id, lease_seconds=self.lease_seconds
            )
        except GatekeeperError as exc:
            logger.warning("gatekeeper: heartbeat of %s failed: %s", self.run_id, exc)
            return True
        if not alive and not self.stopped:
            logger.error("gatekeeper: %s is no longer running; its lease is lost", self.run_id)
            self.lost.set()
        return alive


class _Beats:
    """This process's heartbeat thread: renews each registered lease when it is due."""

    def __init__(self) -> None:
        self.pid = os.getpid()
        self.wake = threading.Condition()
        self.beats: dict[int, Heartbeat] = {}
        self.waking = 0.0  # when the thread wakes next on its own (monotonic; 0: not waiting)
        threading.Thread(target=self._loop, name="gatekeeper-heartbeat", daemon=True).start()

    def add(self, beat: Heartbeat) -> None:
        with self.wake:
            beat.due = time.monotonic() + beat.interval
            self.beats[id(beat)] = beat
            if beat.due < self.waking or not self.waking:  # wake it only to beat sooner:
                self.wake.notify()  # waking a thread per attempt costs short periods dearly

    def remove(self, beat: Heartbeat) -> None:
        with self.wake:
            self.beats.pop(id(beat), None)

    def _loop(self) -> None:
        while True:
            with self.wake:
                now = time.monotonic()
                due = [b for b in self.beats.values() if b.due <= now]
                if not due:
                    self.waking = min((b.due for b in self.beats.values()), default=now + 60.0)
                    self.wake.wait(timeout=self.waking - now)
                    self.waking = 0.0
                    continue
                for beat in due:
                    beat.due = now + beat.interval
            for beat in due:  # outside the lock: a renewal waits on the database
                if not beat.renew():
                    self.remove(beat)


_service: list[_Beats] = []
_service_lock = threading.Lock()


def _beats() -> _Beats:
    """The heartbeat thread of this process (a forked worker starts its own)."""
    with _service_lock:
        if not _service or _service[0].pid != os.getpid():
            _service[:] = [_Beats()]
        return _service[0]


def wait_while_held(ledger: Ledger, holder: Attempt, who: str = "") -> Attempt | None:
    """Wait while ``holder`` runs its period under a live lease, judged by the database's
    clock like every lease (``ledger.db_now()``); return the period's latest attempt once it
    no longer does: finished, replaced by another attempt, or still ``running`` with its
    lease expired. None when the period has no attempt any more. Reads only."""
    job, key = holder.job, holder.business_date
    logger.info(
        "gatekeeper: %s %s: attempt %d (run %s)%s holds it; waiting for it",
        job,
        key,
        holder.attempt,
        holder.run_id,
        who,
    )
    while True:
        time.sleep(HELD_POLL)
        latest = ledger.latest(job, key)
        if latest is None or latest.run_id != holder.run_id:
            return latest
        if latest.state is not RunState.RUNNING or not latest.lease_live(ledger.db_now()):
            return latest


def outwait(ledger: Ledger, holder: Attempt, who: str = "", *, shared: bool) -> None:
    """Wait while ``holder`` runs its period (``wait_while_held``), then decide for the waiter:
    the one rule of a scheduled run (``RecordedRun._begin``) and of an inline one
    (``InlineRuns.run``) that found the period's lease held.

    Return (attempt the period again) when the holder no longer holds it: it succeeded (the
    period is complete now), another attempt replaced it, or its lease expired while it ran.
    When it ended ``failed`` or ``abandoned`` under a scheduler the waiter shares with it
    (``shared``: luigid), raise ``LeaseHeld`` naming it as it ended: Luigi's scheduler never
    gives a second worker a task another worker runs, and gives it a task that worker failed
    only after ``retry_delay``, so this run does not retry it (the scheduler retries the
    period under its own retry policy). Under a scheduler of its own (a local scheduler),
    Luigi coordinates nothing: each process runs the task, so the waiter runs its own attempt
    once the holder has ended. Reads only.
    """
    latest = wait_while_held(ledger, holder, who)
    if not shared or latest is None or latest.run_id != holder.run_id:
        return
    if latest.state in (RunState.RUNNING, RunState.SUCCEEDED):
        return
    raise LeaseHeld(
        f"{holder.job} {holder.business_date} attempt {holder.attempt} (run "
        f"{holder.run_id}) held it while this run waited, and ended {latest.state.value}; "
        "this run does not retry it",
        holder=latest,
        job=holder.job,
        period=holder.business_date,
        attempt=holder.attempt,
    )
