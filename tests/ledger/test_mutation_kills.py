"""Tests written against mutmut's survivors (docs/mutation.md): rules no other test held.

- the planner's fast paths for ledger keys (``period_ordinals``) give exactly what the full
  parser (``period_ordinal``) gives, item by item, and refuse exactly what it refuses;
- ``RangePlan.to_json`` is the documented ``gatekeeper plan --json`` shape;
- a recovery refusal's message is what the operator acts on: it names the run, the stage and
  the offending status or value.
"""

from __future__ import annotations

import datetime as dt
import json
import threading
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput, RecoveryNotSafe
from gatekeeper.core.periods import (
    DAILY,
    HOURLY,
    Interval,
    interval,
    last_closed,
    parse_aware_datetime,
    parse_business_date,
    parse_hour,
    parse_label,
    parse_lateness,
    parse_period_key,
    period_at,
    period_from_key,
    period_key,
    period_ordinal,
    period_ordinals,
    periods_between,
)
from gatekeeper.core.planning import due_span, plan_from_ledger, plan_range
from gatekeeper.core.readiness import Watermarks
from gatekeeper.core.recovery import plan_recovery, summarize_event_lines
from tests.helpers.ledgers import T0, snapshot, succeed

UTC = dt.timezone.utc

# -- the planner's fast paths agree with the full parser ----------------------------------------
# Hour fields that look almost like two ASCII digits: the full parser refuses all of them.
ODD_HOURS = ["24", "99", " 5", "5 ", "+5", "-1", "٠٥", "0²", "0a", "1_"]
DAYS = st.dates(min_value=dt.date(1, 1, 2), max_value=dt.date(9999, 12, 30))


def outcome(compute: Any, *args: Any) -> tuple[Any, ...]:
    """("ok", result) or ("invalid", field, value): a refusal must be InvalidInput."""
    try:
        return ("ok", compute(*args))
    except InvalidInput as exc:
        return ("invalid", exc.field, exc.value)


def single(value: Any, period: str) -> tuple[Any, ...]:
    """What the full parser says about one item, in ``period_ordinals``' terms."""
    result = outcome(period_ordinal, value, period, "complete")
    return ("ok", {result[1]}) if result[0] == "ok" else result


@st.composite
def hour_keys(draw: Any) -> str:
    """A ledger key ``YYYY-MM-DDTHH:00Z``, sometimes with one part bent out of shape."""
    day = draw(DAYS).isoformat()
    hour = draw(st.one_of(st.integers(0, 23).map(lambda h: f"{h:02d}"), st.sampled_from(ODD_HOURS)))
    sep = draw(st.sampled_from(["T", "T", "T", " ", "t"]))
    tail = draw(st.sampled_from([":00Z", ":00Z", ":00Z", ":30Z", ":00z", ":00+"]))
    bad_day = draw(st.sampled_from([None, "2026-02-30", "2026-13-01", "2026/10/25"]))
    return f"{bad_day or day}{sep}{hour}{tail}"


HOUR_VALUES = st.one_of(
    hour_keys(),
    st.builds(
        lambda d, h, m: dt.datetime.combine(d, dt.time(h, m), tzinfo=UTC),
        DAYS,
        st.integers(0, 23),
        st.sampled_from([0, 0, 30]),
    ),
    st.builds(
        lambda d, h: dt.datetime.combine(d, dt.time(h), tzinfo=ZoneInfo("Europe/Berlin")),
        DAYS,
        st.integers(0, 23),
    ),
    DAYS.map(lambda d: f"{d.isoformat()}T05"),  # Luigi's DateHourParameter form
    DAYS,
)


@given(HOUR_VALUES)
@example("2026-10-25T 5:00Z")
@example("2026-10-25T٠٥:00Z")
@example("2026-10-25T0²:00Z")
@example("2026-10-25T24:00Z")
@example("2026-10-25T23:00Z")
@example("2026-02-30T05:00Z")
@example("2026-10-25X05:00Z")
@example("2026-10-25T05:30Z")  # a whole ledger key's shape but for the minutes
@example("2026-W43-7T15:00Z")  # an ISO week date: both parsers read it (the second fast path)
@example("2026-10-25t05:00Z")
@example(dt.datetime(2026, 10, 25, 5, 0, 30, tzinfo=UTC))  # on the minute, not the hour
@example(dt.datetime(2026, 10, 25, 5, 0, 0, 1, tzinfo=UTC))
def test_period_ordinals_hourly_agrees_with_period_ordinal(value: Any) -> None:
    assert outcome(period_ordinals, [value], HOURLY, "complete") == single(value, HOURLY)


@given(st.lists(hour_keys(), max_size=30))
@example(["2026-10-25T04:00Z", "2026-10-25T05:30Z", "2026-10-25T06:00Z"])
@example(["2026-10-25T04:00Z", "2026-10-25 05:00Z", "2026-10-25T24:00Z"])
@example(["2026-10-25T04:00Z", "2026-10-25t05:00Z"])
def test_period_ordinals_hourly_of_many_keys_is_the_union_or_the_first_refusal(
    values: list[str],
) -> None:
    """Keys of one day share one date parse: the shared parse must not leak between keys.
    A refusal is the first refused key's, as if each were parsed in turn."""
    each = [single(v, HOURLY) for v in values]
    refused = [r for r in each if r[0] == "invalid"]
    got = outcome(period_ordinals, values, HOURLY, "complete")
    if refused:
        assert got == refused[0]
    else:
        assert got == ("ok", set().union(*(r[1] for r in each)))


DAY_VALUES = st.one_of(
    DAYS,
    DAYS.map(dt.date.isoformat),
    st.sampled_from(
        [
            "2026-02-30",
            "2026-13-01",
            "2026-1-025",
            "20261025",
            "2026-W43-1",
            "2026/10/25",
            "２０２６-10-25",
            "2026-10-25T00",
            "",
        ]
    ),
    st.builds(lambda d: dt.datetime.combine(d, dt.time(), tzinfo=UTC), DAYS),
)


@given(st.lists(DAY_VALUES, max_size=20))
def test_period_ordinals_daily_agrees_with_period_ordinal(values: list[Any]) -> None:
    each = [single(v, DAILY) for v in values]
    refused = [r for r in each if r[0] == "invalid"]
    got = outcome(period_ordinals, values, DAILY, "complete")
    if refused:
        assert got[0] == "invalid" and got in refused
    else:
        assert got == ("ok", set().union(*(r[1] for r in each)))


