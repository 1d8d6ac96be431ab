"""Tests of the fail-closed recovery planner and the JSONL stage event reader."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.errors import InvalidInput, RecoveryNotSafe
from gatekeeper.core.records import RunState
from gatekeeper.core.recovery import (
    STAGE_STATUSES,
    plan_recovery,
    summarize_event_lines,
    summarize_events,
)

NONE_PLAN: dict[str, Any] = {"action": "none", "restart_at_stage": None, "skipped_stages": []}


def summary_of(*statuses: str, run_id: str = "r1", expected: Any = None) -> dict[str, Any]:
    """A one-run summary whose stage N has the Nth status."""
    stages = [{"stage": n, "status": s} for n, s in enumerate(statuses, start=1)]
    return {
        "expected_stages": len(statuses) if expected is None else expected,
        "runs": [{"run_id": run_id, "stages": stages}],
    }


def restart(stage: int) -> dict[str, Any]:
    return {
        "action": "manual_restart",
        "restart_at_stage": stage,
        "skipped_stages": list(range(1, stage)),
    }


# --------------------------------------------------------------------------- plan_recovery


@pytest.mark.parametrize(
    ("statuses", "verified", "plan"),
    [
        (("succeeded",), [], NONE_PLAN),
        (("succeeded", "succeeded", "succeeded"), [], NONE_PLAN),
        (("failed", "not_started"), [], restart(1)),
        (("not_started", "not_started"), [], restart(1)),
        # Silver (stage 1) succeeded and verified, Gold (stage 2) failed.
        (("succeeded", "failed"), [1], restart(2)),
        (("succeeded", "succeeded", "failed", "not_started"), [2, 1], restart(3)),
        (("succeeded", "succeeded", "not_started"), (1, 2), restart(3)),
    ],
)
def test_plan_recovery_plans(statuses: tuple[str, ...], verified: Any, plan: dict) -> None:
    summary = summary_of(*statuses)
    before = copy.deepcopy(summary)
    assert plan_recovery(summary, "r1", verified) == plan
    assert summary == before


def test_plan_recovery_picks_the_named_run_among_others() -> None:
    summary = summary_of("succeeded", "failed")
    summary["runs"].insert(0, {"run_id": "r0", "stages": [{"stage": 1, "status": "running"}]})
    assert plan_recovery(summary, "r1", [1]) == restart(2)


def test_plan_recovery_accepts_runstate_values_and_any_stage_order() -> None:
    summary = {
        "expected_stages": 2,
        "runs": [
            {
                "run_id": "r1",
                "stages": [
                    {"stage": 2, "status": RunState.FAILED},
                    {"stage": 1, "status": RunState.SUCCEEDED},
                ],
            }
        ],
    }
    assert plan_recovery(summary, "r1", [1]) == restart(2)


def _duplicate_run() -> dict[str, Any]:
    summary = summary_of("succeeded", "failed")
    summary["runs"].append(copy.deepcopy(summary["runs"][0]))
    return summary


def _duplicate_other_run() -> dict[str, Any]:
    summary = summary_of("succeeded", "failed")
    other = {"run_id": "r0", "stages": []}
    summary["runs"] += [other, copy.deepcopy(other)]
    return summary


def _stages(*entries: Any, expected: int = 2) -> dict[str, Any]:
    return {"expected_stages": expected, "runs": [{"run_id": "r1", "stages": list(entries)}]}


S1 = {"stage": 1, "status": "succeeded"}
F2 = {"stage": 2, "status": "failed"}

REFUSALS: list[tuple[str, Any, Any, Any, str]] = [
    # (id, summary, run_id, verified, text in the message)
    ("unknown run", summary_of("failed"), "r9", [], "unknown run"),
    ("empty run id", summary_of("failed"), "", [], "run ''"),
    ("run id not str", summary_of("failed"), 1, [], "run 1"),
    ("duplicate run id", _duplicate_run(), "r1", [1], "more than once"),
    ("duplicate other run id", _duplicate_other_run(), "r1", [1], "'r0'"),
    ("no stages", _stages(), "r1", [], "no stages"),
    ("missing stage", _stages(S1), "r1", [1], "stage 2 is missing"),
    ("missing first stage", _stages(F2), "r1", [], "stage 1 is missing"),
    ("duplicate stage", _stages(S1, S1, F2), "r1", [1], "stage 1 is listed more"),
    ("stage beyond N", _stages(S1, F2, {"stage": 3, "status": "not_started"}), "r1", [1], "3"),
    ("stage zero", _stages({"stage": 0, "status": "failed"}, S1, F2), "r1", [], "stage 0"),
    ("True as stage", _stages({"stage": True, "status": "succeeded"}, F2), "r1", [1], "True"),
    ("str stage", _stages({"stage": "1", "status": "succeeded"}, F2), "r1", [1], "'1'"),
    ("float stage", _stages({"stage": 1.0, "status": "succeeded"}, F2), "r1", [1], "1.0"),
    ("running stage", summary_of("succeeded", "running"), "r1", [1], "stage 2 is running"),
    ("stalled stage", summary_of("stalled", "not_started"), "r1", [], "stage 1 is stalled"),
    ("unknown status", summary_of("succeeded", "done"), "r1", [1], "unknown status 'done'"),
    ("abandoned status", summary_of("abandoned"), "r1", [], "unknown status"),
    ("status case", summary_of("Succeeded"), "r1", [], "unknown status"),
    ("status not str", _stages(S1, {"stage": 2, "status": None}), "r1", [1], "None"),
    ("downstream success", summary_of("failed", "succeeded"), "r1", [], "downstream"),
    ("downstream failure", summary_of("succeeded", "not_started", "failed"), "r1", [1], "stage 3"),
    ("downstream running", summary_of("failed", "running"), "r1", [], "stage 2 is running"),
    ("unverified prefix", summary_of("succeeded", "failed"), "r1", [], "not verified"),
    ("partly verified", summary_of("succeeded", "succeeded", "failed"), "r1", [1], "stage 2"),
    ("verified failed stage", summary_of("succeeded", "failed"), "r1", [1, 2], "stage 2"),
    ("verified beyond", summary_of("failed", "not_started"), "r1", [2], "stage 2"),
    ("verified first failed", summary_of("failed"), "r1", [1], "stage 1 is verified"),
    ("verified when all ok", summary_of("succeeded"), "r1", [1], "stage 1"),
    ("duplicate verified", summary_of("succeeded", "failed"), "r1", [1, 1], "more than once"),
    ("True verified", summary_of("succeeded", "failed"), "r1", [True], "True"),
    ("str verified", summary_of("succeeded", "failed"), "r1", ["1"], "'1'"),
    ("verified is str", summary_of("succeeded", "failed"), "r1", "1", "not a list"),
    ("verified is None", summary_of("succeeded", "failed"), "r1", None, "not a list"),
    ("verified is dict", summary_of("succeeded", "failed"), "r1", {1: True}, "not a list"),
    ("expected zero", summary_of(expected=0), "r1", [], "expected_stages"),
    ("expected True", summary_of("succeeded", expected=True), "r1", [], "expected_stages"),
    ("expected str", summary_of("succeeded", expected="1"), "r1", [], "expected_stages"),
    ("expected fewer", summary_of("succeeded", "failed", expected=1), "r1", [1], "outside"),
    ("expected more", summary_of("succeeded", "failed", expected=3), "r1", [1], "missing"),
    ("summary not mapping", [], "r1", [], "summary"),
    ("summary extra key", {**summary_of("failed"), "x": 1}, "r1", [], "unexpected keys ['x']"),
    ("summary no runs", {"expected_stages": 1}, "r1", [], "missing keys ['runs']"),
    ("runs not list", {"expected_stages": 1, "runs": "r1"}, "r1", [], "list"),
    ("run not mapping", {"expected_stages": 1, "runs": ["r1"]}, "r1", [], "runs[0]"),
    (
        "run id bool",
        {"expected_stages": 1, "runs": [{"run_id": True, "stages": []}]},
        "r1",
        [],
        "run_id=True",
    ),
    (
        "stages not list",
        {"expected_stages": 1, "runs": [{"run_id": "r1", "stages": "x"}]},
        "r1",
        [],
        "stages must be a list",
    ),
    ("stage extra key", _stages(S1, {**F2, "attempt": 2}), "r1", [1], "attempt"),
    ("stage not mapping", _stages(S1, 2), "r1", [1], "stages[1]"),
]


@pytest.mark.parametrize(
    ("summary", "run_id", "verified", "why"),
    [r[1:] for r in REFUSALS],
    ids=[r[0] for r in REFUSALS],
)
def test_plan_recovery_refuses(summary: Any, run_id: Any, verified: Any, why: str) -> None:
    before = copy.deepcopy(summary)
    with pytest.raises(RecoveryNotSafe) as info:
        plan_recovery(summary, run_id, verified)
    assert why in str(info.value)
    assert summary == before


def test_plan_recovery_message_names_run_and_stage() -> None:
    with pytest.raises(RecoveryNotSafe, match=r"run 'gold-7'.*stage 2 is stalled"):
        plan_recovery(summary_of("succeeded", "stalled", run_id="gold-7"), "gold-7", [1])


# --------------------------------------------------------------------------- property


@st.composite
def stage_statuses(draw: st.DrawFn, n: int) -> list[str]:
    """Mostly consistent statuses (succeeded prefix, one stop, not_started), sometimes noisy."""
    done = draw(st.integers(0, n))
    stopped = draw(st.sampled_from(["failed", "not_started"]))
    statuses = ["succeeded"] * done + [stopped] + ["not_started"] * (n - done - 1)
    statuses = statuses[:n]
    for _ in range(draw(st.integers(0, 2))):
        noise = st.sampled_from((*STAGE_STATUSES, "bogus", "Succeeded"))
        statuses[draw(st.integers(0, n - 1))] = draw(noise)
    return statuses


@st.composite
def inventories(draw: st.DrawFn, n: int) -> list[dict[str, Any]]:
    """Stage entries 1..n, sometimes with a stage dropped, repeated, added, bool or reordered."""
    stages: list[dict[str, Any]] = [
        {"stage": i, "status": s} for i, s in enumerate(draw(stage_statuses(n)), start=1)
    ]
    mutation = draw(st.sampled_from(["keep"] * 6 + ["drop", "dup", "bool", "extra", "shuffle"]))
    if mutation == "drop":
        stages.pop(draw(st.integers(0, n - 1)))
    elif mutation == "dup":
        stages.append(dict(draw(st.sampled_from(stages))))
    elif mutation == "bool":
        stages[0]["stage"] = True
    elif mutation == "extra":
        stages.append({"stage": n + 1, "status": "not_started"})
    elif mutation == "shuffle":
        stages = draw(st.permutations(stages))
    return stages


@st.composite
def planner_inputs(draw: st.DrawFn) -> tuple[dict[str, Any], list[Any]]:
    """Random, often-valid summaries of run ``r1`` and verification lists."""
    n = draw(st.integers(min_value=1, max_value=5))
    stages = draw(inventories(n))
    runs = [{"run_id": "r1", "stages": stages}]
    if draw(st.booleans()):
        runs.append({"run_id": draw(st.sampled_from(["r1", "r2"])), "stages": []})
    prefix = next((i for i in range(1, n + 1) if stages_status(stages, i) != "succeeded"), n + 1)
    exact = list(range(1, prefix)) if prefix <= n else []
    verified = draw(
        st.one_of(
            st.permutations(exact).map(list),
            st.lists(st.one_of(st.integers(0, n + 1), st.just(True)), max_size=n + 1),
        )
    )
    return {"expected_stages": n, "runs": runs}, verified


def stages_status(stages: list[dict[str, Any]], number: int) -> str | None:
    """The status of stage ``number`` if exactly one non-bool entry has it, else None."""
    found = [s["status"] for s in stages if s["stage"] == number and type(s["stage"]) is int]
    return found[0] if len(found) == 1 else None


@given(planner_inputs())
def test_plan_recovery_never_skips_an_unsucceeded_or_unverified_stage(
    case: tuple[dict[str, Any], list[Any]],
) -> None:
    summary, verified = case
    before = copy.deepcopy(summary)
    try:
        plan = plan_recovery(summary, "r1", verified)
    except RecoveryNotSafe:
        assert summary == before
        return
    assert summary == before
    (run,) = [r for r in summary["runs"] if r["run_id"] == "r1"]
    stages, n = run["stages"], summary["expected_stages"]
    assert sorted(s["stage"] for s in stages) == list(range(1, n + 1))
    statuses = [stages_status(stages, i) for i in range(1, n + 1)]
    skipped = plan["skipped_stages"]
    assert skipped == list(range(1, len(skipped) + 1))
    assert all(statuses[i - 1] == "succeeded" for i in skipped)
    assert all(type(v) is int for v in verified)
    assert sorted(verified) == skipped
    first_bad = next((i for i, s in enumerate(statuses, 1) if s != "succeeded"), None)
    assert plan["restart_at_stage"] == first_bad
    assert plan["action"] == ("none" if first_bad is None else "manual_restart")
    if first_bad is not None:
        assert skipped == list(range(1, first_bad))
        assert statuses[first_bad - 1] in ("failed", "not_started")
        assert all(s == "not_started" for s in statuses[first_bad:])


@given(
    st.integers(min_value=0, max_value=5),
    st.integers(min_value=0, max_value=5),
    st.sampled_from(["failed", "not_started", None]),
)
def test_plan_recovery_plans_every_consistent_run(
    done: int, rest: int, stopped: str | None
) -> None:
    if stopped is None:  # every stage succeeded: nothing to skip or verify
        statuses, verified, plan = ["succeeded"] * (done + 1), [], NONE_PLAN
    else:
        statuses = ["succeeded"] * done + [stopped] + ["not_started"] * rest
        verified, plan = list(range(done, 0, -1)), restart(done + 1)
    assert plan_recovery(summary_of(*statuses), "r1", verified) == plan


# --------------------------------------------------------------------------- event log


def ev(ts: str, stage: int, event: str, run_id: str = "r1") -> str:
    return json.dumps({"ts": ts, "run_id": run_id, "stage": stage, "event": event})


T0, T1, T2, T3 = (f"2026-03-01T0{h}:00:00+00:00" for h in range(4))


def write_log(tmp_path: Any, lines: list[str]) -> Any:
    path = tmp_path / "events.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_summarize_events_reads_runs_in_order_of_appearance(tmp_path: Any) -> None:
    path = write_log(
        tmp_path,
        [
            ev(T0, 1, "started", "silver-run"),
            ev(T0, 1, "started", "gold-run"),
            "",
            ev(T1, 1, "succeeded", "silver-run"),
            ev(T1, 2, "started", "silver-run"),
            "   ",
            ev(T2, 2, "failed", "silver-run"),
        ],
    )
    assert summarize_events(path, 3) == {
        "expected_stages": 3,
        "runs": [
            {
                "run_id": "silver-run",
                "stages": [
                    {"stage": 1, "status": "succeeded"},
                    {"stage": 2, "status": "failed"},
                    {"stage": 3, "status": "not_started"},
                ],
            },
            {
                "run_id": "gold-run",
                "stages": [
                    {"stage": 1, "status": "running"},
                    {"stage": 2, "status": "not_started"},
                    {"stage": 3, "status": "not_started"},
                ],
            },
        ],
    }


def test_summarize_events_feeds_the_planner(tmp_path: Any) -> None:
    path = write_log(
        tmp_path,
        [ev(T0, 1, "started"), ev(T1, 1, "succeeded"), ev(T2, 2, "started"), ev(T3, 2, "failed")],
    )
    assert plan_recovery(summarize_events(path, 2), "r1", [1]) == restart(2)


def test_summarize_events_running_stage_is_refused_by_planner(tmp_path: Any) -> None:
    path = write_log(tmp_path, [ev(T0, 1, "started")])
    with pytest.raises(RecoveryNotSafe, match="stage 1 is running"):
        plan_recovery(summarize_events(path, 2), "r1", [])


def test_summarize_event_lines_empty_log_has_no_runs() -> None:
    assert summarize_event_lines([], 2) == {"expected_stages": 2, "runs": []}
    with pytest.raises(RecoveryNotSafe, match="unknown run"):
        plan_recovery(summarize_event_lines(["\n"], 2), "r1", [])


@pytest.mark.parametrize(
    "lines",
    [
        # equal timestamps, other offsets, other runs interleaved with earlier times
        [ev(T1, 1, "started"), ev(T1, 1, "succeeded")],
        [ev("2026-03-01T02:00:00+02:00", 1, "started"), ev(T1, 1, "succeeded")],
        [ev(T2, 1, "started"), ev(T0, 1, "started", "r2"), ev("2026-03-01T02:00:00Z", 1, "failed")],
    ],
)
def test_summarize_event_lines_accepts_ordered_timestamps(lines: list[str]) -> None:
    assert summarize_event_lines(lines, 1)["runs"][0]["stages"][0]["status"] in (
        "succeeded",
        "failed",
    )


OK = ev(T0, 1, "started")
BASE = {"ts": T1, "run_id": "r1", "stage": 1, "event": "succeeded"}


def line(**changes: Any) -> str:
    obj = {**BASE, **changes}
    return json.dumps({k: v for k, v in obj.items() if v is not ...})


MALFORMED: list[tuple[str, list[str], str]] = [
    # (id, lines, expected error field); the bad line is always the last one
    ("bad json", [OK, '{"ts": '], "line 2"),
    ("nan", [OK, line(stage=float("nan"))], "line 2"),
    ("non-object", [OK, "[1, 2]"], "line 2"),
    ("string line", ['"started"'], "line 1"),
    ("duplicate key", [OK, line()[:-1] + ', "stage": 2}'], "line 2: stage"),
    ("missing ts", [OK, line(ts=...)], "line 2: ts"),
    ("missing run_id", [OK, line(run_id=...)], "line 2: run_id"),
    ("missing stage", [OK, line(stage=...)], "line 2: stage"),
    ("missing event", [OK, line(event=...)], "line 2: event"),
    ("extra field", [OK, line(attempt=2)], "line 2: attempt"),
    ("naive ts", [OK, line(ts="2026-03-01T01:00:00")], "line 2: ts"),
    ("date only ts", [OK, line(ts="2026-03-01")], "line 2: ts"),
    ("garbage ts", [OK, line(ts="yesterday")], "line 2: ts"),
    ("numeric ts", [OK, line(ts=1700000000)], "line 2: ts"),
    ("decreasing ts", [ev(T2, 1, "started"), line(ts=T1)], "line 2: ts"),
    ("decreasing ts offset", [OK, line(ts="2026-03-01T01:00:00+02:00")], "line 2: ts"),
    ("empty run_id", [OK, line(run_id="")], "line 2: run_id"),
    ("blank run_id", [OK, line(run_id="  ")], "line 2: run_id"),
    ("int run_id", [OK, line(run_id=1)], "line 2: run_id"),
    ("bool stage", [OK, line(stage=True)], "line 2: stage"),
    ("str stage", [OK, line(stage="1")], "line 2: stage"),
    ("float stage", [OK, line(stage=1.0)], "line 2: stage"),
    ("stage zero", [OK, line(stage=0, event="started")], "line 2: stage"),
    ("stage above N", [OK, line(stage=4, event="started")], "line 2: stage"),
    ("unknown event", [OK, line(event="finished")], "line 2: event"),
    ("event not str", [OK, line(event=None)], "line 2: event"),
    ("succeeded without started", [line(stage=2)], "line 1: event"),
    ("failed without started", [OK, line(stage=2, event="failed")], "line 2: event"),
    ("without started other run", [OK, line(run_id="r2")], "line 2: event"),
    ("double start", [OK, line(event="started")], "line 2: event"),
    ("event after terminal", [OK, line(), line(ts=T2, event="failed")], "line 3: event"),
    ("start after terminal", [OK, line(), line(ts=T2, event="started")], "line 3: event"),
    ("line counts blanks", ["", OK, "", line(event="started")], "line 4: event"),
]


@pytest.mark.parametrize(
    ("lines", "field"), [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED]
)
def test_summarize_events_refuses_malformed_lines(
    tmp_path: Any, lines: list[str], field: str
) -> None:
    path = write_log(tmp_path, lines)
    with pytest.raises(InvalidInput) as info:
        summarize_events(path, 3)
    assert info.value.field == field
    with pytest.raises(InvalidInput) as again:
        summarize_event_lines(lines, 3)
    assert again.value.field == field


@pytest.mark.parametrize("expected", [0, -1, True, 1.5, "2", None])
def test_summarize_event_lines_refuses_bad_expected_stages(expected: Any) -> None:
    with pytest.raises(InvalidInput) as info:
        summarize_event_lines([OK], expected)
    assert info.value.field == "expected_stages"
