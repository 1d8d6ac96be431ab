"""`gatekeeper abandon` (in process): what it changes, its refusals and exit codes, on both
backends, and on PostgreSQL when its COMMIT is lost (``tests/helpers/pg_proxy.py``). (The
worker it frees, killed or frozen: tests/luigi/test_abandon.py.)"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import PG_DSN, T0, pg_url, snapshot, succeed
from tests.helpers.pg_proxy import has, pg_proxy

D = "2026-10-23"


def test_abandon_records_the_running_attempt_abandoned_with_the_reason(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        ledger.begin_attempt("Load", D, "run-1", lease_seconds=3600)
    done = gatekeeper("--ledger", ledger_url, "abandon", "Load", D, "--reason", "host lost")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"abandoned: Load {D} attempt 1 (run run-1): host lost"
    with gk.open_ledger(ledger_url) as ledger:
        (attempt,) = ledger.attempts("Load", D)
        assert (attempt.state, attempt.error) == (gk.RunState.ABANDONED, "host lost")
        assert attempt.lease_expires_at is None
    history = gatekeeper("--ledger", ledger_url, "history", "Load", D)
    assert "abandoned" in history.stdout and "host lost" in history.stdout


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (
            ("Load", D, "--reason", "why"),
            3,
            "StateConflict: Load 2026-10-23: attempt 1 (run "
            "run-1) is already succeeded; only a running latest attempt can be abandoned",
        ),
        (("Load", "2026-10-24", "--reason", "why"), 1, "Load has no attempts for 2026-10-24"),
        (("Lode", D, "--reason", "why"), 2, "no such job 'Lode' (did you mean 'Load'?)"),
        (("Load", D, "--reason", ""), 2, "invalid reason=''"),
        (("Load", D, "--reason", " why"), 2, "invalid reason=' why'"),
        (("Load", "2026-02-30", "--reason", "why"), 2, "business_date"),
        (("Load", D), 2, "the following arguments are required: --reason"),
    ],
)
def test_abandon_refusals_exit_non_zero_and_write_nothing(
    ledger_url: str, args: tuple[str, ...], code: int, says: str
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        ledger.record("Load", D, 1, "run-1", "succeeded", T0)
        before = snapshot(ledger)
    done = gatekeeper("--ledger", ledger_url, "abandon", *args)
    assert done.returncode == code, done.stdout + done.stderr
    assert says in done.stdout + done.stderr
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before


def test_abandon_json_names_the_error_of_a_refusal(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("Load", D, 1, "run-1", "failed", T0)
    done = gatekeeper("--ledger", sqlite_url, "abandon", "Load", D, "--reason", "x", "--json")
    assert done.returncode == 3
    assert json.loads(done.stdout)["error"] == "StateConflict"
    missing = gatekeeper(
        "--ledger", sqlite_url, "--json", "abandon", "Load", "2026-10-01", "--reason", "x"
    )
    assert missing.returncode == 1 and json.loads(missing.stdout) == {"abandoned": None}


def test_abandon_never_creates_a_ledger_file(tmp_path: Path) -> None:
    path = tmp_path / "typo.db"
    done = gatekeeper("--ledger", f"sqlite:///{path}", "abandon", "Load", D, "--reason", "x")
    assert done.returncode == 2 and "nothing was created" in done.stderr
    assert not path.exists()


def test_abandon_of_an_attempt_that_published_records_it_succeeded(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        succeed(ledger, "Up", D)
        ledger.begin_attempt("Report", D, "run-1", lease_seconds=3600)
        ledger.publish("Report", D, ["Up"], "fp-1", producer="run-1")
    done = gatekeeper("--ledger", ledger_url, "abandon", "Report", D, "--reason", "host lost")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == (
        f"not abandoned: Report {D} attempt 1 (run run-1) published before it stopped; "
        "recorded succeeded"
    )
    with gk.open_ledger(ledger_url) as ledger:
        (attempt,) = ledger.attempts("Report", D)
        assert attempt.state is gk.RunState.SUCCEEDED


@pytest.mark.postgres
@pytest.mark.parametrize("mode", ["answer", "request"])
def test_abandon_whose_commit_is_lost_is_read_back_and_exits_0(pg_schema: str, mode: str) -> None:
    """``answer``: the abandon committed, its answer lost: read back, done. ``request``: the
    COMMIT never reached the server: read back, not committed, so it runs again (issue 48)."""
    with gk.open_ledger(pg_url(pg_schema)) as direct, pg_proxy(PG_DSN) as proxy:
        direct.begin_attempt("Load", D, "run-1", lease_seconds=3600)
        proxy.arm(mode, has("UPDATE gk_attempts SET state"))
        url = f"{proxy.url(pg_url(pg_schema))}&reconnect_window=10"
        done = gatekeeper("--ledger", url, "abandon", "Load", D, "--reason", "host lost")
        assert proxy.cuts == [mode]
        assert done.returncode == 0, done.stdout + done.stderr
        assert done.stdout.strip() == f"abandoned: Load {D} attempt 1 (run run-1): host lost"
        (attempt,) = direct.attempts("Load", D)
        assert (attempt.run_id, attempt.state, attempt.error) == (
            "run-1",
            gk.RunState.ABANDONED,
            "host lost",
        )
        assert attempt.lease_expires_at is None
