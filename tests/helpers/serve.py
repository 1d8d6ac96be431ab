"""``gatekeeper serve`` as a user runs it: a subprocess on a free port, and a stdlib client.

The server picks its own port (``--port 0``) and prints its address on stderr; ``start``
waits for that line, then for ``/healthz``. The client is ``urllib`` without proxies.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Any

import gatekeeper as gk

_ADDRESS = re.compile(r"gatekeeper serve: (http://\S+/) ")
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
UTC = dt.timezone.utc


@dataclass(frozen=True)
class Reply:
    status: int
    headers: dict[str, str]
    body: str

    def json(self) -> Any:
        return json.loads(self.body)


@dataclass
class Server:
    url: str
    process: subprocess.Popen[str]
    token: str | None = None

    def get(
        self, path: str, token: str | None = None, headers: dict[str, str] | None = None
    ) -> Reply:
        """GET ``path``; ``token`` (default: the server's) as a bearer token."""
        sent = dict(headers or {})
        bearer = self.token if token is None else token
        if bearer:
            sent.setdefault("Authorization", f"Bearer {bearer}")
        request = urllib.request.Request(self.url.rstrip("/") + path, headers=sent)
        try:
            with _OPENER.open(request, timeout=20) as response:
                return Reply(
                    response.status, _lower(response.headers), response.read().decode("utf-8")
                )
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, _lower(exc.headers), exc.read().decode("utf-8"))

    def stderr(self) -> str:
        """What the server printed on stderr (after it stopped)."""
        assert self.process.stderr is not None
        return self.process.stderr.read()


def serve_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "gatekeeper.cli", "serve", "--port", "0", *args]


