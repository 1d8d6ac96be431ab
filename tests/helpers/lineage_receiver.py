"""A local OpenLineage HTTP receiver (what Marquez's ``POST /api/v1/lineage`` accepts).

In the tests: ``with Receiver(delay=0) as receiver: ... receiver.events``. From a shell, to watch
the events a pipeline sends (README, "OpenLineage")::

    python -m tests.helpers.lineage_receiver --port 5000   # one line per event; --json: events
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ENDPOINT = "/api/v1/lineage"


class Receiver:
    """An HTTP server on 127.0.0.1 collecting the JSON bodies POSTed to ``/api/v1/lineage``;
    each request is answered after ``delay`` seconds (a slow backend) with ``status`` (a
    backend in trouble answers 500: nothing is collected then)."""

    def __init__(self, port: int = 0, delay: float = 0.0, echo: Any = None, status: int = 201):
        self.delay, self.echo, self.status = delay, echo, status
        self.requests = 0
        self.events: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                time.sleep(receiver.delay)
                if self.path != ENDPOINT:
                    self.send_response(404)
                    self.end_headers()
                    return
                with receiver.lock:
                    receiver.requests += 1
                if receiver.status >= 300:
                    self.send_response(receiver.status)
                    self.end_headers()
                    return
                event = json.loads(body)
                with receiver.lock:
                    receiver.events.append(event)
                if receiver.echo is not None:
                    receiver.echo(event)
                self.send_response(201)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> Receiver:
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.server.shutdown()
        self.server.server_close()

    def received(self) -> list[dict[str, Any]]:
        with self.lock:
            return list(self.events)


class Silent:
    """A lineage backend that accepts connections and never answers (a hung server): every
    connection is accepted and held open, unread, until the block ends."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0), backlog=128)
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}"
        self.held: list[socket.socket] = []
        self.accepted = 0

    def __enter__(self) -> Silent:
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.server.accept()
            except OSError:  # closed by __exit__
                return
            self.held.append(conn)
            self.accepted += 1

    def __exit__(self, *exc: Any) -> None:
        self.server.close()
        for conn in self.held:
            conn.close()


def closed_port_url() -> str:
    """The URL of a local port nothing listens on (a lineage backend that is down)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def summary(event: dict[str, Any]) -> str:
    """One line: event type, job, runId, the nominal interval and the attempt."""
    facets = event["run"].get("facets", {})
    nominal = facets.get("nominalTime", {})
    gk = facets.get("gatekeeper", {})
    line = (
        f"{event.get('eventType', '?'):8} {event['job']['namespace']}/{event['job']['name']} "
        f"run {event['run']['runId']} [{nominal.get('nominalStartTime')}, "
        f"{nominal.get('nominalEndTime')}) attempt {gk.get('attempt', {}).get('number')}"
    )
    if "publication" in gk:
        line += (
            f" revision {gk['publication']['revision']} evidence "
            f"{json.dumps(gk.get('evidence'), sort_keys=True)}"
        )
    return line


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=5000)
    parser.add_argument("--json", action="store_true", help="print each event's JSON")
    args = parser.parse_args(argv)

    def echo(event: dict[str, Any]) -> None:
        print(json.dumps(event, sort_keys=True) if args.json else summary(event), flush=True)

    with Receiver(args.port, echo=echo) as receiver:
        print(
            f"receiving OpenLineage events at {receiver.url}{ENDPOINT}", file=sys.stderr, flush=True
        )
        try:
            threading.Event().wait()
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
