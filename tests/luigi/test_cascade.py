"""``--reprocess stale`` carries a repair up the ``requires()`` graph in one invocation (issue
50, item 4), on both backends: a repaired day republishes its daily consumer, then the month
built on it, then the quarter built on the month, each after the one below it finished, each
with the reason naming the upstream change; the closing line counts them by job; what is not
below the range (a week built on the same day) is left stale; a second invocation writes
nothing; a failure stops the cascade where it is, and the next invocation finishes it.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from gatekeeper.luigi.cascade import layers
from tests.helpers import fleet
from tests.helpers.cascade_tasks import (
    CascadeConsumer,
    CascadeDay,
    CascadeMonthly,
    CascadeQuarterly,
    CascadeWeekly,
)
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import build, luigi_command, run_luigi, write_config
from tests.helpers.luigid_support import HOST, Luigid

pytestmark = [pytest.mark.luigi, pytest.mark.slow]

UTC = dt.timezone.utc
NOW = int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp())
REPAIRED = dt.date(2026, 9, 15)
WEEK = dt.date(2026, 9, 14)  # 2026-W38, the repaired day's week
CHAIN = [  # what the cascade republishes, in this order, and why
    ("CascadeConsumer", "2026-09-15", "stale: upstream CascadeDay 2026-09-15 attempt 1 → 2"),
    ("CascadeMonthly", "2026-09", "stale: upstream CascadeConsumer 2026-09-15 attempt 1 → 2"),
    ("CascadeQuarterly", "2026-Q3", "stale: upstream CascadeMonthly 2026-09 attempt 1 → 2"),
]
CLOSING = "republished 3 stale (CascadeConsumer 1, CascadeMonthly 1, CascadeQuarterly 1)"


def quarters(control: str = "", **more: Any) -> Any:
    return gk.RangeBusinessQuarterly(
        of=CascadeQuarterly,
        of_params={"control": control},
        start="2026-Q3",
        stop="2026-Q4",
        now=NOW,
        **more,
    )


def history() -> None:
    """Q3 published (92 consumer days, 3 months, the quarter) and the repaired day's week;
    then the day repaired (attempt 2): its consumer is stale, nothing above it yet."""
    assert build(quarters()).scheduling_succeeded
    assert build(CascadeWeekly(business_week=WEEK)).scheduling_succeeded
    assert build(CascadeDay(business_date=REPAIRED, attempt=2)).scheduling_succeeded


def revisions(ledger: gk.Ledger) -> dict[tuple[str, str], int]:
    """(job, period) -> its newest revision, for every publication of the pipeline."""
    days = [dt.date(2026, 7, 1) + dt.timedelta(n) for n in range(92)]
    pairs = [("CascadeConsumer", f"{d:%Y-%m-%d}") for d in days]
    pairs += [("CascadeMonthly", f"2026-{m:02d}") for m in (7, 8, 9)]
    pairs += [("CascadeQuarterly", "2026-Q3"), ("CascadeWeekly", "2026-W38")]
    found = ledger.fleet.revisions(pairs)
    assert len(found) == len(pairs)  # every one published
    return found


def test_a_repaired_day_cascades_to_its_consumer_month_and_quarter_in_order(
    ledger_cfg: gk.Ledger, caplog: pytest.LogCaptureFixture
) -> None:
    history()
    assert [(s.consumer, s.business_date) for s in ledger_cfg.stale("CascadeConsumer")] == [
        ("CascadeConsumer", "2026-09-15")
    ]
    assert ledger_cfg.stale("CascadeMonthly") == []  # stale only once the consumer republishes
    before = revisions(ledger_cfg)
    with caplog.at_level(logging.INFO, logger="luigi-interface.gatekeeper"):
        assert build(quarters(reprocess="stale")).scheduling_succeeded

    after = revisions(ledger_cfg)
    changed = sorted(pair for pair in after if after[pair] != before[pair])
    assert changed == sorted((job, key) for job, key, _ in CHAIN)  # nothing else
    finished = None
    for job, key, reason in CHAIN:
        publication = ledger_cfg.publication(job, key)
        assert publication is not None and (publication.revision, publication.reason) == (
            2,
            reason,
        )
        attempt = ledger_cfg.latest(job, key)
        assert attempt is not None and (attempt.attempt, attempt.state) == (
            2,
            gk.RunState.SUCCEEDED,
        )
        if finished is not None:  # each started after the one below it finished
            assert attempt.started_at >= finished
        finished = attempt.updated_at
    for job in ("CascadeConsumer", "CascadeMonthly", "CascadeQuarterly"):
        assert ledger_cfg.stale(job) == []
    week = ledger_cfg.stale("CascadeWeekly")  # not below the quarter: left as it is
    assert [(s.business_date, s.change) for s in week] == [
        ("2026-W38", "upstream CascadeConsumer 2026-09-15 attempt 1 → 2")
    ]
    closing = [r.getMessage() for r in caplog.records if "this run)" in r.getMessage()]
    assert closing == [
        "gatekeeper: RangeBusinessQuarterly CascadeQuarterly: filled 1/1 due (0 this run); "
        + CLOSING
    ]

    rows = snapshot(ledger_cfg)
    assert quarters(reprocess="stale").complete()
    assert build(quarters(reprocess="stale")).scheduling_succeeded
    assert snapshot(ledger_cfg) == rows  # nothing left to do, nothing written


def test_a_failure_stops_the_cascade_and_the_next_invocation_finishes_it(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    history()
    before = revisions(ledger_cfg)
    (tmp_path / "fail-consumer").touch()
    assert not quarters(str(tmp_path), reprocess="stale").complete()
    assert not build(quarters(str(tmp_path), reprocess="stale")).scheduling_succeeded
    assert revisions(ledger_cfg) == before  # the month and the quarter were not touched
    failed = ledger_cfg.latest("CascadeConsumer", "2026-09-15")
    assert failed is not None and (failed.attempt, failed.state) == (2, gk.RunState.FAILED)
    for job, key, _ in CHAIN[1:]:
        assert [a.attempt for a in ledger_cfg.attempts(job, key)] == [1]

    (tmp_path / "fail-consumer").unlink()
    assert build(quarters(str(tmp_path), reprocess="stale")).scheduling_succeeded
    for job, key, reason in CHAIN:
        publication = ledger_cfg.publication(job, key)
        assert publication is not None and (publication.revision, publication.reason) == (
            2,
            reason.replace("attempt 1 → 2", "attempt 1 → 3") if job == "CascadeMonthly" else reason,
        )
    for job in ("CascadeConsumer", "CascadeMonthly", "CascadeQuarterly"):
        assert ledger_cfg.stale(job) == []


@pytest.mark.process
def test_the_luigi_command_cascades_with_two_workers(sqlite_url: str, tmp_path: Path) -> None:
    """The real ``luigi`` command, ``--strategy forward --workers 2``: the same cascade, the
    same closing line, exit 0."""
    cfg = write_config(tmp_path, sqlite_url)
    module = ("--module", "tests.helpers.cascade_tasks")
    window = ("--start", "2026-Q3", "--stop", "2026-Q4", "--now", str(NOW))
    fill = (*module, "RangeBusinessQuarterly", "--of", "CascadeQuarterly", *window)
    first = run_luigi(cfg, *fill, cwd=tmp_path)
    assert first.returncode == 0, first.stdout + first.stderr
    day = ("CascadeDay", "--business-date", REPAIRED.isoformat(), "--attempt", "2")
    repaired = run_luigi(cfg, *module, *day, cwd=tmp_path)
    assert repaired.returncode == 0, repaired.stdout + repaired.stderr
    more = ("--reprocess", "stale", "--strategy", "forward", "--workers", "2")
    done = run_luigi(cfg, *fill, *more, cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert CLOSING in output
    with gk.open_ledger(sqlite_url) as ledger:
        finished = None
        for job, key, reason in CHAIN:
            publication = ledger.publication(job, key)
            assert publication is not None and publication.reason == reason
            attempt = ledger.latest(job, key)
            assert attempt is not None
            if finished is not None:
                assert attempt.started_at >= finished
            finished = attempt.updated_at


def plan_args(url: str, *more: str) -> list[str]:
    clock = dt.datetime.fromtimestamp(NOW, UTC).isoformat()
    window = ["--start", "2026-Q3", "--stop", "2026-Q4", "--now", clock, "--reprocess", "stale"]
    return ["--ledger", url, "--json", "plan", "CascadeQuarterly", *window, *more]


def test_plan_lists_the_cascade_the_range_runs(
    ledger_cfg: gk.Ledger, ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``gatekeeper plan --reprocess stale`` shows the cascade before it runs: the same
    republishes, order and reasons as the range records (CHAIN, the first test's), the
    quarter among its own periods; exit 1; nothing written."""
    history()
    rows = snapshot(ledger_cfg)
    capsys.readouterr()
    assert main(plan_args(ledger_url)) == 1
    found = json.loads(capsys.readouterr().out)
    assert [(s["job"], s["period"], s["reason"], s["layer"]) for s in found["cascade"]] == [
        (*step, layer) for layer, step in enumerate(CHAIN, 1)
    ]
    assert found["order"] == ["2026-Q3"]
    assert [(p["action"], p["reason"]) for p in found["periods"]] == [("republish", CHAIN[2][2])]
    assert found["description"] == (
        "CascadeQuarterly: reprocess stale: 1 republish; first 2 republish below"
    )
    assert main([a for a in plan_args(ledger_url) if a != "--json"]) == 1
    text = capsys.readouterr().out
    assert "2      CascadeMonthly   2026-09     republish  " + CHAIN[1][2] in text
    assert snapshot(ledger_cfg) == rows


