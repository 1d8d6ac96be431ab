"""The retail media example through real Luigi: Gold fails, both planners agree, Gold reruns."""

from __future__ import annotations

import csv
import datetime as dt
import hashlib
import json
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from example_pipelines import retail_media as rm
from example_pipelines.retail_media import EVENTS_FILE, GoldCampaignDaily
from gatekeeper.core.recovery import plan_recovery, summarize_events
from gatekeeper.ledger.recovery import plan_recovery_from_ledger
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import build, configure, failures_of, run_luigi, write_config

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

D = dt.date(2026, 11, 7)
RUN = "retail-media-2026-11-07"
RESTART = f"{RUN}-restart"
STAGES = ["SilverCampaigns", "GoldCampaignDaily"]
PLAN = {"action": "manual_restart", "restart_at_stage": 2, "skipped_stages": [1]}


@pytest.fixture
def ledger_cfg(ledger_url: str) -> Iterator[gk.Ledger]:
    """Luigi configured for the test ledger; yields that ledger."""
    for _ in configure({"ledger_url": ledger_url, "lease_seconds": "30"}):
        with gk.open_ledger(ledger_url) as ledger:
            yield ledger


@pytest.fixture
def failed_run(ledger_cfg: gk.Ledger, tmp_path: Path) -> Path:
    """Walkthrough step 1 done: Gold failed (injected) after Silver succeeded; the output dir."""
    out = tmp_path / "outputs"
    assert not build(gold(out, fail_gold=True)).scheduling_succeeded
    return out


def gold(out: Path, date: dt.date = D, **params: Any) -> GoldCampaignDaily:
    return GoldCampaignDaily(business_date=date, output_dir=str(out), **params)


def states(ledger: gk.Ledger, job: str) -> list[tuple[int, str]]:
    return [(a.attempt, a.state.value) for a in ledger.attempts(job, D)]


def stage_summary(run_id: str, *statuses: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "stages": [{"stage": n, "status": s} for n, s in enumerate(statuses, start=1)],
    }


def files(out: Path, date: dt.date = D) -> dict[str, Path]:
    day = date.isoformat()
    return {
        "bronze": out / "bronze" / "campaign_exports" / f"{day}.csv",
        "silver": out / "silver" / "campaigns" / f"{day}.csv",
        "gold": out / "gold" / "campaign_daily" / f"{day}.csv",
        "totals": out / "gold" / "campaign_daily" / f"{day}.totals.json",
    }


def read_rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


# --------------------------------------------------------------------------- in-process Luigi


def test_retail_media_failed_gold_is_recorded_and_logged(
    ledger_cfg: gk.Ledger, failed_run: Path
) -> None:
    assert states(ledger_cfg, "BronzeCampaignExports") == [(1, "succeeded")]
    assert states(ledger_cfg, "SilverCampaigns") == [(1, "succeeded")]
    assert states(ledger_cfg, "GoldCampaignDaily") == [(1, "failed")]
    error = ledger_cfg.attempts("GoldCampaignDaily", D)[0].error
    assert error == (
        "RuntimeError: GoldCampaignDaily 2026-11-07: injected failure "
        "(--fail-gold), nothing written"
    )
    assert summarize_events(failed_run / EVENTS_FILE, 2) == {
        "expected_stages": 2,
        "runs": [stage_summary(RUN, "succeeded", "failed")],
    }
    paths = files(failed_run)
    assert paths["silver"].exists()
    assert not paths["gold"].parent.exists()  # nothing written, not even a temporary file


def test_retail_media_both_planners_restart_at_gold(
    ledger_cfg: gk.Ledger, failed_run: Path
) -> None:
    summary = summarize_events(failed_run / EVENTS_FILE, 2)
    assert plan_recovery(summary, RUN, [1]) == PLAN
    plan = plan_recovery_from_ledger(ledger_cfg, STAGES, D, [1])
    assert {key: plan[key] for key in PLAN} == PLAN
    assert plan["restart_at_job"] == "GoldCampaignDaily"
    assert plan["skipped_jobs"] == ["SilverCampaigns"]
    for refuse in (
        lambda: plan_recovery(summary, RUN, []),
        lambda: plan_recovery_from_ledger(ledger_cfg, STAGES, D, []),
    ):
        with pytest.raises(gk.RecoveryNotSafe, match="stage 1 succeeded but its output is not"):
            refuse()


