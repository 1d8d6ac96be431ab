"""``gatekeeper serve``: the real server in a subprocess (SQLite and PostgreSQL ledgers),
read with urllib: the JSON API, the page and /metrics agree with ``gatekeeper status --json``
and the ledger; bad input is a 400/404 naming the field; the token, the loopback rule and the
password; no request writes."""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import time
from http.client import HTTPConnection
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from gatekeeper.core.causes import JobProfile
from gatekeeper.core.periods import DAILY, parse_period
from gatekeeper.core.records import RunState
from tests.helpers.ledgers import T0, snapshot
from tests.helpers.serve import (
    HOSTILE_ERROR,
    HOSTILE_JOB,
    UTC,
    parse_page,
    scenario,
    start,
    today,
)

pytest.importorskip("starlette")
PW = "pw-S3cret-9"
JOBS = ("Sales", "Upstream", HOSTILE_JOB)


def with_password(url: str) -> str:
    """A PostgreSQL URL with a password (the test server trusts local connections)."""
    if not url.startswith("postgresql"):
        return url
    parts = urlsplit(url)
    netloc = f"{parts.username or 'postgres'}:{PW}@{parts.hostname}:{parts.port or 5432}"
    return urlunsplit(parts._replace(netloc=netloc))


def status_json(capsys: pytest.CaptureFixture[str], url: str, job: str, first: str) -> dict:
    capsys.readouterr()
    main(["--ledger", url, "status", job, "--start", first, "--json"])
    found: dict = json.loads(capsys.readouterr().out)
    return found


