"""What the processes of one invocation share about the lineage backend.

An invocation is the process that first needs lineage (the ``luigi`` command) and the task
processes it forks (``--workers N``: one per task, each exiting without exit handlers). They
share one anonymous ``MAP_SHARED`` page, created in the parent before it forks (see
``gatekeeper.luigi.attempt_run``) and inherited by every child: whether the backend was judged
down, whether the warning was logged, and the counts of events delivered and dropped. A page
inherited across ``fork`` needs no name, no file and no cleanup, cannot be seen by another
invocation, and survives a child killed at any instant. One semaphore guards the test-and-set
and the counts; it is taken with a timeout, so a child killed while holding it costs counts,
never a hang. A process not forked from the owner (a ``spawn`` start method) makes its own:
it then waits for the backend at most once itself.
"""

from __future__ import annotations

import ctypes
import enum
import mmap
import multiprocessing
import os
import threading
from dataclasses import dataclass
from typing import Any

LOCK_WAIT = 1.0  # seconds; beyond it an update is skipped (its holder died holding it)


class Dropped(str, enum.Enum):
    """Why an event was not delivered; the closing line counts each."""

    DOWN = "backend down"  # not sent: the invocation had judged the backend down
    STALLED = "unanswered"  # in flight or pending when a send went unanswered for the timeout
    FAILED = "failed"  # the transport raised
    BUDGET = "budget spent"  # still pending when its process's wait at exit ran out
    FULL = "queue full"  # the process's bounded queue was full
    UNBUILT = "not built"  # building it raised (the warning names the error)


_DOWN, _WARNED, _OFFERED, _DELIVERED, _OPEN, _WAIT_MS = range(6)
_CELLS = 6 + len(Dropped)


@dataclass(frozen=True, slots=True)
class Counts:
    """The invocation's events so far: ``offered`` by every process, ``delivered`` (the backend
    took them), ``dropped`` by reason (the rest were still on their way)."""

    offered: int
    delivered: int
    dropped: dict[Dropped, int]

    def summary(self) -> str | None:
        """One line for the log when any event was dropped, else None."""
        lost = sum(self.dropped.values())
        if not lost:
            return None
        reasons = ", ".join(f"{r.value}: {n}" for r, n in self.dropped.items() if n)
        return (
            f"gatekeeper: OpenLineage events of this invocation: {lost} of {self.offered} "
            f"dropped ({reasons}), {self.delivered} delivered"
        )


class Invocation:
    """The shared page of one invocation (see the module docstring); create it in the process
    that forks the others, before it forks."""

    def __init__(self) -> None:
        self.owner = os.getpid()
        self._page = mmap.mmap(-1, ctypes.sizeof(ctypes.c_int64) * _CELLS)
        self._cells = (ctypes.c_int64 * _CELLS).from_buffer(self._page)
        self._lock: Any = _process_shared_lock()

    def is_down(self) -> bool:
        """True once any process of the invocation judged the backend down."""
        return bool(self._cells[_DOWN])

    def judge_down(self) -> bool:
        """Mark the backend down for every process; returns ``first_warning()``."""
        self._cells[_DOWN] = 1
        return self.first_warning()

    def first_warning(self) -> bool:
        """True for the first caller in the invocation only: the one that logs a warning."""
        return self._test_and_set(_WARNED)

    def offered(self) -> None:
        self._add(_OFFERED, 1)

    def delivered(self) -> None:
        self._add(_DELIVERED, 1)

    def dropped(self, reason: Dropped, n: int = 1) -> None:
        if n:
            self._add(6 + list(Dropped).index(reason), n)

    def opened(self, timeout: float) -> None:
        """A process holds a delivery (waiting at most ``timeout`` at its exit)."""
        self._cells[_WAIT_MS] = max(self._cells[_WAIT_MS], round(timeout * 1000))
        self._add(_OPEN, 1)

    def closed(self) -> None:
        """A process has delivered or counted all its events."""
        self._add(_OPEN, -1)

    def open_processes(self) -> int:
        return int(self._cells[_OPEN])

    def wait_seconds(self) -> float:
        """The longest wait at exit of any of its processes (the owner waits as long)."""
        return self._cells[_WAIT_MS] / 1000

    def counts(self) -> Counts:
        cells = list(self._cells)
        return Counts(
            offered=cells[_OFFERED],
            delivered=cells[_DELIVERED],
            dropped={r: cells[6 + i] for i, r in enumerate(Dropped)},
        )

    def _add(self, cell: int, n: int) -> None:
        if self._lock.acquire(timeout=LOCK_WAIT):
            try:
                self._cells[cell] += n
            finally:
                self._lock.release()

    def _test_and_set(self, cell: int) -> bool:
        if not self._lock.acquire(timeout=LOCK_WAIT):
            return True  # its holder died holding it: better a second warning than none
        try:
            first = not self._cells[cell]
            self._cells[cell] = 1
            return first
        finally:
            self._lock.release()


def _process_shared_lock() -> Any:
    """A lock every forked child shares (a POSIX semaphore, unlinked at once: nothing to clean
    up), or a thread lock where ``fork`` does not exist."""
    try:
        return multiprocessing.get_context("fork").Lock()
    except ValueError:  # no fork on this platform: nothing forked shares the page anyway
        return threading.Lock()
