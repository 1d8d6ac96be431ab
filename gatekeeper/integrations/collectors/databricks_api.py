"""Databricks Jobs API reads for the collector: a configured client, and a job's runs as raw
JSON with their repair histories (pages through ``runs/list``, ``runs/get`` for histories),
within bounds: a page limit, a time budget and no page token twice.

databricks-sdk (extra ``databricks``) is imported only inside these functions.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode

from gatekeeper.core.errors import GatekeeperError
from gatekeeper.core.validation import (
    DEFAULT_MAX_PAGES,
    DEFAULT_TIME_BUDGET,
    check_max_pages,
    check_time_budget,
)

log = logging.getLogger("gatekeeper.integrations.collectors.databricks")

RUNS_LIST = "/api/2.2/jobs/runs/list"
RUNS_GET = "/api/2.2/jobs/runs/get"
PAGE_LIMIT = 25  # the most runs/list returns per page
#: Seconds before each retry of a read that failed with 500, 502 or 504. The SDK's ApiClient
#: itself retries 429 and 503 (honouring Retry-After) and connection errors, within its
#: ``retry_timeout_seconds``; it raises the other 5xx at once, so they are retried here.
RETRY_DELAYS = (1.0, 2.0, 4.0)


class CollectError(GatekeeperError):
    """Databricks could not be reached or read (the SDK's error is the cause); nothing of the
    failed collection was written."""


class ListingIncomplete(CollectError):
    """The listing of a job's runs was not read whole: a bound was reached (``max_pages``,
    ``time_budget``) or the server paged wrongly (a page token again, a malformed page).
    Nothing of the collection was written."""


@dataclass(frozen=True, slots=True)
class Bounds:
    """How much one listing may read: pages of ``runs/list`` and seconds (every request,
    ``runs/get`` included, starts before the budget runs out)."""

    max_pages: int = DEFAULT_MAX_PAGES
    time_budget: float = DEFAULT_TIME_BUDGET

    def __post_init__(self) -> None:
        check_max_pages(self.max_pages)
        check_time_budget(self.time_budget)


@dataclass(frozen=True, slots=True)
class Listed:
    """One entry of a ``runs/list`` page as read: where it was and its raw JSON (any type)."""

    page: int  # 1-based
    index: int  # 0-based position in the page's ``runs``
    raw: Any

    def where(self) -> str:
        return f"page {self.page} item {self.index + 1}"


def shown(value: Any, limit: int = 200) -> str:
    """``value`` as one line of ASCII JSON, cut at ``limit`` characters (for messages)."""
    try:
        text = json.dumps(value, sort_keys=True)
    except (TypeError, ValueError):
        text = json.dumps(repr(value))
    return text if len(text) <= limit else text[: limit - 3] + "..."


def run_id_of(raw: Any) -> int | None:
    """A listed run's ``run_id`` if it is a positive 64-bit integer, else None."""
    value = raw.get("run_id") if isinstance(raw, dict) else None
    ok = isinstance(value, int) and not isinstance(value, bool) and 1 <= value < 2**63
    return value if ok else None


def workspace_client(profile: str | None = None, time_budget: float | None = None) -> Any:
    """A ``databricks.sdk.WorkspaceClient`` from the SDK's standard configuration
    (DATABRICKS_HOST / DATABRICKS_TOKEN, ~/.databrickscfg profiles). With ``time_budget``, the
    SDK's own retry timeout and HTTP timeout are cut to it, so one request cannot outlast it.
    Raises CollectError when databricks-sdk is not installed or the configuration is
    incomplete."""
    try:
        from databricks.sdk import WorkspaceClient
        from databricks.sdk.config import Config
    except ImportError as exc:
        raise CollectError(
            "collecting from Databricks needs databricks-sdk: "
            "pip install 'luigi-gatekeeper[databricks]'"
        ) from exc
    timeouts: dict[str, Any] = {}
    if time_budget is not None:
        timeouts = {
            "retry_timeout_seconds": max(1, min(300, math.ceil(time_budget))),
            "http_timeout_seconds": min(60.0, time_budget),
        }
    try:
        return WorkspaceClient(config=Config(profile=profile, **timeouts))
    except ValueError as exc:  # the SDK's configuration errors
        raise CollectError(f"Databricks configuration: {exc}") from exc