@pytest.mark.parametrize("strategy", ["contiguous", "forward"])
def test_an_applied_plan_runs_its_cascade_first_then_refuses_it_applied(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    strategy: str,
) -> None:
    history()
    path = tmp_path / "plan.json"
    assert main(plan_args(ledger_url, "-o", str(path))) == 1
    capsys.readouterr()
    before = revisions(ledger_cfg)
    assert build(quarters(plan_file=str(path), strategy=strategy)).scheduling_succeeded
    after = revisions(ledger_cfg)
    assert sorted(p for p in after if after[p] != before[p]) == sorted((j, k) for j, k, _ in CHAIN)
    finished = None
    for job, key, reason in CHAIN:  # in the plan's order, each after the one below it
        publication, attempt = ledger_cfg.publication(job, key), ledger_cfg.latest(job, key)
        assert publication is not None and publication.reason == reason
        assert attempt is not None and (finished is None or attempt.started_at >= finished)
        finished = attempt.updated_at
    rows = snapshot(ledger_cfg)
    with pytest.raises(gk.InvalidInput) as caught:
        quarters(plan_file=str(path), strategy=strategy).complete()
    assert caught.value.field == "plan_file"
    assert "the ledger changed since it was made: CascadeConsumer 2026-09-15 was" in str(
        caught.value
    )
    assert snapshot(ledger_cfg) == rows