# -- RangePlan.to_json: the `gatekeeper plan --json` shape ------------------------------------
def test_range_plan_to_json_daily_is_the_documented_shape() -> None:
    plan = plan_range(
        ["2026-10-01", "2026-10-03"],
        start="2026-10-01",
        stop="2026-10-06",
        now=dt.datetime(2026, 10, 5, 2, tzinfo=UTC),
        lateness="2h",
        timezone="Europe/Berlin",
        strategy="reverse",
        catchup="last:1",
        task_limit=3,
    )
    assert plan.to_json() == {
        "start": "2026-10-01",
        "stop": "2026-10-06",
        "now": "2026-10-05T02:00:00+00:00",
        "lateness_seconds": 7200.0,
        "period": "daily",
        "timezone": "Europe/Berlin",
        "strategy": "reverse",
        "catchup": "last:1",
        "task_limit": 3,
        "total": 4,
        "complete_count": 2,
        "due": ["2026-10-01", "2026-10-02", "2026-10-03", "2026-10-04"],
        "gaps": ["2026-10-04"],
        "scheduled": ["2026-10-04"],
        "skipped_by_policy": ["2026-10-02"],
        "contiguous_through": "2026-10-01",
        "next_due_at": "2026-10-06T00:00:00+00:00",
        "description": "filled 2/4, contiguous through 2026-10-01, next due at "
        "2026-10-06T00:00:00+00:00, 1 skipped by policy",
    }


def test_range_plan_to_json_hourly_open_ended_is_the_documented_shape() -> None:
    plan = plan_range(
        [],
        start="2026-10-25T05:00Z",
        now="2026-10-25T07:30:00+00:00",
        period=HOURLY,
        task_limit=None,
    )
    assert plan.to_json() == {
        "start": "2026-10-25T05:00Z",
        "stop": None,
        "now": "2026-10-25T07:30:00+00:00",
        "lateness_seconds": 0.0,
        "period": "hourly",
        "timezone": "UTC",
        "strategy": "contiguous",
        "catchup": "all",
        "task_limit": None,
        "total": 2,
        "complete_count": 0,
        "due": ["2026-10-25T05:00Z", "2026-10-25T06:00Z"],
        "gaps": ["2026-10-25T05:00Z", "2026-10-25T06:00Z"],
        "scheduled": ["2026-10-25T05:00Z", "2026-10-25T06:00Z"],
        "skipped_by_policy": [],
        "contiguous_through": None,
        "next_due_at": "2026-10-25T08:00:00+00:00",
        "description": "filled 0/2, contiguous through nothing, next due at "
        "2026-10-25T08:00:00+00:00, 0 skipped by policy",
    }


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


# -- ledger refusals: what the operator reads, and the attempt the exception names -------------
D = "2026-10-22"


def refusal(call: Any, *args: Any, **kwargs: Any) -> Any:
    with pytest.raises(gk.GatekeeperError) as caught:
        call(*args, **kwargs)
    return caught.value


def test_record_refusals_name_the_attempt(ledger: gk.Ledger) -> None:
    ledger.record("Load", D, 1, "load-1", "failed", T0, now=T0)
    before = snapshot(ledger)
    cases = [
        (
            ("Load", D, 1, "load-x", "failed", T0),
            f"Load {D} attempt 1: recorded with run ID load-1, not load-x",
            ("Load", D, 1),
        ),
        (
            ("Load", D, 1, "load-1", "succeeded", T0),
            f"Load {D} attempt 1: already failed, refusing succeeded; a repair needs a new attempt",
            ("Load", D, 1),
        ),
        (
            ("Other", D, 2, "load-1", "running", T0),
            f"run ID load-1 already belongs to Load {D} attempt 1; refusing it for Other {D} "
            "attempt 2",
            ("Other", D, 2),
        ),
    ]
    for args, message, where in cases:
        err = refusal(ledger.record, *args, now=T0)
        assert isinstance(err, gk.StateConflict) and not isinstance(err, gk.LeaseHeld)
        assert (str(err), (err.job, err.period, err.attempt)) == (message, where)
    assert snapshot(ledger) == before


def test_begin_attempt_refusals_name_the_attempt_and_the_holder(ledger: gk.Ledger) -> None:
    held = ledger.begin_attempt("Load", D, "load-1", lease_seconds=60, now=T0)
    before = snapshot(ledger)
    err = refusal(
        ledger.begin_attempt,
        "Load",
        D,
        "load-2",
        lease_seconds=60,
        now=T0 + dt.timedelta(seconds=59),
    )
    assert isinstance(err, gk.LeaseHeld) and err.holder == held
    assert (err.job, err.period, err.attempt) == ("Load", D, 1)
    assert str(err) == (
        f"Load {D} attempt 1 holds a live lease until 2026-10-23T07:01:00+00:00 (run ID load-1; "
        "the database's clock reads 2026-10-23T07:00:59+00:00)"
    )
    err = refusal(
        ledger.begin_attempt,
        "Load",
        D,
        "load-2",
        lease_seconds=60,
        attempt=1,
        now=T0 + dt.timedelta(seconds=61),
    )
    assert isinstance(err, gk.StateConflict) and (err.job, err.period, err.attempt) == (
        "Load",
        D,
        1,
    )
    assert str(err) == (
        f"Load {D}: attempt 1 refused, attempt 1 is already recorded; "
        "use an attempt greater than 1 or 0 for the next one"
    )
    assert snapshot(ledger) == before
    ledger.record("Feed", D, 1, "feed-1", "running", T0, now=T0)  # running without a lease
    err = refusal(ledger.begin_attempt, "Feed", D, "feed-2", lease_seconds=60, now=T0)
    assert isinstance(err, gk.LeaseHeld) and err.holder.run_id == "feed-1"
    assert (err.job, err.period, err.attempt) == ("Feed", D, 1)
    assert str(err) == (
        f"Feed {D} attempt 1 is running without a lease (run ID feed-1); "
        "record its outcome before starting another"
    )


def test_begin_attempt_abandons_an_expired_lease_with_its_expiry_as_the_error(
    ledger: gk.Ledger,
) -> None:
    ledger.begin_attempt("Load", D, "load-1", lease_seconds=60, now=T0)
    later = T0 + dt.timedelta(seconds=60)  # expired exactly now: lease_live is "> now"
    second = ledger.begin_attempt("Load", D, "load-2", lease_seconds=30, now=later)
    assert (second.attempt, second.lease_expires_at) == (2, later + dt.timedelta(seconds=30))
    first = ledger.attempts("Load", D)[0]
    assert (first.state, first.updated_at, first.error) == (
        gk.RunState.ABANDONED,
        later,
        "lease expired at 2026-10-23T07:01:00+00:00",
    )


