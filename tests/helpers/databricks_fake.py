"""A local fake of the Databricks Jobs API 2.2 (``runs/list`` and ``runs/get``) for the real SDK.

The tests point ``databricks.sdk.WorkspaceClient(host="http://127.0.0.1:PORT", token=...)`` at
it, so paging, throttling and the raw JSON go through the SDK's own HTTP client. The server
keeps raw run JSON as Databricks returns it: newest run first, ``runs/list`` without
``repair_history`` (``runs/get?include_history=true`` has it), a bearer token checked on every
request, and faults served once per page (a 429 with ``Retry-After``, a 502). A hostile
server is one setting away: ``stuck_token`` (the same next token again), ``endless`` (a new
token on every page, forever), ``script`` (pages served verbatim by page token, whatever they
hold) and ``delay`` (seconds each ``runs/list`` answer takes).

Run it by hand for the README example: ``python -m tests.helpers.databricks_fake --port 8765``.
"""

from __future__ import annotations

import argparse
import copy
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

LIST = "/api/2.2/jobs/runs/list"
GET = "/api/2.2/jobs/runs/get"
WELL_KNOWN = "/.well-known/databricks-config"
TOKEN = "dapi-fake-token"
DAY_MS = 86_400_000
T0_MS = 1_792_627_200_000  # 2026-10-22T00:00:00Z


def state(life: str, result: str | None = None) -> dict[str, Any]:
    """A raw ``state`` object (the classic life-cycle and result states)."""
    found: dict[str, Any] = {"life_cycle_state": life, "state_message": ""}
    if result is not None:
        found["result_state"] = result
    return found


def status(v2: str, code: str | None = None) -> dict[str, Any]:
    """A raw ``status`` object (the newer lifecycle state and termination details)."""
    found: dict[str, Any] = {"state": v2}
    if code is not None:
        found["termination_details"] = {"code": code, "type": "SUCCESS", "message": ""}
    return found


class FakeJobs:
    """Runs of the fake workspace, the requests it saw and the faults it will serve."""

    def __init__(self, *, page_size: int = 2, token: str = TOKEN):
        self.page_size, self.token = page_size, token
        self.runs: dict[int, dict[str, Any]] = {}
        self.list_history: set[int] = set()  # runs whose list entry carries repair_history
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.faults: dict[tuple[str, str], list[tuple[int, dict[str, str]]]] = {}
        self.lock = threading.Lock()
        self.stuck_token: str | None = None  # a broken server: always this next_page_token
        self.endless = False  # a broken server: a next_page_token never seen before, forever
        self.script: dict[str, Any] | None = None  # page token ("" first) -> the raw answer
        self.delay = 0.0  # seconds each runs/list answer takes

    def add_run(
        self,
        run_id: int,
        *,
        job_id: int = 42,
        start: int,
        life: str = "TERMINATED",
        result: str | None = "SUCCESS",
        date: str | None = None,
        run_status: dict[str, Any] | None = None,
        original: int | None = None,
        attempt_number: int = 0,
        overriding: dict[str, Any] | None = None,
        date_param: str = "business_date",
    ) -> dict[str, Any]:
        """Add a run started at ``start`` (epoch ms) with job parameter ``date``; returns it."""
        run: dict[str, Any] = {
            "job_id": job_id,
            "run_id": run_id,
            "number_in_job": run_id,
            "original_attempt_run_id": original or run_id,
            "attempt_number": attempt_number,
            "run_name": f"job {job_id}",
            "run_type": "JOB_RUN",
            "start_time": start,
            "end_time": 0 if result is None else start + 60_000,
            "state": state(life, result),
        }
        if date is not None:
            run["job_parameters"] = [{"name": date_param, "default": "", "value": date}]
        if run_status is not None:
            run["status"] = run_status
        if overriding is not None:
            run["overriding_parameters"] = overriding
        with self.lock:
            self.runs[run_id] = run
        return run

    def set_state(self, run_id: int, life: str, result: str | None = None) -> None:
        with self.lock:
            run = self.runs[run_id]
            run["state"] = state(life, result)
            if run.get("repair_history"):
                run["repair_history"][-1]["state"] = state(life, result)

    def repair(
        self,
        run_id: int,
        repair_id: int,
        *,
        start: int,
        life: str = "TERMINATED",
        result: str | None = "SUCCESS",
    ) -> None:
        """Repair a run: its history gains an ORIGINAL item (first time) and a REPAIR item."""
        with self.lock:
            run = self.runs[run_id]
            history = run.setdefault("repair_history", [])
            if not history:
                history.append(
                    {
                        "type": "ORIGINAL",
                        "start_time": run["start_time"],
                        "end_time": run["end_time"],
                        "state": copy.deepcopy(run["state"]),
                        "task_run_ids": [],
                    }
                )
            history.append(
                {
                    "type": "REPAIR",
                    "id": repair_id,
                    "start_time": start,
                    "end_time": start + 60_000,
                    "state": state(life, result),
                    "task_run_ids": [],
                }
            )
            run["state"] = state(life, result)

    def fault(
        self,
        path: str,
        status_code: int,
        *,
        page_token: str = "",
        headers: dict[str, str] | None = None,
    ) -> None:
        """Answer the next request of ``path`` for ``page_token`` with ``status_code`` once."""
        with self.lock:
            self.faults.setdefault((path, page_token), []).append((status_code, headers or {}))

    def list_queries(self) -> list[dict[str, str]]:
        return [q for path, q in self.requests if path == LIST]

    # -- the API ---------------------------------------------------------------------------------
    def answer(
        self, path: str, query: dict[str, str], auth: str | None
    ) -> tuple[int, dict[str, str], Any]:
        if path == LIST and self.delay:
            time.sleep(self.delay)
        with self.lock:
            self.requests.append((path, query))
            if auth != f"Bearer {self.token}":
                return 401, {}, {"error_code": "UNAUTHENTICATED", "message": "bad token"}
            pending = self.faults.get((path, query.get("page_token", "")))
            if pending:
                code, headers = pending.pop(0)
                return (
                    code,
                    headers,
                    {"error_code": "TEMPORARILY_UNAVAILABLE", "message": f"fault {code}"},
                )
            if path == LIST and self.script is not None:
                token = query.get("page_token", "")
                if token not in self.script:
                    return 400, {}, {"error_code": "INVALID_PARAMETER_VALUE", "message": token}
                return 200, {}, copy.deepcopy(self.script[token])
            if path == LIST:
                return 200, {}, self._list(query)
            if path == GET:
                return self._get(query)
            return 404, {}, {"error_code": "ENDPOINT_NOT_FOUND", "message": path}

    def _list(self, query: dict[str, str]) -> dict[str, Any]:
        runs = [
            r
            for r in self.runs.values()
            if "job_id" not in query or r["job_id"] == int(query["job_id"])
        ]
        if "start_time_from" in query:
            runs = [r for r in runs if r["start_time"] >= int(query["start_time_from"])]
        runs.sort(key=lambda r: (-r["start_time"], -r["run_id"]))  # newest first
        size = min(self.page_size, int(query.get("limit", 25)))
        token = query.get("page_token", "page-0")
        first = 0 if token.startswith("fresh-") else int(token.removeprefix("page-"))
        page = []
        for run in runs[first : first + size]:
            item = copy.deepcopy(run)
            if run["run_id"] not in self.list_history:
                item.pop("repair_history", None)
            page.append(item)
        body: dict[str, Any] = {"runs": page, "has_more": first + size < len(runs)}
        if first + size < len(runs):
            body["next_page_token"] = self.stuck_token or f"page-{first + size}"
        if self.endless:
            body["next_page_token"] = f"fresh-{len(self.requests)}"  # page 0 again
        if first:
            body["prev_page_token"] = f"page-{max(0, first - size)}"
        return body

    def _get(self, query: dict[str, str]) -> tuple[int, dict[str, str], dict[str, Any]]:
        run = self.runs.get(int(query.get("run_id", "0")))
        if run is None:
            return (
                404,
                {},
                {
                    "error_code": "RESOURCE_DOES_NOT_EXIST",
                    "message": f"Run {query.get('run_id')} does not exist.",
                },
            )
        item = copy.deepcopy(run)
        if query.get("include_history") != "true":
            item.pop("repair_history", None)
        return 200, {}, item