@pytest.mark.process
def test_two_workers_under_luigid_cascade_each_publication_once(
    pg_ledger_url: str, tmp_path: Path, luigid: Luigid
) -> None:
    """Two `luigi` processes add the same range to one luigid: the cascade republishes each
    publication once (attempt 2, revision 2), whichever worker runs the range's next pass
    (luigid hands a range back to any worker that added it once its layer is done); each
    exits 0, or 10 (Luigi's `already_running`) when the other ran the range at the end, as
    Luigi exits for any task another worker ran."""
    cfg = write_config(tmp_path, pg_ledger_url)
    module = ("--module", "tests.helpers.cascade_tasks")
    window = ("--start", "2026-Q3", "--stop", "2026-Q4", "--now", str(NOW))
    fill = (*module, "RangeBusinessQuarterly", "--of", "CascadeQuarterly", *window)
    assert run_luigi(cfg, *fill, cwd=tmp_path).returncode == 0
    day = ("CascadeDay", "--business-date", REPAIRED.isoformat(), "--attempt", "2")
    assert run_luigi(cfg, *module, *day, cwd=tmp_path).returncode == 0
    central = ("--scheduler-host", HOST, "--scheduler-port", str(luigid.port), "--no-lock")
    kept = fleet.recipe_config(tmp_path, pg_ledger_url)  # a worker waits for the other's range
    both = fleet.start(kept, tmp_path, luigi_command(*fill, "--reprocess", "stale", *central), 2)
    outputs = [p.communicate(timeout=120)[0] for p in both]
    codes = [p.returncode for p in both]
    assert set(codes) <= {0, 10}, "\n".join(outputs)  # never a failure or scheduling error
    with gk.open_ledger(pg_ledger_url) as ledger:
        for job, key, reason in CHAIN:
            assert [a.attempt for a in ledger.attempts(job, key)] == [1, 2], job
            publication = ledger.publication(job, key)
            assert publication is not None and (publication.revision, publication.reason) == (
                2,
                reason,
            )
            assert ledger.stale(job) == []