@pytest.mark.parametrize(
    ("setup", "message", "attempt", "taken"),
    [
        (
            "none",
            "Report {d}: run pub-1 is not an attempt of this consumer and date; refusing to "
            "publish",
            None,
            None,
        ),
        (
            "taken",
            "Report {d}: attempt 1 (run pub-1) was taken over by attempt 2 (run pub-2); "
            "refusing to publish",
            1,
            2,
        ),
        (
            "finished",
            "Report {d}: attempt 1 (run pub-1) is already failed; refusing to publish",
            1,
            None,
        ),
        (
            "expired",
            "Report {d}: attempt 1 (run pub-1) lost its lease (expired "
            "2026-10-23T07:01:00+00:00; the database's clock reads "
            "2026-10-23T07:02:00+00:00); refusing to publish",
            1,
            None,
        ),
        (
            "no lease",
            "Report {d}: attempt 1 (run pub-1) lost its lease (expired never set; the "
            "database's clock reads 2026-10-23T07:02:00+00:00); refusing to publish",
            1,
            None,
        ),
    ],
)
def test_fenced_publish_refusal_names_the_producer_and_why(
    ledger: gk.Ledger, setup: str, message: str, attempt: int | None, taken: int | None
) -> None:
    succeed(ledger, "Dim", D, run_id="dim-1")
    if setup == "no lease":  # recorded running without a lease (as an observer records it)
        ledger.record("Report", D, 1, "pub-1", "running", T0, now=T0)
    elif setup != "none":
        ledger.begin_attempt("Report", D, "pub-1", lease_seconds=60, now=T0)
    if setup == "taken":
        ledger.begin_attempt(
            "Report", D, "pub-2", lease_seconds=60, now=T0 + dt.timedelta(seconds=61)
        )
    if setup == "finished":
        ledger.record("Report", D, 1, "pub-1", "failed", T0, now=T0)
    before = snapshot(ledger)
    err = refusal(
        ledger.publish,
        "Report",
        D,
        ["Dim"],
        "fp",
        producer="pub-1",
        now=T0 + dt.timedelta(seconds=120),
    )
    assert isinstance(err, gk.LeaseLost) and str(err) == message.format(d=D)
    assert (err.run_id, err.job, err.period, err.attempt) == ("pub-1", "Report", D, attempt)
    assert (None if err.taken_over_by is None else err.taken_over_by.attempt) == taken
    assert snapshot(ledger) == before


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"fingerprint": "fp2"}, "published with fingerprint fp, refusing fp2"),
        (
            {"required_jobs": ["Dim", "Feed"]},
            f"published with required jobs ['Dim for {D}'], "
            f"refusing ['Dim for {D}', 'Feed for {D}']",
        ),
        ({"location": "/b"}, "published with location /a, refusing /b"),
    ],
)
def test_publish_conflict_names_the_revision_and_the_difference(
    ledger: gk.Ledger, change: dict[str, Any], message: str
) -> None:
    for job in ("Dim", "Feed"):
        succeed(ledger, job, D, run_id=f"{job}-1")
    ledger.publish("Report", D, ["Dim"], "fp", location="/a", now=T0)
    before = snapshot(ledger)
    call: dict[str, Any] = {"required_jobs": ["Dim"], "fingerprint": "fp", "location": "/a"}
    err = refusal(ledger.publish, "Report", D, **{**call, **change}, now=T0)
    assert isinstance(err, gk.PublicationConflict)
    assert (err.consumer, err.period, err.revision) == ("Report", D, 1)
    assert str(err) == (
        f"Report {D}: revision 1 was {message}; a correction is an explicit republish"
    )
    assert snapshot(ledger) == before


# -- plan_range against a brute-force model of its documented rules ----------------------------
ZONES = ["UTC", "Europe/Berlin", "America/New_York"]  # local midnight always exists


def model_plan(
    kind: str,
    start: dt.datetime | dt.date,
    span: int | None,
    now: dt.datetime,
    late: dt.timedelta,
    zone: str,
    done: set[int],
    catchup: str,
    strategy: str,
    limit: int | None,
) -> dict[str, Any]:
    """The plan, period by period, from the docstring of ``plan_range`` (labels by position)."""

    def label(i: int) -> Any:
        return start + (dt.timedelta(hours=i) if kind == HOURLY else dt.timedelta(days=i))

    def due_at(i: int) -> dt.datetime:
        if kind == HOURLY:
            return label(i + 1) + late
        day = label(i + 1)
        local = dt.datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(zone))
        return local.astimezone(UTC) + late

    due = []
    while (span is None or len(due) < span) and due_at(len(due)) <= now:
        due.append(len(due))
    missing = [i for i in due if i not in done]
    windows = {"all": len(due), "none": 1}
    window = windows[catchup] if catchup in windows else int(catchup.removeprefix("last:"))
    cut = max(0, len(due) - window)
    skipped = [i for i in missing if i < cut]
    gaps = [i for i in missing if i >= cut]
    gaps = gaps[::-1] if strategy == "reverse" else gaps
    through = (missing[0] if missing else len(due)) - 1
    pending = len(due)
    return {
        "due": [label(i) for i in due],
        "gaps": [label(i) for i in gaps],
        "scheduled": [label(i) for i in (gaps if limit is None else gaps[:limit])],
        "skipped_by_policy": [label(i) for i in skipped],
        "contiguous_through": label(through) if through >= 0 else None,
        "next_due_at": None if span is not None and pending >= span else due_at(pending),
        "complete_count": len(due) - len(missing),
    }


@st.composite
def plan_requests(draw: Any) -> dict[str, Any]:
    kind = draw(st.sampled_from([DAILY, HOURLY]))
    unit = dt.timedelta(hours=1) if kind == HOURLY else dt.timedelta(days=1)
    base = draw(st.dates(dt.date(2025, 1, 1), dt.date(2027, 12, 31)))
    if kind == HOURLY:
        start: Any = dt.datetime.combine(base, dt.time(draw(st.integers(0, 23))), tzinfo=UTC)
        anchor = start
    else:
        start = base
        anchor = dt.datetime.combine(base, dt.time(), tzinfo=UTC)
    span = draw(st.one_of(st.none(), st.integers(0, 30)))
    now = (
        anchor
        + unit * draw(st.integers(-3, 36))
        + dt.timedelta(minutes=draw(st.sampled_from([0, 0, 1, 59, 61, 150, 1439])))
    )
    return {
        "kind": kind,
        "start": start,
        "span": span,
        "now": now,
        "late": dt.timedelta(hours=draw(st.sampled_from([0, 0, 1, 2, 25, 49]))),
        "zone": draw(st.sampled_from(ZONES)) if kind == DAILY else "UTC",
        "done": draw(st.sets(st.integers(-2, 40), max_size=30)),
        "catchup": draw(st.sampled_from(["all", "none", "last:1", "last:3", "last:40"])),
        "strategy": draw(st.sampled_from(["contiguous", "forward", "reverse"])),
        "limit": draw(st.sampled_from([None, 0, 1, 2, 50])),
    }


