"""Rerun one period without reading its history (issue 50, item 6): a task's ``--rerun
REASON`` and a one-period plan's ``--reprocess all``, through real Luigi in process (the
command line's parser too), on both backends."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import luigi
import luigi.interface
import pytest
from luigi.task_register import Register

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad
from tests.helpers.ledgers import T0, snapshot
from tests.helpers.luigi_support import build
from tests.helpers.luigi_tasks import Controlled

pytestmark = pytest.mark.luigi

D = dt.date(2026, 10, 23)


def history(ledger: gk.Ledger, job: str = "Controlled") -> list[tuple[int, str, str | None]]:
    return [(a.attempt, a.state.value, a.reason) for a in ledger.attempts(job, D)]


def ran(folder: Path) -> list[str]:
    """The attempt ordinal of each run of Controlled's body (``<pid> <attempt> <date>``)."""
    found = folder / "ran"
    return [line.split()[1] for line in found.read_text().splitlines()] if found.exists() else []


def luigi_main(*args: str) -> bool:
    """The ``luigi`` command line ``args`` in this process (Luigi's parser, local scheduler):
    True when every task succeeded."""
    Register.clear_instance_cache()
    argv = [*args, "--local-scheduler", "--log-level", "WARNING", "--no-lock"]
    result = luigi.interface.run(argv, detailed_summary=True)
    return bool(result.scheduling_succeeded)


def rerun_argv(folder: Path, reason: str, *more: str) -> list[str]:
    control = ["--control", str(folder)]
    return ["Controlled", "--business-date", D.isoformat(), *control, "--rerun", reason, *more]