def test_retail_media_same_run_id_cannot_log_a_stage_twice(
    ledger_cfg: gk.Ledger, failed_run: Path
) -> None:
    log = (failed_run / EVENTS_FILE).read_text()
    rows = snapshot(ledger_cfg)
    messages = failures_of(gold(failed_run))
    assert len(messages) == 1 and messages[0].startswith("InvalidInput")
    assert "stage 2 (GoldCampaignDaily) of this run as failed" in messages[0]
    assert f"--pipeline-run {RESTART}" in messages[0]
    assert snapshot(ledger_cfg) == rows  # no attempt was recorded
    assert (failed_run / EVENTS_FILE).read_text() == log


def test_retail_media_rerun_runs_only_gold_as_attempt_2(
    ledger_cfg: gk.Ledger, failed_run: Path
) -> None:
    upstream = {
        job: ledger_cfg.attempts(job, D) for job in ("BronzeCampaignExports", "SilverCampaigns")
    }
    silver_bytes = files(failed_run)["silver"].read_bytes()
    assert build(gold(failed_run, pipeline_run=RESTART)).scheduling_succeeded
    assert {job: ledger_cfg.attempts(job, D) for job in upstream} == upstream
    assert states(ledger_cfg, "GoldCampaignDaily") == [(1, "failed"), (2, "succeeded")]
    assert files(failed_run)["silver"].read_bytes() == silver_bytes
    assert summarize_events(failed_run / EVENTS_FILE, 2)["runs"] == [
        stage_summary(RUN, "succeeded", "failed"),
        stage_summary(RESTART, "not_started", "succeeded"),
    ]
    assert plan_recovery_from_ledger(ledger_cfg, STAGES, D, [])["action"] == "none"
    assert gold(failed_run).complete()


def test_retail_media_gold_aggregates_match_silver(ledger_cfg: gk.Ledger, failed_run: Path) -> None:
    assert build(gold(failed_run, pipeline_run=RESTART)).scheduling_succeeded
    paths = files(failed_run)
    expected: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for row in read_rows(paths["silver"]):
        sums = expected[(row["campaign_id"], row["channel"])]
        sums[0] += 1
        sums[1] += int(row["impressions"])
        sums[2] += int(row["clicks"])
        sums[3] += int(row["spend_cents"])
    got = {
        (r["campaign_id"], r["channel"]): [
            int(r["hours"]),
            int(r["impressions"]),
            int(r["clicks"]),
            int(r["spend_cents"]),
        ]
        for r in read_rows(paths["gold"])
    }
    assert got == dict(expected)
    for r in read_rows(paths["gold"]):
        assert r["business_date"] == "2026-11-07"
        assert int(r["ctr_bp"]) == int(r["clicks"]) * 10_000 // int(r["impressions"])
    totals = json.loads(paths["totals"].read_text())
    assert totals == {
        "business_date": "2026-11-07",
        "rows": len(expected),
        "impressions": sum(v[1] for v in expected.values()),
        "clicks": sum(v[2] for v in expected.values()),
        "spend_cents": sum(v[3] for v in expected.values()),
        "source": {
            "file": "2026-11-07.csv",
            "sha256": hashlib.sha256(paths["silver"].read_bytes()).hexdigest(),
        },
    }


