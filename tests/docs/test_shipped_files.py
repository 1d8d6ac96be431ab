"""The files the checkout ships for users to copy: luigi.cfg logs at INFO (no DEBUG lines from
the getting-started run, whose one-liner reads the output rows); the bench README runs plain
``python``."""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

from tests.helpers.cli import clean_env
from tests.helpers.luigi_support import ROOT, luigi_command


def test_shipped_luigi_cfg_logs_at_info() -> None:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "luigi.cfg")
    assert cfg.get("core", "log_level") == "INFO"


def test_luigi_with_the_shipped_cfg_prints_no_debug_lines(tmp_path: Path) -> None:
    (tmp_path / "luigi.cfg").write_text((ROOT / "luigi.cfg").read_text())  # gatekeeper.db here
    done = subprocess.run(
        luigi_command(
            "--module",
            "example_pipelines.sales",
            "RangeBusinessDaily",
            "--of",
            "DailySalesLoad",
            "--start",
            "2026-10-01",
            "--stop",
            "2026-10-04",
            "--lateness",
            "2h",
            "--local-scheduler",
        ),
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "DEBUG" not in output
    assert "INFO" in output and "Luigi Execution Summary" in output
    # the docs' one-liner that reads the output rows (docs/getting-started.md)
    readme = (ROOT / "docs" / "getting-started.md").read_text()
    one_liner = next(
        line
        for line in readme.splitlines()
        if line.startswith('python -c "import sqlite3') and "sales_totals" in line
    )
    rows = subprocess.run(
        ["bash", "-c", one_liner.replace("python ", f"{sys.executable} ", 1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rows.returncode == 0, rows.stderr
    assert [line.split()[0] for line in rows.stdout.splitlines()] == [
        "2026-10-01",
        "2026-10-02",
        "2026-10-03",
    ]
    assert all(line.split()[1].isdigit() for line in rows.stdout.splitlines())


def test_bench_readme_uses_plain_python() -> None:
    text = (ROOT / "bench" / "README.md").read_text()
    assert "/work/" not in text and "venv/bin" not in text
    assert "    python bench/ledger_throughput.py" in text
