"""Databricks Jobs API reads for the collector: a configured client, and a job's runs as raw
JSON with their repair histories (pages through ``runs/list``, ``runs/get`` for histories).

databricks-sdk (extra ``databricks``) is imported only inside these functions.
"""

from __future__ import annotations

import datetime as dt
import logging
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from gatekeeper.core.errors import GatekeeperError

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


def workspace_client(profile: str | None = None) -> Any:
    """A ``databricks.sdk.WorkspaceClient`` from the SDK's standard configuration
    (DATABRICKS_HOST / DATABRICKS_TOKEN, ~/.databrickscfg profiles). Raises CollectError when
    databricks-sdk is not installed or the configuration is incomplete."""
    try:
        from databricks.sdk import WorkspaceClient
    except ImportError as exc:
        raise CollectError(
            "collecting from Databricks needs databricks-sdk: pip install 'gatekeeper[databricks]'"
        ) from exc
    try:
        return WorkspaceClient(profile=profile)
    except ValueError as exc:  # the SDK's configuration errors
        raise CollectError(f"Databricks configuration: {exc}") from exc


def fetch_runs(
    client: Any,
    job_id: int,
    since: dt.datetime | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> list[dict[str, Any]]:
    """Every run of ``job_id`` (started at or after ``since``), raw JSON, each with its repair
    history; reads only. Raises CollectError when Databricks cannot be read.

    Pages ``runs/list`` the way ``jobs.list_runs`` does, but through ``client.api_client``:
    the SDK's typed runs turn state values it does not know into None, and the state map must
    see the raw strings. ``runs/get?include_history=true`` fills a missing repair history.
    """
    query: dict[str, Any] = {"job_id": job_id, "limit": PAGE_LIMIT, "expand_tasks": False}
    if since is not None:
        query["start_time_from"] = int(since.timestamp() * 1000)
    runs: dict[Any, dict[str, Any]] = {}
    tokens: set[str] = set()
    while True:
        page = _read(client, RUNS_LIST, query, sleep)
        for run in page.get("runs") or []:
            if isinstance(run, dict):
                runs[run.get("run_id")] = run
        token = page.get("next_page_token")
        if not token:
            break
        if token in tokens:
            raise CollectError(
                f"Databricks runs/list for job {job_id} repeated page token "
                f"{token!r}; refusing to loop"
            )
        tokens.add(token)
        query = {**query, "page_token": token}
    return [
        run if "repair_history" in run else _with_history(client, run, sleep)
        for run in runs.values()
    ]


def _with_history(
    client: Any, run: dict[str, Any], sleep: Callable[[float], None]
) -> dict[str, Any]:
    full = _read(client, RUNS_GET, {"run_id": run.get("run_id"), "include_history": True}, sleep)
    return {**run, "repair_history": full.get("repair_history") or []}


def _read(
    client: Any, path: str, query: dict[str, Any], sleep: Callable[[float], None]
) -> dict[str, Any]:
    from databricks.sdk import errors

    transient = (errors.InternalError, errors.DeadlineExceeded, errors.TemporarilyUnavailable)
    for delay in (*RETRY_DELAYS, None):
        try:
            answer = client.api_client.do(
                "GET", path, query=query, headers={"Accept": "application/json"}
            )
        except OSError as exc:  # DatabricksError, requests' errors and the SDK's TimeoutError
            # A status the SDK has no class for (502 Bad Gateway) is a bare DatabricksError.
            retry = isinstance(exc, transient) or type(exc) is errors.DatabricksError
            if delay is None or not retry:
                raise CollectError(f"Databricks GET {path}?{urlencode(query)}: {exc}") from exc
            log.warning("Databricks GET %s failed (%s); retrying in %.0f s", path, exc, delay)
            sleep(delay)
            continue
        if not isinstance(answer, dict):
            raise CollectError(f"Databricks GET {path}: expected a JSON object")
        return answer
    raise AssertionError("unreachable")  # pragma: no cover
