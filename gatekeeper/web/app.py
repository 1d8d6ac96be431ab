"""The Starlette application of ``gatekeeper serve``: routes, the bearer token, errors.

Every route reads only (the ledger is opened read-only by the command). Handlers are
``async`` and read the ledger on the event loop's thread: one connection, one request at a
time, which a dashboard and a scraper need no more than. With a token, every route but
``/healthz`` requires ``Authorization: Bearer TOKEN`` (or the cookie set by opening
``/?token=TOKEN`` once in a browser), compared in constant time; else 401.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import json
import time
from base64 import b64encode
from collections.abc import Callable
from typing import Any

from gatekeeper.core.clock import utc_now
from gatekeeper.core.display import mask, url_secrets
from gatekeeper.core.errors import GatekeeperError, InvalidInput, LedgerError
from gatekeeper.ledger import Ledger
from gatekeeper.luigi.freshness import check_config
from gatekeeper.web import metrics, page, views

COOKIE = "gatekeeper_token"
_SCRIPT_HASH = b64encode(hashlib.sha256(page.SCRIPT.encode()).digest()).decode()
_CSP = (
    "default-src 'none'; connect-src 'self'; img-src 'self' data:; style-src 'unsafe-inline'; "
    f"script-src 'sha256-{_SCRIPT_HASH}'; base-uri 'none'; form-action 'self'; "
    "frame-ancestors 'none'"
)
_HEADERS = {
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}


def build_app(
    ledger: Ledger,
    window: dt.timedelta,
    token: str | None = None,
    clock: Callable[[], dt.datetime] = utc_now,
) -> Any:
    """The ASGI application over ``ledger`` (opened read-only) with the default ``window``,
    judging every answer at ``clock()`` (default: the current time)."""
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    secrets = url_secrets(ledger.url)

    def secret(text: str) -> str:
        return mask(text, secrets)

    def error(status: int, exc: GatekeeperError) -> Response:
        body: dict[str, Any] = {"error": type(exc).__name__, "message": secret(str(exc))}
        if isinstance(exc, InvalidInput):
            body.update(field=exc.field, value=secret(str(exc.value)))
        return JSONResponse(body, status, headers=_HEADERS)

    def answer(fn: Any) -> Any:
        async def handler(request: Request) -> Response:
            try:
                result: Response = fn(request)
                return result
            except views.UnknownJob as exc:
                return error(404, exc)
            except InvalidInput as exc:
                return error(400, exc)
            except LedgerError as exc:
                return error(503, exc)

        return handler

    def judge(chosen: dt.timedelta) -> tuple[Any, ...]:
        """The grid of ``chosen`` at ``clock()``, and the ``[gatekeeper.freshness]`` keys
        naming no job of the ledger (served by ``--allow-unknown``)."""
        return (*views.job_views(ledger, chosen, clock()), check_config(ledger, True))

    cache = _Recent(judge)

    def window_of(request: Request) -> dt.timedelta:
        given = request.query_params.get("window")
        return window if given is None else views.parse_window(given)

    def jobs(request: Request) -> Response:
        found, skipped, unknown = cache.get(window_of(request))
        cells = request.query_params.get("cells") == "1"
        body = [{**v.summary(), **({"cells": v.cells()} if cells else {})} for v in found]
        data = {"jobs": body, "skipped": skipped, "config_unknown_jobs": list(unknown)}
        return JSONResponse(data, headers=_HEADERS)

    def periods(request: Request) -> Response:
        q = request.query_params
        found = views.job_periods(
            ledger,
            request.path_params["job"],
            window_of(request),
            clock(),
            q.get("start") or None,
            q.get("stop") or None,
        )
        return JSONResponse(found, headers=_HEADERS)

    def period(request: Request) -> Response:
        p = request.path_params
        found = views.period_detail(ledger, p["job"], p["period"], clock())
        return JSONResponse(found, headers=_HEADERS)

    def scrape(request: Request) -> Response:
        found, _, unknown = cache.get(window_of(request))
        return Response(
            metrics.exposition(ledger, found, unknown),
            headers={"Content-Type": "text/plain; version=0.0.4"},
        )

    def index(request: Request) -> Response:
        chosen = window_of(request)
        found, skipped, _ = cache.get(chosen)
        text = page.render(found, skipped, chosen, ledger.describe())
        return HTMLResponse(text, headers={**_HEADERS, "Content-Security-Policy": _CSP})

    async def healthz(request: Request) -> Response:
        try:
            version, now = ledger.schema_version(), ledger.db_now()
        except GatekeeperError as exc:
            body = {"status": "unavailable", "message": secret(str(exc))}
            return JSONResponse(body, 503, headers=_HEADERS)
        if version == 0:  # the ledger's tables are gone
            body = {"status": "unavailable", "message": f"no ledger in {ledger.describe()}"}
            return JSONResponse(body, 503, headers=_HEADERS)
        return JSONResponse(
            {"status": "ok", "ledger": ledger.describe(), "db_now": now.isoformat()},
            headers=_HEADERS,
        )

    app = Starlette(
        routes=[
            Route("/", answer(index)),
            Route("/healthz", healthz),
            Route("/metrics", answer(scrape)),
            Route("/api/jobs", answer(jobs)),
            Route("/api/jobs/{job}/periods", answer(periods)),
            Route("/api/jobs/{job}/periods/{period}", answer(period)),
        ]
    )
    if token is None:
        return app
    return _Guard(app, token, RedirectResponse, JSONResponse)


class _Recent:
    """The grid of a window, computed at most once per ``MAX_AGE`` seconds: the pages of
    several viewers (each polling every 2 s) and a scraper share one judgement, which is
    never older than ``MAX_AGE``."""

    MAX_AGE = 1.0

    def __init__(self, compute: Any):
        self.compute = compute
        self.found: dict[dt.timedelta, tuple[float, Any]] = {}

    def get(self, window: dt.timedelta) -> Any:
        now = time.monotonic()
        held = self.found.get(window)
        if held is None or now - held[0] >= self.MAX_AGE:
            held = (now, self.compute(window))
            fresh = {w: h for w, h in self.found.items() if now - h[0] < self.MAX_AGE}
            self.found = {**fresh, window: held}
        return held[1]


class _Guard:
    """ASGI middleware: a bearer token (or its cookie) on every route but ``/healthz``."""

    def __init__(self, app: Any, token: str, redirect: Any, json_response: Any):
        self.app, self.token = app, token.encode()
        self.redirect, self.json_response = redirect, json_response

    def allowed(self, given: str | None) -> bool:
        return given is not None and hmac.compare_digest(given.encode(), self.token)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["path"] == "/healthz":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        bearer = headers.get("authorization", "")
        given = bearer[7:] if bearer[:7].lower() == "bearer " else None
        if self.allowed(given) or self.allowed(_cookie(headers.get("cookie", ""))):
            await self.app(scope, receive, send)
            return
        query = _query(scope)
        if scope["path"] == "/" and self.allowed(query.get("token")):
            response = self.redirect("/", 303)  # the token leaves the address bar
            response.set_cookie(COOKIE, query["token"], httponly=True, samesite="strict")
        else:
            body = {"error": "Unauthorized", "message": "a bearer token is required"}
            response = self.json_response(
                body, 401, headers={"WWW-Authenticate": "Bearer", **_HEADERS}
            )
        await response(scope, receive, send)


def _cookie(text: str) -> str | None:
    for part in text.split(";"):
        name, _, value = part.strip().partition("=")
        if name == COOKIE:
            return value
    return None


def _query(scope: Any) -> dict[str, str]:
    from urllib.parse import parse_qsl

    return dict(parse_qsl(scope.get("query_string", b"").decode("latin-1")))


def dumps(data: Any) -> str:
    """JSON for an HTML ``<script>`` block: ``<`` escaped so no data can close it."""
    return json.dumps(data).replace("<", "\\u003c")
