"""A job run only as a dependency takes its window from the ranges that required it: after the
README's main command (the example sales backfill of October 2026), ``status``, the served
``/api/jobs`` and ``/metrics`` show the three jobs over 2026-10-01 .. 2026-10-31 with nothing
missing and no lag, a month later (the clock faked), and the alert rules docs/serve.md
documents, evaluated by ``promtool test rules``, do not fire."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad
from gatekeeper.cli import main
from gatekeeper.core.causes import JobProfile, Requirement
from gatekeeper.core.periods import DAILY, parse_period
from gatekeeper.report.windows import job_window, required_window
from tests.helpers.ledgers import T0
from tests.helpers.luigi_support import build, configure
from tests.helpers.serve import in_thread, read

ROOT = Path(__file__).resolve().parents[2]
UTC = dt.timezone.utc
JOBS = ("DailySalesLoad", "DimCustomer", "DimProduct")
#: a month after the backfill ended, as the issue was seen (the clock is faked, never read)
NOW = dt.datetime(2026, 12, 2, 13, 30, tzinfo=UTC)
WINDOW_END = dt.datetime(2026, 11, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def backfilled(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The README's main command, in-process: the sales range over October 2026 at NOW
    (UTC, no lateness from [gatekeeper], --lateness 2h) on a SQLite ledger."""
    url = f"sqlite:///{tmp_path_factory.mktemp('backfill') / 'gatekeeper.db'}"
    for _ in configure({"ledger_url": url, "lateness": "0s", "timezone": "UTC"}):
        task = gk.RangeBusinessDaily(
            of=DailySalesLoad,
            start=dt.date(2026, 10, 1),
            stop=dt.date(2026, 11, 1),
            lateness="2h",
            now=int(NOW.timestamp()),
        )
        assert build(task).scheduling_succeeded
        yield url


