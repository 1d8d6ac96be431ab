"""``gatekeeper report`` shows a stale period: its cell has the class ``stale`` and a tooltip
naming the upstream change, the job's list of periods that need attention names it, and the
legend explains the mark; a publisher with nothing stale has no such cell. In process, both
backends."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from tests.helpers.stale import CHANGE, STALE_DAY, repaired_upstream


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
