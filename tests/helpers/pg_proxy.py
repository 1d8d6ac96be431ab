"""A real TCP proxy in front of PostgreSQL that loses a COMMIT on demand (threads, sockets).

It parses just enough of the wire protocol: the startup (an SSL or GSS encryption request is
answered ``N`` here, so the stream stays readable), then each client message's type and
length; the statements run by a simple ``Query`` (``Q``) and by an extended-protocol ``Bind``
(``B``, what psycopg sends, in its pipelines too; the text is its ``Parse``'s, by statement
name, so statements psycopg prepared are seen too) are kept per connection since ``BEGIN``.
Armed (``arm``), at the first ``COMMIT`` whose transaction's statements satisfy ``when``:

- ``answer``: the COMMIT goes to the server, which commits; its answer is dropped (read and
  discarded until the server's CommandComplete of the COMMIT), then both sides are closed;
- ``request``: the COMMIT is not sent; both sides are closed (the server rolls back).

``refuse()`` makes every new connection close at once (the database unreachable through the
proxy), ``accept()`` undoes it; ``drop()`` closes every connection made so far (a restart).
"""

from __future__ import annotations

import contextlib
import re
import socket
import struct
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

_ENCRYPTION_REQUESTS = (80877103, 80877104)  # SSLRequest, GSSENCRequest
_COMMIT_DONE = b"C\x00\x00\x00\x0bCOMMIT\x00"  # the server's CommandComplete of a COMMIT


@dataclass
class Cut:
    mode: str  # "answer" or "request"
    when: Callable[[list[str]], bool]
    then_refuse: bool = False  # refuse new connections from the moment of the cut


class _Pair:
    """One client connection and its server connection."""

    def __init__(self, proxy: PgProxy, client: socket.socket, server: socket.socket):
        self.proxy, self.client, self.server = proxy, client, server
        self.statements: list[str] = []
        self.prepared: dict[bytes, str] = {}  # statement name -> its text (Parse)
        self.dropping = False  # the answer to a forwarded COMMIT is being dropped
        self.closed = threading.Event()

    def close(self) -> None:
        self.closed.set()
        for sock in (self.client, self.server):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            with contextlib.suppress(OSError):
                sock.close()

    # -- client to server ---------------------------------------------------------------------
    def upstream(self) -> None:
        try:
            self._startup()
            buffer = b""
            while not self.closed.is_set():
                data = self.client.recv(65536)
                if not data:
                    break
                if self.dropping:  # the rest of the COMMIT (Execute, Sync) goes up
                    self.server.sendall(data)
                    continue
                buffer += data
                out, buffer, cut = self._messages(buffer)
                if cut is None:
                    self.server.sendall(out)
                    continue
                self.proxy.cuts.append(cut.mode)
                if cut.mode == "request":
                    break  # the COMMIT and what follows are never sent
                self.dropping = True  # downstream closes both once the COMMIT is done
                self.server.sendall(out + buffer)
                buffer = b""
        except OSError:
            pass
        self.close()

    def _startup(self) -> None:
        while True:
            head = _recv_exact(self.client, 4)
            (length,) = struct.unpack("!i", head)
            body = _recv_exact(self.client, length - 4)
            if len(body) >= 4 and struct.unpack("!i", body[:4])[0] in _ENCRYPTION_REQUESTS:
                self.client.sendall(b"N")
                continue
            self.server.sendall(head + body)
            return

    def _messages(self, buffer: bytes) -> tuple[bytes, bytes, Cut | None]:
        """The complete messages of ``buffer`` to forward, the rest, and the cut made (the
        messages to forward then end with the COMMIT, for ``answer``, or before it)."""
        out = b""
        while len(buffer) >= 5:
            kind = buffer[:1]
            (length,) = struct.unpack("!i", buffer[1:5])
            if len(buffer) < 1 + length:
                break
            message, buffer = buffer[: 1 + length], buffer[1 + length :]
            text = self._statement(kind, message[5:])
            if text is not None:
                cut = self._judge(text)
                if cut is not None:
                    return (out + message if cut.mode == "answer" else out), buffer, cut
            out += message
        return out, buffer, None

    def _statement(self, kind: bytes, body: bytes) -> str | None:
        """The SQL text a Query runs, or a Bind (psycopg's extended protocol: the text of the
        statement it binds, named when psycopg prepared it); a Parse's text is kept by name."""
        if kind == b"Q":
            return body.rstrip(b"\x00").decode(errors="replace")
        if kind == b"P":
            name, _, rest = body.partition(b"\x00")
            self.prepared[name] = rest.partition(b"\x00")[0].decode(errors="replace")
            return None
        if kind == b"B":
            _, _, rest = body.partition(b"\x00")  # the portal's name, then the statement's
            return self.prepared.get(rest.partition(b"\x00")[0], "")
        return None

    def _judge(self, text: str) -> Cut | None:
        found = re.match(r"\s*([A-Za-z]+)", text)  # "COMMIT; SELECT ..." too
        word = found.group(1).upper() if found else ""
        if word in ("BEGIN", "START"):
            self.statements = [text]
            return None
        if word == "ROLLBACK":
            self.statements = []
            return None
        self.statements.append(text)
        if word != "COMMIT":
            return None
        with self.proxy.lock:
            armed = self.proxy.armed
            if armed is None or not armed.when(self.statements):
                self.statements = []
                return None
            self.proxy.armed = None
            self.proxy.refusing = self.proxy.refusing or armed.then_refuse
        return armed

    # -- server to client ---------------------------------------------------------------------
    def downstream(self) -> None:
        dropped = b""
        deadline: float | None = None
        try:
            while not self.closed.is_set():
                data = self.server.recv(65536)
                if not data:
                    break
                if self.dropping:
                    dropped += data
                    deadline = deadline or time.monotonic() + 5
                    if _COMMIT_DONE in dropped or time.monotonic() > deadline:
                        break
                    continue
                self.client.sendall(data)
        except OSError:
            pass
        self.close()


