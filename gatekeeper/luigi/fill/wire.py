"""Reports to luigid on one keep-alive connection (an adapter below ``inline.py``).

A chunk tells luigid how each period it runs inline ended: one ``add_task`` per period, sent
in order from a background thread (``inline.InlineRuns``). Through Luigi's own client
(``luigi.rpc.RemoteScheduler``: requests, a retry policy per call) such a call costs the
worker's process about 2 ms of Python, against luigid's well under 1 ms to serve it; on a
1,000-period fill that client was half the wall time, and its thread held the interpreter
lock the periods' own ledger transactions waited for.

So a SchedulerWire speaks luigid's wire protocol itself, the one RemoteScheduler speaks
(``POST <scheduler url>/api/<method>`` with the form field ``data`` holding the arguments as
JSON; the answer's ``response``), over one ``http.client`` connection kept alive. Only where
that is exactly what Luigi's client would do: a plain ``http://`` URL without credentials and
no HTTP proxy configured for it. Anything else (``https``, ``http+unix``, a proxy, a URL with
user info) goes through the RemoteScheduler, and so does any call the wire fails to deliver
(RemoteScheduler's retries then apply, as they do for every other call of the worker).
"""

from __future__ import annotations

import http.client
import json
import logging
import urllib.parse
import urllib.request
from typing import Any

import luigi.configuration

from gatekeeper.luigi import compat as luigi_compat

logger = logging.getLogger("luigi-interface.gatekeeper")


def direct_target(url: str | None) -> tuple[str, int, str] | None:
    """``(host, port, path prefix)`` when calls to ``url`` may go over a plain keep-alive
    connection exactly as Luigi's client would send them; None otherwise."""
    if not url:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or parts.username or parts.password or not parts.hostname:
        return None
    if urllib.request.getproxies().get("http") and not urllib.request.proxy_bypass(parts.hostname):
        return None  # requests would go through the proxy: so must we (RemoteScheduler)
    try:
        port = parts.port or 80
    except ValueError:
        return None
    return parts.hostname, port, parts.path.rstrip("/")


class SchedulerWire:
    """Calls a luigid's RPC methods; see the module docstring. One thread at a time."""

    def __init__(self, scheduler: Any):
        self.scheduler = scheduler
        self.target = direct_target(luigi_compat.remote_scheduler_url(scheduler))
        self.timeout = luigi.configuration.get_config().getfloat(
            "core", "rpc-connect-timeout", 10.0
        )
        self.connection: http.client.HTTPConnection | None = None

    def call(self, method: str, arguments: dict[str, Any]) -> Any:
        """``scheduler.<method>(**arguments)``, directly when the wire may carry it."""
        if self.target is not None:
            try:
                return self._post(method, arguments)
            except (OSError, http.client.HTTPException, ValueError, KeyError) as exc:
                logger.debug(
                    "gatekeeper: %s to luigid directly failed (%s); through Luigi's client instead",
                    method,
                    exc,
                )
                self.close()
        return getattr(self.scheduler, method)(**arguments)

    def _post(self, method: str, arguments: dict[str, Any]) -> Any:
        host, port, prefix = self.target  # type: ignore[misc]
        if self.connection is None:
            self.connection = http.client.HTTPConnection(host, port, timeout=self.timeout)
        body = urllib.parse.urlencode({"data": json.dumps(arguments)})
        self.connection.request(
            "POST",
            f"{prefix}/api/{method}",
            body,
            {"Content-Type": "application/x-www-form-urlencoded"},
        )
        answer = self.connection.getresponse()
        page = answer.read()
        if answer.status != 200:
            raise http.client.HTTPException(f"HTTP {answer.status} from luigid")
        return json.loads(page)["response"]

    def close(self) -> None:
        if self.connection is not None:
            self.connection.close()
            self.connection = None
