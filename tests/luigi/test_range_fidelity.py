"""Ranges as a Luigi developer expects them: completeness is the ``of`` class's
``bulk_complete`` (declared outputs and a user's override honoured, as Luigi's own range tests
check), and bad parameters are a scheduling error before anything is recorded."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import luigi
import pytest

import gatekeeper as gk
from gatekeeper.core.planning import plan_from_ledger
from gatekeeper.core.schedule import Schedule
from tests.helpers.ledgers import T0, snapshot, succeed
from tests.helpers.luigi_support import build, run_luigi, write_config

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

UTC = dt.timezone.utc
START = dt.date(2026, 10, 1)
STOP = dt.date(2026, 10, 6)  # five dates
NOW = int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp())


def epoch(at: dt.datetime) -> int:
    return int(at.replace(tzinfo=UTC).timestamp())


def dates(n: int, first: dt.date = START) -> list[str]:
    return [(first + dt.timedelta(days=i)).isoformat() for i in range(n)]


def keys(plan: gk.RangePlan) -> list[str]:
    return [plan.key(label) for label in plan.gaps]


# -- tasks -----------------------------------------------------------------------------------
class FileOutput(gk.BusinessDateTask):
    """Writes ``<folder>/<date>.txt``: complete once succeeded in the ledger AND the file is
    there (PeriodTask.complete/bulk_complete honour declared outputs)."""

    folder = luigi.Parameter(significant=False)

    def output(self) -> luigi.LocalTarget:
        return luigi.LocalTarget(str(Path(self.folder) / f"{self.business_date}.txt"))

    def run(self) -> None:
        with self.output().open("w") as out:
            out.write(f"{self.business_date}\n")


class BulkCompleteDaily(gk.BusinessDateTask):
    """Port of Luigi's RangeDailyTest.test_bulk_complete_correctly_interfaced."""

    @classmethod
    def bulk_complete(cls, parameter_tuples: Any) -> Any:
        return parameter_tuples[:-2]

    def output(self) -> Any:
        raise RuntimeError("Shouldn't get called while resolving deps via bulk_complete")

    def run(self) -> None:
        pass


class BulkCompleteHourly(gk.BusinessHourTask):
    """Port of Luigi's RangeHourlyTest.test_bulk_complete_correctly_interfaced."""

    @classmethod
    def bulk_complete(cls, parameter_tuples: Any) -> Any:
        return parameter_tuples[:-2]

    def output(self) -> Any:
        raise RuntimeError("Shouldn't get called while resolving deps via bulk_complete")

    def run(self) -> None:
        pass


LEGACY_UNTIL = dt.date(2026, 10, 3)


class LegacyLoaded(gk.BusinessDateTask):
    """A user's override: dates before LEGACY_UNTIL were loaded by a legacy system (complete
    without any attempt); later ones as gatekeeper says (PeriodTask's bulk_complete)."""

    region = luigi.Parameter(default="eu")

    @classmethod
    def bulk_complete(cls, parameter_tuples: Any) -> Any:
        items = list(parameter_tuples)
        legacy = [d for d in items if d < LEGACY_UNTIL]
        rest = gk.BusinessDateTask.bulk_complete.__func__(  # type: ignore[attr-defined]
            cls, [d for d in items if d >= LEGACY_UNTIL]
        )
        return legacy + list(rest)

    def run(self) -> None:
        pass


# -- point 4: the range's completeness is the of class's bulk_complete -----------------------
@pytest.mark.parametrize("strategy", ["contiguous", "forward"])
def test_range_plans_periods_whose_output_files_were_deleted(
    ledger_cfg: gk.Ledger, tmp_path: Path, strategy: str
) -> None:
    def fill() -> gk.RangeBusinessDaily:
        return gk.RangeBusinessDaily(
            of=FileOutput,
            of_params={"folder": str(tmp_path)},
            start=START,
            stop=STOP,
            now=NOW,
            strategy=strategy,
        )

    assert build(fill()).scheduling_succeeded
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == [f"{d}.txt" for d in dates(5)]
    for gone in ("2026-10-02", "2026-10-04"):
        (tmp_path / f"{gone}.txt").unlink()
    period = FileOutput(business_date=dt.date(2026, 10, 2), folder=str(tmp_path))
    assert not period.complete()
    rng = fill()
    assert not rng.complete()  # the range agrees with complete()
    assert keys(rng.plan()) == ["2026-10-02", "2026-10-04"]
    chunks = [list(c.keys) for c in rng.chunk_tasks()]
    assert chunks == (
        [["2026-10-02", "2026-10-04"]]
        if strategy == "contiguous"
        else [["2026-10-02"], ["2026-10-04"]]
    )  # forward: one due period a chunk here
    if strategy == "contiguous":  # the first chunk run() yields holds both
        assert [list(c.keys) for c in rng.run()] == [["2026-10-02", "2026-10-04"]]


