"""``gatekeeper serve``'s bounded connections, with raw sockets on loopback against the real
server: an idle connection and one whose headers never complete are closed after
``--header-timeout`` (however slowly its bytes trickle in), an idle keep-alive connection
after ``--keep-alive``, and beyond ``--max-connections`` a request is answered 503 until the
idle ones are gone."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import pytest

import gatekeeper as gk
from tests.helpers.serve import start

pytest.importorskip("starlette")
# serial: the server's --header-timeout and --keep-alive are read off the closes it makes, and
# a loaded machine stretches a trickled request past them (the machine to itself, not xdist)
pytestmark = [pytest.mark.slow, pytest.mark.serial]

REQUEST = b"GET /healthz HTTP/1.1\r\nHost: gk\r\n\r\n"
SAFETY = 30.0  # a socket's timeout: only a server that never closes reaches it


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=SAFETY)
    return sock


def closed_by_server(sock: socket.socket) -> bytes:
    """Everything the server sent until it closed the connection (raises on SAFETY)."""
    data = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            return data
        data += chunk


def status_of(sock: socket.socket) -> int:
    head = b""
    while b"\r\n" not in head:
        chunk = sock.recv(1)
        assert chunk, "closed before a status line"
        head += chunk
    return int(head.split()[1])


def test_serve_closes_idle_slow_and_kept_alive_connections_and_caps_them(
    sqlite_url: str,
) -> None:
    gk.open_ledger(sqlite_url).close()
    args = ("--header-timeout", "2s", "--keep-alive", "1s", "--max-connections", "4")
    with start(sqlite_url, *args) as server:
        port = urlsplit(server.url).port
        assert port is not None
        idle = [connect(port) for _ in range(4)]
        over = connect(port)  # the fifth: refused while the four are open
        over.sendall(REQUEST)
        refused = status_of(over)
        over.close()
        leftovers = [closed_by_server(sock) for sock in idle]  # header timeout: closed
        for sock in idle:
            sock.close()
        fresh = connect(port)
        fresh.sendall(REQUEST)
        served = status_of(fresh)
        rest = closed_by_server(fresh)  # then idle past the keep-alive: closed
        fresh.close()
        half = connect(port)
        half.sendall(b"GET /healthz HTTP/1.1\r\nHost: gk\r\n")  # never the blank line
        half_answer = closed_by_server(half)
        half.close()
        slow = connect(port)  # valid headers, a byte every 0.2 s: never idle, never complete
        slow.sendall(b"GET /healthz HTTP/1.1\r\nHost: gk\r\n")
        slow.settimeout(0.2)
        trickle = b"X-Slow: a\r\n" * 20
        slow_closed, sent, slow_answer = False, 0, b""
        while sent < len(trickle):  # at most 48 s
            try:
                slow.sendall(trickle[sent : sent + 1])
            except OSError:
                slow_closed = True
                break
            sent += 1
            try:
                slow_answer = slow.recv(65536)
            except TimeoutError:
                continue
            slow_closed = True  # closed (b"") or, wrongly, answered
            break
        slow.close()
        assert server.get("/healthz").status == 200
    assert refused == 503
    assert leftovers == [b""] * 4  # closed without an answer
    assert served == 200 and b'"status":"ok"' in rest
    assert half_answer == b""
    assert slow_closed and slow_answer == b"" and sent < len(b"X-Slow: a\r\n" * 20)
