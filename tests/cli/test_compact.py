"""``gatekeeper compact``, in process on each backend: what it removes and reports (table and
``--json``), ``history`` and ``verify`` after it, ``--dry-run`` writes nothing, and bad input
(a bad ``--before``, an unknown job, a missing ledger) exits 2 writing nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import T0
from tests.helpers.ledgers import snapshot as tables


def snapshot(ledger: gk.Ledger) -> dict[str, list[tuple[object, ...]]]:
    """Every gatekeeper table's rows, and the counts of compacted attempts."""
    return {**tables(ledger), "gk_compacted": ledger.read("SELECT * FROM gk_compacted")}


OLD, NEW = "2026-09-01", "2026-10-05"


def ledger_with_failures(url: str) -> None:
    """Load: on OLD failed, abandoned, succeeded; on NEW failed, succeeded. Other: on OLD
    failed (its latest)."""
    with gk.open_ledger(url) as ledger:
        for n, state in enumerate(("failed", "abandoned", "succeeded"), 1):
            ledger.record("Load", OLD, n, f"old-{n}", state, T0)
        for n, state in enumerate(("failed", "succeeded"), 1):
            ledger.record("Load", NEW, n, f"new-{n}", state, T0)
        ledger.record("Other", OLD, 1, "other-1", "failed", T0)


def test_compact_removes_reports_and_leaves_a_ledger_that_verifies(ledger_url: str) -> None:
    ledger_with_failures(ledger_url)
    done = gatekeeper("--ledger", ledger_url, "compact", "--before", "2026-10-01")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == "Load: removed 2 attempt(s) (1 failed, 1 abandoned) of 1 period(s)"
    assert lines[1].startswith(
        "removed 2 superseded attempt(s) of periods before 2026-10-01 from every job of "
    )
    shown = gatekeeper("--ledger", ledger_url, "--json", "history", "Load")
    assert shown.returncode == 0, shown.stderr
    kept = [(a["business_date"], a["attempt"], a["run_id"]) for a in json.loads(shown.stdout)]
    assert kept == [(OLD, 3, "old-3"), (NEW, 1, "new-1"), (NEW, 2, "new-2")]
    checked = gatekeeper("--ledger", ledger_url, "verify")
    assert checked.returncode == 0 and checked.stdout.startswith("ok: "), checked.stdout
    again = gatekeeper("--ledger", ledger_url, "--json", "compact", "--before", "2026-10-01")
    assert json.loads(again.stdout) == {
        "before": "2026-10-01",
        "starts": "2026-10-01T00:00:00+00:00",
        "dry_run": False,
        "removed": 0,
        "jobs": [],
    }


def test_compact_dry_run_writes_nothing_and_reports_what_it_would_remove(
    ledger_url: str,
) -> None:
    ledger_with_failures(ledger_url)
    with gk.open_ledger(ledger_url) as ledger:
        before = snapshot(ledger)
    args = ("--ledger", ledger_url, "--json", "compact", "--before", "2026-W41")
    dry = gatekeeper(*args, "--dry-run", "Load")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout) == {
        "before": "2026-W41",
        "starts": "2026-10-05T00:00:00+00:00",  # its Monday, from UTC midnight
        "dry_run": True,
        "removed": 2,
        "jobs": [{"job": "Load", "attempts": 2, "failed": 1, "abandoned": 1, "periods": 1}],
    }
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before
    text = gatekeeper("--ledger", ledger_url, "compact", "--before", "2026-W41", "--dry-run")
    assert text.stdout.splitlines()[0].startswith("Load: would remove 2 attempt(s)")
    assert text.stdout.rstrip().endswith("(dry run: nothing written)")


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--before", "last-month"], "invalid --before='last-month'"),
        (["--before", "2026-02-30"], "invalid --before='2026-02-30'"),
        (["--before", "2026-10-01", "Lod"], "Load"),  # the closest known name
    ],
)
def test_compact_refuses_bad_input_with_one_line_writing_nothing(
    ledger_url: str, args: list[str], says: str
) -> None:
    ledger_with_failures(ledger_url)
    with gk.open_ledger(ledger_url) as ledger:
        before = snapshot(ledger)
    done = gatekeeper("--ledger", ledger_url, "compact", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and says in done.stderr, done.stderr
    assert done.stdout == ""
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before


def test_compact_never_creates_a_ledger_file(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    done = gatekeeper("--ledger", f"sqlite:///{path}", "compact", "--before", "2026-10-01")
    assert done.returncode == 2 and "nothing was created" in done.stderr
    assert not path.exists()
