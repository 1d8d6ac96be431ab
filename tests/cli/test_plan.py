"""``gatekeeper plan``: a backfill's periods with an action and a reason, on both backends.

The ledger is real; only the clock is fixed (``--now``). The command runs in process
(``gatekeeper.cli.main``); a plan writes nothing, so every test compares the ledger's
snapshot before and after. The default policy is checked against the real range's own plan
(``RangeBusinessDaily.plan``): the same periods, in the same order.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from tests.cli.test_status_jobs import NOW, WINDOW, at, sales
from tests.helpers.ledgers import snapshot

UTC = dt.timezone.utc


def plan(
    capsys: pytest.CaptureFixture[str], url: str, *args: str
) -> tuple[int, dict[str, Any], str]:
    """``gatekeeper plan`` in process with ``--json``: exit code, data, stderr."""
    code = main(["--ledger", url, "--json", "plan", *args])
    out, err = capsys.readouterr()
    return code, json.loads(out), err


def actions(data: dict[str, Any]) -> dict[str, tuple[str, str]]:
    """Period -> (action, reason)."""
    return {p["period"]: (p["action"], p["reason"]) for p in data["periods"]}


NOT_DUE = {d: ("skip", "not_due") for d in ("2026-10-08", "2026-10-09", "2026-10-10")}
HELD = ("skip", f"held by run r-04-2 until {at(0.75).isoformat()}")
#: the Sales scenario (tests/cli/test_status_jobs.py) under ``missing``: the range's gaps
MISSING = {
    "2026-10-01": ("rerun", "not published"),  # succeeded, never published: incomplete
    "2026-10-02": ("run", "missing"),
    "2026-10-03": ("rerun", "attempt 1 failed: disk full"),
    "2026-10-04": HELD,
    "2026-10-05": ("run", "missing"),
    "2026-10-06": ("rerun", "abandoned"),
    "2026-10-07": ("skip", "complete"),
    **NOT_DUE,
}


@pytest.mark.parametrize(
    ("policy", "changed"),
    [
        ("missing", {}),
        ("failed", {}),
        ("stale", {}),
        ("all", {"2026-10-07": ("republish", "reprocess all")}),
    ],
)
def test_plan_daily_policies(
    ledger_url: str,
    capsys: pytest.CaptureFixture[str],
    policy: str,
    changed: dict[str, tuple[str, str]],
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
        before = snapshot(ledger)
        code, data, _ = plan(capsys, ledger_url, "Sales", *WINDOW, "--reprocess", policy)
        assert snapshot(ledger) == before
    assert code == 1
    assert actions(data) == {**MISSING, **changed}
    acting = [k for k, (a, _) in {**MISSING, **changed}.items() if a != "skip"]
    assert data["order"] == acting
    assert data["periods"][1]["upstream"] == [["Upstream", "2026-10-02"]]
    republished = [["Upstream", "2026-10-07"]] if policy == "all" else []
    assert data["periods"][6]["upstream"] == republished


def test_plan_catchup_leaves_failures_to_the_failed_policy(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
    window = (*WINDOW, "--catchup", "last:4")
    _, missing, _ = plan(capsys, ledger_url, "Sales", *window)
    _, failed, _ = plan(capsys, ledger_url, "Sales", *window, "--reprocess", "failed")
    outside = ("skip", "outside catchup")
    early = ("2026-10-01", "2026-10-02", "2026-10-03")
    assert [actions(missing)[d] for d in early] == [outside] * 3
    assert actions(failed)["2026-10-03"] == ("rerun", "attempt 1 failed: disk full")
    assert actions(failed)["2026-10-02"] == outside  # never tried: catch-up still applies
    assert failed["order"] == ["2026-10-03", "2026-10-05", "2026-10-06"]


def test_plan_stale_republishes_what_an_upstream_repair_superseded(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
        ledger.record("Upstream", "2026-10-07", 2, "u-07-2", "succeeded", at(-0.2), now=at(-0.1))
    _, missing, _ = plan(capsys, ledger_url, "Sales", *WINDOW)
    code, stale, _ = plan(capsys, ledger_url, "Sales", *WINDOW, "--reprocess", "stale")
    assert actions(missing)["2026-10-07"] == ("skip", "complete")
    assert actions(stale)["2026-10-07"] == (
        "republish",
        "stale: upstream Upstream 2026-10-07 attempt 1 → 2",
    )
    assert stale["periods"][6]["upstream"] == [["Upstream", "2026-10-07"]]
    assert code == 1


def test_plan_stale_republishes_what_an_upstream_republish_superseded(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sales republished on Upstream's revision 1; Upstream republished (revision 2, the same
    attempt): the period is stale by revision; republishing Sales clears it."""
    day = "2026-10-07"
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
        ledger.record("Raw", day, 1, "raw-07", "succeeded", at(-3), now=at(-3))
        ledger.publish("Upstream", day, ["Raw"], "u-fp-1", now=at(-0.4))
        ledger.republish("Sales", day, ["Upstream"], "fp-3", reason="on u 1", now=at(-0.3))
        ledger.republish("Upstream", day, ["Raw"], "u-fp-2", reason="late", now=at(-0.2))
    code, stale, _ = plan(capsys, ledger_url, "Sales", *WINDOW, "--reprocess", "stale")
    assert actions(stale)[day] == ("republish", f"stale: upstream Upstream {day} revision 1 → 2")
    assert code == 1
    with gk.open_ledger(ledger_url) as ledger:
        ledger.republish("Sales", day, ["Upstream"], "fp-3", reason="refresh", now=at(-0.1))
    _, after, _ = plan(capsys, ledger_url, "Sales", *WINDOW, "--reprocess", "stale")
    assert actions(after)[day] == ("skip", "complete")


