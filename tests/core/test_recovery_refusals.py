"""A recovery refusal's message is what the operator acts on: ``plan_recovery`` names the run,
the stage and the offending status or value; ``summarize_event_lines`` names the line, the
field and the value."""

from __future__ import annotations

import json
from typing import Any

import pytest

from gatekeeper.core.errors import InvalidInput, RecoveryNotSafe
from gatekeeper.core.recovery import plan_recovery, summarize_event_lines


# -- recovery refusals: the message is the product ---------------------------------------------
def run(*statuses: Any, run_id: str = "r1") -> dict[str, Any]:
    return {
        "run_id": run_id,
        "stages": [{"stage": n, "status": s} for n, s in enumerate(statuses, start=1)],
    }


def summary(*runs: Any, expected: Any = 2) -> dict[str, Any]:
    return {"expected_stages": expected, "runs": list(runs)}


REFUSALS: list[tuple[Any, Any, Any, str]] = [
    ([], "r1", [], "summary: expected an object, got list"),
    (
        {"runs": []},
        "r1",
        [],
        "summary: malformed, missing keys ['expected_stages'], unexpected keys []",
    ),
    (
        {"expected_stages": 1, "runs": [], "x": 1, "y": 2},
        "r1",
        [],
        "summary: malformed, missing keys [], unexpected keys ['x', 'y']",
    ),
    (
        {"expected_stages": 1, "runs": [], 1: "a", "x": "b"},
        "r1",
        [],
        "summary: malformed, missing keys [], unexpected keys [1, 'x']",
    ),
    (
        summary(run("succeeded"), expected=0),
        "r1",
        [],
        "summary: expected_stages=0 is not a positive integer",
    ),
    (
        summary(run("succeeded"), expected=True),
        "r1",
        [],
        "summary: expected_stages=True is not a positive integer",
    ),
    (summary(run("failed", "not_started")), " ", [], "run ' ': run ID must be a non-empty string"),
    (
        summary(run("failed", "not_started")),
        None,
        [],
        "run None: run ID must be a non-empty string",
    ),
    ({"expected_stages": 2, "runs": "r1"}, "r1", [], "run 'r1': summary runs must be a list"),
    (
        summary(run("failed", "not_started"), {"run_id": "r2"}),
        "r1",
        [],
        "summary runs[1]: malformed, missing keys ['stages'], unexpected keys []",
    ),
    (
        summary({"run_id": "", "stages": []}),
        "r1",
        [],
        "summary runs[0]: run_id='' is not a non-empty str",
    ),
    (
        summary(run("failed", "not_started", run_id="r2"), run("failed", run_id="r2")),
        "r1",
        [],
        "run 'r2': listed more than once in the summary",
    ),
    (
        summary(run("failed", "not_started", run_id="r2")),
        "r1",
        [],
        "run 'r1': unknown run ID, not in the summary",
    ),
    (summary({"run_id": "r1", "stages": {}}), "r1", [], "run 'r1': stages must be a list"),
    (summary({"run_id": "r1", "stages": []}), "r1", [], "run 'r1': no stages recorded"),
    (
        summary({"run_id": "r1", "stages": [{"stage": 1}]}),
        "r1",
        [],
        "run 'r1': stages[0]: malformed, missing keys ['status'], unexpected keys []",
    ),
    (
        summary({"run_id": "r1", "stages": [{"stage": "1", "status": "failed"}]}),
        "r1",
        [],
        "run 'r1': stage number '1' is not an integer",
    ),
    (
        summary({"run_id": "r1", "stages": [{"stage": 3, "status": "failed"}]}),
        "r1",
        [],
        "run 'r1': stage 3 is outside 1..2",
    ),
    (
        summary({"run_id": "r1", "stages": [{"stage": 1, "status": "failed"}] * 2}),
        "r1",
        [],
        "run 'r1': stage 1 is listed more than once",
    ),
    (summary(run("failed", 7)), "r1", [], "run 'r1': stage 2 has status 7"),
    (
        summary({"run_id": "r1", "stages": [{"stage": 2, "status": "failed"}]}),
        "r1",
        [],
        "run 'r1': stage 1 is missing; inventory is not exactly 1..2",
    ),
    (
        summary(run("succeeded", "stalled")),
        "r1",
        [1],
        "run 'r1': stage 2 is stalled; wait or resolve it",
    ),
    (
        summary(run("done", "failed")),
        "r1",
        [],
        "run 'r1': stage 1 has unknown status 'done'; "
        "expected one of succeeded, failed, not_started, running, stalled",
    ),
    (
        summary(run("succeeded", "failed", "succeeded"), expected=3),
        "r1",
        [1],
        "run 'r1': stage 3 is succeeded although stage 2 is failed; downstream activity",
    ),
    (
        summary(run("succeeded", "failed")),
        "r1",
        "1",
        "run 'r1': verified stages '1' are not a list",
    ),
    (
        summary(run("succeeded", "failed")),
        "r1",
        [True],
        "run 'r1': verified stage True is not an integer",
    ),
    (
        summary(run("succeeded", "failed")),
        "r1",
        [1, 1],
        "run 'r1': stage 1 is verified more than once",
    ),
    (
        summary(run("succeeded", "failed")),
        "r1",
        [2],
        "run 'r1': stage 2 is verified but would not be skipped (skippable: [1])",
    ),
    (
        summary(run("failed", "not_started")),
        "r1",
        [1],
        "run 'r1': stage 1 is verified but would not be skipped (skippable: none)",
    ),
    (
        summary(run("succeeded", "succeeded", "failed"), expected=3),
        "r1",
        [2],
        "run 'r1': stage 1 succeeded but its output is not verified",
    ),
]


