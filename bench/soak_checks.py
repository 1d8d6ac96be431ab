"""The verdicts and counts of ``bench/soak.py``: ``gatekeeper verify``, the pipeline's own
tables, and the counts printed at the end. Not a benchmark itself; ``soak.py`` imports it."""

from __future__ import annotations

import collections
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import gatekeeper as gk

JOBS = ("SoakUpstream", "SoakPublish", "SoakMonthly")


def run_verify(url: str) -> tuple[int, list[Any]]:
    """``gatekeeper verify --json`` on the ledger: its exit code and the violations it names."""
    script = Path(sys.executable).parent / "gatekeeper"
    done = subprocess.run(
        [str(script), "verify", "--ledger", url, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    try:
        report = json.loads(done.stdout)
    except json.JSONDecodeError:
        report = {"output": done.stdout[-2000:], "errors": done.stderr[-2000:]}
    found = report.get("violations", report) if isinstance(report, dict) else report
    return done.returncode, found if isinstance(found, list) else [found]


def table_violations(ledger: gk.Ledger) -> list[str]:
    """Rows of ``soak_rows`` not written by their day's latest, succeeded ``SoakUpstream``
    attempt (a zombie's write that got through, or a lost one), and totals in
    ``soak_totals`` not written by their publication's producer."""
    found = []
    upstream = {a.business_date: a for a in latest_attempts(ledger, "SoakUpstream")}
    for day, run_id in ledger.read("SELECT business_date, run_id FROM soak_rows"):
        latest = upstream.get(str(day))
        if latest is None or latest.run_id != run_id or latest.state != gk.RunState.SUCCEEDED:
            found.append(f"soak_rows {day}: written by {run_id}, latest attempt {latest}")
    for day, run_id in ledger.read("SELECT business_date, run_id FROM soak_totals"):
        published = ledger.publication("SoakPublish", str(day))
        if published is None or published.run_id != run_id:
            found.append(f"soak_totals {day}: written by {run_id}, publication {published}")
    return found


def latest_attempts(ledger: gk.Ledger, job: str) -> list[gk.Attempt]:
    latest: dict[str, gk.Attempt] = {}
    for attempt in ledger.history(job):
        latest[str(attempt.business_date)] = attempt  # by period, then attempt
    return list(latest.values())


def counts(ledger: gk.Ledger, records: list[dict[str, Any]], folder: Path) -> dict[str, Any]:
    """Attempts by state, takeovers (attempts abandoned by their successor), zombie writes
    refused (``LeaseLost`` in the processes' logs), faults by kind, exit codes by value and
    exits 0 with due gaps."""
    states: collections.Counter[str] = collections.Counter()
    for job in JOBS:
        states.update(str(a.state.value) for a in ledger.history(job))
    faults = collections.Counter(r["kind"] for r in records if r["event"] == "fault")
    exits = [r for r in records if r["event"] == "exit"]
    lease_lost = sum(
        path.read_text(errors="replace").count("LeaseLost") for path in folder.glob("luigi-*.log")
    )
    return {
        "attempts": sum(states.values()),
        "attempts_by_state": dict(sorted(states.items())),
        "takeovers": states.get("abandoned", 0),
        "lease_lost_lines": lease_lost,
        "faults": dict(sorted(faults.items())),
        "exit_codes": {
            str(k): v for k, v in sorted(collections.Counter(r["code"] for r in exits).items())
        },
        "exit_0_with_due_gaps": sum(1 for r in exits if r["code"] == 0 and r["due_gaps"]),
        "exit_0_gaps_unknown": sum(1 for r in exits if r["code"] == 0 and r["due_gaps"] is None),
    }


def print_counts(figures: dict[str, Any]) -> None:
    for name, value in figures.items():
        print(f"{name:>22}: {value}")
