"""Luigi's schedulers: luigid's client, luigid's wire protocol, and a local scheduler's table.

- ``remote_scheduler(url)``: a ``luigi.rpc.RemoteScheduler`` (public client; its RPC methods
  are generated from ``luigi.scheduler.Scheduler``'s ``@rpc_method`` ones);
  ``remote_scheduler_url``: the URL a worker's client talks to (private ``_url``).
- ``DirectRpc``: luigid's wire protocol spoken over one keep-alive connection, exactly as
  ``RemoteScheduler._request`` sends a call (``POST <url>/api/<method>``, the form field
  ``data`` holding the arguments as JSON; the answer's ``response``), where that is what
  Luigi's client would do (``direct_target``).
- ``scheduler_has_task`` / ``forget_done_task``: a local scheduler's task table (private
  ``Scheduler._state``).
"""

from __future__ import annotations

import http.client
import json
import urllib.parse
import urllib.request
from typing import Any

import luigi.configuration
import luigi.rpc
import luigi.scheduler

from gatekeeper.luigi.compat.internals import LuigiInternalMissing, probe, require

REMOTE_URL = "luigi.rpc.RemoteScheduler._url"
LOCAL_STATE = "luigi.scheduler.Scheduler._state"
RPC_REQUEST = "luigi.rpc.RemoteScheduler._request (POST /api/<method>, data=JSON)"


def remote_scheduler(url: str) -> Any:
    """Luigi's own client of the luigid at ``url`` (close it after use)."""
    return luigi.rpc.RemoteScheduler(url)


def remote_scheduler_url(scheduler: Any) -> str | None:
    """The URL a ``luigi.rpc.RemoteScheduler`` talks to; None for any other scheduler.

    Private internal: ``RemoteScheduler._url`` (the ``url`` it was built with, without a
    trailing slash; Luigi 2.x-3.x). The worker builds its client from ``[core]`` options and
    the command line; the URL it settled on is not public."""
    if not isinstance(scheduler, luigi.rpc.RemoteScheduler):
        return None
    return str(require(scheduler, "_url", REMOTE_URL))


probe(REMOTE_URL)(
    lambda: luigi.rpc.RemoteScheduler("http://127.0.0.1:1/")._url == "http://127.0.0.1:1"
)


def direct_target(url: str | None) -> tuple[str, int, str] | None:
    """``(host, port, path prefix)`` when calls to ``url`` may go over a plain keep-alive
    connection exactly as Luigi's client would send them (a plain ``http://`` URL without
    user info, and no HTTP proxy configured for it); None otherwise."""
    if not url:
        return None
    parts = urllib.parse.urlsplit(url)
    if parts.scheme != "http" or parts.username or parts.password or not parts.hostname:
        return None
    if urllib.request.getproxies().get("http") and not urllib.request.proxy_bypass(parts.hostname):
        return None  # requests would go through the proxy: so must the client
    try:
        port = parts.port or 80
    except ValueError:
        return None
    return parts.hostname, port, parts.path.rstrip("/")


class DirectRpc:
    """luigid's RPC over one keep-alive ``http.client`` connection; one thread at a time.

    ``call`` raises OSError, HTTPException, ValueError or KeyError when a call is not
    delivered (the caller then goes through Luigi's client, whose retries apply)."""

    def __init__(self, target: tuple[str, int, str]):
        self.target = target
        self.timeout = luigi.configuration.get_config().getfloat(
            "core", "rpc-connect-timeout", 10.0
        )
        self.connection: http.client.HTTPConnection | None = None

    @classmethod
    def to(cls, scheduler: Any) -> DirectRpc | None:
        """A DirectRpc to ``scheduler``'s luigid, or None where Luigi's client must be used."""
        target = direct_target(remote_scheduler_url(scheduler))
        return None if target is None else cls(target)

    def call(self, method: str, arguments: dict[str, Any]) -> Any:
        host, port, prefix = self.target
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


@probe(RPC_REQUEST)
def _speaks_the_same_protocol() -> bool:
    """Luigi's own client encodes a call as DirectRpc does: ``ping(worker="w")`` fetches
    ``/api/ping`` with ``data`` the JSON of its arguments (its transport stopped short)."""

    class Capture(luigi.rpc.RemoteScheduler):
        sent: tuple[str, Any] | None = None

        def _fetch(self, url_suffix: str, body: Any) -> str:
            self.sent = (url_suffix, body)
            return json.dumps({"response": None})

    client: Any = Capture("http://127.0.0.1:1")
    client.ping(worker="w")
    return client.sent == ("/api/ping", {"data": json.dumps({"worker": "w"})})


# -- a local scheduler's task table -----------------------------------------------------------
def _local_state(scheduler: Any) -> Any:
    """The ``SimpleTaskState`` of a local ``luigi.scheduler.Scheduler``."""
    state = require(scheduler, "_state", LOCAL_STATE)
    for method in ("has_task", "get_task", "inactivate_tasks"):
        if not callable(getattr(state, method, None)):
            raise LuigiInternalMissing(f"luigi.scheduler.SimpleTaskState.{method}")
    return state


probe(LOCAL_STATE)(lambda: _local_state(luigi.scheduler.Scheduler()))


def scheduler_has_task(scheduler: Any, task_id: str) -> bool:
    """True when the local ``scheduler``'s task table holds ``task_id`` (in any status).

    Private internal: ``Scheduler._state.has_task`` (Luigi 2.x-3.x), an O(1) lookup; the
    public ``task_list`` filters the whole table. A task nobody has named is absent: a task
    added with dependencies puts each of them in the table at once."""
    return bool(_local_state(scheduler).has_task(task_id))


def forget_done_task(scheduler: Any, task_id: str) -> None:
    """Remove ``task_id`` from the local ``scheduler``'s task table if it is DONE: what
    Luigi's own prune does to a settled task once its ``remove_delay`` has passed
    (``SimpleTaskState.inactivate_tasks``), done at once. Only for a task no other task
    depends on (the caller saw it absent before reporting it: scheduler_has_task)."""
    state = _local_state(scheduler)
    found = state.get_task(task_id)
    if found is not None and found.status == luigi.scheduler.DONE:
        state.inactivate_tasks([task_id])
