"""A heartbeat thread that keeps a running attempt's lease alive while ``run()`` works."""

from __future__ import annotations

import logging
import threading

from gatekeeper.errors import GatekeeperError
from gatekeeper.ledger import Ledger

logger = logging.getLogger("luigi-interface.gatekeeper")


class Heartbeat:
    """Renews ``run_id``'s lease every third of ``lease_seconds`` until stopped.

    If the lease can no longer be renewed (the attempt was marked abandoned by a later one),
    ``lost`` is set; recording the outcome will then be refused by the ledger (fail closed).
    """

    def __init__(self, ledger: Ledger, run_id: str, lease_seconds: float):
        self.ledger, self.run_id, self.lease_seconds = ledger, run_id, lease_seconds
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
                alive = self.ledger.heartbeat(self.run_id, lease_seconds=self.lease_seconds)
            except GatekeeperError as exc:
                logger.warning("gatekeeper: heartbeat of %s failed: %s", self.run_id, exc)
                continue
            if not alive:
                logger.error("gatekeeper: %s is no longer running; its lease is lost", self.run_id)
                self.lost.set()
                return
