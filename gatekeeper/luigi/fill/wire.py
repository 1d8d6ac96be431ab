"""Reports to luigid on one keep-alive connection (an adapter below ``inline.py``).

A chunk tells luigid how each period it runs inline ended: one ``add_task`` per period, sent
in order from a background thread (``inline.InlineRuns``). Through Luigi's own client
(``luigi.rpc.RemoteScheduler``: requests, a retry policy per call) such a call costs the
worker's process about 2 ms of Python, against luigid's well under 1 ms to serve it; on a
1,000-period fill that client was half the wall time, and its thread held the interpreter
lock the periods' own ledger transactions waited for.

So a SchedulerWire sends them with ``luigi_compat.DirectRpc``: luigid's wire protocol, the one
RemoteScheduler speaks, over one ``http.client`` connection kept alive, only where that is
exactly what Luigi's client would do (``luigi_compat.direct_target``: a plain ``http://`` URL
without credentials and no HTTP proxy configured for it). Anything else goes through the
RemoteScheduler, and so does any call the direct connection fails to deliver
(RemoteScheduler's retries then apply, as they do for every other call of the worker).
"""

from __future__ import annotations

import http.client
import logging
from typing import Any

from gatekeeper.luigi import compat as luigi_compat

logger = logging.getLogger("luigi-interface.gatekeeper")


class SchedulerWire:
    """Calls a luigid's RPC methods; see the module docstring. One thread at a time."""

    def __init__(self, scheduler: Any):
        self.scheduler = scheduler
        self.direct = luigi_compat.DirectRpc.to(scheduler)

    def call(self, method: str, arguments: dict[str, Any]) -> Any:
        """``scheduler.<method>(**arguments)``, directly when the wire may carry it."""
        if self.direct is not None:
            try:
                return self.direct.call(method, arguments)
            except (OSError, http.client.HTTPException, ValueError, KeyError) as exc:
                logger.debug(
                    "gatekeeper: %s to luigid directly failed (%s); through Luigi's client instead",
                    method,
                    exc,
                )
                self.direct.close()
        return getattr(self.scheduler, method)(**arguments)

    def close(self) -> None:
        if self.direct is not None:
            self.direct.close()
