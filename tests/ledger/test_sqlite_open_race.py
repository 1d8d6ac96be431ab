"""Processes that open one new SQLite ledger file at the same instant all open it.

Switching a new file to WAL (``PRAGMA journal_mode = WAL``) needs a lock that SQLite refuses at
once ("database is locked"), without waiting on its busy handler, while another connection
holds it: two ``luigi`` processes started together on a fresh ledger lost that race about
once in thirty. The ledger tries the switch again for up to ``busy_timeout``.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

OPEN_AT_GO = """
import os, sys, time
import gatekeeper as gk
url, go, ready = sys.argv[1:]
open(ready, "w").close()
while not os.path.exists(go):
    time.sleep(0.0005)
gk.open_ledger(url).close()
"""
PROCESSES = 6
ROUNDS = 5


@pytest.mark.slow
def test_processes_opening_a_new_sqlite_ledger_together_all_open_it(tmp_path: Path) -> None:
    for round_ in range(ROUNDS):
        folder = tmp_path / f"round-{round_}"
        folder.mkdir()
        url, go = f"sqlite:///{folder / 'ledger.db'}", folder / "go"
        ready = [folder / f"ready-{n}" for n in range(PROCESSES)]
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_AT_GO, url, str(go), str(path)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for path in ready
        ]
        deadline = time.monotonic() + 60
        while not all(path.exists() for path in ready):  # every one imported, waiting
            assert time.monotonic() < deadline, "the processes did not start"
            assert all(p.poll() is None for p in procs), "a process ended before the start"
            time.sleep(0.01)
        go.touch()
        errors = [p.communicate(timeout=60)[1] for p in procs]
        failed = [
            err.strip().splitlines()[-1]
            for p, err in zip(procs, errors, strict=True)
            if p.returncode
        ]
        assert not failed, f"round {round_}: {failed}"
        conn = sqlite3.connect(folder / "ledger.db")
        try:
            assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert conn.execute("SELECT version FROM gk_schema").fetchall() != []
        finally:
            conn.close()
