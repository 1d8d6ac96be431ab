"""A heartbeat thread that keeps a running attempt's lease alive while ``run()`` works.

It renews on its own connection (one per process and ledger URL, never used by a task's
transactions), so a ``run()`` that holds ``self.ledger().transaction()`` does not starve it.
Renewal is judged by the database's clock (see ``docs/ownership.md``).
"""

from __future__ import annotations

import logging
import os
import threading

from gatekeeper.errors import GatekeeperError
from gatekeeper.ledger import Ledger, open_ledger

logger = logging.getLogger("luigi-interface.gatekeeper")
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
    """Renews ``run_id``'s lease every third of ``lease_seconds`` until stopped.

    If the lease can no longer be renewed (a later attempt marked it abandoned, or it was
    recorded finished), ``lost`` is set and the beating stops: the attempt must not publish or
    be recorded succeeded (the ledger refuses both: fencing). A failed renewal (the database
    unreachable) is logged and tried again at the next beat.
    """

    def __init__(self, url: str, run_id: str, lease_seconds: float):
        self.url, self.run_id, self.lease_seconds = url, run_id, lease_seconds
        self.lost = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._beat, name=f"gatekeeper-heartbeat-{run_id}", daemon=True
        )

    def __enter__(self) -> Heartbeat:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=max(5.0, self.lease_seconds))

    def _beat(self) -> None:
        interval = max(self.lease_seconds / 3.0, 0.05)
        while not self._stop.wait(interval):
            try:
                alive = heartbeat_ledger(self.url).heartbeat(
                    self.run_id, lease_seconds=self.lease_seconds)
            except GatekeeperError as exc:
                logger.warning("gatekeeper: heartbeat of %s failed: %s", self.run_id, exc)
                continue
            if not alive:
                if not self._stop.is_set():
                    logger.error("gatekeeper: %s is no longer running; its lease is lost",
                                 self.run_id)
                    self.lost.set()
                return
