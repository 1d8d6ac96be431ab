"""``gatekeeper serve`` under hostile requests, with real HTTP clients against the real server:
every range a request names is bounded (400 naming the parameter), every name the ledger
accepts is reachable, every error is JSON (404 and 405 included), ledger text is escaped in
every answer, and nothing is written."""

from __future__ import annotations

import datetime as dt
import json
import urllib.request
from urllib.parse import quote

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import snapshot
from tests.helpers.serve import UTC, scenario, start, today

pytest.importorskip("starlette")

#: names the ledger accepts that a path cannot carry unencoded
SLASHED = ("</script><script>alert(4)</script>", "a/b", "x?y#z", "..", "100%")
BIDI_ERROR = "disk full \u202egnp.exe \x1b[31m red"


def enc(name: str) -> str:
    return quote(name, safe="")


@pytest.mark.slow
def test_serve_bounds_ranges_reaches_every_name_and_answers_json(sqlite_url: str) -> None:
    now = dt.datetime.now(UTC)
    day = str(today() - dt.timedelta(days=1))
    with gk.open_ledger(sqlite_url) as ledger:
        scenario(ledger)
        for n, job in enumerate(SLASHED):
            ledger.record(job, day, 1, f"x-{n}", "failed", now, error=BIDI_ERROR)
        before = snapshot(ledger)
    far = str(today() - dt.timedelta(days=3661))
    near = str(today() - dt.timedelta(days=3659))
    refused = {
        "/api/jobs/Sales/periods?start=0001-01-01&stop=9999-12-31": ("start", "0001-01-01"),
        f"/api/jobs/Sales/periods?start={far}": ("start", far),
        "/api/jobs/Sales/periods?stop=9999-12-31": ("stop", "9999-12-31"),
        f"/api/jobs/Sales/periods?start={near}&stop=2999-01-01": ("stop", "2999-01-01"),
        "/api/jobs?window=" + "9" * 5000 + "d": ("window", "9" * 40 + "..."),
        "/metrics?window=" + "1" * 33: ("window", "1" * 33),
    }
    with start(sqlite_url) as server:
        replies = {path: server.get(path) for path in refused}
        largest = server.get(f"/api/jobs/Sales/periods?start={near}")
        periods = {job: server.get(f"/api/jobs/{enc(job)}/periods") for job in SLASHED}
        details = {job: server.get(f"/api/jobs/{enc(job)}/periods/{day}") for job in SLASHED}
        listed = server.get("/api/jobs").json()
        missing = [
            server.get(p) for p in ("/nothing", "/api/jobs/Sales/x", "/api/jobs/a/b/periods")
        ]
        request = urllib.request.Request(server.url + "api/jobs", method="POST")
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with pytest.raises(urllib.error.HTTPError) as posted:
            opener.open(request, timeout=20)
        post = (posted.value.code, json.loads(posted.value.read()))
    for path, (field, value) in refused.items():
        reply = replies[path]
        assert reply.status == 400, path
        body = reply.json()
        assert (body["error"], body["field"], body["value"]) == ("InvalidInput", field, value)
    assert "longer than 3660d" in replies[f"/api/jobs/Sales/periods?start={far}"].body
    assert largest.status == 200 and len(largest.json()["periods"]) >= 3659
    shown = "disk full \\u202egnp.exe \\x1b[31m red"  # as the CLI shows it
    for job in SLASHED:
        assert periods[job].status == 200, job
        assert periods[job].json()["job"] == job
        assert [p["error"] for p in periods[job].json()["periods"] if p["period"] == day] == [shown]
        assert details[job].status == 200, job
        detail = details[job].json()
        assert (detail["job"], detail["period"]) == (job, day)
        assert [a["error"] for a in detail["attempts"]] == [shown]
        assert "\u202e" not in details[job].body and "\x1b" not in details[job].body
    assert set(SLASHED) <= {j["job"] for j in listed["jobs"]}
    for reply in missing:
        assert (reply.status, reply.json()["error"]) == (404, "NotFound")
        assert reply.headers["content-type"] == "application/json"
    assert post == (
        405,
        {"error": "MethodNotAllowed", "message": "POST is not allowed on /api/jobs"},
    )
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["serve", "--window", "9" * 5000 + "d"], "window"),
        (["status", "Sales", "--lateness", "9" * 5000 + "d"], "lateness"),
        (["serve", "--header-timeout", "0s"], "header_timeout"),
        (["serve", "--keep-alive", "2h"], "keep_alive"),
        (["serve", "--max-connections", "0"], "max_connections"),
    ],
)
def test_serve_and_status_refuse_unbounded_durations_with_exit_2(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], args: list[str], field: str
) -> None:
    from gatekeeper.cli import main

    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("Sales", "2026-10-01", 1, "s-1", "succeeded", dt.datetime.now(UTC))
        before = snapshot(ledger)
    code = main(["--ledger", sqlite_url, *args])
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"invalid {field}=" in err and "Traceback" not in err
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before
