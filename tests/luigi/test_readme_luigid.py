"""The README's luigid recipe, run as written: its luigi.cfg, its luigid command and its worker
command (twice, as two hosts would), against a real luigid and a real PostgreSQL ledger.

Only what cannot be the same here is replaced: the scheduler's host name and port (a free
loopback port), luigid's state and log paths (a temporary folder) and the DSN (a fresh schema).
"""

from __future__ import annotations

import os
import re
import shlex
import socket
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import count_rows, drop_pg_schema, pg_url, require_pg
from tests.helpers.luigi_support import ROOT, luigi_env
from tests.helpers.luigid_support import HOST, free_port, stop_all

# the Luigi adapter (run on every supported Luigi); its waits end on events (a file, a lease
# expired by the database's clock), so it shares the machine with other tests under xdist
pytestmark = pytest.mark.luigi

MARKER = "<!-- luigid-recipe -->"


def recipe() -> tuple[str, list[str]]:
    """(the luigi.cfg block, the command lines) that follow the marker in docs/deployment.md."""
    text = (ROOT / "docs" / "deployment.md").read_text()
    after = text[text.index(MARKER) :]
    blocks = re.findall(r"```[a-z]*\n(.*?)```", after, flags=re.DOTALL)
    commands = [line.split("  #")[0].strip() for line in blocks[1].splitlines() if line.strip()]
    return blocks[0], commands


@pytest.fixture
def pg_dsn() -> Iterator[str]:
    require_pg()
    schema = f"gk_readme_{uuid.uuid4().hex[:12]}"
    try:
        yield pg_url(schema)
    finally:
        drop_pg_schema(schema)


@pytest.mark.postgres
@pytest.mark.slow
def test_readme_luigid_recipe_runs_as_written(tmp_path: Path, pg_dsn: str) -> None:
    config, commands = recipe()
    install, luigid_line, export_line, worker_line = commands
    assert install.startswith("pip install -e '.[postgres]'")
    assert export_line.startswith("export GATEKEEPER_PG_DSN=")
    assert "scheduler_host = scheduler.internal" in config and "default_scheduler" not in config
    port = str(free_port())
    cfg = tmp_path / "luigi.cfg"
    cfg.write_text(config.replace("scheduler.internal", HOST).replace("8082", port))
    env = luigi_env(cfg)
    env["GATEKEEPER_PG_DSN"] = pg_dsn
    server_args = shlex.split(
        luigid_line.replace("0.0.0.0", HOST)
        .replace("8082", port)
        .replace("/var/lib/luigid", str(tmp_path))
        .replace("/var/log/luigid", str(tmp_path / "logs"))
    )
    (tmp_path / "logs").mkdir()
    bin_dir = Path(os.environ.get("VIRTUAL_ENV", ROOT / ".venv")) / "bin"
    processes: list[subprocess.Popen[bytes]] = []
    try:
        processes.append(
            subprocess.Popen(
                [str(bin_dir / server_args[0]), *server_args[1:]],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
            )
        )
        wait_for_port(int(port), processes[0])
        worker = shlex.split(worker_line)
        hosts = [
            subprocess.Popen(
                [str(bin_dir / worker[0]), *worker[1:]],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            for _ in range(2)
        ]
        processes.extend(hosts)
        outputs = [p.communicate(timeout=240)[0].decode(errors="replace") for p in hosts]
        assert [p.returncode for p in hosts] == [0, 0], "\n".join(outputs)
        assert "UnconsumedParameterWarning" not in "".join(outputs)
    finally:
        stop_all(processes)
    dates = [f"2026-10-{day:02d}" for day in range(1, 32)]
    with gk.open_ledger(pg_dsn) as ledger:
        for job in ("DimCustomer", "DimProduct", "DailySalesLoad"):
            for date in dates:
                assert [a.state.value for a in ledger.attempts(job, date)] == ["succeeded"], (
                    job,
                    date,
                )
        assert count_rows(ledger, "gk_publications") == len(dates)
        assert count_rows(ledger, "sales_totals") == len(dates)


def wait_for_port(port: int, server: subprocess.Popen[bytes], timeout: float = 30) -> None:
    """Until luigid answers on ``port`` (or fails the test if it exits or never does)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        assert server.poll() is None, f"luigid exited with {server.returncode}"
        with socket.socket() as sock:
            if sock.connect_ex((HOST, port)) == 0:
                return
        time.sleep(0.1)
    raise AssertionError(f"luigid did not listen on {port} within {timeout}s")
