"""The ``gatekeeper plan-recovery`` command (in process), in both modes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import T0, snapshot

DATE = "2026-11-07"
PIPELINE = "SilverCampaigns,GoldCampaignDaily"


def event(stage: int, name: str, minute: int, run_id: str = "RUN") -> dict[str, Any]:
    return {
        "ts": f"2026-11-07T01:{minute:02d}:00+00:00",
        "run_id": run_id,
        "stage": stage,
        "event": name,
    }


SILVER_OK_GOLD_FAILED = [
    event(1, "started", 0),
    event(1, "succeeded", 1),
    event(2, "started", 2),
    event(2, "failed", 3),
]


def write_events(tmp_path: Path, events: list[Any]) -> str:
    path = tmp_path / "pipeline_events.jsonl"
    path.write_text("".join((e if isinstance(e, str) else json.dumps(e)) + "\n" for e in events))
    return str(path)


def events_mode(tmp_path: Path, events: list[Any], *args: str) -> Any:
    path = write_events(tmp_path, events)
    return gatekeeper(
        "plan-recovery",
        "--events",
        path,
        "--run-id",
        "RUN",
        "--expected-stages",
        "2",
        *args,
        cwd=tmp_path,
    )


# --------------------------------------------------------------------------- --events mode


def test_cli_plan_recovery_events_restart_json_and_no_ledger(tmp_path: Path) -> None:
    done = events_mode(tmp_path, SILVER_OK_GOLD_FAILED, "--verified-stage", "1", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "action": "manual_restart",
        "restart_at_stage": 2,
        "skipped_stages": [1],
    }
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipeline_events.jsonl"]


def test_cli_plan_recovery_events_table(tmp_path: Path) -> None:
    done = events_mode(tmp_path, SILVER_OK_GOLD_FAILED, "--verified-stage", "1")
    assert done.returncode == 0, done.stderr
    assert "restart at stage 2; skip stage 1 (verified by operator)" in done.stdout
    assert not (tmp_path / "gatekeeper.db").exists()


def test_cli_plan_recovery_events_all_succeeded(tmp_path: Path) -> None:
    events = SILVER_OK_GOLD_FAILED[:3] + [event(2, "succeeded", 3)]
    done = events_mode(tmp_path, events, "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {
        "action": "none",
        "restart_at_stage": None,
        "skipped_stages": [],
    }


@pytest.mark.parametrize(
    ("events", "verified", "reason"),
    [
        (SILVER_OK_GOLD_FAILED, [], "not verified"),
        (SILVER_OK_GOLD_FAILED[:3], ["1"], "stage 2 is running"),
        ([event(1, "started", 0), event(1, "failed", 1), event(2, "started", 2)], [], "running"),
        (SILVER_OK_GOLD_FAILED, ["1", "2"], "stage 2"),
    ],
)
def test_cli_plan_recovery_events_refused_exits_1(
    tmp_path: Path, events: list[Any], verified: list[str], reason: str
) -> None:
    args = [a for v in verified for a in ("--verified-stage", v)]
    done = events_mode(tmp_path, events, *args, "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["action"] == "refused" and reason in data["reason"]
    assert "RecoveryNotSafe" in done.stderr and reason in done.stderr
    table = events_mode(tmp_path, events, *args)
    assert table.returncode == 1 and reason in table.stderr and "refused" in table.stdout
    assert not (tmp_path / "gatekeeper.db").exists()


@pytest.mark.parametrize(
    ("events", "args", "field"),
    [
        (SILVER_OK_GOLD_FAILED, ["--verified-stage", "x"], "verified_stage"),
        (SILVER_OK_GOLD_FAILED, ["--verified-stage", "0"], "verified_stage"),
        (["{not json"], [], "line 1"),
        ([event(1, "started", 5), event(1, "succeeded", 4)], [], "line 2: ts"),
        ([event(3, "started", 0)], [], "line 1: stage"),
        (SILVER_OK_GOLD_FAILED, ["--business-date", DATE], "business_date"),
    ],
)
def test_cli_plan_recovery_events_malformed_exits_2(
    tmp_path: Path, events: list[Any], args: list[str], field: str
) -> None:
    done = events_mode(tmp_path, events, *args, "--json")
    assert done.returncode == 2, done.stdout + done.stderr
    assert json.loads(done.stdout)["error"] == "InvalidInput"
    assert field in done.stderr
    assert not (tmp_path / "gatekeeper.db").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--events", "missing.jsonl", "--run-id", "RUN", "--expected-stages", "2"],
        ["--events", "e.jsonl", "--run-id", "RUN", "--expected-stages", "two"],
        ["--events", "e.jsonl", "--expected-stages", "2"],
        ["--events", "e.jsonl", "--run-id", "RUN"],
        ["--events", "e.jsonl", "--stages", PIPELINE, "--run-id", "RUN", "--expected-stages", "2"],
        ["--run-id", "RUN", "--expected-stages", "2"],
    ],
)
def test_cli_plan_recovery_bad_arguments_exit_2(tmp_path: Path, args: list[str]) -> None:
    write_events(tmp_path, SILVER_OK_GOLD_FAILED)
    (tmp_path / "pipeline_events.jsonl").rename(tmp_path / "e.jsonl")
    done = gatekeeper("plan-recovery", *args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert not (tmp_path / "gatekeeper.db").exists()


# --------------------------------------------------------------------------- --stages mode


def ledger_mode(url: str, *args: str) -> Any:
    return gatekeeper(
        "--ledger", url, "plan-recovery", "--stages", PIPELINE, "--business-date", DATE, *args
    )


def test_cli_plan_recovery_stages_restart(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("SilverCampaigns", DATE, 1, "silver-1", "succeeded", T0)
        ledger.record("GoldCampaignDaily", DATE, 1, "gold-1", "failed", T0)
        before = snapshot(ledger)
    done = ledger_mode(sqlite_url, "--verified-stage", "1", "--json")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert {
        k: data[k]
        for k in ("action", "restart_at_stage", "skipped_stages", "restart_at_job", "skipped_jobs")
    } == {
        "action": "manual_restart",
        "restart_at_stage": 2,
        "skipped_stages": [1],
        "restart_at_job": "GoldCampaignDaily",
        "skipped_jobs": ["SilverCampaigns"],
    }
    table = ledger_mode(sqlite_url, "--verified-stage", "1")
    assert table.returncode == 0, table.stderr
    assert (
        "restart at stage 2 (GoldCampaignDaily); skip stage 1 (SilverCampaigns, "
        "verified by operator)"
    ) in table.stdout
    assert "silver-1" in table.stdout
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


def test_cli_plan_recovery_stages_refused_when_running(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("SilverCampaigns", DATE, 1, "silver-1", "succeeded", T0)
        ledger.begin_attempt("GoldCampaignDaily", DATE, "gold-1", lease_seconds=60, now=T0)
    done = ledger_mode(sqlite_url, "--verified-stage", "1", "--json")
    assert done.returncode == 1, done.stderr
    data = json.loads(done.stdout)
    assert data["action"] == "refused"
    assert "GoldCampaignDaily attempt 1" in data["reason"] and "stalled" in data["reason"]
    assert "stalled" in done.stderr


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--stages", "A,,B", "--business-date", DATE], "stages"),
        (["--stages", "A,A", "--business-date", DATE], "stages"),
        (["--stages", "A,B", "--business-date", "07/11/2026"], "business_date"),
        (["--stages", "A,B"], "business_date"),
        (["--stages", "A,B", "--business-date", DATE, "--run-id", "RUN"], "run_id"),
        (["--stages", "A,B", "--business-date", DATE, "--expected-stages", "2"], "expected_stages"),
    ],
)
def test_cli_plan_recovery_stages_bad_input_exits_2(
    sqlite_url: str, args: list[str], field: str
) -> None:
    done = gatekeeper("--ledger", sqlite_url, "plan-recovery", *args)
    assert done.returncode == 2, done.stdout + done.stderr
    assert field in done.stderr


def test_cli_plan_recovery_stages_reads_ledger_from_env(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'from-env.db'}"
    with gk.open_ledger(url) as ledger:
        ledger.record("SilverCampaigns", DATE, 1, "silver-1", "failed", T0)
    done = gatekeeper(
        "plan-recovery",
        "--stages",
        PIPELINE,
        "--business-date",
        DATE,
        "--allow-unknown",  # GoldCampaignDaily never ran: the pipeline's first run
        "--json",
        cwd=tmp_path,
        env={"GATEKEEPER_LEDGER_URL": url},
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["restart_at_job"] == "SilverCampaigns"
    assert not (tmp_path / "gatekeeper.db").exists()


def test_cli_plan_recovery_help_says_verified_stage_is_an_assertion() -> None:
    done = gatekeeper("plan-recovery", "--help")
    assert done.returncode == 0
    text = " ".join(done.stdout.split())
    assert "operator assertion, not an integrity check" in text
    for needle in ("exists", "complete", "checksums", "run ID", "--events", "--stages"):
        assert needle in text