@pytest.mark.parametrize(("given_summary", "run_id", "verified", "message"), REFUSALS)
def test_plan_recovery_refusal_names_the_run_the_stage_and_the_evidence(
    given_summary: Any, run_id: Any, verified: Any, message: str
) -> None:
    with pytest.raises(RecoveryNotSafe) as caught:
        plan_recovery(given_summary, run_id, verified)
    assert str(caught.value) == message


def line(
    ts: str = "2026-10-25T05:00:00+00:00",
    run_id: Any = "r1",
    stage: Any = 1,
    event: Any = "started",
    **extra: Any,
) -> str:
    return json.dumps({"ts": ts, "run_id": run_id, "stage": stage, "event": event, **extra})


EVENT_REFUSALS: list[tuple[list[str], str]] = [
    (["[1]"], "invalid line 1=[1]: expected a JSON object"),
    (
        ["", "{"],
        "invalid line 2='{': not valid JSON: Expecting property name enclosed in double quotes",
    ),
    (['{"ts": NaN}'], "invalid line 1='{\"ts\": NaN}': NaN is not valid JSON"),
    (['{"ts": 1, "ts": 2}'], 'invalid line 1: ts=\'{"ts": 1, "ts": 2}\': duplicate key'),
    (['{"ts": "x", "run_id": "r1", "stage": 1}'], "invalid line 1: event: missing field"),
    ([line(note="hi")], "invalid line 1: note='hi': unexpected field"),
    ([line(run_id=" ")], "invalid line 1: run_id=' ': must be a non-empty string"),
    ([line(stage=True)], "invalid line 1: stage=True: must be an integer"),
    ([line(stage=3)], "invalid line 1: stage=3: outside 1..2"),
    (
        [line(event="stopped")],
        "invalid line 1: event='stopped': expected one of started, succeeded, failed",
    ),
    ([line(ts=5)], "invalid line 1: ts=5: must be an ISO 8601 string"),
    ([line(ts="yesterday")], "invalid line 1: ts='yesterday': not an ISO 8601 timestamp"),
    (
        [line(ts="2026-10-25T05:00:00")],
        "invalid line 1: ts='2026-10-25T05:00:00': has no UTC offset",
    ),
    (
        [line(), line(ts="2026-10-25T04:00:00+00:00", stage=2)],
        "invalid line 2: ts='2026-10-25T04:00:00+00:00': earlier than line 1 of run 'r1' "
        "(2026-10-25T05:00:00+00:00)",
    ),
    ([line(), line()], "invalid line 2: event='started': stage 1 already started"),
    (
        [line(event="failed")],
        "invalid line 1: event='failed': stage 1 failed without being started",
    ),
    (
        [line(), line(event="succeeded"), line(event="failed")],
        "invalid line 3: event='failed': stage 1 already succeeded; nothing may follow",
    ),
]


@pytest.mark.parametrize("expected", [0, -1, True, 1.0, "2"])
def test_summarize_event_lines_refuses_expected_stages_naming_it(expected: Any) -> None:
    with pytest.raises(InvalidInput) as caught:
        summarize_event_lines([line()], expected)
    assert (caught.value.field, caught.value.value) == ("expected_stages", expected)
    assert str(caught.value).endswith(": must be a positive integer")


@pytest.mark.parametrize(("lines", "message"), EVENT_REFUSALS)
def test_summarize_event_lines_refusal_names_the_line_the_field_and_the_value(
    lines: list[str], message: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        summarize_event_lines(lines, 2)
    assert str(caught.value) == message
