"""The Starlette application of ``gatekeeper serve``: routes, the bearer token, errors.

Every route reads only (the ledger is opened read-only by the command). The ledger's reads
and the rendering of an answer run on a worker thread, one request at a time on the one
connection (a dashboard and a scraper need no more), never on the event loop: ``/healthz``
asks its own connection (``health``), in at most ``HEALTH_DEADLINE`` seconds, whatever
another request is doing. Every error is JSON (``{"error", "message"}``, with ``field`` and
``value`` for bad input), 404 and 405 included, and every text of an answer is shown as the
CLI shows it: control and bidi characters escaped (``display.printable``). A job is
addressed by its name as one percent-encoded path segment (``/`` is ``%2F``), so every name
the ledger accepts is reachable. With a token, every route but ``/healthz`` requires
``Authorization: Bearer TOKEN`` (or the cookie set by opening ``/?token=TOKEN`` once in a
browser), compared in constant time; else 401.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import hashlib
import hmac
import json
import threading
import time
from base64 import b64encode
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote

from gatekeeper.core.clock import utc_now
from gatekeeper.core.display import mask, printable, url_secrets
from gatekeeper.core.errors import GatekeeperError, InvalidInput, LedgerError
from gatekeeper.ledger import Ledger
from gatekeeper.luigi.freshness import check_config
from gatekeeper.web import detail, metrics, page, views

COOKIE = "gatekeeper_token"
#: ``/healthz`` answers 503 when its ledger has not answered within this many seconds
HEALTH_DEADLINE = 0.8
_JOBS = "/api/jobs/"
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


def shown(data: Any) -> Any:
    """``data`` (JSON values) with every string, keys too, as the CLI shows it
    (``printable``: control and bidi characters escaped)."""
    if isinstance(data, str):
        return printable(data)
    if isinstance(data, dict):
        return {printable(k): shown(v) for k, v in data.items()}
    if isinstance(data, (list, tuple)):
        return [shown(v) for v in data]
    return data


def build_app(
    ledger: Ledger,
    window: dt.timedelta,
    token: str | None = None,
    health: Ledger | None = None,
    clock: Callable[[], dt.datetime] = utc_now,
) -> Any:
    """The ASGI application over ``ledger`` (opened read-only) with the default ``window``,
    judging every answer at ``clock()`` (default: the current time); ``/healthz`` asks
    ``health`` (a second read-only connection; default ``ledger``)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.exceptions import HTTPException
    from starlette.requests import Request
    from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
    from starlette.routing import Route

    secrets = url_secrets(ledger.url)
    one_at_a_time = threading.Lock()  # one request at a time on the ledger's connection

    def secret(text: str) -> str:
        return mask(text, secrets)

    def answer_json(body: Any, status: int = 200) -> Response:
        return JSONResponse(shown(body), status, headers=_HEADERS)

    def error(status: int, exc: GatekeeperError) -> Response:
        body: dict[str, Any] = {"error": type(exc).__name__, "message": secret(str(exc))}
        if isinstance(exc, InvalidInput):
            body.update(field=exc.field, value=secret(str(exc.value)))
        return answer_json(body, status)

    def on_thread(request: Request, fn: Any) -> Response:
        with one_at_a_time:
            try:
                result: Response = fn(request)
                return result
            except views.UnknownJob as exc:
                return error(404, exc)
            except InvalidInput as exc:
                return error(400, exc)
            except LedgerError as exc:
                return error(503, exc)

    def answer(fn: Any) -> Any:
        async def handler(request: Request) -> Response:
            result: Response = await run_in_threadpool(on_thread, request, fn)
            return result

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
        named = request.query_params.getlist("job")
        if named:  # the rows a page shows: only these jobs
            found = views.named_views(ledger, found, skipped, named)
        body = [{**v.summary(), **(views.job_strip(ledger, v) if cells else {})} for v in found]
        return answer_json({"jobs": body, "skipped": skipped, "config_unknown_jobs": list(unknown)})

    def periods(request: Request, job: str) -> Response:
        q = request.query_params
        found = views.job_periods(
            ledger,
            job,
            window_of(request),
            clock(),
            q.get("start") or None,
            q.get("stop") or None,
        )
        return answer_json(found)

    def period(request: Request, job: str, key: str) -> Response:
        return answer_json(detail.period_detail(ledger, job, key, clock()))

    def job_route(request: Request) -> Response:
        parts = _segments(request.scope)
        if len(parts) == 2 and parts[1] == "periods":
            return periods(request, parts[0])
        if len(parts) == 3 and parts[1] == "periods":
            return period(request, parts[0], parts[2])
        raise HTTPException(404)

    def scrape(request: Request) -> Response:
        found, _, unknown = cache.get(window_of(request))
        return Response(
            metrics.exposition(found, unknown),
            headers={"Content-Type": "text/plain; version=0.0.4"},
        )

    def index(request: Request) -> Response:
        chosen = window_of(request)
        found, skipped, _ = cache.get(chosen)
        text = page.render(found, skipped, chosen, ledger.describe())
        return HTMLResponse(text, headers={**_HEADERS, "Content-Security-Policy": _CSP})

    probe = _Health(health or ledger)

    async def healthz(request: Request) -> Response:
        status, body = await probe.check()
        if "message" in body:
            body = {**body, "message": secret(body["message"])}
        return answer_json(body, status)

    async def not_found(request: Request, exc: Exception) -> Response:
        code = getattr(exc, "status_code", 500)
        words = {404: "NotFound", 405: "MethodNotAllowed"}
        message = {
            404: f"no route {request.method} {request.url.path}",
            405: f"{request.method} is not allowed on {request.url.path}",
        }
        body = {
            "error": words.get(code, "HTTPError"),
            "message": message.get(code, getattr(exc, "detail", "error")),
        }
        return answer_json(body, code)

    async def failed(request: Request, exc: Exception) -> Response:
        body = {"error": "InternalError", "message": f"{type(exc).__name__} (see the server log)"}
        return answer_json(body, 500)

    app = Starlette(
        routes=[
            Route("/", answer(index)),
            Route("/healthz", healthz),
            Route("/metrics", answer(scrape)),
            Route("/api/jobs", answer(jobs)),
            Route(_JOBS + "{rest:path}", answer(job_route)),
        ],
        exception_handlers={HTTPException: not_found, Exception: failed},
    )
    if token is None:
        return app
    return _Guard(app, token, RedirectResponse, JSONResponse)