def test_a_cascade_whose_upstream_changes_again_stops_naming_it(
    ledger_cfg: gk.Ledger, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """The repaired day is repaired again right after its consumer republished: the consumer
    is stale again, and the cascade stops there (StillStale, naming it) instead of
    republishing it for as long as the upstream keeps changing; nothing above it is touched.
    Once the upstream is settled, the next invocation carries the repair up."""
    history()
    before = revisions(ledger_cfg)
    (tmp_path / "repair-again").touch()
    with caplog.at_level(logging.ERROR):
        assert not build(quarters(str(tmp_path), reprocess="stale")).scheduling_succeeded
    assert "StillStale: CascadeConsumer 2026-09-15: stale again after its republish in this " in (
        caplog.text
    )
    assert [a.attempt for a in ledger_cfg.attempts("CascadeConsumer", "2026-09-15")] == [1, 2]
    assert [a.attempt for a in ledger_cfg.attempts("CascadeDay", "2026-09-15")] == [1, 2, 3]
    after = revisions(ledger_cfg)
    assert [p for p in after if after[p] != before[p]] == [("CascadeConsumer", "2026-09-15")]

    (tmp_path / "repair-again").unlink()
    assert build(quarters(str(tmp_path), reprocess="stale")).scheduling_succeeded
    for job, _, _ in CHAIN:
        assert ledger_cfg.stale(job) == [], job


@pytest.mark.parametrize("strategy", ["forward", "contiguous"])
def test_a_gap_above_a_stale_day_is_filled_after_the_cascade(
    ledger_cfg: gk.Ledger, strategy: str
) -> None:
    """September has no month yet, and its consumer day 09-15 is stale: the range republishes
    the day first, then fills the month once, on the republished day (revision 1; filled
    first, it would publish on the stale day and be republished at once), forward as
    contiguous."""
    day = CascadeConsumer(business_date=REPAIRED)
    assert build(day).scheduling_succeeded
    assert build(CascadeDay(business_date=REPAIRED, attempt=2)).scheduling_succeeded
    months = gk.RangeBusinessMonthly(
        of=CascadeMonthly,
        start=dt.date(2026, 9, 1),
        stop=dt.date(2026, 10, 1),
        now=NOW,
        reprocess="stale",
        strategy=strategy,
    )
    assert build(months, workers=2).scheduling_succeeded
    consumer = ledger_cfg.latest("CascadeConsumer", REPAIRED.isoformat())
    month = ledger_cfg.publication("CascadeMonthly", "2026-09")
    assert consumer is not None and consumer.attempt == 2
    assert month is not None and (month.revision, month.reason) == (1, None)
    named = {(i.job, i.business_date): i.attempt for i in month.items}
    assert named[("CascadeConsumer", REPAIRED.isoformat())] == 2
    assert ledger_cfg.stale("CascadeMonthly") == []


def test_an_applied_plan_whose_cascade_names_a_pair_not_below_is_refused(
    ledger_cfg: gk.Ledger, ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    history()
    path = tmp_path / "plan.json"
    assert main(plan_args(ledger_url, "-o", str(path))) == 1
    capsys.readouterr()
    plan = json.loads(path.read_text())
    plan["cascade"][0]["job"] = "Elsewhere"  # its facts unchanged: only the cascade lies
    path.write_text(json.dumps(plan))
    rows = snapshot(ledger_cfg)
    with pytest.raises(gk.InvalidInput) as caught:
        quarters(plan_file=str(path)).complete()
    assert str(caught.value) == (
        f"invalid plan_file='{path}': its cascade names Elsewhere 2026-09-15, which is not a "
        "publication below the range's window; plan again"
    )
    assert snapshot(ledger_cfg) == rows


def test_a_cascade_waits_for_a_publication_another_run_is_running(ledger_cfg: gk.Ledger) -> None:
    """Another run holds the stale consumer day (its attempt 2 running on a live lease: under
    luigid, the worker of the last pass still running its layer while another worker runs
    the next pass): the next layer is the day's own task, which the scheduler dedupes with
    the running one or which waits for its lease, not a republish of its own on top of it;
    once the run has ended, the cascade reads again."""
    history()
    key = REPAIRED.isoformat()
    ledger_cfg.begin_attempt("CascadeConsumer", key, "other-run", lease_seconds=600)
    rng = quarters(reprocess="stale")
    never = dt.datetime.max.replace(tzinfo=UTC)
    passes = layers(rng.session.cascade, lambda: ledger_cfg, never, bool)
    (waiting,) = next(passes)
    assert (waiting.job_id, waiting.period_key) == ("CascadeConsumer", key)
    assert (waiting.attempt, waiting.republish_reason) == (0, None)  # the period, as it is
    ledger_cfg.record("CascadeConsumer", key, 2, "other-run", "succeeded", dt.datetime.now(UTC))
    (republish,) = next(passes)  # no longer running: still stale, so republished
    assert (republish.attempt, republish.republish_reason) == (3, CHAIN[0][2])
