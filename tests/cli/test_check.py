"""``gatekeeper check`` (freshness deadlines) on both backends, and freshness in ``status`` and
the report. The ledger is real; only the clock is fixed (``--now``). Deadlines come from
``[gatekeeper.freshness]`` in Luigi's live config or from a job's recorded profile (a task
class's ``freshness``, as a range records it)."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import luigi
import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from gatekeeper.core.causes import profile
from gatekeeper.core.schedule import Schedule
from gatekeeper.luigi.freshness import SECTION, freshness_rules
from gatekeeper.report.freshness import freshness_breaches
from gatekeeper.report.windows import JobWindow
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import config_state, restore_config

UTC = dt.timezone.utc
H = dt.timedelta(hours=1)
NY = "America/New_York"


@pytest.fixture
def freshness_cfg() -> Iterator[dict[str, str]]:
    """``[gatekeeper.freshness]`` in Luigi's live config: fill the dict before running."""
    cfg = luigi.configuration.get_config()

    class Live(dict[str, str]):
        def __setitem__(self, key: str, value: str) -> None:
            if not cfg.has_section(SECTION):
                cfg.add_section(SECTION)
            cfg.set(SECTION, key, value)
            super().__setitem__(key, value)

    before = config_state()
    live = Live()
    yield live
    restore_config(before)


def check(capsys: pytest.CaptureFixture[str], url: str, *args: str) -> tuple[int, str, str]:
    """``gatekeeper check`` in-process: exit code, stdout, stderr."""
    code = main(["--ledger", url, "check", *args])
    out = capsys.readouterr()
    return code, out.out, out.err


def ok(ledger: gk.Ledger, job: str, key: str, when: dt.datetime, state: str = "succeeded") -> None:
    ledger.record(job, key, 1, f"{job}-{key}", state, when, error=None, now=when)


def test_check_daily_utc_met_then_breached(
    ledger: gk.Ledger, capsys: pytest.CaptureFixture[str], freshness_cfg: dict[str, str]
) -> None:
    freshness_cfg["Sales"] = "6h"
    t = dt.datetime(2026, 10, 2, 1, tzinfo=UTC)
    ok(ledger, "Sales", "2026-10-01", t)
    ok(ledger, "Sales", "2026-10-02", t, "failed")
    url = ledger.url
    code, out, _ = check(capsys, url, "--now", "2026-10-03T05:59:59Z")
    assert code == 0 and out.strip() == "Sales: freshness 6h: met (1 deadline in force)"
    code, out, _ = check(capsys, url, "--now", "2026-10-03T06:00Z", "Sales")
    assert code == 1
    assert "BREACHED Sales 2026-10-02 due 2026-10-03T06:00:00+00:00, overdue by 0s: failed" in out
    code, out, _ = check(capsys, url, "--now", "2026-10-04T07:00Z", "--json")
    found = json.loads(out)
    assert code == 1 and found["met"] is False
    assert [(b["period"], b["state"], b["overdue"]) for b in found["breaches"]] == [
        ("2026-10-02", "failed", "1d1h"),
        ("2026-10-03", "missing", "1h"),
    ]
    assert found["jobs"][0]["source"] == "[gatekeeper.freshness] Sales"
    assert found["jobs"][0]["in_force"] == 3
    # the API serve and /metrics call
    breaches = freshness_breaches(
        ledger,
        "Sales",
        within=6 * H,
        now=dt.datetime(2026, 10, 4, 7, tzinfo=UTC),
        window=JobWindow(Schedule.parse(start="2026-10-01")),
    )
    assert [b.period for b in breaches] == ["2026-10-02", "2026-10-03"]


