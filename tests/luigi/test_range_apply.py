"""``--plan-file FILE``: a range applies exactly the plan that was reviewed (issue 50, item 2).

``gatekeeper plan -o FILE`` (in process) writes the plan with the ledger facts it read; a real
Luigi fill (``luigi.build``, in process, both backends) applies it: exactly its periods, or,
when any fact changed, the plan is older than ``--max-age`` or of another job, a refusal
naming ``plan_file`` and why, with nothing written. Through the ``luigi`` command the refusal
is one line and Luigi's exit code for a scheduling error, as for a plain task whose
``requires()`` raises.
"""

from __future__ import annotations

import datetime as dt
import json
import subprocess
from pathlib import Path
from typing import Any

import luigi
import pytest

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad, DimCustomer
from gatekeeper.cli import main
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import (
    build,
    luigi_command,
    luigi_env,
    run_command,
    run_luigi,
    write_config,
)
from tests.helpers.luigi_tasks import Controlled
from tests.helpers.luigid_support import HOST, Luigid
from tests.luigi.test_range_reprocess import DAYS, NOW, START, STOP, attempts, ran, sales_history

pytestmark = pytest.mark.luigi


def write_plan(
    capsys: pytest.CaptureFixture[str], url: str, path: Path, job: str, *args: str
) -> list[str]:
    """``gatekeeper plan JOB ... -o path`` at NOW; returns its order."""
    window = ["--start", START.isoformat(), "--stop", STOP.isoformat(), "--catchup", "last:2"]
    clock = ["--now", NOW.isoformat(), "--lateness", "0s", "--timezone", "UTC"]
    main(["--ledger", url, "--json", "plan", job, *window, *clock, *args, "-o", str(path)])
    capsys.readouterr()
    return list(json.loads(path.read_text())["order"])


def applying(path: Path, now: dt.datetime = NOW, **params: Any) -> gk.RangeBusinessDaily:
    return gk.RangeBusinessDaily(
        of=DailySalesLoad,
        start=START,
        stop=STOP,
        now=int(now.timestamp()),
        catchup="last:2",
        plan_file=str(path),
        **params,
    )


def refused(rng: gk.RangeBusinessDaily, ledger: gk.Ledger) -> str:
    """The one line ``rng`` is refused with at Luigi's first check, naming ``plan_file``;
    the ledger unchanged."""
    rows = snapshot(ledger)
    with pytest.raises(gk.InvalidInput) as caught:
        rng.complete()
    assert caught.value.field == "plan_file"
    assert snapshot(ledger) == rows
    return str(caught.value)


STALE_03 = "stale: upstream DimCustomer 2026-10-03 attempt 1 → 2"


@pytest.mark.parametrize(
    ("args", "order", "reasons"),
    [  # the plan's task limit, not the range's (50), says what runs
        (
            ("--reprocess", "all", "--task-limit", "3"),
            DAYS[:3],
            [None, "reprocess all", "reprocess all"],
        ),
        (("--reprocess", "stale"), ["2026-10-03", "2026-10-06"], [STALE_03, None]),
    ],
)
def test_apply_runs_exactly_the_planned_periods_in_order(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: tuple[str, ...],
    order: list[str],
    reasons: list[str | None],
) -> None:
    sales_history(ledger_cfg)
    path = tmp_path / "plan.json"
    assert write_plan(capsys, ledger_url, path, "DailySalesLoad", *args) == order
    before = attempts(ledger_cfg, "DailySalesLoad")
    assert build(applying(path)).scheduling_succeeded
    assert ran(before, attempts(ledger_cfg, "DailySalesLoad")) == order
    latest = [ledger_cfg.latest("DailySalesLoad", d) for d in order]
    started = [a.started_at for a in latest if a is not None]
    assert started == sorted(started)  # one at a time, in the plan's order
    found = [ledger_cfg.publication("DailySalesLoad", d) for d in order]
    assert [p.reason for p in found if p is not None][: len(reasons)] == reasons

    # applied once: its facts changed, so it is refused again
    assert f"DailySalesLoad {order[0]} was attempt " in refused(applying(path), ledger_cfg)