@given(plan_requests())
def test_plan_range_agrees_with_a_period_by_period_model(req: dict[str, Any]) -> None:
    unit = dt.timedelta(hours=1) if req["kind"] == HOURLY else dt.timedelta(days=1)
    complete = [req["start"] + unit * i for i in req["done"]]
    stop = None if req["span"] is None else req["start"] + unit * req["span"]
    plan = plan_range(
        complete,
        start=req["start"],
        stop=stop,
        now=req["now"],
        lateness=req["late"],
        timezone=req["zone"],
        period=req["kind"],
        strategy=req["strategy"],
        catchup=req["catchup"],
        task_limit=req["limit"],
    )
    got = {
        name: getattr(plan, name)
        for name in (
            "due",
            "gaps",
            "scheduled",
            "skipped_by_policy",
            "contiguous_through",
            "next_due_at",
            "complete_count",
        )
    }
    got.update({k: list(v) for k, v in got.items() if isinstance(v, tuple)})
    assert got == model_plan(**req)
    assert plan.total == len(plan.due)


def test_plan_from_ledger_with_a_consumer_counts_only_published_periods(ledger: gk.Ledger) -> None:
    days = ["2026-10-20", "2026-10-21", D]
    for day in days:
        succeed(ledger, "Dim", day, run_id=f"dim-{day}")
    ledger.publish("Dim", "2026-10-21", ["Dim"], "fp", now=T0)
    plan = plan_from_ledger(ledger, "Dim", start=days[0], stop="2026-10-23", now=T0, consumer="Dim")
    assert (plan.due, plan.gaps) == (
        tuple(dt.date.fromisoformat(d) for d in days),
        (dt.date(2026, 10, 20), dt.date(2026, 10, 22)),
    )
    assert plan_from_ledger(ledger, "Dim", start=days[0], stop="2026-10-23", now=T0).gaps == ()


def test_describe_blockers_lists_each_blocker_or_says_nothing() -> None:
    ready = gk.Readiness(D, ("Dim",), evidence={"Dim": "dim-1"}, attempts={"Dim": 1})
    assert (bool(ready), ready.describe_blockers()) == (True, "nothing")
    blocked = gk.Readiness(
        D,
        ("Dim", "Feed", "Web"),
        blockers={"Web": "running", "Dim": "missing", "Feed": "watermark"},
        attempts={"Web": 3, "Feed": 1},
        details={"Feed": "watermark 2026-10-22T23:00:00+00:00 < 2026-10-23T00:00:00+00:00"},
    )
    assert blocked.describe_blockers() == (
        "Dim (missing), Feed (attempt 1 watermark 2026-10-22T23:00:00+00:00 < "
        "2026-10-23T00:00:00+00:00), Web (attempt 3 running)"
    )


def test_fingerprint_is_the_sha256_of_canonical_json() -> None:
    import hashlib

    canonical = rb'{"a":[1,2.5,"\u00e9"],"b":{"c":null}}'  # ensure_ascii
    payload = {"b": {"c": None}, "a": [1, 2.5, "\u00e9"]}
    assert gk.fingerprint(payload) == "sha256:" + hashlib.sha256(canonical).hexdigest()
    assert gk.fingerprint(canonical) == gk.fingerprint(payload)  # bytes are hashed as they are
    for bad in ({"x": float("nan")}, {"x": {1, 2}}):
        with pytest.raises(InvalidInput) as caught:
            gk.fingerprint(bad)
        assert (caught.value.field, caught.value.value) == ("payload", bad)
        assert caught.value.reason.startswith("not canonical JSON: ")


@pytest.mark.parametrize(
    ("call", "field", "value", "reason"),
    [
        (lambda ledger: ledger.history(""), "job", "", None),
        (lambda ledger: ledger.attempts("", D), "job", "", None),
        (lambda ledger: ledger.publications(" ", D), "consumer", " ", None),
        (lambda ledger: ledger.publication("", D), "consumer", "", None),
        (
            lambda ledger: interval("9999-12-31"),
            "business_date",
            "9999-12-31",
            "interval beyond the datetime range",
        ),
        (
            lambda ledger: Interval(T0, T0 - dt.timedelta(hours=1)),
            "end",
            T0 - dt.timedelta(hours=1),
            "before start 2026-10-23T07:00:00+00:00",
        ),
        (
            lambda ledger: period_from_key(5),
            "business_date",
            5,
            "expected a period key string, got int",
        ),
        (
            lambda ledger: period_from_key("2026-10-25T25:00Z", "complete"),
            "complete",
            "2026-10-25T25:00Z",
            "not a calendar hour (hour must be in 0..23)",
        ),
    ],
)
def test_reads_refuse_bad_input_naming_the_field_and_value(
    ledger: gk.Ledger, call: Any, field: str, value: Any, reason: str | None
) -> None:
    with pytest.raises(InvalidInput) as caught:
        call(ledger)
    assert (caught.value.field, caught.value.value) == (field, value)
    assert reason is None or caught.value.reason == reason


# -- the fetch-then-plan step: the due window fetched is the plan's, every argument passed on ---
WINDOWS = [  # (request, the due window the completeness fetch must be asked for)
    ({"start": "2026-10-18", "stop": "2026-10-21", "now": T0}, ("2026-10-18", "2026-10-20")),
    ({"start": "2026-10-18", "now": T0}, ("2026-10-18", "2026-10-22")),
    ({"start": "2026-10-18", "now": T0, "lateness": "8h"}, ("2026-10-18", "2026-10-21")),
    (
        {
            "start": "2026-10-18",
            "now": dt.datetime(2026, 10, 22, 23, 30, tzinfo=UTC),
            "timezone": "Europe/Berlin",
        },
        ("2026-10-18", "2026-10-22"),
    ),
    (
        {
            "start": "2026-10-18",
            "now": dt.datetime(2026, 10, 22, 21, 30, tzinfo=UTC),
            "timezone": "Europe/Berlin",
        },
        ("2026-10-18", "2026-10-21"),
    ),
    (
        {"start": "2026-10-23T04:00Z", "stop": "2026-10-23T06:00Z", "now": T0, "period": HOURLY},
        ("2026-10-23T04:00Z", "2026-10-23T05:00Z"),
    ),
    ({"start": "2026-10-23", "now": T0}, None),
    ({"start": "2026-10-18", "stop": "2026-10-18", "now": T0}, None),
]


