"""``gatekeeper status`` shows a stale period: the job's line counts its stale periods, each is
listed with the upstream (job, period) whose attempt changed, and ``--json`` gives a stale
period a ``stale`` list (absent on the others). In process, both backends."""

from __future__ import annotations

import json

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from tests.helpers.ledgers import snapshot
from tests.helpers.stale import CHANGE, DAYS, STALE_DAY, repaired_upstream

NOW = "2026-10-26T06:00:00+00:00"


def status(url: str, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["--ledger", url, "status", *args, "--now", NOW])
    return code, capsys.readouterr().out


def test_status_text_counts_and_lists_stale_periods(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        repaired_upstream(ledger)
        before = snapshot(ledger)
    _, one = status(ledger_url, capsys, "Report")
    lines = one.splitlines()
    assert lines[0].startswith("Report: ") and lines[0].endswith("; 1 stale")
    assert f"stale {STALE_DAY}: {CHANGE}" in lines
    _, grid = status(ledger_url, capsys, "Report", "Other")
    lines = grid.splitlines()
    assert lines[0].endswith("; 1 stale") and not lines[1].endswith("stale")
    assert f"Report: stale {STALE_DAY}: {CHANGE}" in lines
    assert "Other: stale" not in grid
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before


def test_status_json_gives_a_stale_period_its_upstream_changes(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        repaired_upstream(ledger)
    _, out = status(ledger_url, capsys, "Report", "--json")
    periods = {p["period"]: p for p in json.loads(out)["periods"]}
    assert periods[STALE_DAY]["stale"] == [
        {
            "job": "Orders",
            "period": STALE_DAY,
            "old_attempt": 1,
            "new_attempt": 2,
            "old_revision": None,  # Orders does not publish
            "new_revision": None,
        }
    ]
    assert [k for k, p in periods.items() if "stale" in p] == [STALE_DAY]
    _, out = status(ledger_url, capsys, "Other", "--json")
    assert not any("stale" in p for p in json.loads(out)["periods"])


def test_status_grid_marks_a_stale_period_in_its_strip(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The grid's strip draws the stale period ``~`` where ``#`` would be, the legend names
    the mark and its column counts it; the consumer whose upstream was not repaired has none."""
    with gk.open_ledger(ledger_url) as ledger:
        repaired_upstream(ledger)
    _, grid = status(ledger_url, capsys, "Report", "Other", "--start", DAYS[0])
    lines = grid.splitlines()
    assert "  # succeeded  b blocked  ~ stale" in lines
    header, report, other = (line.split() for line in lines[6:9])
    assert header[:2] == ["job", "strip"] and header[-1] == "~"
    stale_at = DAYS.index(STALE_DAY)
    assert report[:2] == ["Report", "#" * stale_at + "~" + "#" * (6 - stale_at) + "b"]
    assert report[-1] == "1"
    assert other == ["Other", "#######b", "7", "1"]
