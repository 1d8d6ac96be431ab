"""``gatekeeper status`` shows a stale period: the job's line counts its stale periods, each is
listed with the upstream (job, period) whose attempt changed, and ``--json`` gives a stale
period a ``stale`` list (absent on the others). In process, both backends."""

from __future__ import annotations

import json

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from tests.helpers.ledgers import snapshot
from tests.helpers.stale import CHANGE, STALE_DAY, repaired_upstream

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
        {"job": "Orders", "period": STALE_DAY, "old_attempt": 1, "new_attempt": 2}
    ]
    assert [k for k, p in periods.items() if "stale" in p] == [STALE_DAY]
    _, out = status(ledger_url, capsys, "Other", "--json")
    assert not any("stale" in p for p in json.loads(out)["periods"])