def test_rerun_runs_a_succeeded_period_as_its_next_attempt_once(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    ledger_cfg.record("Controlled", D, 1, "old-1", "failed", T0)
    ledger_cfg.record("Controlled", D, 2, "old-2", "succeeded", T0)
    assert build(Controlled(business_date=D, control=str(tmp_path))).scheduling_succeeded
    assert ran(tmp_path) == []  # complete: a plain run does nothing
    assert luigi_main(*rerun_argv(tmp_path, "late rows"))
    assert ran(tmp_path) == ["3"]
    assert history(ledger_cfg)[-1] == (3, "succeeded", "late rows")
    rows = snapshot(ledger_cfg)
    assert luigi_main(*rerun_argv(tmp_path, "late rows"))  # the same again: nothing runs
    assert ran(tmp_path) == ["3"] and snapshot(ledger_cfg) == rows
    assert Controlled(business_date=D, rerun="late rows").complete()
    assert not Controlled(business_date=D, rerun="more late rows").complete()
    assert build(Controlled(business_date=D, control=str(tmp_path), rerun="more late rows"))
    assert ran(tmp_path) == ["3", "4"]
    assert history(ledger_cfg)[-1] == (4, "succeeded", "more late rows")


def test_rerun_after_a_failed_latest_attempt_runs_the_next_one_until_it_succeeds(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    ledger_cfg.record("Controlled", D, 1, "old-1", "succeeded", T0)
    ledger_cfg.record("Controlled", D, 2, "old-2", "failed", T0)
    (tmp_path / "fail").write_text("still broken")
    task = Controlled(business_date=D, control=str(tmp_path), rerun="upstream fixed")
    assert not build(task).scheduling_succeeded  # the rerun failed: not complete
    assert history(ledger_cfg)[-1] == (3, "failed", "upstream fixed")
    (tmp_path / "fail").unlink()
    task = Controlled(business_date=D, control=str(tmp_path), rerun="upstream fixed")
    assert not task.complete()
    assert build(task).scheduling_succeeded
    assert task.complete()  # its ordinal was fixed when first asked: 4 succeeded
    assert ran(tmp_path) == ["3", "4"]
    assert history(ledger_cfg) == [
        (1, "succeeded", None),
        (2, "failed", None),
        (3, "failed", "upstream fixed"),
        (4, "succeeded", "upstream fixed"),
    ]
    assert build(Controlled(business_date=D, control=str(tmp_path), rerun="upstream fixed"))
    assert ran(tmp_path) == ["3", "4"]


@pytest.mark.parametrize(
    ("reason", "more", "message"),
    [
        ("", (), "rerun.*expected a non-empty string"),
        (" late", (), "rerun.*leading or trailing whitespace"),
        ("late rows", ("--attempt", "3"), "rerun.*not with --attempt 3"),
    ],
    ids=["empty", "padded", "with-attempt"],
)
def test_a_refused_rerun_names_the_field_and_writes_nothing(
    ledger_cfg: gk.Ledger, tmp_path: Path, reason: str, more: tuple[str, ...], message: str
) -> None:
    ledger_cfg.record("Controlled", D, 1, "old-1", "succeeded", T0)
    rows = snapshot(ledger_cfg)
    with pytest.raises(gk.InvalidInput, match=message):
        luigi_main(*rerun_argv(tmp_path, reason, *more))
    with pytest.raises(gk.InvalidInput, match=message):
        attempt = {"attempt": int(more[1])} if more else {}
        Controlled(business_date=D, control=str(tmp_path), rerun=reason, **attempt)
    assert ran(tmp_path) == [] and snapshot(ledger_cfg) == rows


def test_rerun_of_a_publisher_republishes_with_its_reason_once(ledger_cfg: gk.Ledger) -> None:
    assert build(DailySalesLoad(business_date=D)).scheduling_succeeded
    first = ledger_cfg.publication("DailySalesLoad", D)
    assert first is not None and first.revision == 1
    assert build(DailySalesLoad(business_date=D, rerun="late rows")).scheduling_succeeded
    newest = ledger_cfg.publication("DailySalesLoad", D)
    assert newest is not None and (newest.revision, newest.reason) == (2, "late rows")
    assert history(ledger_cfg, "DailySalesLoad") == [
        (1, "succeeded", None),
        (2, "succeeded", "late rows"),
    ]
    assert newest.attempt == 2  # produced by the rerun
    rows = snapshot(ledger_cfg)
    assert build(DailySalesLoad(business_date=D, rerun="late rows")).scheduling_succeeded
    assert snapshot(ledger_cfg) == rows


def test_a_one_period_plan_reprocessing_all_reruns_it(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    """The other way to rerun one period: a range over it with ``--reprocess all``."""
    assert build(Controlled(business_date=D, control=str(tmp_path))).scheduling_succeeded
    rng = gk.RangeBusinessDaily(
        of=Controlled,
        of_params={"control": str(tmp_path)},
        start=D,
        stop=D + dt.timedelta(days=1),
        now=int(dt.datetime(2026, 10, 25, tzinfo=dt.timezone.utc).timestamp()),
        reprocess="all",
    )
    assert build(rng).scheduling_succeeded
    assert ran(tmp_path) == ["1", "2"]
    assert [(n, state) for n, state, _ in history(ledger_cfg)] == [
        (1, "succeeded"),
        (2, "succeeded"),
    ]


def test_an_empty_republish_reason_on_the_command_line_is_refused_and_writes_nothing(
    ledger_cfg: gk.Ledger,
) -> None:
    """Luigi reads ``--republish-reason ""`` as not given: it would publish again where a
    correction was asked for. Refused naming the field, as ``--rerun ""`` is."""
    assert build(DailySalesLoad(business_date=D)).scheduling_succeeded
    rows = snapshot(ledger_cfg)
    day = ["DailySalesLoad", "--business-date", D.isoformat()]
    with pytest.raises(gk.InvalidInput, match="republish_reason.*expected a non-empty string"):
        luigi_main(*day, "--republish-reason", "")
    assert snapshot(ledger_cfg) == rows
    assert luigi_main(*day, "--republish-reason", "late rows")  # a reason given: republished
    newest = ledger_cfg.publication("DailySalesLoad", D)
    assert newest is not None and (newest.revision, newest.reason) == (2, "late rows")
