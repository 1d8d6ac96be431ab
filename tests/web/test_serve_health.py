"""``/healthz`` in every state, with real HTTP clients against the real server on a real
PostgreSQL: it answers while the largest request the server allows is provably still in
flight (its read waits on a lock the test holds), 503 JSON while the database is away, and
200 again as the first request after a restart (a proxy cut in front of PostgreSQL)."""

from __future__ import annotations

import datetime as dt
import threading
import time
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import PG_DSN
from tests.helpers.pg_proxy import pg_proxy
from tests.helpers.serve import UTC, Reply, start, today

pytest.importorskip("starlette")
pytestmark = [pytest.mark.postgres, pytest.mark.slow]


def waiting_on_locks(conn: Any, schema: str) -> int:
    """Lock requests not granted on the tables of ``schema`` (another session's reads)."""
    row = conn.execute(
        "SELECT count(*) FROM pg_locks l JOIN pg_class c ON c.oid = l.relation "
        "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT l.granted AND n.nspname = %s",
        (schema,),
    ).fetchone()
    return int(row[0])


def test_serve_healthz_answers_while_the_largest_request_is_in_flight(
    pg_ledger_url: str,
) -> None:
    import psycopg

    schema = pg_ledger_url.rsplit("schema=", 1)[1]
    now = dt.datetime.now(UTC)
    with gk.open_ledger(pg_ledger_url) as ledger:
        for n in (1, 2, 3):
            key = str(today() - dt.timedelta(days=n))
            ledger.record("Sales", key, 1, f"s-{n}", "succeeded", now)
    start_key = str(today() - dt.timedelta(days=3659))  # the longest range served
    with (
        start(pg_ledger_url) as server,
        psycopg.connect(PG_DSN) as holder,
        psycopg.connect(PG_DSN, autocommit=True) as watcher,
    ):
        tables = [
            r[0]
            for r in holder.execute(
                "SELECT tablename FROM pg_tables WHERE schemaname = %s AND tablename <> "
                "'gk_schema'",
                (schema,),
            )
        ]
        for table in tables:  # every read of a job's periods waits until the rollback
            holder.execute(f'LOCK TABLE "{schema}"."{table}" IN ACCESS EXCLUSIVE MODE')
        answers: list[Reply] = []
        big = threading.Thread(
            target=lambda: answers.append(server.get(f"/api/jobs/Sales/periods?start={start_key}"))
        )
        big.start()
        try:
            deadline = time.monotonic() + 20
            while not waiting_on_locks(watcher, schema):
                assert time.monotonic() < deadline, "the request never reached the ledger"
                time.sleep(0.02)
            health = server.get("/healthz")
            in_flight = big.is_alive() and waiting_on_locks(watcher, schema) > 0
        finally:
            holder.rollback()
            big.join(30)
    assert in_flight, "the large request finished before /healthz answered"
    assert health.status == 200 and health.json()["status"] == "ok"
    (answer,) = answers
    assert answer.status == 200 and len(answer.json()["periods"]) >= 3659


def test_serve_healthz_is_503_json_while_away_and_200_after_a_restart(
    pg_ledger_url: str,
) -> None:
    with gk.open_ledger(pg_ledger_url) as ledger:
        ledger.record("Sales", str(today()), 1, "s-0", "succeeded", dt.datetime.now(UTC))
    with pg_proxy(PG_DSN) as proxy, start(proxy.url(pg_ledger_url)) as server:
        assert server.get("/api/jobs").status == 200
        proxy.drop()  # PostgreSQL restarted: every open connection is gone
        first = server.get("/healthz")
        jobs = server.get("/api/jobs")
        proxy.refuse()
        proxy.drop()  # and now it is away
        away = [server.get("/healthz") for _ in range(3)]
        proxy.accept()
        back = server.get("/healthz")
    assert first.status == 200 and first.json()["status"] == "ok"
    assert jobs.status == 200 and [j["job"] for j in jobs.json()["jobs"]] == ["Sales"]
    for reply in away:
        assert reply.status == 503 and reply.headers["content-type"] == "application/json"
        body = reply.json()
        assert body["status"] == "unavailable" and "ledger" in body["message"]
    assert back.status == 200