def metric_values(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.slow
def test_serve_api_page_and_metrics_match_status_and_ledger(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    url = with_password(ledger_url)
    with gk.open_ledger(url) as ledger:
        scenario(ledger)
        before = snapshot(ledger)
    bodies = []
    asked_from = time.time()  # the server judges "now" within these requests (and caches it)
    with start(url) as server:
        jobs = server.get("/api/jobs?cells=1").json()["jobs"]
        named = f"/api/jobs?cells=1&job=Sales&job={quote(HOSTILE_JOB, safe='')}"
        strips = server.get(named).json()["jobs"]  # the rows a page shows
        page = server.get("/")
        scrape = server.get("/metrics")
        scraped_by = time.time()
        day5 = str(today() - dt.timedelta(days=5))
        detail = server.get(f"/api/jobs/Sales/periods/{day5}")
        periods = {j: server.get(f"/api/jobs/{quote(j, safe='')}/periods") for j in JOBS}
        bodies += [page.body, scrape.body, detail.body, *(r.body for r in periods.values())]
    bodies.append(server.stderr())
    assert [j["job"] for j in jobs] == sorted(JOBS)
    assert page.status == scrape.status == detail.status == 200
    cells = parse_page(page.body)
    assert cells.cells == []  # a row's strip is asked for when shown, never in the page
    assert [j["job"] for j in strips] == sorted(["Sales", HOSTILE_JOB])
    assert strips == [j for j in jobs if j["job"] in ("Sales", HOSTILE_JOB)]
    rows = {a["data-job"]: a for t, a in cells.tags if t == "div" and a.get("class") == "row"}
    samples = metric_values(scrape.body)
    for job in jobs:
        name = job["job"]
        want = status_json(capsys, url, name, job["start"])
        got = periods[name].json()
        assert got["periods"] == want["periods"]
        assert (got["start"], got["contiguous_through"]) == (
            want["start"],
            want["contiguous_through"],
        )
        pairs = [[p["period"], p["state"]] for p in want["periods"]]
        assert job["cells"] == pairs
        row = rows[name]  # what the page's script and filters read
        assert (row["data-start"], row["data-n"]) == (want["start"], str(len(pairs)))
        assert row["data-states"] == " ".join(s for s, n in job["counts"].items() if n)
        assert job["contiguous_through"] == want["contiguous_through"]
        for state, n in job["counts"].items():
            assert n == sum(1 for p in want["periods"] if p["state"] == state)
            assert samples[("gatekeeper_periods", (("job", name), ("state", state)))] == n
        kind = parse_period(want["period"])
        through = want["contiguous_through"]
        end = (
            kind.interval(through, want["timezone"]).end
            if through
            else kind.interval(want["start"], want["timezone"]).start
        )
        label = (("job", name),)
        assert samples[("gatekeeper_complete_through_timestamp_seconds", label)] == end.timestamp()
        lag = samples[("gatekeeper_lag_seconds", label)]
        if not want["gaps"]:
            assert lag == 0
        else:  # now minus the due time of the first gap, by the server's clock, read during
            first = min(want["gaps"])  # the requests (a datetime: to the microsecond)
            due = kind.interval(first, want["timezone"]).end.timestamp()
            due += want["lateness_seconds"]
            assert asked_from - 1e-3 <= due + lag <= scraped_by + 1e-3
        with gk.open_ledger(ledger_url) as ledger:
            now = dt.datetime.now(UTC)
            running = [a for a in ledger.history(name) if a.state is RunState.RUNNING]
        live = sum(1 for a in running if a.lease_live(now))
        assert samples[("gatekeeper_running_attempts", label)] == job["running_attempts"] == live
        expired = len(running) - live
        assert samples[("gatekeeper_expired_leases", label)] == job["expired_leases"] == expired
    sales = next(j for j in jobs if j["job"] == "Sales")
    assert (sales["running_attempts"], sales["expired_leases"]) == (1, 1)
    # the period panel's data: every attempt, every revision with its evidence
    found = detail.json()
    assert [(a["attempt"], a["state"], a["run_id"]) for a in found["attempts"]] == [
        (1, "succeeded", "s-5")
    ]
    assert [(p["revision"], p["reason"], p["fingerprint"]) for p in found["publications"]] == [
        (2, "late <b>data</b>", "fp-2"),  # newest first
        (1, None, "fp-1"),
    ]
    assert found["publications"][0]["evidence"] == [
        {"job": "Upstream", "period": day5, "run_id": "u-5", "attempt": 1, "watermark": None}
    ]
    # hostile text is inert: escaped in the page, no element or script of its making
    assert not [t for t, _ in cells.tags if t == "img"]
    assert not [a for _, attrs in cells.tags for a in attrs if a.startswith("on")]
    assert len(cells.scripts) == 1 and "alert" not in cells.scripts[0]
    assert "&lt;img src=x onerror=alert(1)&gt;" in page.body
    assert HOSTILE_ERROR in [p["error"] for p in periods["Sales"].json()["periods"]]
    # no password anywhere, nothing written
    assert not [b for b in bodies if PW in b]
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before


def test_serve_bad_input_is_400_or_404_naming_the_field(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        scenario(ledger)
        # a range that ended long before the window: listed, with no period in the window
        ledger.record_profile(
            JobProfile("OldRange", DAILY, "UTC", start="2024-01-01", stop="2024-02-01")
        )
        ledger.record("OldRange", "2024-01-05", 1, "old-1", "succeeded", T0)
        before = snapshot(ledger)
    cases = {
        "/api/jobs/Sales/periods/2026-13-01": (400, "period", "2026-13-01"),
        "/api/jobs/Sales/periods/2026-10-01T03:00Z": (400, "period", "2026-10-01T03:00Z"),
        "/api/jobs/Nope/periods": (404, "job", "Nope"),
        "/api/jobs/Saels/periods": (404, "job", "Saels"),
        "/api/jobs/Nope/periods/2026-10-01": (404, "job", "Nope"),
        "/api/jobs?window=soon": (400, "window", "soon"),
        "/metrics?window=-1d": (400, "window", "-1d"),
        "/?window=0": (400, "window", "0"),
        "/api/jobs?window=4000d": (400, "window", "4000d"),
        "/api/jobs/Sales/periods?start=yesterday": (400, "start", "yesterday"),
        "/api/jobs?cells=1&job=Sales&job=Nope": (404, "job", "Nope"),
        "/api/jobs?" + "&".join(["job=Sales"] * 501): (400, "job", "501 names"),
    }
    with start(sqlite_url) as server:
        replies = {path: server.get(path) for path in cases}
        missing = server.get("/nothing")
        short = server.get("/api/jobs?window=2d&cells=1").json()["jobs"]
        page = server.get("/?window=2d")
    for path, (status, field, value) in cases.items():
        reply = replies[path]
        assert (path, reply.status) == (path, status)
        body = reply.json()
        assert (body["field"], body["value"]) == (field, value), path
        assert value in body["message"]
    assert "did you mean 'Sales'" in replies["/api/jobs/Saels/periods"].json()["message"]
    assert missing.status == 404
    # a shorter window starts later; the page's policy allows its own script, by hash
    old = next(j for j in short if j["job"] == "OldRange")
    assert (old["cells"] if "cells" in old else [], old["counts"]["succeeded"]) == ([], 0)
    starts = {j["job"]: j["start"] for j in short}
    assert starts["Sales"] == starts["Upstream"] == str(today() - dt.timedelta(days=2))
    policy = page.headers["content-security-policy"]
    (script,) = parse_page(page.body).scripts
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    (scripts,) = [d.strip() for d in policy.split(";") if d.strip().startswith("script-src")]
    assert scripts == f"script-src 'sha256-{digest}'"
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


def test_serve_token_guards_every_route_but_healthz(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        scenario(ledger)
    token = "t0ken-Secret"
    with start(sqlite_url, "--host", "0.0.0.0", token=token) as server:
        assert server.get("/healthz", token="").status == 200
        for path in ("/", "/api/jobs", "/api/jobs/Sales/periods", "/metrics"):
            assert server.get(path, token="").status == 401, path
            assert server.get(path, token="wrong").status == 401, path
            assert server.get(path, token=token + "x").status == 401, path
            assert server.get(path).status == 200, path
        # a browser opens /?token=T once: a cookie, and the token leaves the address bar
        host = urlsplit(server.url)
        conn = HTTPConnection("127.0.0.1", host.port, timeout=10)
        conn.request("GET", f"/?token={token}")
        first = conn.getresponse()
        first.read()
        assert (first.status, first.getheader("Location")) == (303, "/")
        cookie = first.getheader("Set-Cookie") or ""
        assert "HttpOnly" in cookie and "samesite=strict" in cookie.lower()
        conn.request("GET", "/", headers={"Cookie": cookie.split(";")[0]})
        again = conn.getresponse()
        assert again.status == 200 and "data-state" in again.read().decode()
        conn.request("GET", "/?token=wrong")
        assert conn.getresponse().status == 401
        conn.close()
    assert token not in server.stderr()


@pytest.mark.parametrize(
    ("args", "field", "words"),
    [
        (["--host", "0.0.0.0"], "host", "--token"),
        (["--window", "0"], "window", "positive"),
        (["--window", "soon"], "window", "duration"),
        (["--window", "20000d"], "window", "3660d"),
        (["--port", "70000"], "port", "65535"),
        (["--port", "http"], "port", "digits"),
    ],
)
def test_serve_refuses_bad_options_with_exit_2(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], args: list[str], field: str, words: str
) -> None:
    gk.open_ledger(sqlite_url).close()
    code = main(["--ledger", sqlite_url, "serve", *args])
    err = capsys.readouterr().err
    assert code == 2
    assert f"invalid {field}=" in err and words in err


def test_serve_without_the_web_extra_names_it(
    sqlite_url: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(__import__("sys").modules, "starlette", None)  # as if not installed
    code = main(["--ledger", sqlite_url, "serve"])
    assert code == 2
    assert "pip install 'luigi-gatekeeper[web]'" in capsys.readouterr().err


def test_serve_refuses_a_ledger_that_is_not_there(
    tmp_path: object, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"sqlite:///{tmp_path}/absent.db"
    assert main(["--ledger", url, "serve", "--port", "0"]) == 2
    assert "absent.db" in capsys.readouterr().err
    assert not (__import__("pathlib").Path(f"{tmp_path}/absent.db")).exists()


@pytest.mark.postgres
def test_serve_healthz_is_503_while_the_ledger_is_gone(pg_ledger_url: str) -> None:
    import psycopg

    from tests.helpers.ledgers import PG_DSN

    schema = pg_ledger_url.rsplit("schema=", 1)[1]
    with gk.open_ledger(pg_ledger_url) as ledger:
        scenario(ledger)
    with start(pg_ledger_url) as server, psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'ALTER SCHEMA "{schema}" RENAME TO "{schema}_away"')
        try:
            gone = server.get("/healthz")
        finally:
            conn.execute(f'ALTER SCHEMA "{schema}_away" RENAME TO "{schema}"')
        back = server.get("/healthz")
    assert gone.status == 503 and gone.json()["status"] == "unavailable"
    assert back.status == 200


def test_serve_metrics_and_api_show_freshness_breached_and_met(
    sqlite_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    luigi_config: Any,
) -> None:
    """``gatekeeper_freshness_breached`` is 1 for a job with a period past its deadline and
    not succeeded, 0 for one whose deadlines are all met, absent for one without a deadline;
    ``/api/jobs`` and the page say the same as ``gatekeeper check --json`` at that time."""
    from gatekeeper.luigi.freshness import SECTION

    day = today()
    with gk.open_ledger(sqlite_url) as ledger:
        for job in ("Fresh", "Late", "NoDeadline"):
            for back in (3, 2, 1):
                key = str(day - dt.timedelta(days=back))
                state = "failed" if (job, back) == ("Late", 2) else "succeeded"
                ledger.record(job, key, 1, f"{job}-{back}", state, T0, error=None, now=T0)
        before = snapshot(ledger)
    cfg = tmp_path / "luigi.cfg"
    cfg.write_text(f"[{SECTION}]\nFresh = 1h\nLate = 1h\n")
    monkeypatch.setenv("LUIGI_CONFIG_PATH", str(cfg))
    luigi_config(SECTION, "Fresh", "1h")  # the in-process check reads the same deadlines
    luigi_config(SECTION, "Late", "1h")
    with start(sqlite_url) as server:
        samples = metric_values(server.get("/metrics").body)
        jobs = {j["job"]: j for j in server.get("/api/jobs").json()["jobs"]}
        page = server.get("/").body
    capsys.readouterr()
    code = main(["--ledger", sqlite_url, "check", "--json"])
    checked = json.loads(capsys.readouterr().out)
    breached = {
        labels[0][1]: value
        for (name, labels), value in samples.items()
        if name == "gatekeeper_freshness_breached"
    }
    assert breached == {"Fresh": 0, "Late": 1}
    assert code == 1
    assert {j["job"]: j["met"] for j in checked["jobs"]} == {"Fresh": True, "Late": False}
    late = jobs["Late"]["freshness"]
    assert late["met"] is False and [b["state"] for b in late["breaches"]] == ["failed"]
    assert jobs["Fresh"]["freshness"]["met"] is True and jobs["NoDeadline"]["freshness"] is None
    assert 'data-freshness="breached"' in page and 'data-freshness="met"' in page
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before
