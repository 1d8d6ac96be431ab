"""Delivering OpenLineage events: one background thread per process emits them in order
through ``OpenLineageClient``, from a bounded queue, while the process works.

A process waits for the backend once, at its end (at interpreter exit, and at the end of a
task process Luigi forked, which runs multiprocessing's finalizers but no exit handlers): at
most ``openlineage_timeout`` seconds, its budget. A forked task process waits after it has
handed its result to Luigi, so the wait never holds a worker slot. The first send still
unanswered after the timeout and the first send that fails judge the backend down for the
whole invocation (``invocation.Invocation``): from then on no process waits, new events are
dropped unbuilt, one warning says so, and the owner of the invocation, once its processes are
done (at most one more wait), logs how many events were dropped, and why. Nothing here raises
into a task.
"""

from __future__ import annotations

import collections
import logging
import os
import threading
import time
from collections.abc import Callable
from multiprocessing import util
from typing import Any

from gatekeeper.core.display import printable, redact_urls_in
from gatekeeper.integrations.lineage.invocation import Dropped, Invocation

logger = logging.getLogger("luigi-interface.gatekeeper")
MAX_PENDING = 10_000  # a process's queue; an event beyond it is dropped (and counted)
POLL = 0.05  # seconds between looks at the invocation's verdict while waiting

_invocation: Invocation | None = None
_deliveries: dict[int, Delivery] = {}
_finalized: set[int] = set()  # processes whose exit handler is registered
_lock = threading.Lock()


def invocation() -> Invocation:
    """The invocation this process belongs to: inherited from the process that forked it,
    else created here (this process then logs the closing count at its exit)."""
    global _invocation
    with _lock:
        if _invocation is None:
            _invocation = Invocation()
            _register_exit()
        return _invocation


def delivery(timeout: float) -> Delivery:
    """This process's delivery (a forked task process starts its own thread), waiting at
    most ``timeout`` seconds, once, at the process's end."""
    shared = invocation()
    with _lock:
        if os.getpid() not in _deliveries:
            _deliveries[os.getpid()] = Delivery(timeout, shared)
            _register_exit()
        return _deliveries[os.getpid()]


def warn_once(problem: str, *, down: bool = False, shared: Invocation | None = None) -> None:
    """Log ``problem`` unless a lineage warning was logged already in the invocation (default:
    this process's); ``down``: the backend is judged down for every process of it from now on.
    """
    shared = shared or invocation()
    first = shared.judge_down() if down else shared.first_warning()
    if first:
        then = (
            "no process of this invocation waits for the lineage backend again, and its "
            "further events are dropped"
            if down
            else "further problems are not logged"
        )
        logger.warning(
            "gatekeeper: OpenLineage: %s; %s (the count is logged at the end)",
            printable(redact_urls_in(problem)),
            then,
        )


