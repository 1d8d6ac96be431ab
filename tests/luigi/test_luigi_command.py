"""The real `luigi` command in subprocesses: the example pipeline, races and a killed worker."""

from __future__ import annotations

import datetime as dt
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.in_process import gatekeeper_in_process
from tests.helpers.ledgers import count_rows, snapshot
from tests.helpers.luigi_support import luigi_command, luigi_env, run_luigi, write_config

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

D = dt.date(2026, 10, 23)


@pytest.mark.process
@pytest.mark.oldest
def test_example_pipeline_runs_once_from_the_luigi_command(sqlite_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    args = (
        "--module",
        "example_pipelines.sales",
        "DailySalesLoad",
        "--business-date",
        "2026-10-23",
    )
    first = run_luigi(cfg, *args, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        pub = ledger.publication("DailySalesLoad", D)
        assert pub is not None and set(pub.evidence) == {"DimCustomer", "DimProduct"}
        before = snapshot(ledger)
    again = run_luigi(cfg, *args, cwd=tmp_path)
    assert again.returncode == 0 and "Did not run any tasks" in again.stderr + again.stdout
    backfill = run_luigi(
        cfg,
        "--module",
        "example_pipelines.sales",
        "DimCustomer",
        "--business-date",
        "2026-10-16",
        cwd=tmp_path,
    )
    assert backfill.returncode == 0, backfill.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        after = snapshot(ledger)
        assert after["gk_publications"] == before["gk_publications"]
        assert after["gk_evidence"] == before["gk_evidence"]
        assert [a.state.value for a in ledger.attempts("DimCustomer", "2026-10-16")] == [
            "succeeded"
        ]


@pytest.mark.process
@pytest.mark.oldest
def test_failed_task_makes_luigi_exit_non_zero(sqlite_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    (tmp_path / "fail").touch()
    done = run_luigi(
        cfg,
        "--module",
        "tests.helpers.luigi_tasks",
        "Controlled",
        "--business-date",
        "2026-10-23",
        "--control",
        str(tmp_path),
        cwd=tmp_path,
    )
    assert done.returncode == 30, done.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        latest = ledger.latest("Controlled", D)
        assert latest is not None and latest.state is gk.RunState.FAILED


@pytest.mark.process
def test_two_luigi_processes_publish_once(ledger_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, ledger_url)
    # --no-lock: Luigi's own pid lock would stop the second process before gatekeeper does
    command = luigi_command(
        "--module",
        "tests.helpers.luigi_tasks",
        "SlowGated",
        "--business-date",
        "2026-10-23",
        "--local-scheduler",
        "--no-lock",
    )
    procs = [
        subprocess.Popen(
            command,
            cwd=tmp_path,
            env=luigi_env(cfg),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for _ in range(2)
    ]
    outputs = [p.communicate(timeout=120)[0] for p in procs]
    codes = sorted(p.returncode for p in procs)
    shown = "\n----- the other process -----\n".join(outputs)  # in full, not a truncated repr
    assert codes[0] == 0, shown
    assert set(codes) <= {0, 30}, shown  # the loser fails fast on the live lease
    with gk.open_ledger(ledger_url) as ledger:
        assert count_rows(ledger, "gk_publications") == 1
        assert count_rows(ledger, "slow_totals") == 1
        assert [a.state.value for a in ledger.attempts("SlowGated", D)] == ["succeeded"]


def wait_for(path: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            raise AssertionError(f"{path} did not appear within {timeout}s")
        time.sleep(0.05)


@pytest.mark.slow
def test_killed_worker_blocks_until_lease_expires_then_is_abandoned(
    sqlite_url: str, tmp_path: Path
) -> None:
    lease = 6.0
    cfg = write_config(tmp_path, sqlite_url, lease_seconds=lease)
    args = (
        "--module",
        "tests.helpers.luigi_tasks",
        "Controlled",
        "--business-date",
        "2026-10-23",
        "--control",
        str(tmp_path),
    )
    (tmp_path / "hang").touch()
    worker = subprocess.Popen(
        luigi_command(*args, "--local-scheduler"),
        cwd=tmp_path,
        env=luigi_env(cfg),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    wait_for(tmp_path / "started")
    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    (tmp_path / "hang").unlink()

    with gk.open_ledger(sqlite_url) as ledger:
        (killed,) = ledger.attempts("Controlled", D)
        assert killed.state is gk.RunState.RUNNING and killed.lease_expires_at is not None
        assert gk.check_ready(ledger, ["Controlled"], D).blockers == {"Controlled": "running"}
        rows = snapshot(ledger)
    refused = run_luigi(cfg, *args, cwd=tmp_path)  # within the lease: fails fast
    assert refused.returncode == 30, refused.stderr
    assert "LeaseHeld" in refused.stderr + refused.stdout
    history = gatekeeper_in_process("--ledger", sqlite_url, "history", "Controlled")
    assert "running" in history.stdout and "until" in history.stdout
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == rows  # the refused run recorded nothing
        while ledger.attempts("Controlled", D)[0].lease_live(dt.datetime.now(dt.timezone.utc)):
            time.sleep(0.2)
    resumed = run_luigi(cfg, *args, cwd=tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        states = [(a.attempt, a.state.value) for a in ledger.attempts("Controlled", D)]
        assert states == [(1, "abandoned"), (2, "succeeded")]
        assert gk.check_ready(ledger, ["Controlled"], D)


@pytest.mark.process
def test_ledger_url_from_environment_interpolation(sqlite_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "${GK_TEST_LEDGER_DSN}")
    env = luigi_env(cfg)
    env["GK_TEST_LEDGER_DSN"] = sqlite_url
    done = subprocess.run(
        luigi_command(
            "--module",
            "tests.helpers.luigi_tasks",
            "Trivial",
            "--business-date",
            "2026-10-23",
            "--local-scheduler",
        ),
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        assert [a.state.value for a in ledger.attempts("Trivial", D)] == ["succeeded"]


@pytest.mark.process
@pytest.mark.oldest
def test_gatekeeper_options_override_on_the_command_line(sqlite_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, "sqlite:///not-this-one.db")
    done = run_luigi(
        cfg,
        "--module",
        "tests.helpers.luigi_tasks",
        "Trivial",
        "--business-date",
        "2026-10-23",
        "--gatekeeper-ledger-url",
        sqlite_url,
        "--gatekeeper-lease-seconds",
        "42",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert not (tmp_path / "not-this-one.db").exists()
    with gk.open_ledger(sqlite_url) as ledger:
        assert [a.state.value for a in ledger.attempts("Trivial", D)] == ["succeeded"]
