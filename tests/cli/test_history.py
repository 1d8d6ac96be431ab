"""``gatekeeper history``: Luigi's hour form in ``record``, ``history`` and ``status``; an
unknown job is bad input (or said so with ``--allow-unknown``); a known job's empty date."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.helpers.cli import run_gatekeeper, run_main

D = "2026-10-23"


def test_cli_luigi_hour_form_in_record_history_and_status(tmp_path: Path) -> None:
    url = "sqlite:///hours.db"
    for hour, run in (("2026-10-25T05", "r5"), ("2026-10-25T06:00Z", "r6")):
        done = run_gatekeeper(
            "record", "H", hour, "1", run, "succeeded", "--ledger", url, cwd=tmp_path
        )
        assert done.returncode == 0, done.stderr
    history = run_gatekeeper(
        "history", "H", "2026-10-25T05", "--ledger", url, "--json", cwd=tmp_path
    )
    assert history.returncode == 0, history.stderr
    assert [a["business_date"] for a in json.loads(history.stdout)] == ["2026-10-25T05:00Z"]
    status = run_gatekeeper(
        "status",
        "H",
        "--period",
        "hourly",
        "--start",
        "2026-10-25T05",
        "--stop",
        "2026-10-25T07",
        "--now",
        "2026-10-26T00:00:00Z",
        "--ledger",
        url,
        cwd=tmp_path,
    )
    assert status.returncode == 0, status.stdout + status.stderr
    assert "filled 2/2" in status.stdout


def test_cli_history_of_an_unknown_job_is_bad_input(filled: str, tmp_path: Path) -> None:
    done = run_gatekeeper("history", "a", "--ledger", filled, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "no such job 'a' (did you mean 'A'?) in the ledger (sqlite file" in done.stderr
    dated = run_gatekeeper("history", "Nope", D, "--ledger", filled, "--json", cwd=tmp_path)
    assert dated.returncode == 2
    assert json.loads(dated.stdout)["message"].startswith("no such job 'Nope' in the ledger")


def test_cli_history_of_an_unknown_job_allowed_says_so(filled: str, tmp_path: Path) -> None:
    done = run_gatekeeper("history", "Nope", "--allow-unknown", "--ledger", filled, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("no such job Nope in the ledger")
    dated = run_gatekeeper(
        "history", "Nope", D, "--allow-unknown", "--ledger", filled, "--json", cwd=tmp_path
    )
    assert dated.returncode == 1 and json.loads(dated.stdout) == []


def test_cli_history_of_a_known_job_on_an_empty_date_says_that(
    filled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main(["history", "A", "2026-10-30", "--ledger", filled], capsys)
    assert code == 0, err
    assert out == "A has no attempts for 2026-10-30\n"


def test_cli_history_shows_the_reason_of_a_rerun(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An attempt started with a reason (``--rerun``) shows it, in the table and in --json;
    a plain attempt's is empty (null). Both backends, in process."""
    import gatekeeper as gk
    from tests.helpers.ledgers import T0

    with gk.open_ledger(ledger_url) as ledger:
        ledger.record("A", D, 1, "r1", "succeeded", T0)
        ledger.begin_attempt("A", D, "r2", lease_seconds=60, reason="late\nrows")
    code, out, _ = run_main(["history", "A", D, "--ledger", ledger_url], capsys)
    assert code == 0
    header, first, second = out.splitlines()
    assert header.split()[-1] == "reason" and first.split()[-1] == T0.isoformat()  # no reason
    assert second.endswith(r"late\nrows")  # escaped: no faked row
    code, out, _ = run_main(["history", "A", D, "--ledger", ledger_url, "--json"], capsys)
    assert code == 0
    assert [a["reason"] for a in json.loads(out)] == [None, "late\nrows"]