class PgProxy:
    """The proxy, listening on 127.0.0.1 (``port``), forwarding to ``host:port``."""

    def __init__(self, host: str, port: int):
        self.upstream = (host, port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.lock = threading.Lock()
        self.armed: Cut | None = None
        self.refusing = False
        self.cuts: list[str] = []  # the mode of each cut made, in order
        self.pairs: list[_Pair] = []
        self._stopped = False
        threading.Thread(target=self._accept, daemon=True).start()

    def arm(
        self,
        mode: str,
        when: Callable[[list[str]], bool] = lambda s: True,
        then_refuse: bool = False,
    ) -> None:
        """Cut the first COMMIT (from now) whose transaction's statements satisfy ``when``;
        ``then_refuse``: from then on, refuse new connections (``refuse``)."""
        assert mode in ("answer", "request")
        with self.lock:
            self.armed = Cut(mode, when, then_refuse)

    def refuse(self) -> None:
        self.refusing = True

    def accept(self) -> None:
        self.refusing = False

    def drop(self) -> None:
        """Close every connection made so far (as a server restart does); new ones are
        forwarded unless ``refuse`` was called."""
        for pair in list(self.pairs):
            pair.close()

    def url(self, url: str) -> str:
        """``url`` (a postgresql:// URL) pointed at this proxy."""
        parts = urlsplit(url)
        user = f"{parts.username}@" if parts.username else ""
        if parts.password:
            user = f"{parts.username}:{parts.password}@"
        return urlunsplit(parts._replace(netloc=f"{user}127.0.0.1:{self.port}"))

    def close(self) -> None:
        self._stopped = True
        with contextlib.suppress(OSError):
            self.listener.close()
        for pair in list(self.pairs):
            pair.close()

    def _accept(self) -> None:
        while not self._stopped:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                client.close()
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                client.close()
                continue
            server.settimeout(None)
            pair = _Pair(self, client, server)
            self.pairs.append(pair)
            threading.Thread(target=pair.upstream, daemon=True).start()
            threading.Thread(target=pair.downstream, daemon=True).start()


@contextlib.contextmanager
def pg_proxy(dsn: str) -> Iterator[PgProxy]:
    """A proxy in front of the server of ``dsn``, closed afterwards."""
    parts = urlsplit(dsn)
    proxy = PgProxy(parts.hostname or "127.0.0.1", parts.port or 5432)
    try:
        yield proxy
    finally:
        proxy.close()


def has(text: str) -> Callable[[list[str]], bool]:
    """A ``when``: the transaction ran a statement containing ``text``."""
    return lambda statements: any(text in s for s in statements)


def _recv_exact(sock: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise OSError("closed")
        data += chunk
    return data
