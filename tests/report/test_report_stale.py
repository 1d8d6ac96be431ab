"""``gatekeeper report`` shows a stale period: its cell has the class ``stale`` and a tooltip
naming the upstream change, the job's list of periods that need attention names it, and the
legend explains the mark; a publisher with nothing stale has no such cell. In process, both
backends."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from tests.helpers.stale import CHANGE, STALE_DAY, repaired_upstream

NOW = "2026-10-26T06:00:00+00:00"
JOBS = ("Report", "Other", "Orders")


def test_report_marks_a_stale_cell_with_its_upstream_change(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        repaired_upstream(ledger)
    out = tmp_path / "coverage.html"
    code = main(
        [
            "--ledger",
            ledger_url,
            "report",
            "Report",
            "Other",
            "-o",
            str(out),
            "--now",
            "2026-10-26T06:00:00+00:00",
        ]
    )
    assert code == 0
    page = out.read_text(encoding="utf-8")
    stale = re.findall(
        r'<i class="([^"]*stale[^"]*)"[^>]*data-job="(\w+)" data-period="([^"]+)"'
        r'[^>]*title="([^"]*)"',
        page,
    )
    assert [(job, period) for _, job, period, _ in stale] == [("Report", STALE_DAY)]
    assert f"stale: {CHANGE}" in stale[0][3]
    assert f"<b>stale</b> {STALE_DAY}: <code>{CHANGE}</code>" in page
    assert '<span class="sw stale"></span> stale' in page


def test_report_json_and_table_count_the_stale_cells(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--json`` gives each job the number of its stale periods (the cells marked stale),
    the page's embedded data the same; the table has a stale column while one is stale."""
    with gk.open_ledger(ledger_url) as ledger:
        repaired_upstream(ledger)
    out = tmp_path / "coverage.html"
    args = ["--ledger", ledger_url, "report", *JOBS, "-o", str(out)]
    capsys.readouterr()
    assert main([*args, "--now", NOW, "--json"]) == 0
    jobs = json.loads(capsys.readouterr().out)["jobs"]
    assert {j["job"]: j["stale"] for j in jobs} == {"Report": 1, "Other": 0, "Orders": 0}
    page = out.read_text(encoding="utf-8")
    cells = re.findall(r'<i class="[^"]*\bstale\b[^"]*"[^>]*data-job="(\w+)"', page)
    assert {j["job"]: j["stale"] for j in jobs} == {job: cells.count(job) for job in JOBS}
    embedded = re.search(r'<script type="application/json" id="gk-data">(.*?)</script>', page)
    assert embedded is not None
    assert [j["stale"] for j in json.loads(embedded.group(1))["jobs"]] == [1, 0, 0]
    assert main([*args, "--now", NOW]) == 0
    table = [line.split() for line in capsys.readouterr().out.splitlines()[1:]]
    assert table[0][-3:] == ["stale", "contiguous", "through"]
    assert {row[0]: row[-2] for row in table[1:]} == {"Report": "1", "Other": "0", "Orders": "0"}
    assert main([*args[:3], "Other", "Orders", "-o", str(out), "--now", NOW]) == 0
    assert "stale" not in capsys.readouterr().out.splitlines()[1]