def handler_for(fake: FakeJobs) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            url = urlsplit(self.path)
            query = {k: v[-1] for k, v in parse_qs(url.query).items()}
            if url.path == WELL_KNOWN:  # the SDK's host-metadata probe, unauthenticated
                code, headers = 200, {}
                body = {
                    "oidc_endpoint": f"http://{self.headers.get('Host')}/oidc",
                    "workspace_id": "1234567890",
                }
            else:
                code, headers, body = fake.answer(
                    url.path, query, self.headers.get("Authorization")
                )
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: Any) -> None:
            pass

    return Handler


@contextmanager
def serve(fake: FakeJobs, port: int = 0) -> Iterator[str]:
    """Serve ``fake`` on 127.0.0.1 in a thread; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", port), handler_for(fake))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def demo_runs(fake: FakeJobs) -> None:
    """The README's workspace: six runs of job 42 for four business dates, and one undated."""
    fake.add_run(101, start=T0_MS, date="2026-10-21")  # succeeded
    fake.add_run(102, start=T0_MS + 3_600_000, result="FAILED", date="2026-10-22")
    fake.add_run(
        103,
        start=T0_MS + 3_700_000,
        date="2026-10-22",  # its retry
        original=102,
        attempt_number=1,
    )
    fake.add_run(104, start=T0_MS + DAY_MS, result="FAILED", date="2026-10-23")
    fake.repair(104, 9001, start=T0_MS + DAY_MS + 7_200_000)  # repaired
    fake.add_run(
        105, start=T0_MS + DAY_MS + 9_000_000, life="RUNNING", result=None, date="2026-10-24"
    )
    fake.add_run(106, start=T0_MS + DAY_MS + 9_100_000)  # no date


def main() -> None:
    parser = argparse.ArgumentParser(description="A fake Databricks Jobs API (runs/list, get).")
    parser.add_argument("--port", type=int, default=8765)
    port = parser.parse_args().port
    fake = FakeJobs()
    demo_runs(fake)
    server = ThreadingHTTPServer(("127.0.0.1", port), handler_for(fake))
    print(f"fake Databricks Jobs API on http://127.0.0.1:{port} (token {TOKEN})", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