def _segments(scope: Any) -> list[str]:
    """The path after ``/api/jobs/`` as its segments, each percent-decoded (from the raw
    path: ``%2F`` in a job's name is part of it); InvalidInput for one that is not UTF-8."""
    raw = scope.get("raw_path")
    path = raw.decode("latin-1") if raw else scope["path"]
    rest = path[len(_JOBS) :] if path.startswith(_JOBS) else ""
    try:
        return [unquote(part, errors="strict") for part in rest.split("/")]
    except UnicodeDecodeError:
        raise InvalidInput("path", rest, "not UTF-8 once percent-decoded") from None


class _Health:
    """``/healthz``'s judgement: its ledger's schema version and clock, read on a worker
    thread, at most one read at a time (a call while one is under way waits for it), waited
    for at most ``HEALTH_DEADLINE`` seconds."""

    def __init__(self, ledger: Ledger):
        self.ledger = ledger
        self.pending: asyncio.Future[tuple[int, dict[str, Any]]] | None = None

    async def check(self) -> tuple[int, dict[str, Any]]:
        if self.pending is None or self.pending.done():
            self.pending = asyncio.get_running_loop().run_in_executor(None, self.read)
        try:
            return await asyncio.wait_for(asyncio.shield(self.pending), HEALTH_DEADLINE)
        except asyncio.TimeoutError:
            message = f"the ledger did not answer within {HEALTH_DEADLINE:g}s"
            return 503, {"status": "unavailable", "message": message}

    def read(self) -> tuple[int, dict[str, Any]]:
        """(status, body); a connection that dropped (a database restarted since the last
        read) is reopened and asked once more, no more: ``/healthz`` does not ride out."""
        ledger = self.ledger
        for again in (True, False):
            try:
                version, now = ledger.schema_version(), ledger.db_now()
                break
            except LedgerError as exc:
                if not (again and exc.unreachable):
                    return 503, {"status": "unavailable", "message": str(exc)}
            except GatekeeperError as exc:
                return 503, {"status": "unavailable", "message": str(exc)}
        if version == 0:  # the ledger's tables are gone
            return 503, {"status": "unavailable", "message": f"no ledger in {ledger.describe()}"}
        return 200, {"status": "ok", "ledger": ledger.describe(), "db_now": now.isoformat()}


class _Recent:
    """The grid of a window, computed at most once per ``MAX_AGE`` seconds whatever it
    costs: the pages of several viewers (each polling every 2 s) and a scraper share one
    judgement, reused for ``MAX_AGE`` seconds after it is ready. Requests take turns (the
    ledger's one connection), so those that waited while it was made get it too. (Stamped
    with the time it started, a judgement that took ``MAX_AGE`` or more was never reused:
    each viewer's poll made one more.)"""

    MAX_AGE = 1.0

    def __init__(self, compute: Any):
        self.compute = compute
        self.found: dict[dt.timedelta, tuple[float, Any]] = {}

    def get(self, window: dt.timedelta) -> Any:
        held = self.found.get(window)
        if held is None or time.monotonic() - held[0] >= self.MAX_AGE:
            made = self.compute(window)
            ready = time.monotonic()
            held = (ready, made)
            fresh = {w: h for w, h in self.found.items() if ready - h[0] < self.MAX_AGE}
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