@pytest.mark.parametrize("strategy", ["contiguous", "forward"])
def test_range_fill_rewrites_deleted_output_files(
    ledger_cfg: gk.Ledger, tmp_path: Path, strategy: str
) -> None:
    def fill() -> gk.RangeBusinessDaily:
        return gk.RangeBusinessDaily(
            of=FileOutput,
            of_params={"folder": str(tmp_path)},
            start=START,
            stop=STOP,
            now=NOW,
            strategy=strategy,
        )

    assert build(fill()).scheduling_succeeded
    for gone in ("2026-10-02", "2026-10-04"):
        (tmp_path / f"{gone}.txt").unlink()
    assert build(fill()).scheduling_succeeded
    assert sorted(p.name for p in tmp_path.glob("*.txt")) == [f"{d}.txt" for d in dates(5)]
    assert [a.state.value for a in ledger_cfg.attempts("FileOutput", "2026-10-02")] == [
        "succeeded",
        "succeeded",
    ]
    assert [a.attempt for a in ledger_cfg.attempts("FileOutput", "2026-10-03")] == [1]
    assert fill().complete()


def test_range_bulk_complete_correctly_interfaced_daily(ledger_cfg: gk.Ledger) -> None:
    rng = gk.RangeBusinessDaily(
        of=BulkCompleteDaily,
        start=dt.date(2015, 11, 1),
        stop=dt.date(2015, 12, 1),
        now=epoch(dt.datetime(2015, 12, 1)),
    )
    assert keys(rng.plan()) == ["2015-11-29", "2015-11-30"]
    assert not rng.complete()
    assert [c.keys for c in rng.chunk_tasks()] == [("2015-11-29", "2015-11-30")]


def test_range_bulk_complete_correctly_interfaced_hourly(ledger_cfg: gk.Ledger) -> None:
    rng = gk.RangeBusinessHourly(
        of=BulkCompleteHourly,
        start=dt.datetime(2015, 11, 1),
        stop=dt.datetime(2015, 12, 1),
        now=epoch(dt.datetime(2015, 12, 1)),
    )
    assert keys(rng.plan()) == ["2015-11-30T22:00Z", "2015-11-30T23:00Z"]


def test_range_honours_a_users_bulk_complete_override(ledger_cfg: gk.Ledger) -> None:
    def fill() -> gk.RangeBusinessDaily:
        return gk.RangeBusinessDaily(
            of=LegacyLoaded, of_params={"region": "us"}, start=START, stop=STOP, now=NOW
        )

    assert keys(fill().plan()) == dates(3, LEGACY_UNTIL)
    assert build(fill()).scheduling_succeeded
    job = "LegacyLoaded(region=us)"
    assert sorted(a.business_date for a in ledger_cfg.history(job)) == dates(3, LEGACY_UNTIL)
    assert fill().complete()
    assert fill().plan().complete_count == 5


def test_range_default_completeness_is_the_ledger_in_one_query(ledger_cfg: gk.Ledger) -> None:
    from tests.helpers.luigi_tasks import Trivial

    succeed(ledger_cfg, "Trivial", "2026-10-02")
    asked: list[tuple[str, str]] = []

    def complete(first: str, last: str) -> Any:
        asked.append((first, last))
        return ledger_cfg.completed_periods("Trivial", first, last)

    window = Schedule.parse(start=START)
    plan = plan_from_ledger(ledger_cfg, "Trivial", schedule=window, now=T0, complete=complete)
    assert asked == [("2026-10-01", "2026-10-22")]  # the due window, asked once
    rng = gk.RangeBusinessDaily(of=Trivial, start=START, now=int(T0.timestamp()))
    assert rng.plan() == plan
    assert Trivial.ledger_answers_bulk_complete()
    assert not FileOutput.ledger_answers_bulk_complete()
    assert not BulkCompleteDaily.ledger_answers_bulk_complete()


