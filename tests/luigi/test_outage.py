"""Riding out a short database outage: a ledger that cannot reach PostgreSQL tries again with
backoff for up to ``reconnect_window`` seconds, then fails with LedgerError; only what cannot
have committed is retried. On a cluster of the test's own (``tests/helpers/own_postgres.py``),
stopped and started for real; the shared server is never restarted."""

from __future__ import annotations

import os
import subprocess
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.fleet import recipe_config, start_forward_fill
from tests.helpers.luigid_support import Luigid, stop_all
from tests.helpers.own_postgres import OwnPostgres, missing

# the Luigi adapter (run on every supported Luigi); its waits end on events (a file, a lease
# expired by the database's clock), so it shares the machine with other tests under xdist
pytestmark = pytest.mark.luigi


@pytest.fixture
def own_pg() -> Iterator[OwnPostgres]:
    reason = missing()
    if reason is not None:
        if os.environ.get("CI") == "true":
            pytest.fail(reason)
        pytest.skip(reason)
    server = OwnPostgres()
    server.start()
    try:
        yield server
    finally:
        server.remove()


def restart_later(server: OwnPostgres, after: float, down: float) -> threading.Thread:
    def restart() -> None:
        time.sleep(after)
        server.stop()
        time.sleep(down)
        server.start()

    thread = threading.Thread(target=restart, daemon=True)
    thread.start()
    return thread


@pytest.mark.slow
@pytest.mark.postgres
def test_ledger_write_and_read_ride_out_a_restart(own_pg: OwnPostgres) -> None:
    with gk.open_ledger(own_pg.url) as ledger:
        first = ledger.begin_attempt("J", "2026-10-01", uuid.uuid4().hex, lease_seconds=60)
        own_pg.stop()
        back = threading.Thread(target=lambda: (time.sleep(2), own_pg.start()), daemon=True)
        back.start()
        assert ledger.latest("J", "2026-10-01").run_id == first.run_id  # waits for it
        ledger.record("J", "2026-10-01", 1, first.run_id, "succeeded", first.started_at)
        back.join()
        own_pg.stop()
        back = threading.Thread(target=lambda: (time.sleep(2), own_pg.start()), daemon=True)
        back.start()
        second = ledger.begin_attempt("J", "2026-10-02", uuid.uuid4().hex, lease_seconds=60)
        back.join()
        assert [a.state.value for a in ledger.history("J")] == ["succeeded", "running"]
        assert second.attempt == 1


@pytest.mark.postgres
@pytest.mark.process
def test_ledger_past_its_reconnect_window_fails_and_writes_nothing(own_pg: OwnPostgres) -> None:
    with gk.open_ledger(f"{own_pg.url}?reconnect_window=1") as ledger:
        own_pg.stop()
        with pytest.raises(
            gk.LedgerError,
            match=r"still unreachable after 1s "
            r"\(reconnect_window\)",
        ):
            ledger.begin_attempt("J", "2026-10-01", uuid.uuid4().hex, lease_seconds=60)
        own_pg.start()
        assert ledger.history("J") == []


@pytest.mark.parametrize("value", ["-1", "x", "inf", "86401"])
def test_reconnect_window_bad_value_is_refused_naming_it(tmp_path: Path, value: str) -> None:
    path = tmp_path / "l.db"
    with pytest.raises(gk.InvalidInput, match="ledger_url.reconnect_window"):
        gk.open_ledger(f"sqlite:///{path}?reconnect_window={value}")
    assert not path.exists()


@pytest.mark.postgres
@pytest.mark.slow
@pytest.mark.timeout(240)
def test_fill_rides_out_a_5s_postgresql_restart(own_pg: OwnPostgres, tmp_path: Path) -> None:
    """Two ``luigi`` processes x ``--workers 2`` fill one forward range on a luigid; the
    ledger's PostgreSQL is stopped for 5 s mid-fill: no task fails (exit 0 each, the README
    recipe's [retcode] and keep-alive), every date is attempted once and succeeded."""
    control = tmp_path / "control"
    control.mkdir()
    (control / "sleep").write_text("0.1")
    cfg = recipe_config(tmp_path, own_pg.url)
    luigid = Luigid(tmp_path / "luigid")
    luigid.start()
    started: list[subprocess.Popen[str]] = []
    try:
        started = start_forward_fill(
            cfg, tmp_path, control, luigid, 2, ("2026-08-23", "2026-11-01"), task_limit=100
        )
        deadline = time.monotonic() + 60
        while (
            not (control / "runs").exists() or len((control / "runs").read_text().splitlines()) < 5
        ):
            assert time.monotonic() < deadline, "the fill did not start"
            time.sleep(0.05)
        restart = restart_later(own_pg, 0, 5)
        outputs = [p.communicate(timeout=180)[0] for p in started]
        restart.join()
    finally:
        stop_all(started)
        luigid.stop()
    assert [p.returncode for p in started] == [0, 0], [o[-3000:] for o in outputs]
    assert all(
        "connection" not in line.lower() or "gatekeeper" not in line
        for o in outputs
        for line in o.splitlines()
        if "failed" in line.lower()
    )
    dates = [line.split()[0] for line in (control / "runs").read_text().splitlines()]
    assert len(dates) == 70 and len(set(dates)) == 70  # every date's body ran once
    with gk.open_ledger(own_pg.url) as ledger:
        history = ledger.history("GkDay")
    assert sorted(a.business_date for a in history) == sorted(dates)
    assert {a.state.value for a in history} == {"succeeded"}