class _Reader:
    """Reads for one listing, each started only within the time budget."""

    def __init__(
        self,
        client: Any,
        job_id: int,
        bounds: Bounds,
        sleep: Callable[[float], None],
        clock: Callable[[], float],
    ):
        self.client, self.job_id, self.bounds = client, job_id, bounds
        self.sleep, self.clock = sleep, clock
        self.deadline = clock() + bounds.time_budget

    def incomplete(self, why: str) -> ListingIncomplete:
        return ListingIncomplete(
            f"Databricks runs of job {self.job_id} not read whole: {why}; nothing recorded"
        )

    def out_of_time(self, doing: str) -> ListingIncomplete:
        return self.incomplete(f"time budget of {self.bounds.time_budget:g} s spent {doing}")

    def read(self, path: str, query: dict[str, Any], doing: str) -> dict[str, Any]:
        from databricks.sdk import errors

        transient = (errors.InternalError, errors.DeadlineExceeded, errors.TemporarilyUnavailable)
        for delay in (*RETRY_DELAYS, None):
            if self.clock() >= self.deadline:
                raise self.out_of_time(f"before {doing}")
            try:
                answer = self.client.api_client.do(
                    "GET", path, query=query, headers={"Accept": "application/json"}
                )
            except (OSError, ValueError) as exc:  # DatabricksError, requests', TimeoutError
                # A status the SDK has no class for (502 Bad Gateway) is a bare DatabricksError.
                retry = isinstance(exc, transient) or type(exc) is errors.DatabricksError
                if delay is None or not retry:
                    raise CollectError(f"Databricks GET {path}?{urlencode(query)}: {exc}") from exc
                if self.clock() + delay >= self.deadline:
                    raise self.out_of_time(f"retrying {doing} ({exc})") from exc
                log.warning("Databricks GET %s failed (%s); retrying in %.0f s", path, exc, delay)
                self.sleep(delay)
                continue
            if not isinstance(answer, dict):
                raise self.incomplete(f"{doing}: expected a JSON object, got {shown(answer)}")
            return answer
        raise AssertionError("unreachable")  # pragma: no cover


def fetch_runs(
    client: Any,
    job_id: int,
    since: dt.datetime | None = None,
    sleep: Callable[[float], None] = time.sleep,
    *,
    bounds: Bounds | None = None,
    clock: Callable[[], float] = time.monotonic,
) -> list[tuple[Listed, ...]]:
    """Every run of ``job_id`` (started at or after ``since``) as listed: per run, its distinct
    copies (a run listed on two pages twice; usually one), each with its repair history; an
    entry without a usable ``run_id`` is a run of its own. Reads only.

    Pages ``runs/list`` the way ``jobs.list_runs`` does, but through ``client.api_client``:
    the SDK's typed runs turn state values it does not know into None, and the state map must
    see the raw strings. ``runs/get?include_history=true`` fills a missing repair history.
    Raises ListingIncomplete past ``bounds`` (default ``Bounds()``) or for a page token seen
    before, CollectError when Databricks cannot be read; nothing is returned then.
    """
    reader = _Reader(client, job_id, bounds or Bounds(), sleep, clock)
    copies = _list_pages(reader, job_id, since)
    for run_id, found in copies.items():
        if isinstance(run_id, int) and any("repair_history" not in c.raw for c in found):
            query = {"run_id": run_id, "include_history": True}
            history = reader.read(RUNS_GET, query, f"runs/get of run {run_id}")
            filled = history.get("repair_history") or []
            copies[run_id] = [c if "repair_history" in c.raw else _with(c, filled) for c in found]
    return [tuple(found) for found in copies.values()]


def _list_pages(reader: _Reader, job_id: int, since: dt.datetime | None) -> dict[Any, list[Listed]]:
    """runs/list page by page: per run ID, its distinct copies; entries without a usable run
    ID under a key of their own. Raises ListingIncomplete or CollectError."""
    query: dict[str, Any] = {"job_id": job_id, "limit": PAGE_LIMIT, "expand_tasks": False}
    if since is not None:
        query["start_time_from"] = int(since.timestamp() * 1000)
    copies: dict[Any, list[Listed]] = {}
    tokens: set[str] = set()
    page_no = 0
    while True:
        page_no += 1
        page = reader.read(RUNS_LIST, query, f"runs/list page {page_no}")
        runs = page.get("runs")
        if runs is not None and not isinstance(runs, list):
            raise reader.incomplete(f"page {page_no}: runs is not a list: {shown(runs)}")
        for index, raw in enumerate(runs or []):
            entry = Listed(page_no, index, raw)
            found = copies.setdefault(run_id_of(raw) or ("entry", page_no, index), [])
            if all(c.raw != raw for c in found):
                found.append(entry)
        token = page.get("next_page_token")
        if token is None or token == "":
            if page.get("has_more") is True:
                raise reader.incomplete(f"page {page_no} has_more without a next_page_token")
            return copies
        if not isinstance(token, str):
            raise reader.incomplete(f"page {page_no}: next_page_token {shown(token)}")
        if token in tokens:
            raise reader.incomplete(
                f"page {page_no} repeated page token {shown(token, 80)}; refusing to loop"
            )
        if page_no >= reader.bounds.max_pages:
            raise reader.incomplete(f"more than max_pages={reader.bounds.max_pages} pages")
        tokens.add(token)
        query = {**query, "page_token": token}


def _with(entry: Listed, history: Any) -> Listed:
    return Listed(entry.page, entry.index, {**entry.raw, "repair_history": history})