@contextlib.contextmanager
def start(ledger_url: str, *args: str, token: str | None = None) -> Iterator[Server]:
    """Run ``gatekeeper serve --ledger URL ARGS`` until the block ends (then stop it)."""
    extra = ["--token", token] if token else []
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEKEEPER_SERVE")}
    process = subprocess.Popen(
        serve_command("--ledger", ledger_url, *extra, *args),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = _ADDRESS.search(line)
        assert found, f"no address from gatekeeper serve: {line!r} {process.stderr.read()!r}"
        server = Server(found.group(1), process, token)
        deadline = time.monotonic() + 10
        while server.get("/healthz").status != 200:
            assert time.monotonic() < deadline, "gatekeeper serve never became healthy"
            time.sleep(0.05)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


class Cells(HTMLParser):
    """The grid's cells (``data-job``, ``data-period``, ``data-state``) in page order."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[tuple[str, str, str]] = []
        self.scripts: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = dict(attrs)
        self.tags.append((tag, found))
        self._in_script = tag == "script"
        if tag == "i" and "data-state" in found:
            self.cells.append(
                (str(found["data-job"]), str(found["data-period"]), str(found["data-state"]))
            )

    def handle_endtag(self, tag: str) -> None:
        self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.scripts.append(data)


def parse_page(html: str) -> Cells:
    parser = Cells()
    parser.feed(html)
    return parser


#: A job name and an error a hostile producer could record.
HOSTILE_JOB = 'Hx"><img src=x onerror=alert(1)>'
HOSTILE_ERROR = '"><img src=x onerror=alert(2)><script>alert(3)</script>'


def today() -> dt.date:
    return dt.datetime.now(UTC).date()


def scenario(ledger: gk.Ledger) -> None:
    """Jobs relative to today (the server reads the real clock): ``Upstream`` succeeded
    the last 5 days; ``Sales`` (publishes, requires Upstream) succeeded, failed with a
    hostile error, running with a live lease, running with an expired one, missing; a
    published period with a correction; an hourly job with a hostile name."""
    now = dt.datetime.now(UTC)
    day = [str(today() - dt.timedelta(days=n)) for n in range(8)]
    for n in range(1, 6):
        ledger.record("Upstream", day[n], 1, f"u-{n}", "succeeded", now)
    ledger.record("Sales", day[5], 1, "s-5", "succeeded", now)
    ledger.publish("Sales", day[5], ["Upstream"], "fp-1")
    ledger.republish("Sales", day[5], ["Upstream"], "fp-2", reason="late <b>data</b>")
    ledger.record("Sales", day[4], 1, "s-4", "failed", now, error=HOSTILE_ERROR)
    ledger.begin_attempt("Sales", day[3], "s-3", lease_seconds=3600)
    ledger.begin_attempt("Sales", day[2], "s-2", lease_seconds=1, now=now - dt.timedelta(hours=1))
    hour = (now - dt.timedelta(hours=3)).replace(minute=0, second=0, microsecond=0)
    ledger.record(HOSTILE_JOB, hour.isoformat(), 1, "h-1", "succeeded", now)


def showcase(ledger: gk.Ledger, days: int = 40) -> str:
    """The docs picture's ledger, relative to today: two upstreams, a publishing consumer
    (a blocked day behind a failed upstream, a correction) and an hourly job; returns the
    corrected period."""
    now = dt.datetime.now(UTC)
    keys = [str(today() - dt.timedelta(days=n)) for n in range(days, 0, -1)]
    failed, corrected = keys[-4], keys[-9]
    for key in keys[:-1]:
        state = "failed" if key == failed else "succeeded"
        error = "RuntimeError: disk full on /data" if key == failed else None
        ledger.record("Orders", key, 1, f"o-{key}", state, now, error=error)
        ledger.record("DimCustomer", key, 1, f"c-{key}", "succeeded", now)
        if key == failed:
            continue
        ledger.record("DailySalesLoad", key, 1, f"s-{key}", "succeeded", now)
        ledger.publish("DailySalesLoad", key, ["Orders", "DimCustomer"], f"sha256:{key}")
    ledger.record("Orders", keys[-1], 1, f"o-{keys[-1]}", "succeeded", now)
    ledger.begin_attempt("DimCustomer", keys[-1], f"c-{keys[-1]}", lease_seconds=3600)
    ledger.republish(
        "DailySalesLoad",
        corrected,
        ["Orders", "DimCustomer"],
        f"sha256:{corrected}-2",
        reason="late-arriving refunds",
    )
    hour = now.replace(minute=0, second=0, microsecond=0)
    for n in range(48, 1, -1):
        at = (hour - dt.timedelta(hours=n)).isoformat()
        state = "failed" if n == 7 else "succeeded"
        ledger.record(
            "HourlyClicks", at, 1, f"h-{at}", state, now, error="timeout" if n == 7 else None
        )
    ledger.begin_attempt(
        "HourlyClicks", (hour - dt.timedelta(hours=1)).isoformat(), "h-now", lease_seconds=3600
    )
    return corrected


@contextlib.contextmanager
def in_thread(url: str, clock: Callable[[], dt.datetime]) -> Iterator[str]:
    """``gatekeeper serve``'s application over ``url`` (read-only) judged at ``clock()``
    (a faked clock: the subprocess reads the real one), on a real uvicorn server in a thread
    of this process on a free port; yields its base URL."""
    import uvicorn

    from gatekeeper.web.app import build_app

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    with gk.open_ledger(url, create=False) as ledger:
        app = build_app(ledger, dt.timedelta(days=90), clock=clock)
        config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
        server = uvicorn.Server(config)
        thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
        thread.start()
        try:
            deadline = time.monotonic() + 10
            while not server.started:
                assert time.monotonic() < deadline and thread.is_alive(), "never started"
                time.sleep(0.02)
            yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        finally:
            server.should_exit = True
            thread.join(10)
            sock.close()


def read(url: str) -> str:
    """The body of a GET of ``url`` that must answer 200."""
    with _OPENER.open(url, timeout=20) as response:
        assert response.status == 200, response.status
        return str(response.read().decode("utf-8"))


def _lower(headers: Any) -> dict[str, str]:
    """Response headers by lower-case name."""
    return {k.lower(): v for k, v in headers.items()}