def status(capsys: pytest.CaptureFixture[str], url: str, job: str) -> tuple[int, dict[str, Any]]:
    capsys.readouterr()
    code = main(["--ledger", url, "status", job, "--now", NOW.isoformat(), "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.luigi
@pytest.mark.slow
def test_status_shows_the_dependencies_over_the_range_that_required_them(
    backfilled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(backfilled) as ledger:
        own = ledger.job_profile("DimCustomer")  # run only as a dependency: its own
        assert own is not None and (own.period, own.calendar, own.timezone) == (DAILY, "all", "UTC")
        assert (own.start, own.stop, own.lateness, own.requires) == (None, None, None, ())
    for job in JOBS:
        code, found = status(capsys, backfilled, job)
        states = {p["state"] for p in found["periods"]}
        assert code == 0, found
        assert (found["start"], found["stop"]) == ("2026-10-01", "2026-11-01"), job
        assert [p["period"] for p in found["periods"]][::30] == ["2026-10-01", "2026-10-31"]
        assert len(found["periods"]) == 31 and states == {"succeeded"}, job
        assert found["gaps"] == [] and found["contiguous_through"] == "2026-10-31"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    from prometheus_client.parser import text_string_to_metric_families

    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


@pytest.mark.luigi
@pytest.mark.slow
def test_serve_api_and_metrics_show_a_finished_backfill_complete_and_not_lagging(
    backfilled: str, tmp_path: Path
) -> None:
    pytest.importorskip("starlette")
    with in_thread(backfilled, lambda: NOW) as base:
        jobs = json.loads(read(base + "/api/jobs"))
        scrape = read(base + "/metrics")
    assert jobs["skipped"] == []
    assert [j["job"] for j in jobs["jobs"]] == list(JOBS)
    found = samples(scrape)
    for job in jobs["jobs"]:
        name = job["job"]
        assert (job["start"], job["stop"], job["now"]) == (
            "2026-10-01",
            "2026-11-01",
            NOW.isoformat(),
        )
        assert job["counts"]["succeeded"] == 31 and job["counts"]["missing"] == 0, job
        assert sum(job["counts"].values()) == 31
        assert job["contiguous_through"] == "2026-10-31"
        assert job["complete_through"] == WINDOW_END.isoformat()
        assert job["lag_seconds"] == 0  # the window ended on 2026-11-01 and is complete
        label = (("job", name),)
        assert found[("gatekeeper_periods", (("job", name), ("state", "missing")))] == 0
        assert found[("gatekeeper_periods", (("job", name), ("state", "succeeded")))] == 31
        assert found[("gatekeeper_lag_seconds", label)] == 0
        assert found[("gatekeeper_complete_through_timestamp_seconds", label)] == (
            WINDOW_END.timestamp()
        )
    alerts_do_not_fire(scrape, tmp_path)


# -- the documented alert rules, evaluated by promtool -------------------------------------
def documented_rules() -> str:
    """The alert rules of docs/serve.md: its YAML block that names GatekeeperLagging."""
    text = (ROOT / "docs" / "serve.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", text, re.S)
    found = [b for b in blocks if "alert: GatekeeperLagging" in b]
    assert len(found) == 1, "docs/serve.md has no (or several) alert rule blocks"
    return found[0]


def require_promtool() -> str:
    found = shutil.which("promtool")
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("needs promtool (Debian package prometheus); CI is set, so not skipped")
        pytest.skip("needs promtool (Debian package prometheus)")
    return found


def series_line(name: str, labels: tuple[tuple[str, str], ...], value: float) -> dict[str, str]:
    """One promtool input series holding ``value`` for two hours (one sample a minute)."""
    shown = ",".join(f'{k}="{v}"' for k, v in labels)
    return {"series": f"{name}{{{shown}}}", "values": f"{value:g}x120"}


def alerts_do_not_fire(scrape: str, folder: Path) -> None:
    """``promtool test rules``: the documented rules over the scrape, held for two hours,
    fire nothing; and, as a control that the rules are evaluated, do fire for a job lagging
    three days and one with a failed period."""
    promtool = require_promtool()
    series = [series_line(name, labels, v) for (name, labels), v in samples(scrape).items()]
    series += [
        series_line("gatekeeper_lag_seconds", (("job", "Control"),), 3 * 86400),
        series_line("gatekeeper_periods", (("job", "Control"), ("state", "failed")), 1),
    ]
    expected = {
        "GatekeeperFreshnessBreached": [],
        "GatekeeperFailedPeriods": [
            {"exp_labels": {"job": "Control", "state": "failed", "severity": "ticket"}}
        ],
        "GatekeeperLagging": [{"exp_labels": {"job": "Control", "severity": "ticket"}}],
        "GatekeeperConfigUnknownJobs": [],
    }
    (folder / "rules.yml").write_text(documented_rules(), encoding="utf-8")
    tests = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                "interval": "1m",
                "input_series": series,
                "alert_rule_test": [
                    {"eval_time": "2h", "alertname": name, "exp_alerts": alerts}
                    for name, alerts in expected.items()
                ],
            }
        ],
    }
    (folder / "tests.yml").write_text(json.dumps(tests), encoding="utf-8")  # JSON is YAML
    done = subprocess.run(
        [promtool, "test", "rules", "tests.yml"],
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr


# -- the window, from the consumers' profiles (both backends, no Luigi) ---------------------
def consumer(job: str, start: str | None, stop: str | None, *requires: Requirement) -> JobProfile:
    return JobProfile(
        job, DAILY, "Europe/Berlin", lateness="2h", start=start, stop=stop, requires=requires
    )


def test_dependency_window_covers_every_consumer_window_shifted_by_its_offset(
    ledger: gk.Ledger,
) -> None:
    ledger.record("Orders", "2026-09-20", 1, "o-1", "succeeded", T0)
    ledger.record("Orders", "2026-10-05", 1, "o-2", "succeeded", T0)
    ledger.record("Lone", "2026-10-05", 1, "x-1", "succeeded", T0)
    ledger.record_profile(consumer("Daily", "2026-10-01", "2026-11-01", Requirement("Orders", 0)))
    ledger.record_profile(
        consumer(
            "Change", "2026-10-10", "2026-11-15", Requirement("Orders"), Requirement("Orders", -1)
        )
    )
    ledger.record_profile(consumer("Other", "2026-01-01", None, Requirement("Orders_x")))
    ledger.record_profile(consumer("Upper", "2026-01-01", None, Requirement("ORDERS")))
    assert [p.job for p in ledger.profiles_requiring("Orders")] == ["Change", "Daily"]
    assert ledger.profiles_requiring("orders") == []  # names are exact, whatever LIKE does
    window = job_window(ledger, "Orders")
    schedule = window.schedule
    assert (schedule.key(schedule.start), schedule.key(schedule.stop)) == (
        "2026-10-01",
        "2026-11-15",
    )
    assert (schedule.timezone.key, schedule.lateness) == ("Europe/Berlin", dt.timedelta(hours=2))
    assert window.requires == ()  # its own requirements stay unknown (no publication)
    lone = job_window(ledger, "Lone").schedule  # required by no profile: as before
    assert (lone.key(lone.start), lone.stop) == ("2026-10-05", None)


@pytest.mark.parametrize(
    ("consumers", "expected"),
    [
        # one consumer, offset -1: the day before its start through the day before its stop
        ([("A", "2026-10-02", "2026-10-05", (-1,))], ("2026-10-01", "2026-10-04")),
        # an open-ended consumer leaves the window open
        (
            [("A", "2026-10-02", "2026-10-05", (0,)), ("B", "2026-09-01", None, (0,))],
            ("2026-09-01", None),
        ),
        # no consumer planned a window (a profile without start): none derived
        ([("A", None, None, (0,))], None),
    ],
)
def test_required_window_table(
    consumers: list[tuple[str, str | None, str | None, tuple[int, ...]]],
    expected: tuple[str, str | None] | None,
) -> None:
    profiles = [
        consumer(name, start, stop, *(Requirement("Up", n) for n in offsets))
        for name, start, stop, offsets in consumers
    ]
    found = required_window("Up", ("2026-09-01", "2026-10-04"), profiles)
    assert (None if found is None else (found.start, found.stop)) == expected


def test_required_window_ignores_consumers_of_another_kind() -> None:
    hourly = JobProfile(
        "H",
        parse_period("hourly"),
        "UTC",
        start="2026-10-01T00:00:00+00:00",
        requires=(Requirement("Up"),),
    )
    assert required_window("Up", ("2026-10-01", "2026-10-02"), [hourly]) is None


@pytest.mark.parametrize(
    ("kind", "start", "stop", "offset", "expected"),
    [
        # every weekday of September and October: 1 September through 31 October
        ("monthly", "2026-09", "2026-11", 0, ("2026-09-01", "2026-11-01")),
        # the days of the month before each month: August and September
        ("monthly", "2026-09", "2026-11", -1, ("2026-08-01", "2026-10-01")),
        # ISO weeks 41 and 42: Monday 5 October through Sunday 18 October
        ("weekly", "2026-W41", "2026-W43", 0, ("2026-10-05", "2026-10-19")),
        # a quarter, open-ended
        ("quarterly", "2026-Q4", None, 0, ("2026-10-01", None)),
    ],
)
def test_required_window_maps_a_coarse_consumer_s_window_by_time(
    kind: str, start: str, stop: str | None, offset: int, expected: tuple[str, str | None]
) -> None:
    weekdays = DAILY.on("weekdays")
    coarse = JobProfile(
        "Roll",
        parse_period(kind),
        "UTC",
        lateness="1h",
        start=start,
        stop=stop,
        requires=(Requirement.within("Up", weekdays, offset),),
    )
    found = required_window("Up", ("2026-09-01", "2026-10-30"), [coarse])
    assert found is not None
    assert (found.start, found.stop) == expected
    assert (found.period, found.calendar, found.lateness) == (weekdays, "weekdays", "1h")


def test_required_window_covers_daily_and_monthly_consumers_together() -> None:
    month = JobProfile(
        "Roll",
        parse_period("monthly"),
        "UTC",
        start="2026-10",
        stop="2026-12",
        requires=(Requirement.within("Up", DAILY),),
    )
    day = consumer("A", "2026-09-15", "2026-10-05", Requirement("Up"))
    found = required_window("Up", ("2026-09-15", "2026-11-30"), [day, month])
    assert found is not None and (found.start, found.stop) == ("2026-09-15", "2026-12-01")
    assert found.lateness == "2h"  # the first of them, by name
