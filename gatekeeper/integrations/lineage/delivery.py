"""Delivering OpenLineage events: one background thread per process emits them in order
through ``OpenLineageClient``; a backend that is down or slow costs a task at most the
timeout, once per process, and never fails it (``warn_once``)."""

from __future__ import annotations

import atexit
import logging
import os
import queue
import threading
from typing import Any

from gatekeeper.core.display import printable, redact_urls_in

logger = logging.getLogger("luigi-interface.gatekeeper")
MAX_PENDING = 10_000  # events queued beyond this are dropped (with the one warning)

_warned: set[int] = set()  # process ids that logged the warning
_deliveries: dict[int, _Delivery] = {}
_deliveries_lock = threading.Lock()


def warn_once(problem: str) -> None:
    if os.getpid() not in _warned:
        _warned.add(os.getpid())
        logger.warning(
            "gatekeeper: OpenLineage: %s; tasks go on without waiting for the "
            "lineage backend (further problems in this process are not logged)",
            printable(redact_urls_in(problem)),
        )


def delivery(timeout: float) -> _Delivery:
    """This process's delivery thread (a forked worker starts its own)."""
    with _deliveries_lock:
        if os.getpid() not in _deliveries:
            _deliveries[os.getpid()] = _Delivery(timeout)
        return _deliveries[os.getpid()]


class _Delivery:
    """One background thread emitting queued events in order through OpenLineageClient."""

    def __init__(self, timeout: float):
        self.timeout = timeout
        self.events: queue.Queue[Any] = queue.Queue()
        self.done = threading.Condition()
        self.queued = self.handled = 0
        self.degraded = False
        self.client: Any = None
        threading.Thread(target=self._run, daemon=True, name="gatekeeper-openlineage").start()
        atexit.register(self.close)

    def put(self, event: Any) -> int:
        """Queue ``event``; returns its sequence number (0 when it was dropped)."""
        with self.done:
            if self.queued - self.handled >= MAX_PENDING:
                self._degrade(f"more than {MAX_PENDING} events pending; dropping events")
                return 0
            self.queued += 1
            self.events.put_nowait(event)
            return self.queued

    def wait(self, sequence: int) -> None:
        """Wait, at most the timeout, until event ``sequence`` is handled (not once degraded)."""
        with self.done:
            if self.degraded:
                return
            if not self.done.wait_for(lambda: self.handled >= sequence, self.timeout):
                self._degrade(
                    f"the lineage backend did not take the events within "
                    f"{self.timeout:g}s (openlineage_timeout)"
                )

    def close(self) -> None:
        """At exit: wait, at most the timeout, for the queued events."""
        with self.done:
            if not self.done.wait_for(lambda: self.handled >= self.queued, self.timeout):
                self._degrade(
                    f"{self.queued - self.handled} event(s) not delivered within "
                    f"{self.timeout:g}s at exit"
                )

    def _degrade(self, problem: str) -> None:
        self.degraded = True
        warn_once(problem)

    def _run(self) -> None:
        while True:
            event = self.events.get()
            try:
                self._emit(event)
            except Exception as exc:  # noqa: BLE001 - any transport error is a lost event
                with self.done:
                    self._degrade(f"could not emit an event: {type(exc).__name__}: {exc}")
            with self.done:
                self.handled += 1
                self.done.notify_all()

    def _emit(self, event: Any) -> None:
        if self.client is None:
            from openlineage.client import OpenLineageClient

            self.client = OpenLineageClient()  # OpenLineage's own configuration discovery
        self.client.emit(event)