@pytest.mark.parametrize(("request_", "window"), WINDOWS)
def test_plan_from_ledger_fetches_the_due_window_and_plans_with_every_argument(
    ledger: gk.Ledger, request_: dict[str, Any], window: tuple[str, str] | None
) -> None:
    asked: list[tuple[str, str]] = []

    def complete(first: str, last: str) -> list[str]:
        asked.append((first, last))
        return [first]  # the first due period is complete

    assert due_span(**request_) == window
    plan = plan_from_ledger(
        ledger,
        "Job",
        complete=complete,
        strategy="reverse",
        catchup="none",
        task_limit=1,
        **request_,
    )
    assert asked == ([] if window is None else [window])
    done = [] if window is None else [window[0]]
    assert plan == plan_range(done, strategy="reverse", catchup="none", task_limit=1, **request_)


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"start": "2026-10-18", "now": dt.datetime(2026, 10, 23)}, "now"),
        ({"start": "2026-13-01", "now": T0}, "start"),
        ({"start": "2026-10-18", "stop": "2026-10-1", "now": T0}, "stop"),
        ({"start": "2026-10-18", "now": T0, "lateness": "-1h"}, "lateness"),
        ({"start": "2026-10-18", "now": T0, "timezone": "utc"}, "timezone"),
    ],
)
def test_due_span_refuses_bad_input_naming_the_field(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        due_span(**kwargs)
    assert caught.value.field == field


@pytest.mark.parametrize(
    ("value", "period", "field"),
    [
        ("2026-13-01", DAILY, "stop"),
        ("2026-10-25T05:30Z", HOURLY, "start"),
    ],
)
def test_parse_period_key_names_the_given_field(value: str, period: str, field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        parse_period_key(value, period, field)
    assert (caught.value.field, caught.value.value) == (field, value)


def test_intervals_are_held_on_the_one_utc_timezone_object() -> None:
    """The hourly fast path recognises UTC by identity (``tzinfo is timezone.utc``)."""
    for label, period, zone in [
        ("2026-10-25", DAILY, "Europe/Berlin"),
        ("2026-10-25T05:00Z", HOURLY, "UTC"),
    ]:
        span = interval(label, period, zone)
        assert span.start.tzinfo is UTC and span.end.tzinfo is UTC


def test_plan_range_with_a_lateness_beyond_the_calendar_has_nothing_due() -> None:
    plan = plan_range([], start="2026-10-01", now=T0, lateness="999999999d")
    assert (plan.due, plan.contiguous_through, plan.next_due_at) == ((), None, None)
    assert due_span(start="2026-10-01", now=T0, lateness="999999999d") is None


@pytest.mark.parametrize(
    ("limit", "reason"),
    [
        ("3", "expected a whole number or None"),
        (True, "expected a whole number or None"),
        (-1, "negative"),
    ],
)
def test_plan_range_refuses_a_task_limit_naming_it(limit: Any, reason: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        plan_range([], start="2026-10-01", now=T0, task_limit=limit)
    assert (caught.value.field, caught.value.value, caught.value.reason) == (
        "task_limit",
        limit,
        reason,
    )


@pytest.mark.parametrize(
    ("catchup", "canonical", "reason"),
    [
        ("none", "none", None),
        ("last:007", "last:7", None),
        ("last:0", None, "last:N needs a whole number N >= 1"),
        ("last:x", None, "last:N needs a whole number N >= 1"),
        ("some", None, "unknown catch-up policy; expected all, none or last:N"),
        (1, None, "unknown catch-up policy; expected all, none or last:N"),
    ],
)
def test_plan_range_catchup_is_canonical_or_refused_naming_it(
    catchup: Any, canonical: str | None, reason: str | None
) -> None:
    if reason is None:
        assert plan_range([], start="2026-10-01", now=T0, catchup=catchup).catchup == canonical
        return
    with pytest.raises(InvalidInput) as caught:
        plan_range([], start="2026-10-01", now=T0, catchup=catchup)
    assert (caught.value.field, caught.value.value, caught.value.reason) == (
        "catchup",
        catchup,
        reason,
    )


def test_periods_between_refuses_a_stop_before_the_start_naming_both() -> None:
    with pytest.raises(InvalidInput) as caught:
        periods_between("2026-10-02", "2026-10-01")
    assert (caught.value.field, caught.value.value, caught.value.reason) == (
        "stop",
        "2026-10-01",
        "before start 2026-10-02",
    )


# -- every refusal of the period and plan parsers, whole: field, value and reason ---------------
class _NoOffset(dt.tzinfo):
    """A time zone that knows no offset: its datetimes are as naive as those without one."""

    def utcoffset(self, when: dt.datetime | None) -> None:
        return None


NO_OFFSET_TIME = dt.datetime(2026, 10, 25, 5, tzinfo=_NoOffset())
NEG = "negative; a period cannot be due before it ends"
DURATION = "expected a duration such as 2h, 30m, 1d, 90s or 1h30m"
REFUSALS = [  # (call, the whole message the operator reads, field, value)
    (
        lambda: parse_lateness(dt.timedelta(seconds=-1), "late"),
        f"invalid late=-1 day, 23:59:59: {NEG}",
        "late",
        dt.timedelta(seconds=-1),
    ),
    (
        lambda: parse_lateness(7200),
        "invalid lateness=7200: expected a timedelta or a string like 2h, got int",
        "lateness",
        7200,
    ),
    (lambda: parse_lateness(" - 2H", "late"), f"invalid late=' - 2H': {NEG}", "late", " - 2H"),
    (
        lambda: parse_lateness("2 hours", "late"),
        f"invalid late='2 hours': {DURATION}",
        "late",
        "2 hours",
    ),
    (lambda: parse_lateness(" "), f"invalid lateness=' ': {DURATION}", "lateness", " "),
    (
        lambda: parse_lateness("999999999999D", "late"),
        "invalid late='999999999999D': too large",
        "late",
        "999999999999D",
    ),
    (
        lambda: plan_range([], start="2026-10-01", now=T0, strategy="Reverse"),
        "invalid strategy='Reverse': unknown strategy; expected contiguous, forward, reverse",
        "strategy",
        "Reverse",
    ),
    (
        lambda: plan_range([], start="2026-10-01", now=T0, strategy=None),
        "invalid strategy: unknown strategy; expected contiguous, forward, reverse",
        "strategy",
        None,
    ),
    (
        lambda: period_at(10**9, HOURLY),
        "invalid ordinal=1000000000: no hourly period at this position",
        "ordinal",
        10**9,
    ),
    (
        lambda: period_at("1"),
        "invalid ordinal='1': no daily period at this position",
        "ordinal",
        "1",
    ),
    (
        lambda: parse_business_date(dt.datetime(2026, 1, 1), "day"),
        "invalid day=2026-01-01T00:00:00: a datetime is not a business date; pass a date",
        "day",
        dt.datetime(2026, 1, 1),
    ),
    (
        lambda: parse_business_date("2026-02-30", "day"),
        "invalid day='2026-02-30': not a calendar date (day is out of range for month)",
        "day",
        "2026-02-30",
    ),
    (
        lambda: parse_business_date(5, "day"),
        "invalid day=5: expected a date or YYYY-MM-DD string, got int",
        "day",
        5,
    ),
    (
        lambda: periods_between("2026-01-01", "2026-01-02", timezone="Mars/X"),
        "invalid timezone='Mars/X': unknown time zone; expected an IANA name such as Europe/London",
        "timezone",
        "Mars/X",
    ),
    (
        lambda: periods_between("2026-01-01", "2026-01-02", "fortnightly"),
        "invalid period='fortnightly': unknown period; expected one of daily, hourly, weekly, "
        "monthly, quarterly",
        "period",
        "fortnightly",
    ),
    (
        lambda: interval("2026-01-01T05:30Z", HOURLY, field="hour"),
        "invalid hour='2026-01-01T05:30Z': not on an hour boundary",
        "hour",
        "2026-01-01T05:30Z",
    ),
    (
        lambda: interval("2026-02-30T05", HOURLY, field="hour"),
        "invalid hour='2026-02-30T05': not a calendar hour",
        "hour",
        "2026-02-30T05",
    ),
    (
        lambda: interval(dt.date(2026, 1, 1), HOURLY, field="hour"),
        "invalid hour=2026-01-01: a date is not an hour; pass a tz-aware datetime",
        "hour",
        dt.date(2026, 1, 1),
    ),
    (
        lambda: interval("2026-01-01", HOURLY, field="hour"),
        "invalid hour='2026-01-01': expected an hour such as 2026-10-25T05 (UTC, as Luigi writes "
        "it), 2026-10-25T05:00Z or 2026-10-25T06:00+01:00",
        "hour",
        "2026-01-01",
    ),
    (
        lambda: periods_between("2026-01-01", "2026-01-02", timezone=5),
        "invalid timezone=5: expected an IANA time zone name, got int",
        "timezone",
        5,
    ),
    (
        lambda: plan_range([], start="2026-10-02", stop="2026-10-01", now=T0),
        "invalid stop='2026-10-01': before start 2026-10-02",
        "stop",
        "2026-10-01",
    ),
    (
        lambda: period_key("2026-10-25T05:30Z", "day"),
        "invalid day='2026-10-25T05:30Z': not on an hour boundary",
        "day",
        "2026-10-25T05:30Z",
    ),
    (
        lambda: parse_aware_datetime("2026-01-01T00:00", "now"),
        "invalid now='2026-01-01T00:00': no time zone; add an offset such as Z or +01:00",
        "now",
        "2026-01-01T00:00",
    ),
    (
        lambda: parse_aware_datetime("2026-10-25T05:00:00z", "now"),  # only a capital Z is UTC
        "invalid now='2026-10-25T05:00:00z': expected an ISO 8601 timestamp with an offset",
        "now",
        "2026-10-25T05:00:00z",
    ),
    (
        lambda: parse_aware_datetime(5, "now"),
        "invalid now=5: expected a tz-aware datetime, got int",
        "now",
        5,
    ),
    # each parser's default field name
    (
        lambda: parse_business_date("2026-1-1"),
        "invalid business_date='2026-1-1': expected an ISO date YYYY-MM-DD",
        "business_date",
        "2026-1-1",
    ),
    (
        lambda: parse_aware_datetime(NO_OFFSET_TIME, "now"),
        "invalid now=2026-10-25T05:00:00: no time zone; add an offset such as Z or +01:00",
        "now",
        NO_OFFSET_TIME,
    ),
    (
        lambda: parse_hour("2026-01-01T05:30Z"),
        "invalid business_date='2026-01-01T05:30Z': not on an hour boundary",
        "business_date",
        "2026-01-01T05:30Z",
    ),
    (
        lambda: period_ordinal("2026-1-1"),
        "invalid business_date='2026-1-1': expected an ISO date YYYY-MM-DD",
        "business_date",
        "2026-1-1",
    ),
    (
        lambda: parse_label("2026-1-1", DAILY),
        "invalid business_date='2026-1-1': expected an ISO date YYYY-MM-DD",
        "business_date",
        "2026-1-1",
    ),
]


@pytest.mark.parametrize(("call", "message", "field", "value"), REFUSALS)
def test_period_and_plan_refusals_read_as_written(
    call: Any, message: str, field: str, value: Any
) -> None:
    with pytest.raises(InvalidInput) as caught:
        call()
    assert (str(caught.value), caught.value.field, caught.value.value) == (message, field, value)


@pytest.mark.parametrize(("value", "hour"), [("2026-10-25T05", 5), ("2026-10-25T15", 15)])
def test_luigi_hour_form_is_the_utc_hour(value: str, hour: int) -> None:
    label = parse_hour(value)
    assert label == dt.datetime(2026, 10, 25, hour, tzinfo=UTC) and label.tzinfo is UTC


# Instants where the local day's guess is off: Goose Bay repeats 23:00-00:01 on 2001-10-28 (the
# first correction loop runs); Toronto skipped 23:30-00:30 on 1919-03-31, so the local day
# started before its midnight's instant (the second loop runs).
@pytest.mark.parametrize(
    ("zone", "instant"),
    [
        ("America/Goose_Bay", dt.datetime(2001, 10, 28, 3, 1, tzinfo=UTC)),
        ("America/Goose_Bay", dt.datetime(2001, 10, 28, 3, 46, tzinfo=UTC)),
        ("America/Toronto", dt.datetime(1919, 3, 31, 4, 30, tzinfo=UTC)),
        ("America/Toronto", dt.datetime(1919, 3, 31, 4, 45, tzinfo=UTC)),
        ("Europe/Berlin", dt.datetime(2026, 10, 24, 22, 0, tzinfo=UTC)),
        # east of UTC, 2010-03-05 00:00 local came twice (+11 back to +8): the first loop must
        # judge day ends in the business zone, not in UTC
        ("Antarctica/Casey", dt.datetime(2010, 3, 4, 15, 0, tzinfo=UTC)),
    ],
)
def test_last_closed_is_the_latest_day_whose_interval_has_ended(
    zone: str, instant: dt.datetime
) -> None:
    days = [instant.date() + dt.timedelta(days=n) for n in range(-3, 3)]
    ended = [d for d in days if interval(d, DAILY, zone).end <= instant]
    assert last_closed(instant, DAILY, zone) == max(ended)


def test_plan_range_schedules_fifty_gaps_by_default() -> None:
    plan = plan_range([], start="2026-08-01", now=T0)
    assert len(plan.gaps) > 51 and plan.scheduled == plan.gaps[:50]


def test_publication_stored_before_schema_4_reads_its_labels(ledger: gk.Ledger) -> None:
    """Before schema 4 ``required_jobs`` held labels; they are read back as they were."""
    succeed(ledger, "Dim", D, run_id="dim-1")
    ledger.publish("Report", D, ["Dim"], "fp", now=T0)
    with ledger.transaction():
        ledger.execute("UPDATE gk_publications SET required_jobs = ?", ('["Dim", "Feed"]',))
    publication = ledger.publication("Report", D)
    assert publication is not None and publication.required_jobs == ("Dim", "Feed")


# -- PostgreSQL: every writer of a key waits for that key's lock -------------------------------
# On SQLite ``_lock_key`` does nothing (BEGIN IMMEDIATE already serializes every writer), so
# mutmut (SQLite only) cannot see which key a write locks; these cases can. Each holds one key's
# lock in an open transaction and starts a write on another connection: the write must wait for
# exactly that key (and not for another key of the same kind).
def _record(ledger: gk.Ledger) -> Any:
    return ledger.record("Load", D, 1, "load-1", "succeeded", T0)


def _begin(ledger: gk.Ledger) -> Any:
    return ledger.begin_attempt("Load", D, "load-1", lease_seconds=60).attempt


def _publish(ledger: gk.Ledger) -> Any:
    return ledger.publish("Report", D, ["Dim"], "fp")


def _fenced_publish(ledger: gk.Ledger) -> Any:
    return ledger.publish("Report", D, ["Dim"], "fp", producer="pub-1")


@pytest.mark.parametrize(
    ("write", "key"),
    [
        (_record, ("attempt", "Load", D)),
        (_begin, ("attempt", "Load", D)),
        (_publish, ("publication", "Report", D)),
        (_fenced_publish, ("attempt", "Report", D)),  # the fence: the producer's attempt key
    ],
)
def test_postgresql_write_waits_for_its_keys_lock(
    pg_ledger_url: str, write: Any, key: tuple[str, str, str]
) -> None:
    with gk.open_ledger(pg_ledger_url) as holder, gk.open_ledger(pg_ledger_url) as writer:
        succeed(holder, "Dim", D, run_id="dim-1")
        holder.begin_attempt("Report", D, "pub-1", lease_seconds=60)
        other = (key[0], key[1], "2026-10-21")
        for held, waits in [(other, False), (key, True)]:
            ended: list[Any] = []  # the write's result or refusal: only its timing matters here

            def run(ended: list[Any] = ended) -> None:
                try:
                    ended.append(write(writer))
                except gk.GatekeeperError as exc:  # begin_attempt again: LeaseHeld
                    ended.append(exc)

            thread = threading.Thread(target=run)
            with holder.transaction():
                holder.sql.lock_key(*held)
                thread.start()
                thread.join(1.0 if waits else 10.0)
                assert thread.is_alive() is waits, f"{write.__name__} under the lock of {held}"
            thread.join(10.0)
            assert not thread.is_alive() and len(ended) == 1


@pytest.mark.parametrize(
    ("setup", "call", "message", "where"),
    [
        (
            lambda ledger: ledger.record("Load", D, 1, "r1", "succeeded", T0, now=T0),
            lambda ledger: ledger.begin_attempt("Other", D, "r1", lease_seconds=60, now=T0),
            f"run ID r1 already belongs to Load {D} attempt 1; refusing it for Other {D} attempt 0",
            ("Other", D, 0),
        ),
        (
            lambda ledger: ledger.record("Load", D, 2**31 - 1, "r-max", "failed", T0, now=T0),
            lambda ledger: ledger.begin_attempt("Load", D, "r2", lease_seconds=60, now=T0),
            f"Load {D}: attempt 2147483647 is the last ordinal there is",
            ("Load", D, 2**31 - 1),
        ),
    ],
)
def test_begin_attempt_refusals_name_the_attempt_and_write_nothing(
    ledger: gk.Ledger, setup: Any, call: Any, message: str, where: tuple[str, str, int]
) -> None:
    setup(ledger)
    before = snapshot(ledger)
    with pytest.raises(gk.StateConflict) as caught:
        call(ledger)
    assert str(caught.value) == message
    assert (caught.value.job, caught.value.period, caught.value.attempt) == where
    assert snapshot(ledger) == before


# -- republish: every argument reaches the publication, the clock is the database's --------------
def test_republish_is_gated_by_watermarks_and_dated_by_now(ledger: gk.Ledger) -> None:
    succeed(ledger, "Dim", D, run_id="dim-1")
    ledger.publish("Report", D, ["Dim"], "fp", now=T0)
    before = snapshot(ledger)
    end = dt.datetime(2026, 10, 23, tzinfo=UTC)
    behind = Watermarks.parse(end, {"Dim": end - dt.timedelta(minutes=5)})
    with pytest.raises(gk.NotReady):
        ledger.republish("Report", D, ["Dim"], "fp2", reason="late rows", watermarks=behind, now=T0)
    assert snapshot(ledger) == before
    later = T0 + dt.timedelta(hours=3)
    assert ledger.republish("Report", D, ["Dim"], "fp2", reason="late rows", now=later)
    newest = ledger.publication("Report", D)
    assert newest is not None and (newest.revision, newest.published_at) == (2, later)


@pytest.mark.parametrize(
    ("hold", "wait", "what"),
    [
        (
            lambda tx: tx.sql.lock_key(
                "publication", "Report", D
            ),  # PostgreSQL's lock; SQLite: the tx
            lambda ledger: ledger.republish(
                "Report", D, ["Dim"], "fp2", reason="late rows", now=T0
            ),
            f"publication Report {D}",
        ),
        (
            lambda tx: tx.execute(
                "UPDATE gk_attempts SET updated_at = updated_at WHERE run_id = ?", ("load-1",)
            ),  # the attempt's row lock on PostgreSQL
            lambda ledger: ledger.heartbeat("load-1", lease_seconds=60),
            "the lease of run load-1",
        ),
        (
            lambda tx: tx.sql.lock_key("attempt", "Load", D),
            lambda ledger: ledger.begin_attempt("Load", D, "load-2", lease_seconds=60),
            f"attempt Load {D}",
        ),
        (
            lambda tx: tx.sql.lock_key("attempt", "Load", D),
            lambda ledger: ledger.record("Load", D, 1, "load-1", "failed", T0, now=T0),
            f"attempt Load {D}",
        ),
    ],
)
def test_lock_timeout_names_what_the_write_waited_for(
    ledger_url: str, hold: Any, wait: Any, what: str
) -> None:
    sep = "&" if "?" in ledger_url else "?"
    with (
        gk.open_ledger(ledger_url) as holder,
        gk.open_ledger(f"{ledger_url}{sep}busy_timeout=0.2") as waiter,
    ):
        succeed(holder, "Dim", D, run_id="dim-1")
        holder.publish("Report", D, ["Dim"], "fp", now=T0)
        holder.begin_attempt("Load", D, "load-1", lease_seconds=60)
        before = snapshot(holder)
        with holder.transaction():
            hold(holder)
            holder.execute("UPDATE gk_schema SET version = version")
            with pytest.raises(gk.LedgerError) as caught:
                wait(waiter)
        assert snapshot(holder) == before
    assert f"timed out after 0.2s waiting for {what} (busy_timeout)" in str(caught.value)


def test_writes_take_their_time_from_the_database_clock(
    ledger: gk.Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The host clock the write paths could read directly is an hour fast; the database's
    (``db_now``; this host's real clock on SQLite) is right: leases and publications use it."""
    import gatekeeper.ledger.attempts as attempts_module
    import gatekeeper.ledger.publications as publications_module
    from gatekeeper.core.clock import utc_now

    def fast(now: dt.datetime | None = None) -> dt.datetime:
        return utc_now(now) if now is not None else utc_now() + dt.timedelta(hours=1)

    for module in (attempts_module, publications_module):
        if hasattr(module, "utc_now"):
            monkeypatch.setattr(module, "utc_now", fast)
    succeed(ledger, "Dim", D, run_id="dim-1")
    ledger.publish("Report", D, ["Dim"], "fp", now=T0)
    slack = dt.timedelta(seconds=5)  # the database's clock may differ a little from this host's
    started = dt.datetime.now(UTC)
    begun = ledger.begin_attempt("Load", D, "load-1", lease_seconds=60)
    assert begun.lease_expires_at is not None
    assert started - slack <= begun.started_at <= dt.datetime.now(UTC) + slack
    assert begun.lease_expires_at == begun.started_at + dt.timedelta(seconds=60)
    assert ledger.heartbeat("load-1", lease_seconds=600) is True
    assert ledger.republish("Report", D, ["Dim"], "fp2", reason="late rows")
    assert ledger.publish("Summary", D, ["Dim"], "fp")
    assert ledger.record("Other", D, 1, "other-1", "succeeded", T0)
    ended = dt.datetime.now(UTC)
    other = ledger.latest("Other", D)
    assert other is not None and started - slack <= other.updated_at <= ended + slack
    lease = ledger.latest("Load", D)
    assert lease is not None and lease.lease_expires_at is not None
    assert started - slack <= lease.lease_expires_at - dt.timedelta(seconds=600) <= ended + slack
    for consumer in ("Report", "Summary"):
        newest = ledger.publication(consumer, D)
        assert newest is not None and started - slack <= newest.published_at <= ended + slack


def test_write_handle_refusal_names_the_publication(ledger: gk.Ledger) -> None:
    succeed(ledger, "Dim", D, run_id="dim-1")
    before = snapshot(ledger)
    with pytest.raises(gk.GatekeeperError) as caught:
        ledger.publish("Report", D, ["Dim"], "fp", lambda tx: tx.commit(), now=T0)
    assert str(caught.value) == (
        f"publication Report {D}: commit() is not allowed on the write handle: gatekeeper "
        "commits the output together with its publication, or rolls both back; this "
        "publication will be rolled back"
    )
    assert snapshot(ledger) == before


def test_publish_refuses_a_write_that_is_not_callable(ledger: gk.Ledger) -> None:
    succeed(ledger, "Dim", D, run_id="dim-1")
    before = snapshot(ledger)
    with pytest.raises(InvalidInput) as caught:
        ledger.publish("Report", D, ["Dim"], "fp", "INSERT INTO t VALUES (1)", now=T0)
    assert str(caught.value) == (
        "invalid write='INSERT INTO t VALUES (1)': expected a callable taking the write handle"
    )
    assert (caught.value.field, caught.value.value) == ("write", "INSERT INTO t VALUES (1)")
    assert snapshot(ledger) == before


def test_an_unknown_state_is_refused_naming_the_states_there_are(ledger: gk.Ledger) -> None:
    before = snapshot(ledger)
    with pytest.raises(InvalidInput) as caught:
        ledger.record("Load", D, 1, "load-1", "done", T0, now=T0)
    assert str(caught.value) == (
        "invalid state='done': unknown state; expected one of running, succeeded, failed, abandoned"
    )
    assert snapshot(ledger) == before


def test_record_refuses_unstorable_error_text_naming_the_field(ledger: gk.Ledger) -> None:
    """(Not parametrized: mutmut cannot rerun a test whose ID holds a backslash escape.)"""
    before = snapshot(ledger)
    for text in ("a\x00b", "a\ud800b"):
        with pytest.raises(InvalidInput) as caught:
            ledger.record("Load", D, 1, "load-1", "failed", T0, error=text, now=T0)
        assert (caught.value.field, caught.value.value) == ("error", text)
    assert snapshot(ledger) == before


@pytest.mark.parametrize(
    "write",
    [
        lambda ledger: ledger.record(
            "Load", "2026-10-22T05:00Z", 1, "load-2", "succeeded", T0, now=T0
        ),
        lambda ledger: ledger.begin_attempt(
            "Load", "2026-10-22T05:00Z", "load-2", lease_seconds=60, now=T0
        ),
    ],
)
def test_a_job_keeps_one_period_kind_and_the_refusal_names_it(
    ledger: gk.Ledger, write: Any
) -> None:
    ledger.record("Load", D, 1, "load-1", "succeeded", T0, now=T0)
    before = snapshot(ledger)
    with pytest.raises(InvalidInput) as caught:
        write(ledger)
    assert str(caught.value) == (
        f"invalid business_date='2026-10-22T05:00Z': job Load has daily periods (e.g. {D}); "
        "a job keeps one period kind"
    )
    assert snapshot(ledger) == before
