"""bench/fleet_readers.py end to end at a tiny size (issue 49, item 5), so that the bench the
readers are made faster against cannot rot: it builds its ledgers, runs the real serve, check
and report, checks what each returned, and prints every figure and the targets. The process is
the subject: the script starts serve and the commands, and its exit code is the verdict on its
own checks (timings are printed, never asserted)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.ledgers import PG_DSN, require_pg

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.timeout(120)  # ~10 s: serve's 1.1 s pauses, two rounds of check and report
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_fleet_bench_prints_every_figure_and_target(backend: str, tmp_path: Path) -> None:
    if backend == "postgresql":
        require_pg()
    out = run_bench(tmp_path, backend, "--jobs", "6", "--days", "20", "--report-days", "15")
    assert "6 daily jobs x 20 days + 5 hourly jobs" in out, out
    for measure in ("/metrics warm", "/api/jobs", "check of 6 jobs", "report of 50 jobs x 15"):
        assert re.search(rf"^{re.escape(measure)}.* \d+\.\d{{3}} s .* \d+\.\d+x$", out, re.M), out
    assert re.search(r"^GET / size +\d+\.\d MB", out, re.M), out
    assert re.search(r"^serve peak RSS +\d+ MB", out, re.M), out
    assert re.search(r"^/metrics <= 1\.0x its floor \(item 1\) +(met|MISSED)$", out, re.M), out
    assert "load average (1, 5, 15 min) before:" in out and "after:" in out, out
    if backend == "postgresql":
        assert_schemas_dropped(out)


@pytest.mark.slow
@pytest.mark.postgres
@pytest.mark.timeout(60)
def test_fleet_bench_hourly_case_measures_serve_only(tmp_path: Path) -> None:
    """Item 1's hourly case (``--hourly N``): hourly jobs only, serve's figures, no check or
    report."""
    require_pg()
    out = run_bench(tmp_path, "postgresql", "--hourly", "3", "--hourly-days", "2")
    assert "3 hourly jobs x 2 days, postgresql" in out, out
    assert re.search(r"^/metrics warm .* \d+\.\d+x$", out, re.M), out
    assert "check of" not in out and "report of" not in out, out
    assert_schemas_dropped(out)


def run_bench(tmp_path: Path, backend: str, *args: str) -> str:
    """Run bench/fleet_readers.py at ``args`` (one timed round) on ``backend``; assert it
    exited 0; return what it printed."""
    env = {k: v for k, v in os.environ.items() if k != "GATEKEEPER_LEDGER_URL"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "fleet_readers.py"), *args, "--runs", "1"]
        + ["--backend", backend, "--pg-dsn", PG_DSN],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def assert_schemas_dropped(out: str) -> None:
    """The PostgreSQL schemas the bench says it built (at least one) are gone."""
    import psycopg

    built = re.findall(r"^built in .* schema (gk_bench_fleet_\w+)", out, re.M)
    assert built, out
    with psycopg.connect(PG_DSN) as conn:
        rows = conn.execute(
            "SELECT nspname FROM pg_namespace WHERE nspname = ANY(%s)", (built,)
        ).fetchall()
    assert rows == [], rows