# -- point 6: parameters checked up front ----------------------------------------------------
BAD_PARAMETERS = [
    (("--of", "Trivial", "--of-params", '{"nope": 1}'), "of_params.nope"),
    (("--of", "Trivial", "--of-params", '{"attempt": -1}'), "attempt"),
    (("--of", "Trivial", "--Trivial-attempt=-1"), "attempt"),
    (
        ("--of", "Trivial", "--of-params", '{"business_date": "2026-10-01"}'),
        "of_params.business_date",
    ),
    (("--of", "RegionLoad", "--of-params", '{"region": "eu", "tier": "x"}'), "of_params.tier"),
    (("--of", "RegionLoad", "--of-params", '{"region": "eu", "tier": 1.5}'), "of_params.tier"),
    (("--of", "RegionLoad"), "of_params.region"),
    (("--of", "Trivial", "--lateness=-2h"), "lateness"),
    (("--of", "Trivial", "--timezone", "Mars/Olympus"), "timezone"),
    (("--of", "Trivial", "--catchup", "some"), "catchup"),
    (("--of", "Trivial", "--reverse", "--strategy", "forward"), "reverse"),
    (("--of", "Trivial", "--task-limit=-1"), "task_limit"),
    (("--of", "Trivial", "--reprocess", "everything"), "reprocess"),
    (("--of", "HourlyLoad"), "of"),
    (("--of", "RangeBusinessDaily"), "of"),
]


@pytest.mark.parametrize(("args", "field"), BAD_PARAMETERS)
@pytest.mark.parametrize("window", ["fresh", "complete"])
@pytest.mark.process
def test_luigi_range_bad_parameter_is_a_scheduling_error_naming_it(
    sqlite_url: str, tmp_path: Path, args: tuple[str, ...], field: str, window: str
) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        if window == "complete":
            for job in ("Trivial", "RegionLoad(region=eu, tier=1)", "HourlyLoad"):
                for date in dates(3):
                    succeed(ledger, job, date)
        rows = snapshot(ledger)
    cfg = write_config(tmp_path, sqlite_url)
    done = run_luigi(
        cfg,
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        *args,
        "--start",
        "2026-10-01",
        "--stop",
        "2026-10-04",
        "--now",
        str(NOW),
        cwd=tmp_path,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 35, output
    assert f"invalid {field}" in output
    assert "error in complete() method" in output  # Luigi's scheduling error
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == rows


def test_range_bad_parameter_refused_before_any_record_on_each_backend(
    ledger_cfg: gk.Ledger,
) -> None:
    from tests.helpers.luigi_tasks import Trivial

    for date in dates(3):
        succeed(ledger_cfg, "Trivial", date)
    rows = snapshot(ledger_cfg)
    rng = gk.RangeBusinessDaily(
        of=Trivial, of_params={"nope": 1}, start=START, stop=dt.date(2026, 10, 4), now=NOW
    )
    with pytest.raises(gk.InvalidInput) as caught:
        rng.complete()
    assert caught.value.field == "of_params.nope"
    result = build(
        gk.RangeBusinessDaily(
            of=Trivial, of_params={"nope": 1}, start=START, stop=dt.date(2026, 10, 4), now=NOW
        )
    )
    assert not result.scheduling_succeeded
    assert snapshot(ledger_cfg) == rows


# -- point 9: one frozen fill session --------------------------------------------------------
def test_range_session_is_built_once_and_frozen(ledger_cfg: gk.Ledger) -> None:
    from tests.helpers.luigi_tasks import Trivial

    rng = gk.RangeBusinessDaily(
        of=Trivial, start=START, stop=STOP, now=NOW, strategy="forward", task_limit=3
    )
    session = rng.session
    assert rng.session is session
    assert session.keys == tuple(dates(3))
    assert session.chunks == tuple((day, (day,)) for day in dates(3))  # forward: small chunks
    assert session.now == dt.datetime.fromtimestamp(NOW, UTC)
    with pytest.raises(AttributeError):
        session.keys = ()  # type: ignore[misc]
    succeed(ledger_cfg, "Trivial", "2026-10-01")
    assert keys(rng.plan()) == dates(4, dt.date(2026, 10, 2))  # later plans read afresh
    assert rng.session.plan.complete_count == 0
    old = {"_clock", "_initial", "_started", "_settings", "_keys", "_refreshes", "_cursor"}
    assert not old & set(vars(rng))
    assert not [name for name in vars(rng) if name.startswith("_gk_")]  # no hidden stashes