def test_retail_media_silver_recovers_the_true_figures(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    assert build(gold(tmp_path)).scheduling_succeeded
    facts = rm.campaign_facts(D)
    paths = files(tmp_path)
    assert len(read_rows(paths["bronze"])) == len(facts) + 1  # one row re-sent
    truth = sorted(
        (name.lower().replace(" ", "-"), channel, hour, impressions, clicks, cents)
        for name, channel, hour, impressions, clicks, cents in facts
    )
    silver = [
        (
            r["campaign_id"],
            r["channel"],
            int(r["hour"]),
            int(r["impressions"]),
            int(r["clicks"]),
            int(r["spend_cents"]),
        )
        for r in read_rows(paths["silver"])
    ]
    assert silver == truth
    assert {r["business_date"] for r in read_rows(paths["silver"])} == {"2026-11-07"}


def test_retail_media_same_date_gives_identical_files(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    first, second, other = tmp_path / "first", tmp_path / "second", tmp_path / "other"
    later = D + dt.timedelta(days=1)
    assert build(gold(first), gold(other, date=later)).scheduling_succeeded
    assert build(gold(second)).scheduling_succeeded  # files missing there: a second attempt
    assert states(ledger_cfg, "GoldCampaignDaily") == [(1, "succeeded"), (2, "succeeded")]
    for name in ("bronze", "silver", "gold", "totals"):
        assert files(first)[name].read_bytes() == files(second)[name].read_bytes(), name
    assert files(first)["silver"].read_text() != files(other, later)["silver"].read_text()


# --------------------------------------------------------------------------- normalization


@pytest.mark.parametrize(
    ("parse", "raw", "value"),
    [
        (rm.parse_spend_cents, "$1,234.50", 123450),
        (rm.parse_spend_cents, "USD 1234.5", 123450),
        (rm.parse_spend_cents, " 0.07 ", 7),
        (rm.parse_spend_cents, "12", 1200),
        (rm.parse_count, "12,345", 12345),
        (rm.parse_count, " 12345 ", 12345),
        (rm.parse_count, "37.0", 37),
        (rm.parse_hour, "7", 7),
        (rm.parse_hour, "07:00", 7),
        (rm.parse_campaign_id, "  winter sale ", "winter-sale"),
        (rm.parse_campaign_id, "WINTER_SALE", "winter-sale"),
        (rm.parse_channel, "SOCIAL ", "social"),
    ],
)
def test_retail_media_messy_fields_normalize(parse: Any, raw: str, value: Any) -> None:
    assert parse(raw, "field") == value


@pytest.mark.parametrize(
    ("parse", "raw"),
    [
        (rm.parse_spend_cents, "12.345"),
        (rm.parse_spend_cents, "-5.00"),
        (rm.parse_spend_cents, "1,23.00"),
        (rm.parse_spend_cents, "EUR 5"),
        (rm.parse_count, "12.5"),
        (rm.parse_count, ""),
        (rm.parse_hour, "24"),
        (rm.parse_hour, "7:30"),
        (rm.parse_campaign_id, "  "),
        (rm.parse_channel, "tv"),
    ],
)
def test_retail_media_bad_fields_are_refused(parse: Any, raw: str) -> None:
    with pytest.raises(gk.InvalidInput, match="field"):
        parse(raw, "field")


def test_retail_media_contradicting_rows_are_refused() -> None:
    row = ("Winter Sale", "search", "7", "100", "3", "$1.00")
    assert len(rm.normalize_export([row, ("winter sale", "SEARCH", "07", "100", "3", "1")], D)) == 1
    with pytest.raises(gk.InvalidInput, match="row 3.*contradicts row 2"):
        rm.normalize_export([row, ("winter sale", "search", "07", "100", "3", "1.01")], D)


# --------------------------------------------------------------------------- real commands


@pytest.mark.slow
def test_retail_media_walkthrough_with_real_commands(tmp_path: Path, sqlite_url: str) -> None:
    config = write_config(tmp_path, sqlite_url)
    env = {"LUIGI_CONFIG_PATH": str(config)}
    gold_cmd = (
        "--module",
        "example_pipelines.retail_media",
        "GoldCampaignDaily",
        "--business-date",
        "2026-11-07",
    )
    failed = run_luigi(config, *gold_cmd, "--fail-gold", cwd=tmp_path)
    assert failed.returncode == 30, failed.stderr
    events = gatekeeper(
        "plan-recovery",
        "--events",
        "data/outputs/pipeline_events.jsonl",
        "--run-id",
        RUN,
        "--expected-stages",
        "2",
        "--verified-stage",
        "1",
        "--json",
        cwd=tmp_path,
        env=env,
    )
    assert events.returncode == 0, events.stderr
    assert json.loads(events.stdout) == PLAN
    ledger = gatekeeper(
        "plan-recovery",
        "--stages",
        ",".join(STAGES),
        "--business-date",
        "2026-11-07",
        "--verified-stage",
        "1",
        "--json",
        cwd=tmp_path,
        env=env,
    )
    assert ledger.returncode == 0, ledger.stderr
    plan = json.loads(ledger.stdout)
    assert {key: plan[key] for key in PLAN} == PLAN
    assert [(s["job"], s["status"]) for s in plan["stages"]] == [
        ("SilverCampaigns", "succeeded"),
        ("GoldCampaignDaily", "failed"),
    ]
    rerun = run_luigi(config, *gold_cmd, "--pipeline-run", RESTART, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    history = gatekeeper(
        "history", "GoldCampaignDaily", "2026-11-07", "--json", cwd=tmp_path, env=env
    )
    assert history.returncode == 0, history.stderr
    assert [(a["attempt"], a["state"]) for a in json.loads(history.stdout)] == [
        (1, "failed"),
        (2, "succeeded"),
    ]
    assert files(tmp_path / "data" / "outputs")["gold"].exists()