def test_check_hourly_class_freshness_from_profile(
    ledger: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    """An hourly job whose class declares ``freshness = "30m"`` (its range recorded it)."""
    ledger.record_profile(profile("Clicks", "hourly", "UTC", freshness="30m"))
    t = dt.datetime(2026, 10, 23, 8, tzinfo=UTC)
    for hour in ("05", "06"):
        ok(ledger, "Clicks", f"2026-10-23T{hour}:00Z", t)
    assert check(capsys, ledger.url, "--now", "2026-10-23T07:30Z")[0] == 0
    code, out, _ = check(capsys, ledger.url, "--now", "2026-10-23T08:30Z", "Clicks")
    assert code == 1
    assert out.splitlines()[-1] == (
        "BREACHED Clicks 2026-10-23T07:00Z due 2026-10-23T08:30:00+00:00, overdue by 0s: missing"
    )
    code, out, _ = check(capsys, ledger.url, "--now", "2026-10-23T08:30Z", "--json")
    assert json.loads(out)["jobs"][0]["source"] == "task class"


@pytest.mark.parametrize(
    ("day", "due"),
    [
        ("2026-03-08", dt.datetime(2026, 3, 9, 10, tzinfo=UTC)),  # 23 h: ends 04:00Z
        ("2026-11-01", dt.datetime(2026, 11, 2, 11, tzinfo=UTC)),  # 25 h: ends 05:00Z
    ],
)
def test_check_dst_day_deadline_in_the_jobs_zone(
    ledger: gk.Ledger, capsys: pytest.CaptureFixture[str], day: str, due: dt.datetime
) -> None:
    """America/New_York: a DST day's deadline is its local midnight + 6 h; a UTC reading
    (midnight UTC + 6 h) would page hours early."""
    ledger.record_profile(profile("NyLoad", "daily", NY, start=day, freshness="6h"))
    ok(ledger, "NyLoad", day, due - 12 * H, "running")
    before = (due - dt.timedelta(seconds=1)).isoformat()
    assert check(capsys, ledger.url, "NyLoad", "--now", before)[0] == 0
    code, out, _ = check(capsys, ledger.url, "NyLoad", "--now", due.isoformat(), "--json")
    assert code == 1
    (breach,) = json.loads(out)["breaches"]
    assert (
        breach["period"] == day
        and breach["due_at"]
        == due.astimezone(
            dt.timezone(dt.timedelta(hours=-5 if day.endswith("11-01") else -4))
        ).isoformat()
    )
    assert breach["state"] == "abandoned"  # a running attempt whose lease expired


def test_check_non_utc_zone_and_publishing_job(
    ledger: gk.Ledger, capsys: pytest.CaptureFixture[str], freshness_cfg: dict[str, str]
) -> None:
    """Asia/Tokyo: 2026-10-01 ends at 15:00Z; a publishing job's succeeded period that is not
    published is breached."""
    freshness_cfg["Report"] = "1h"
    ledger.record_profile(profile("Report", "daily", "Asia/Tokyo", start="2026-10-01"))
    t = dt.datetime(2026, 10, 1, 15, 30, tzinfo=UTC)
    ledger.begin_attempt("Report", "2026-10-01", "r-1", lease_seconds=600, now=t)
    ok(ledger, "Up", "2026-10-01", t)
    ledger.publish("Report", "2026-10-01", ["Up"], "fp", producer="r-1", now=t)
    ledger.record("Report", "2026-10-01", 1, "r-1", "succeeded", t, now=t)
    ok(ledger, "Report", "2026-10-02", t + 24 * H)  # succeeded, never published
    assert check(capsys, ledger.url, "--now", "2026-10-02T15:59Z")[0] == 0
    code, out, _ = check(capsys, ledger.url, "--now", "2026-10-02T16:00Z")
    assert code == 1
    assert "Report 2026-10-02 due 2026-10-03T01:00:00+09:00, overdue by 0s: succeeded, not " in out


def test_check_luigi_cfg_wins_over_the_class(
    ledger: gk.Ledger, capsys: pytest.CaptureFixture[str], freshness_cfg: dict[str, str]
) -> None:
    ledger.record_profile(profile("RegionLoad(region=eu)", "daily", "UTC", freshness="1d"))
    ledger.record_profile(profile("Other", "daily", "UTC", freshness="1d"))
    ok(ledger, "RegionLoad(region=eu)", "2026-10-01", dt.datetime(2026, 10, 2, tzinfo=UTC))
    ok(ledger, "Other", "2026-10-01", dt.datetime(2026, 10, 2, tzinfo=UTC))
    assert freshness_rules(ledger) == {
        "Other": (24 * H, "task class"),
        "RegionLoad(region=eu)": (24 * H, "task class"),
    }
    freshness_cfg["RegionLoad"] = "2h"  # the family, for every region
    assert freshness_rules(ledger)["RegionLoad(region=eu)"] == (
        2 * H,
        "[gatekeeper.freshness] RegionLoad",
    )
    freshness_cfg["RegionLoad(region"] = "3h"  # what configparser makes of "...(region=eu) = 3h"
    code, _, err = check(capsys, ledger.url, "--now", "2026-10-03T03:00Z")
    assert code == 2 and "[gatekeeper.freshness]" in err and "'RegionLoad(region'" in err
    luigi.configuration.get_config().remove_option(SECTION, "RegionLoad(region")
    code, out, _ = check(capsys, ledger.url, "--now", "2026-10-03T03:00Z")
    assert code == 1  # 2026-10-02 missing past 02:00Z under 2h; under the class's 1d not yet
    assert "BREACHED RegionLoad(region=eu) 2026-10-02 due 2026-10-03T02:00:00+00:00" in out
    assert "RegionLoad(region=eu): freshness 2h: breached: 1 period" in out
    assert "Other: freshness 1d: met (1 deadline in force)" in out


@pytest.mark.parametrize(
    ("args", "cfg", "said"),
    [
        (("--now", "2026-10-03"), {}, "invalid now='2026-10-03'"),
        (("Nope",), {}, "no such job 'Nope'"),
        (("Sale",), {}, "did you mean 'Sales'?"),
        (("Sales",), {}, "invalid job='Sales': no freshness deadline"),
        ((), {}, "has a freshness deadline"),
        ((), {"Sales": "6x"}, "invalid [gatekeeper.freshness] Sales='6x'"),
        ((), {"Sales": "-1h"}, "invalid [gatekeeper.freshness] Sales='-1h'"),
    ],
)
def test_check_bad_input_exit_2_nothing_written(
    ledger: gk.Ledger,
    capsys: pytest.CaptureFixture[str],
    freshness_cfg: dict[str, str],
    args: tuple[str, ...],
    cfg: dict[str, str],
    said: str,
) -> None:
    ok(ledger, "Sales", "2026-10-01", dt.datetime(2026, 10, 2, tzinfo=UTC))
    for key, value in cfg.items():
        freshness_cfg[key] = value
    before = snapshot(ledger)
    code, out, err = check(capsys, ledger.url, *args)
    assert code == 2, (out, err)
    assert said in err, err
    assert "--allow-unknown" not in err
    assert snapshot(ledger) == before


def test_status_and_report_show_freshness(
    ledger: gk.Ledger,
    capsys: pytest.CaptureFixture[str],
    freshness_cfg: dict[str, str],
    tmp_path: Path,
) -> None:
    freshness_cfg["Sales"] = "6h"
    t = dt.datetime(2026, 10, 2, 1, tzinfo=UTC)
    ok(ledger, "Sales", "2026-10-01", t)
    ok(ledger, "Sales", "2026-10-02", t, "failed")
    ok(ledger, "Plain", "2026-10-01", t)
    now = ("--now", "2026-10-04T07:00Z")
    main(["--ledger", ledger.url, "status", "Sales", *now])
    text = capsys.readouterr().out
    assert text.splitlines()[-1] == (
        "Sales: freshness 6h: breached: 2 periods, oldest 2026-10-02 overdue by 1d1h"
    )
    main(["--ledger", ledger.url, "--json", "status", "Sales", "Plain", *now])
    found: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    assert found[0]["freshness"]["breached"] == 2 and found[1]["freshness"] is None
    page = tmp_path / "r.html"
    assert main(["--ledger", ledger.url, "report", "Sales", "Plain", "-o", str(page), *now]) == 0
    html = page.read_text()
    assert '<td class="bad" data-freshness="breached">6h: 2 breached</td>' in html
    assert '<ul class="attention" data-freshness="breached"><li><b>freshness 6h: breached' in html
    assert '<td class="zero">none</td>' in html


@pytest.mark.slow  # two processes of the real command (~2 s each on a loaded machine)
def test_check_real_command_exit_codes(tmp_path: Path, sqlite_url: str) -> None:
    """The real command with a luigi.cfg of its own: 1 with the JSON shape, then 2 for a bad
    duration (0 is proven in-process above)."""
    with gk.open_ledger(sqlite_url) as ledger:
        ok(ledger, "Sales", "2026-10-01", dt.datetime(2026, 10, 2, tzinfo=UTC))
    config = tmp_path / "luigi.cfg"
    config.write_text(f"[gatekeeper]\nledger_url = {sqlite_url}\n[{SECTION}]\nSales = 6h\n")
    env = {"LUIGI_CONFIG_PATH": str(config)}
    late = gatekeeper("check", "--json", "--now", "2026-10-03T07:00Z", cwd=tmp_path, env=env)
    assert late.returncode == 1, late.stderr
    found = json.loads(late.stdout)
    assert (found["met"], found["jobs"][0]["in_force"]) == (False, 2)
    assert [(b["period"], b["state"]) for b in found["breaches"]] == [("2026-10-02", "missing")]
    config.write_text(f"[gatekeeper]\nledger_url = {sqlite_url}\n[{SECTION}]\nSales = soon\n")
    bad = gatekeeper("check", cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "[gatekeeper.freshness] Sales='soon'" in bad.stderr
