"""``serve``: the read-only web view of the ledger (``gatekeeper/web/``; the ``web`` extra).

Safe by default: it binds 127.0.0.1; a host that is not loopback needs ``--token`` (or
``$GATEKEEPER_SERVE_TOKEN``) or an explicit ``--insecure``; the ledger is opened read-only;
no access log is written (a browser's first ``/?token=`` would land in it), and the one line
it prints names the ledger with ``***`` for its password.
"""

from __future__ import annotations

import argparse
import datetime as dt
import importlib
import ipaddress
import os
import socket
import sys
from collections.abc import Callable
from typing import Any

from gatekeeper.cli.output import Result, open_cli_ledger, to_int
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.intervals import parse_lateness
from gatekeeper.luigi.freshness import check_config
from gatekeeper.web.server import HEADER_TIMEOUT, KEEP_ALIVE, MAX_CONNECTIONS
from gatekeeper.web.views import parse_window

EXTRA = ("starlette", "uvicorn", "prometheus_client")
TOKEN_ENV = "GATEKEEPER_SERVE_TOKEN"


def cmd_serve(_: None, args: argparse.Namespace) -> Result:
    """Serve until interrupted; exit 2 for bad input (before anything is opened)."""
    window = parse_window(args.window)
    port = to_int(args.port, "port")
    if port > 65535:
        raise InvalidInput("port", args.port, "expected 0 to 65535")
    limits = parse_limits(args)
    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None and not token.strip():
        raise InvalidInput("token", "", "empty")
    check_exposure(args.host, token, args.insecure)
    require_extra()
    sock = listen(args.host, port)
    from gatekeeper.web import server
    from gatekeeper.web.app import build_app

    with (
        sock,
        open_cli_ledger(args.ledger, create=False) as ledger,
        open_cli_ledger(args.ledger, create=False) as health,
    ):
        check_config(ledger, args.allow_unknown)  # a typo must not silence an alert
        health.sql.reconnect_window = 0  # /healthz says at once that the ledger is away
        app = build_app(ledger, window, token, health)
        host, bound = sock.getsockname()[:2]
        shown = f"[{host}]" if ":" in host else host
        print(
            f"gatekeeper serve: http://{shown}:{bound}/ ({ledger.describe()}, read-only"
            f"{', token required' if token else ''})",
            file=sys.stderr,
            flush=True,
        )
        server.run(app, sock, limits)
    return Result({"stopped": True}, "gatekeeper serve: stopped")


def parse_limits(args: argparse.Namespace) -> Any:
    """``--header-timeout``, ``--keep-alive`` (durations, 1 s to 1 h) and
    ``--max-connections`` (1 to 100,000) as ``server.Limits``; InvalidInput naming each."""
    from gatekeeper.web.server import Limits

    header = parse_lateness(args.header_timeout, "header_timeout")
    keep = parse_lateness(args.keep_alive, "keep_alive")
    for field, given, span in (
        ("header_timeout", args.header_timeout, header),
        ("keep_alive", args.keep_alive, keep),
    ):
        if not dt.timedelta(seconds=1) <= span <= dt.timedelta(hours=1):
            raise InvalidInput(field, given, "expected a duration from 1s to 1h")
    most = to_int(args.max_connections, "max_connections")
    if not 1 <= most <= 100_000:
        raise InvalidInput("max_connections", args.max_connections, "expected 1 to 100000")
    return Limits(header.total_seconds(), int(keep.total_seconds()), most)


def is_loopback(host: str) -> bool:
    """True when every address ``host`` resolves to is a loopback address."""
    try:
        found = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError:
        return False
    return bool(found) and all(ipaddress.ip_address(a[4][0]).is_loopback for a in found)


def check_exposure(host: str, token: str | None, insecure: bool) -> None:
    """Refuse a bind beyond this machine without a token unless ``--insecure`` says so."""
    if token is None and not insecure and not is_loopback(host):
        raise InvalidInput(
            "host",
            host,
            "not a loopback address: anyone who can reach it could read the ledger; "
            f"give --token (or ${TOKEN_ENV}), or --insecure to serve it without one",
        )


def require_extra() -> None:
    """Raise InvalidInput naming the extra when Starlette, uvicorn or prometheus_client is
    missing."""
    for name in EXTRA:
        try:
            importlib.import_module(name)
        except ImportError:
            raise InvalidInput(
                "web",
                name,
                "gatekeeper serve needs the web extra: pip install 'luigi-gatekeeper[web]'",
            ) from None


def listen(host: str, port: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (0: any free port); raises InvalidInput."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(128)
    except OSError as exc:
        raise InvalidInput("port", port, f"cannot listen on {host}:{port} ({exc})") from None
    return sock


def register(add: Callable[..., Any]) -> None:
    """Add ``serve`` to the parser."""
    p = add(
        "serve",
        cmd_serve,
        "Serve a read-only web view of the ledger: a live job x period grid, the JSON API "
        "and Prometheus /metrics (needs pip install 'luigi-gatekeeper[web]').",
        ledger=False,
    )
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    p.add_argument("--port", default="8099", help="port (default: 8099; 0: any free port)")
    p.add_argument("--window", default="90d", help="periods shown: the last ... (default: 90d)")
    p.add_argument(
        "--token",
        help=f"require Authorization: Bearer TOKEN (default: ${TOKEN_ENV}); needed to bind "
        "a non-loopback host",
    )
    p.add_argument(
        "--allow-unknown",
        action="store_true",
        help="serve a [gatekeeper.freshness] key naming no job of the ledger (a job not yet "
        "run) instead of refusing it with the closest known names (exit 2); /metrics counts "
        "such keys in gatekeeper_config_unknown_jobs",
    )
    p.add_argument(
        "--header-timeout",
        default=f"{HEADER_TIMEOUT:g}s",
        help="close a connection whose request headers are not complete after this long "
        f"(default: {HEADER_TIMEOUT:g}s)",
    )
    p.add_argument(
        "--keep-alive",
        default=f"{KEEP_ALIVE}s",
        help=f"close a connection idle between requests after this long (default: {KEEP_ALIVE}s)",
    )
    p.add_argument(
        "--max-connections",
        default=str(MAX_CONNECTIONS),
        help="beyond this many open connections a request is answered 503 "
        f"(default: {MAX_CONNECTIONS})",
    )
    p.add_argument(
        "--insecure",
        action="store_true",
        help="allow a non-loopback host without a token (anyone reaching it reads the ledger)",
    )
