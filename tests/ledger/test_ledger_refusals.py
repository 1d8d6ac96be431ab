"""The ledger's refusals: the message the operator reads, the attempt (or publication) the
exception names, and nothing written. On both backends (the ``ledger`` fixture)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import (
    Interval,
    interval,
    period_from_key,
)
from tests.helpers.ledgers import T0, snapshot, succeed

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


@pytest.mark.parametrize(
    ("call", "field", "value", "reason"),
    [
        (lambda ledger: ledger.history(""), "job", "", None),
        (lambda ledger: ledger.attempts("", D), "job", "", None),
        (lambda ledger: ledger.publications(" ", D), "consumer", " ", None),
        (lambda ledger: ledger.publication("", D), "consumer", "", None),
        (lambda ledger: ledger.has_published(""), "consumer", "", None),
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