def test_apply_refuses_a_plan_whose_upstream_was_repaired(
    ledger_cfg: gk.Ledger, ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sales_history(ledger_cfg)
    path = tmp_path / "plan.json"
    assert write_plan(capsys, ledger_url, path, "DailySalesLoad", "--reprocess", "stale") == [
        "2026-10-03",
        "2026-10-06",
    ]
    assert build(DimCustomer(business_date=dt.date(2026, 10, 2), attempt=2)).scheduling_succeeded
    was = ledger_cfg.attempts("DimCustomer", "2026-10-02")[0]
    assert refused(applying(path), ledger_cfg).endswith(
        f"the ledger changed since it was made: DimCustomer 2026-10-02 was attempt 1 (run "
        f"{was.run_id}, succeeded), not published, is attempt 2 (run "
        f"{ledger_cfg.latest('DimCustomer', '2026-10-02').run_id}, succeeded), not published; "  # type: ignore[union-attr]
        "plan again"
    )
    rows = snapshot(ledger_cfg)
    assert not build(applying(path)).scheduling_succeeded
    assert snapshot(ledger_cfg) == rows  # nothing written


@pytest.mark.parametrize(
    ("later", "max_age", "too_old"),
    [
        (dt.timedelta(hours=23), None, False),
        (dt.timedelta(days=1, seconds=1), None, True),
        (dt.timedelta(days=2), "3d", False),
        (dt.timedelta(hours=2), "1h", True),
    ],
)
def test_apply_refuses_a_plan_older_than_max_age(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    later: dt.timedelta,
    max_age: str | None,
    too_old: bool,
) -> None:
    sales_history(ledger_cfg)
    path = tmp_path / "plan.json"
    write_plan(capsys, ledger_url, path, "DailySalesLoad", "--reprocess", "failed")
    rng = applying(path, NOW + later, **({} if max_age is None else {"max_age": max_age}))
    if too_old:
        assert "older than --max-age" in refused(rng, ledger_cfg)
    else:
        assert not rng.complete()


def test_apply_refuses_a_plan_of_another_job(
    ledger_cfg: gk.Ledger, ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sales_history(ledger_cfg)
    path = tmp_path / "plan.json"
    write_plan(capsys, ledger_url, path, "DimCustomer", "--reprocess", "all")
    assert refused(applying(path), ledger_cfg).endswith(
        ": a plan of DimCustomer, not of DailySalesLoad"
    )


@pytest.mark.parametrize("text", ["", "{}", '{"job": "DailySalesLoad"}', "not json"])
def test_apply_refuses_a_file_that_is_no_plan(
    ledger_cfg: gk.Ledger, tmp_path: Path, text: str
) -> None:
    path = tmp_path / "plan.json"
    path.write_text(text)
    assert "not a plan file of gatekeeper plan -o" in refused(applying(path), ledger_cfg)


def apply_args(path: Path) -> tuple[str, ...]:
    """The ``luigi`` arguments of DimCustomer's range at NOW applying the plan at ``path``."""
    window = ("--start", START.isoformat(), "--stop", STOP.isoformat(), "--catchup", "last:2")
    of = ("--module", "example_pipelines.sales", "RangeBusinessDaily", "--of", "DimCustomer")
    return (*of, *window, "--now", str(int(NOW.timestamp())), "--plan-file", str(path))


@pytest.mark.process
def test_luigi_command_refuses_a_changed_plan_with_luigis_scheduling_error_code(
    sqlite_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    plain = run_luigi(
        cfg, "--module", "tests.helpers.plain_tasks", "RaisesInRequires", cwd=tmp_path
    )
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("DimCustomer", "2026-10-01", 1, "dc-1", "succeeded", NOW)
    path = tmp_path / "plan.json"
    write_plan(capsys, sqlite_url, path, "DimCustomer", "--reprocess", "all")
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("DimCustomer", "2026-10-01", 2, "dc-2", "failed", NOW)
        rows = snapshot(ledger)
    done = run_luigi(cfg, *apply_args(path), cwd=tmp_path)
    output = done.stdout + done.stderr
    assert done.returncode == plain.returncode == 35, output  # Luigi's own scheduling error
    assert (
        "InvalidInput: invalid plan_file='" + str(path) + "': the ledger changed since it was "
        "made: DimCustomer 2026-10-01 was attempt 1 (run dc-1, succeeded), not published, is "
        "attempt 2 (run dc-2, failed), not published; plan again"
    ) in output
    assert "Traceback" not in output
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == rows


@pytest.mark.process
def test_apply_under_luigid_runs_the_plan_then_refuses_it_applied(
    sqlite_url: str, tmp_path: Path, luigid: Luigid, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        for day in DAYS:
            if day != "2026-10-06":
                ledger.record("DimCustomer", day, 1, f"dc-{day}", "succeeded", NOW)
    path = tmp_path / "plan.json"
    order = write_plan(
        capsys, sqlite_url, path, "DimCustomer", "--reprocess", "all", "--task-limit", "3"
    )
    assert order == DAYS[:3]
    cfg = write_config(tmp_path, sqlite_url)

    def apply() -> subprocess.CompletedProcess[str]:
        command = luigi_command(
            *apply_args(path),
            "--scheduler-host",
            HOST,
            "--scheduler-port",
            str(luigid.port),
            "--no-lock",
        )
        return run_command(command, cwd=tmp_path, env=luigi_env(cfg))

    with gk.open_ledger(sqlite_url) as ledger:
        before = attempts(ledger, "DimCustomer")
    done = apply()
    assert done.returncode == 0, done.stdout + done.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        assert ran(before, attempts(ledger, "DimCustomer")) == order  # 10-06 is no part of it
        rows = snapshot(ledger)
    again = apply()
    assert again.returncode == 35, again.stdout + again.stderr
    assert "the ledger changed since it was made: DimCustomer 2026-10-01 was attempt 1" in (
        again.stdout + again.stderr
    )
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == rows


def test_apply_stops_at_a_failure_leaving_the_later_periods(
    ledger_cfg: gk.Ledger, ledger_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A contiguous range applies the plan one period at a time: a failure at P fails the run
    (Luigi's status) and leaves every later period of the plan unattempted."""
    for day in DAYS:
        ledger_cfg.record("Controlled", day, 1, f"c-{day}", "succeeded", NOW)
    path = tmp_path / "plan.json"
    order = write_plan(
        capsys, ledger_url, path, "Controlled", "--reprocess", "all", "--task-limit", "3"
    )
    (tmp_path / f"fail-{order[1]}").write_text("disk full")
    before = attempts(ledger_cfg, "Controlled")
    rng = gk.RangeBusinessDaily(
        of=Controlled,
        of_params={"control": str(tmp_path)},
        start=START,
        stop=STOP,
        now=int(NOW.timestamp()),
        catchup="last:2",
        plan_file=str(path),
    )
    result = build(rng)
    assert result.status is luigi.LuigiStatusCode.FAILED
    assert ran(before, attempts(ledger_cfg, "Controlled")) == order[:2]
    states = [ledger_cfg.latest("Controlled", d).state for d in order[:2]]  # type: ignore[union-attr]
    assert states == [gk.RunState.SUCCEEDED, gk.RunState.FAILED]


@pytest.mark.parametrize("strategy", ["forward", "reverse"])
def test_apply_with_an_independent_strategy_starts_the_periods_in_the_plans_order(
    ledger_cfg: gk.Ledger,
    ledger_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    strategy: str,
) -> None:
    """forward and reverse hand an applied plan's periods to Luigi's scheduler at once: one
    worker takes them in the plan's order (oldest or newest first), as a contiguous range
    does, and exactly those."""
    sales_history(ledger_cfg)
    path = tmp_path / "plan.json"
    limit = ("--strategy", strategy, "--task-limit", "4")
    order = write_plan(capsys, ledger_url, path, "DailySalesLoad", "--reprocess", "all", *limit)
    assert order == (DAYS[:4] if strategy == "forward" else DAYS[-4:][::-1])
    before = attempts(ledger_cfg, "DailySalesLoad")
    assert build(applying(path, strategy=strategy)).scheduling_succeeded
    assert ran(before, attempts(ledger_cfg, "DailySalesLoad")) == sorted(order)
    latest = [ledger_cfg.latest("DailySalesLoad", d) for d in order]
    started = [a.started_at for a in latest if a is not None]
    assert len(started) == len(order) and started == sorted(started)
