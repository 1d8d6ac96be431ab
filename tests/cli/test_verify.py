"""``gatekeeper verify``, in process: exit 0 for the README's ledger, 1 naming each violation
(one per line; objects with ``--json``), 2 for bad input; the ledger unchanged either way."""

from __future__ import annotations

import datetime as dt
import hashlib
import json
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.cli import run_main
from tests.helpers.luigi_support import build
from tests.helpers.verify_plants import D1, PLANTS, every_row, healthy


@pytest.mark.luigi
def test_verify_passes_the_readme_example_ledger(
    ledger_cfg: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    """The README's main job (example_pipelines/sales.py) for two dates, then a repair of a
    dimension that leaves the publication stale: every invariant holds."""
    from example_pipelines.sales import DailySalesLoad, DimCustomer

    dates = [dt.date(2026, 10, 23), dt.date(2026, 10, 24)]
    assert build(*(DailySalesLoad(business_date=d) for d in dates)).scheduling_succeeded
    repair = DimCustomer(business_date=dates[0], attempt=2)  # the publication: stale
    assert build(repair).scheduling_succeeded
    assert ledger_cfg.stale("DailySalesLoad")
    capsys.readouterr()  # what the runs logged is theirs, not the command's
    code, out, err = run_main(["--ledger", ledger_cfg.url, "verify"], capsys)
    assert (code, err) == (0, ""), out
    assert out.startswith("ok: 10 invariants hold for every job of ")


def test_verify_names_each_violation_on_its_own_line(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        healthy(ledger)
        for invariant in ("evidence", "attempt-lease"):
            PLANTS[invariant][0](ledger)
    code, out, _ = run_main(["--ledger", ledger_url, "verify"], capsys)
    lines = out.splitlines()
    assert code == 1
    assert [line.split(":")[0] for line in lines[:-1]] == [
        "VIOLATED evidence",
        "VIOLATED attempt-lease",
    ]
    assert (
        f"evidence: C {D1}: evidence names U {D1} attempt 1 (run ghost); that run is not"
        in lines[0]
    )
    assert "gk_attempts(attempt 1, run_id w1, state running)" in lines[1]
    assert lines[-1].startswith("2 violation(s) in every job of ")
    code, out, _ = run_main(["--ledger", ledger_url, "verify", "--json", "W"], capsys)
    data = json.loads(out)
    assert (code, data["ok"]) == (1, False)
    assert data["violations"] == [
        {
            "invariant": "attempt-lease",
            "job": "W",
            "period": D1,
            "detail": "1 running attempt(s) without a lease",
            "rows": [{"table": "gk_attempts", "attempt": 1, "run_id": "w1", "state": "running"}],
        }
    ]


def test_verify_leaves_the_ledger_unchanged(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        healthy(ledger)
        PLANTS["complete-runs"][0](ledger)
        rows = every_row(ledger)
    db = tmp_path / "ledger.db"
    before = hashlib.sha256(db.read_bytes()).hexdigest() if db.exists() else None
    code, _, _ = run_main(["--ledger", ledger_url, "verify"], capsys)
    assert code == 1
    if before is not None:  # SQLite: the file's bytes; both: every row
        assert hashlib.sha256(db.read_bytes()).hexdigest() == before
    with gk.open_ledger(ledger_url) as ledger:
        assert every_row(ledger) == rows


def test_verify_refuses_bad_input_and_writes_nothing(
    ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        healthy(ledger)
        rows = every_row(ledger)
    for args in (["verify", "Nope"], ["verify", "W\x1b[2J"], ["verify", "--json", "Cc"]):
        code, out, err = run_main(["--ledger", ledger_url, *args], capsys)
        assert code == 2, (args, out, err)
        assert "InvalidInput" in err
    with gk.open_ledger(ledger_url) as ledger:
        assert every_row(ledger) == rows
    missing = tmp_path / "missing.db"
    code, _, err = run_main(["--ledger", f"sqlite:///{missing}", "verify"], capsys)
    assert code == 2 and "InvalidInput" in err
    assert not missing.exists()