class Delivery:
    """One background thread emitting queued events in order through ``emit`` (default: an
    ``OpenLineageClient`` built on first use, with OpenLineage's own configuration discovery).
    """

    def __init__(
        self,
        timeout: float,
        shared: Invocation,
        emit: Callable[[Any], Any] | None = None,
        max_pending: int = MAX_PENDING,
    ):
        self.timeout, self.shared, self.max_pending = timeout, shared, max_pending
        self.closed = False
        self.pending: collections.deque[Any] = collections.deque()
        self.changed = threading.Condition()
        self.sending_since: float | None = None  # when the event in flight was taken
        self.abandoned = False  # the event in flight was counted dropped already
        self.waits = 0  # how many times close() waited for the backend (each at most POLL)
        self.ended: Dropped | None = None  # why close() stopped waiting with events left
        self._emit_fn = emit
        self._thread: threading.Thread | None = None  # started with the first event
        shared.opened(timeout)

    def offer(self, build: Callable[[], Any]) -> None:
        """Queue the event ``build()`` returns; when the backend is judged down (or found
        stalled now) or the queue is full, count it dropped instead (down: without building
        it). Raises what ``build`` raises."""
        self.shared.offered()
        if self._stalled():
            self._give_up(f"the lineage backend did not answer within {self.timeout:g}s")
        if self.shared.is_down():
            self.shared.dropped(Dropped.DOWN)
            return
        try:
            event = build()
        except Exception:
            self.shared.dropped(Dropped.UNBUILT)
            raise
        with self.changed:
            full = len(self.pending) >= self.max_pending
            if not full:
                self.pending.append(event)
                self.changed.notify_all()
                if self._thread is None:
                    self._thread = threading.Thread(
                        target=self._run, daemon=True, name="gatekeeper-openlineage"
                    )
                    self._thread.start()
        if full:
            self.shared.dropped(Dropped.FULL)
            warn_once(
                f"more than {self.max_pending} events pending in process {os.getpid()}",
                shared=self.shared,
            )

    def close(self) -> None:
        """At this process's end, once: wait until its events are delivered, at most the
        timeout, and not at all once the backend is judged down; count what is left dropped.
        A send unanswered for the timeout judges the backend down; a backend that answers,
        slowly, is not."""
        if self.closed:
            return
        self.closed = True
        deadline = time.monotonic() + self.timeout
        with self.changed:
            while self.pending or self.sending_since is not None:
                now = time.monotonic()
                if self.shared.is_down() or now >= deadline or self._stalled():
                    break
                self.waits += 1
                self.changed.wait(min(POLL, deadline - now))
            left = bool(self.pending) or self.sending_since is not None
        if left and self.shared.is_down():
            self.ended = Dropped.DOWN
            self._abandon(Dropped.DOWN)
        elif left and self._stalled():
            self.ended = Dropped.STALLED
            self._give_up(
                f"the lineage backend did not answer within {self.timeout:g}s (openlineage_timeout)"
            )
        elif left:
            self.ended = Dropped.BUDGET
            problem = f"process {os.getpid()} could not deliver its events within "
            warn_once(f"{problem}{self.timeout:g}s (openlineage_timeout)", shared=self.shared)
            self._abandon(Dropped.BUDGET)
        self.shared.closed()

    def _stalled(self) -> bool:
        since = self.sending_since
        return since is not None and time.monotonic() - since > self.timeout

    def _give_up(self, problem: str) -> None:
        warn_once(problem, down=True, shared=self.shared)
        self._abandon(Dropped.STALLED)

    def _abandon(self, reason: Dropped) -> None:
        """Count what this process still holds as dropped, and stop waiting for it."""
        with self.changed:
            n = len(self.pending)
            self.pending.clear()
            if self.sending_since is not None and not self.abandoned:
                self.abandoned = True
                n += 1
        self.shared.dropped(reason, n)

    def _run(self) -> None:
        while True:
            with self.changed:
                while not self.pending:
                    self.changed.wait()
                event = self.pending.popleft()
                skip = self.shared.is_down()
                if not skip:
                    self.sending_since, self.abandoned = time.monotonic(), False
            if skip:
                self.shared.dropped(Dropped.DOWN)
                continue
            problem = None
            try:
                self._emit(event)
            except Exception as exc:  # noqa: BLE001 - any transport error is a lost event
                problem = f"could not emit an event: {type(exc).__name__}: {exc}"
            with self.changed:
                counted, self.sending_since = self.abandoned, None
                self.changed.notify_all()
            if counted:  # given up while in flight: counted dropped then
                continue
            if problem is None:
                self.shared.delivered()
            else:
                self.shared.dropped(Dropped.FAILED)
                warn_once(problem, down=True, shared=self.shared)

    def _emit(self, event: Any) -> None:
        if self._emit_fn is None:
            from openlineage.client import OpenLineageClient

            self._emit_fn = OpenLineageClient().emit  # OpenLineage's configuration discovery
        self._emit_fn(event)


def _register_exit() -> None:
    """Once per process (call with ``_lock`` held): ``_at_exit`` at interpreter exit and at
    the end of a multiprocessing child (whose exit handlers do not run; multiprocessing's
    finalizers do), after the finalizer that closes Luigi's result queue (priority 10)."""
    if os.getpid() not in _finalized:
        _finalized.add(os.getpid())
        util.Finalize(None, _at_exit, exitpriority=5)


def _at_exit() -> None:
    """Close this process's delivery; the owner of the invocation then waits, at most one
    more timeout, for its other processes to close theirs, and logs how many of the
    invocation's events were dropped (once, if any were)."""
    mine = _deliveries.get(os.getpid())
    if mine is not None:
        mine.close()
    shared = _invocation
    if shared is None or shared.owner != os.getpid():
        return
    deadline = time.monotonic() + shared.wait_seconds()
    while shared.open_processes() > 0 and time.monotonic() < deadline:
        time.sleep(POLL)
    line = shared.counts().summary()
    if line is not None:
        logger.warning("%s", line)


def _reset_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # another thread of the parent may have held it when it forked


os.register_at_fork(after_in_child=_reset_after_fork)