def test_plan_task_limit_and_strategy(ledger_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
    _, data, _ = plan(
        capsys, ledger_url, "Sales", *WINDOW, "--task-limit", "2", "--strategy", "reverse"
    )
    found = actions(data)
    assert found["2026-10-06"] == ("rerun", "abandoned")
    assert found["2026-10-05"] == ("run", "missing")
    for day in ("2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04"):
        assert found[day] == ("skip", "beyond task_limit")
    assert data["order"] == ["2026-10-06", "2026-10-05"]


def test_plan_nothing_to_do_exits_zero(ledger_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        for day in ("2026-10-01", "2026-10-02"):
            ledger.record("Job", day, 1, f"r-{day}", "succeeded", at(-50), now=at(-49))
    args = ("Job", "--start", "2026-10-01", "--stop", "2026-10-04", "--now", NOW.isoformat())
    code, data, _ = plan(capsys, ledger_url, *args, "--lateness", "5d")
    assert code == 0
    assert actions(data) == {
        "2026-10-01": ("skip", "complete"),
        "2026-10-02": ("skip", "complete"),
        "2026-10-03": ("skip", "not_due"),
    }
    assert main(["--ledger", ledger_url, "plan", *args, "--lateness", "5d"]) == 0
    assert "nothing to do" in capsys.readouterr().out
    code, data, _ = plan(capsys, ledger_url, *args, "--reprocess", "all")
    assert code == 1
    assert actions(data)["2026-10-01"] == ("rerun", "reprocess all")  # it does not publish


def test_plan_hourly(ledger_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    hours = [f"2026-10-08T0{h}:00Z" for h in range(4)]
    with gk.open_ledger(ledger_url) as ledger:
        ledger.record("Hourly", hours[0], 1, "h0", "succeeded", at(-6), now=at(-6))
        ledger.record("Hourly", hours[1], 1, "h1", "failed", at(-5), error="late", now=at(-5))
    args = ("Hourly", "--start", hours[0], "--stop", "2026-10-08T05:00Z")
    code, data, _ = plan(capsys, ledger_url, *args, "--now", "2026-10-08T04:30Z")
    assert code == 1
    assert [(p["action"], p["reason"]) for p in data["periods"]] == [
        ("skip", "complete"),
        ("rerun", "attempt 1 failed: late"),
        ("run", "missing"),
        ("run", "missing"),
        ("skip", "not_due"),
    ]
    _, every, _ = plan(capsys, ledger_url, *args, "--now", "2026-10-08T04:30Z", "--reprocess=all")
    assert every["periods"][0]["action"] == "rerun"
    assert every["order"] == [p["period"] for p in every["periods"][:4]]


def test_plan_weekdays_calendar(ledger_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with gk.open_ledger(ledger_url) as ledger:  # 2026-10-02 a Friday, 10-05 a Monday
        ledger.record("Weekday", "2026-10-01", 1, "w1", "succeeded", at(-100), now=at(-99))
        ledger.record("Weekday", "2026-10-02", 1, "w2", "failed", at(-90), now=at(-89))
    args = ("Weekday", "--start", "2026-10-01", "--stop", "2026-10-07", "--calendar", "weekdays")
    for policy in ("missing", "failed", "all"):
        _, data, _ = plan(capsys, ledger_url, *args, f"--now={NOW}", f"--reprocess={policy}")
        found = actions(data)
        assert found["2026-10-03"] == found["2026-10-04"] == ("skip", "non_business")
        assert found["2026-10-02"] == ("rerun", "attempt 1 failed")
        assert found["2026-10-05"] == found["2026-10-06"] == ("run", "missing")
        done = ("rerun", "reprocess all") if policy == "all" else ("skip", "complete")
        assert found["2026-10-01"] == done
        assert "2026-10-03" not in data["order"]


def test_plan_monthly(ledger_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        ledger.record("Monthly", "2026-06", 1, "m6", "succeeded", at(-900), now=at(-900))
        ledger.record("Monthly", "2026-07", 1, "m7", "abandoned", at(-800), now=at(-800))
    args = ("Monthly", "--start", "2026-06", "--stop", "2026-11", "--now", NOW.isoformat())
    _, data, _ = plan(capsys, ledger_url, *args, "--reprocess", "failed")
    assert actions(data) == {
        "2026-06": ("skip", "complete"),
        "2026-07": ("rerun", "abandoned"),
        "2026-08": ("run", "missing"),
        "2026-09": ("run", "missing"),
        "2026-10": ("skip", "not_due"),
    }


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (("--reprocess", "everything"), "reprocess"),
        (("--task-limit", "-1"), "task_limit"),
        (("--now", "2026-10-08T07:00"), "now"),
        (("--strategy", "sideways"), "strategy"),
    ],
)
def test_plan_refuses_bad_input_in_one_line(
    ledger_url: str, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...], field: str
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
        before = snapshot(ledger)
        code = main(["--ledger", ledger_url, "plan", "Sales", *WINDOW, *extra])
        assert snapshot(ledger) == before
    out, err = capsys.readouterr()
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1
    assert f"invalid {field}=" in err


def test_plan_text_shows_runs_of_one_action(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
    assert main(["--ledger", ledger_url, "plan", "Sales", *WINDOW]) == 1
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0] == "Sales: reprocess missing: 2 run, 3 rerun, 5 skip"
    assert lines[1].startswith("  window: filled 1/7")
    assert any(line.split()[:4] == ["2026-10-08", "..", "2026-10-10", "skip"] for line in lines)
    failed = [line for line in lines if "attempt 1 failed: disk full" in line]
    assert len(failed) == 1 and "Upstream 2026-10-03" in failed[0]


@pytest.mark.luigi
@pytest.mark.parametrize("strategy", ["contiguous", "reverse"])
def test_plan_missing_is_the_ranges_plan(
    ledger_cfg: gk.Ledger, capsys: pytest.CaptureFixture[str], strategy: str
) -> None:
    """Differential: the periods ``plan`` acts on (held ones included, as the range schedules
    them) are the real range's scheduled periods, in its order."""
    from tests.helpers.luigi_tasks import Trivial

    ledger = ledger_cfg
    ledger.record("Trivial", "2026-10-01", 1, "t1", "succeeded", at(-150), now=at(-149))
    ledger.record("Trivial", "2026-10-03", 1, "t3", "failed", at(-100), error="x", now=at(-99))
    ledger.begin_attempt("Trivial", "2026-10-04", "t4", lease_seconds=3600, now=at(-0.25))
    ledger.begin_attempt("Trivial", "2026-10-06", "t6", lease_seconds=60, now=at(-2))
    ledger.record("Trivial", "2026-10-07", 1, "t7", "succeeded", at(-3), now=at(-3))
    flags = ("--start", "2026-10-01", "--stop", "2026-10-11", "--now", NOW.isoformat())
    args = (*flags, "--lateness", "0s", "--timezone", "UTC", "--strategy", strategy)
    _, data, _ = plan(capsys, ledger.url, "Trivial", *args, "--task-limit", "4")
    rng = gk.RangeBusinessDaily(
        of=Trivial,
        start=dt.date(2026, 10, 1),
        stop=dt.date(2026, 10, 11),
        now=int(NOW.timestamp()),
        task_limit=4,
        reverse=strategy == "reverse",
    )
    scheduled = [d.isoformat() for d in rng.plan().scheduled]
    held = {p["period"] for p in data["periods"] if p["reason"].startswith("held by")}
    acting = [p["period"] for p in data["periods"] if p["action"] != "skip" or p["period"] in held]
    order = acting[::-1] if strategy == "reverse" else acting
    assert order == scheduled
    assert data["order"] == [k for k in scheduled if k not in held]


def written(capsys: pytest.CaptureFixture[str], url: str, path: Any, *args: str) -> dict[str, Any]:
    """``gatekeeper plan -o path`` over the Sales window: the file's JSON."""
    main(["--ledger", url, "plan", "Sales", *WINDOW, "-o", str(path), *args])
    capsys.readouterr()
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_plan_file_digest_stable_and_changed_by_an_upstream_repair(
    ledger_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
        before = snapshot(ledger)
        first = written(capsys, ledger_url, tmp_path / "a.json")
        again = written(capsys, ledger_url, tmp_path / "b.json", "--now", at(1).isoformat())
        assert snapshot(ledger) == before
        ledger.record("Upstream", "2026-10-07", 2, "u-07-2", "succeeded", at(-0.2), now=at(-0.1))
        repaired = written(capsys, ledger_url, tmp_path / "c.json")
    assert first["digest"].startswith("sha256:") and len(first["digest"]) == 71
    assert again["digest"] == first["digest"]  # the facts, not the clock
    assert repaired["digest"] != first["digest"]
    old = {(f[0], f[1]): f for f in first["facts"]}
    new = {(f[0], f[1]): f for f in repaired["facts"]}
    assert [k for k in old if old[k] != new[k]] == [("Upstream", "2026-10-07")]
    assert old[("Upstream", "2026-10-07")] == [
        "Upstream",
        "2026-10-07",
        1,
        "u-07",
        "succeeded",
        None,
    ]
    assert new[("Upstream", "2026-10-07")][2:4] == [2, "u-07-2"]
    assert old[("Sales", "2026-10-07")] == ["Sales", "2026-10-07", 1, "r-07", "succeeded", 2]
    assert old[("Sales", "2026-10-02")] == ["Sales", "2026-10-02", None, None, None, None]
    assert old[("Sales", "2026-10-04")][2:5] == [2, "r-04-2", "running"]
    assert {k[0] for k in old} == {"Sales", "Upstream"}
    assert len([k for k in old if k[0] == "Sales"]) == 10  # every period of the window
    assert first["order"] == ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-05", "2026-10-06"]


def test_plan_file_changed_by_a_new_attempt_of_the_job(
    ledger_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
        first = written(capsys, ledger_url, tmp_path / "a.json")
        ledger.record("Sales", "2026-10-05", 1, "r-05", "failed", at(-0.1), now=at(-0.1))
        second = written(capsys, ledger_url, tmp_path / "b.json")
    assert second["digest"] != first["digest"]


def test_plan_file_text_and_json_name_it(
    ledger_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
    target = tmp_path / "plan.json"
    assert main(["--ledger", ledger_url, "plan", "Sales", *WINDOW, "-o", str(target)]) == 1
    out = capsys.readouterr().out
    data = json.loads(target.read_text())
    assert out.splitlines()[-1] == f"wrote {target} (20 facts, {data['digest']})"
    code, shown, _ = plan(capsys, ledger_url, "Sales", *WINDOW, "-o", str(target))
    assert code == 1 and shown["output"] == str(target) and shown["digest"] == data["digest"]


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        (("--reprocess", "some"), "reprocess"),
        (("--task-limit", "x"), "task_limit"),
        (("-o", "{missing}/plan.json"), "output"),
        (("-o", "{folder}"), "output"),
    ],
)
def test_plan_file_bad_input_writes_nothing(
    ledger_url: str,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Any,
    extra: tuple[str, ...],
    field: str,
) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    target = ("-o", str(out_dir / "plan.json")) if "-o" not in extra else ()
    given = [e.format(missing=tmp_path / "nowhere", folder=out_dir) for e in extra]
    with gk.open_ledger(ledger_url) as ledger:
        sales(ledger)
        before = snapshot(ledger)
        code = main(["--ledger", ledger_url, "plan", "Sales", *WINDOW, *target, *given])
        assert snapshot(ledger) == before
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1 and f"invalid {field}=" in err
    assert list(out_dir.iterdir()) == []
    assert not (tmp_path / "nowhere").exists()


def test_plan_estimate_is_the_median_of_the_last_20_successes(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    base = dt.datetime(2026, 9, 1, 1, 0, tzinfo=UTC)
    with gk.open_ledger(ledger_url) as ledger:
        for n in range(25):  # August: 5 old hour-long runs, then 20 of 1..20 minutes
            day = f"2026-08-{n + 1:02d}"
            start = base + dt.timedelta(days=n)
            took = dt.timedelta(hours=1) if n < 5 else dt.timedelta(minutes=n - 4)
            ledger.record("Est", day, 1, f"e{n}", "succeeded", start, now=start + took)
        ledger.record("Est", "2026-10-02", 1, "f", "failed", at(-90), now=at(-1))
    args = ("Est", "--start", "2026-10-01", "--stop", "2026-10-04", "--now", NOW.isoformat())
    code, data, _ = plan(capsys, ledger_url, *args)
    assert code == 1 and data["order"] == ["2026-10-01", "2026-10-02", "2026-10-03"]
    assert data["estimate"] == {
        "periods": 3,
        "samples": 20,
        "median_seconds": 630.0,  # between 10 and 11 minutes
        "total_seconds": 1890.0,
        "description": "estimate: 3 periods x 10m30s = 31m30s, one after another "
        "(median of the last 20 successes)",
    }
    assert main(["--ledger", ledger_url, "plan", *args]) == 1
    assert "  estimate: 3 periods x 10m30s = 31m30s" in capsys.readouterr().out


def test_plan_estimate_says_when_there_is_no_history(
    ledger_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        ledger.record("Fresh", "2026-10-01", 1, "f1", "failed", at(-90), now=at(-89))
    args = ("Fresh", "--start", "2026-10-01", "--stop", "2026-10-03", "--now", NOW.isoformat())
    _, data, _ = plan(capsys, ledger_url, *args)
    assert data["estimate"]["median_seconds"] is None and data["estimate"]["samples"] == 0
    assert main(["--ledger", ledger_url, "plan", *args]) == 1
    assert "estimate: no history (no succeeded attempt recorded)" in capsys.readouterr().out


def test_plan_stale_month_after_one_of_its_days_is_repaired(
    ledger_url: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    days = [f"2026-09-{d:02d}" for d in range(1, 31)]
    with gk.open_ledger(ledger_url) as ledger:
        for day in days:
            ledger.record("Day", day, 1, f"d-{day}", "succeeded", at(-400), now=at(-399))
        ledger.begin_attempt("Month", "2026-09", "m-09", lease_seconds=3600, now=at(-300))
        pairs = [("Day", d) for d in days]
        ledger.publish("Month", "2026-09", pairs, "fp", producer="m-09", now=at(-299.5))
        ledger.record("Month", "2026-09", 1, "m-09", "succeeded", at(-300), now=at(-299))
    args = ("Month", "--start", "2026-09", "--stop", "2026-10", "--now", NOW.isoformat())
    target = tmp_path / "plan.json"
    code, before, _ = plan(capsys, ledger_url, *args, "--reprocess", "stale", "-o", str(target))
    assert code == 0 and actions(before) == {"2026-09": ("skip", "complete")}
    assert len(before["facts"]) == 31  # the month and its 30 days
    with gk.open_ledger(ledger_url) as ledger:
        ledger.record("Day", "2026-09-15", 2, "d-15-2", "succeeded", at(-10), now=at(-9))
    code, after, _ = plan(capsys, ledger_url, *args, "--reprocess", "stale", "-o", str(target))
    assert code == 1
    assert actions(after) == {
        "2026-09": ("republish", "stale: upstream Day 2026-09-15 attempt 1 → 2")
    }
    assert after["periods"][0]["upstream"] == [["Day", d] for d in days]
    assert after["digest"] != before["digest"]
