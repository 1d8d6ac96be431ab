"""Rules that hand-made mutation testing showed no test held (docs/mutation.md).

Each test names the single-point bug it kills; each was checked to fail with that bug applied
and to pass on the real code. Ledger tests run on both backends (the ``ledger`` fixture).

- greatest attempt wins for *completeness* too: ``completed_periods`` (and so ``bulk_complete``,
  range plans and chunks) agrees with ``complete()`` when a later attempt failed or is running;
- a republish after an upstream repair is a new revision with fresh evidence, even with the
  same fingerprint, location and reason;
- ``--refresh-stale`` never refreshes the range's exclusive ``stop`` date;
- a heartbeat renews ``running`` attempts only, and the heartbeat thread reports the lease lost
  once the attempt is recorded finished or abandoned;
- a test that hangs fails (pytest-timeout) instead of holding CI to its own limit.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator
from typing import Any

import pytest

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad, DimCustomer
from gatekeeper.core.readiness import Watermarks
from gatekeeper.luigi import lease
from gatekeeper.luigi.lease import Heartbeat
from tests.helpers.ledgers import T0, snapshot, succeed
from tests.helpers.luigi_support import build
from tests.helpers.luigi_tasks import Trivial

UTC = dt.timezone.utc
D = "2026-10-22"

# -- greatest attempt wins for completeness ---------------------------------------------------
# Kills: completed_periods taking MAX(attempt) over succeeded attempts only.
# (states of attempts 1..n of one date, complete?)
HISTORIES: list[tuple[tuple[str, ...], bool]] = [
    ((), False),
    (("succeeded",), True),
    (("failed",), False),
    (("running",), False),
    (("succeeded", "failed"), False),
    (("succeeded", "running"), False),
    (("succeeded", "abandoned"), False),
    (("failed", "succeeded"), True),
    (("succeeded", "failed", "succeeded"), True),
    (("succeeded", "succeeded", "failed"), False),
]
DATES = [(dt.date(2026, 10, 1) + dt.timedelta(days=i)).isoformat() for i in range(len(HISTORIES))]


def record_histories(ledger: gk.Ledger, job: str) -> set[str]:
    """Record HISTORIES for ``job``, one date each; return the dates that must be complete."""
    for day, (states, _) in zip(DATES, HISTORIES, strict=True):
        for number, state in enumerate(states, start=1):
            ledger.record(job, day, number, f"{job}-{day}-{number}", state, T0)
    return {day for day, (_, done) in zip(DATES, HISTORIES, strict=True) if done}


def test_completed_periods_counts_only_a_succeeded_latest_attempt(ledger: gk.Ledger) -> None:
    expected = record_histories(ledger, "Load")
    assert ledger.completed_periods("Load", DATES[0], DATES[-1]) == expected
    for day in DATES:  # the same rule as readiness, date by date
        assert (day in expected) is bool(gk.check_ready(ledger, ["Load"], day))


def test_completed_periods_with_consumer_needs_the_latest_attempt_succeeded(
    ledger: gk.Ledger,
) -> None:
    """A publication made while attempt 1 stood does not make a failed attempt 2 complete."""
    for day in DATES[:3]:
        succeed(ledger, "Up", day)
        ledger.record("Report", day, 1, f"report-{day}-1", "succeeded", T0)
        ledger.publish("Report", day, ["Up"], f"fp-{day}")
    ledger.record("Report", DATES[1], 2, "report-2-2", "failed", T0)
    ledger.record("Report", DATES[2], 2, "report-3-2", "running", T0)
    assert ledger.completed_periods("Report", DATES[0], DATES[2], consumer="Report") == {DATES[0]}


def test_bulk_complete_and_range_plan_agree_with_complete(ledger_cfg: gk.Ledger) -> None:
    expected = record_histories(ledger_cfg, "Trivial")
    one_by_one = {
        day for day in DATES if Trivial(business_date=dt.date.fromisoformat(day)).complete()
    }
    assert one_by_one == expected
    bulk = Trivial.bulk_complete([dt.date.fromisoformat(day) for day in DATES])
    assert {d.isoformat() for d in bulk} == expected
    now = int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp())
    plan = gk.RangeBusinessDaily(
        of=Trivial,
        start=dt.date.fromisoformat(DATES[0]),
        stop=dt.date.fromisoformat(DATES[-1]) + dt.timedelta(days=1),
        now=now,
    ).plan()
    assert {d.isoformat() for d in plan.gaps} == set(DATES) - expected


# -- a republish after an upstream repair ---------------------------------------------------
# Kills: _same_revision without its evidence comparison.
def test_republish_after_upstream_repair_is_a_new_revision_with_fresh_evidence(
    ledger: gk.Ledger,
) -> None:
    first = succeed(ledger, "Dim", D)
    assert ledger.publish("Report", D, ["Dim"], "fp") is True
    assert ledger.republish("Report", D, ["Dim"], "fp", reason="late rows") is True
    repaired = succeed(ledger, "Dim", D, attempt=2)
    assert [s.new_run_id for s in ledger.stale("Report")] == [repaired]
    written: list[int] = []

    assert (
        ledger.republish(
            "Report", D, ["Dim"], "fp", lambda tx: written.append(1), reason="late rows"
        )
        is True
    )

    assert written == [1]
    revisions = ledger.publications("Report", D)
    assert [(p.revision, p.evidence["Dim"]) for p in revisions] == [
        (3, repaired),
        (2, first),
        (1, first),
    ]
    assert ledger.stale("Report") == []
    rows = snapshot(ledger)  # and now it is a retry: nothing written, write not called
    assert (
        ledger.republish(
            "Report", D, ["Dim"], "fp", lambda tx: written.append(2), reason="late rows"
        )
        is False
    )
    assert snapshot(ledger) == rows and written == [1]


# what differs from revision 2 (fingerprint "fp", location None, reason "late", evidence a1)
SAME_REVISION = [
    ({}, False, False),
    ({"fingerprint": "fp2"}, False, True),
    ({"location": "/out/report.csv"}, False, True),
    ({"reason": "other"}, False, True),
    ({}, True, True),
]


@pytest.mark.parametrize(("change", "repair", "new_revision"), SAME_REVISION)
def test_republish_is_a_retry_only_when_everything_is_the_same(
    ledger: gk.Ledger, change: dict[str, str], repair: bool, new_revision: bool
) -> None:
    succeed(ledger, "Dim", D)
    ledger.publish("Report", D, ["Dim"], "fp")
    ledger.republish("Report", D, ["Dim"], "fp", reason="late")
    if repair:
        succeed(ledger, "Dim", D, attempt=2)
    kwargs: dict[str, Any] = {"fingerprint": "fp", "reason": "late", **change}
    rows = snapshot(ledger)

    assert ledger.republish("Report", D, ["Dim"], **kwargs) is new_revision

    assert len(ledger.publications("Report", D)) == (3 if new_revision else 2)
    if not new_revision:
        assert snapshot(ledger) == rows


# -- --refresh-stale and the exclusive stop ---------------------------------------------------
# Kills: stale_refreshes comparing with ``<= last``.
def test_refresh_stale_leaves_the_exclusive_stop_date_alone(ledger_cfg: gk.Ledger) -> None:
    start, stop = dt.date(2026, 10, 1), dt.date(2026, 10, 3)
    days = [start + dt.timedelta(days=i) for i in range(3)]  # the 3rd is the stop date
    assert build(*[DailySalesLoad(business_date=day) for day in days]).scheduling_succeeded
    assert build(DimCustomer(business_date=stop, attempt=2)).scheduling_succeeded
    now = int(dt.datetime(2026, 11, 1, tzinfo=UTC).timestamp())

    def window(first: dt.date = start) -> gk.RangeBusinessDaily:
        return gk.RangeBusinessDaily(
            of=DailySalesLoad, start=first, stop=stop, now=now, refresh_stale=True
        )

    assert [s.business_date for s in ledger_cfg.stale("DailySalesLoad")] == [stop.isoformat()]
    assert window().stale_refreshes() == []
    assert window().complete()
    assert build(DimCustomer(business_date=start, attempt=2)).scheduling_succeeded
    refreshes = window().stale_refreshes()
    assert [(t.business_date, t.republish_reason) for t in refreshes] == [
        (start, "upstream repaired: DimCustomer attempt 2")
    ]
    assert window(days[1]).stale_refreshes() == []  # start inclusive, stop exclusive
    rows = snapshot(ledger_cfg)["gk_publications"]
    assert build(window()).scheduling_succeeded
    published = {
        day: [p.revision for p in ledger_cfg.publications("DailySalesLoad", day)] for day in days
    }
    assert published == {days[0]: [2, 1], days[1]: [1], days[2]: [1]}
    assert len(snapshot(ledger_cfg)["gk_publications"]) == len(rows) + 1


# -- heartbeats renew running attempts only ---------------------------------------------------
# Kills: heartbeat accepting any non-abandoned state.
@pytest.mark.parametrize("state", ["succeeded", "failed"])
def test_heartbeat_never_puts_a_lease_on_a_finished_attempt(ledger: gk.Ledger, state: str) -> None:
    began = ledger.begin_attempt("Load", D, "run-1", lease_seconds=60, now=T0)
    ledger.record("Load", D, 1, "run-1", state, began.started_at, now=T0)
    later = T0 + dt.timedelta(seconds=30)

    assert ledger.heartbeat("run-1", lease_seconds=600, now=later) is False

    ended = ledger.latest("Load", D)
    assert ended is not None and ended.state.value == state
    assert ended.lease_expires_at is None and ended.updated_at == T0
    # nothing holds the key: the next attempt starts at once, even "before" the old lease end
    nxt = ledger.begin_attempt("Load", D, "run-2", lease_seconds=60, now=later)
    assert nxt.attempt == 2


@pytest.fixture
def heartbeat_url(ledger_url: str, ledger: gk.Ledger) -> Iterator[str]:
    """The ledger's URL; closes the heartbeat connection Heartbeat opens for it."""
    yield ledger_url
    opened = lease._connections.pop((os.getpid(), ledger_url), None)
    if opened is not None:
        opened.close()


@pytest.mark.parametrize("state", ["succeeded", "failed", "abandoned"])
def test_heartbeat_thread_reports_the_lease_lost_once_the_attempt_ended(
    ledger: gk.Ledger, heartbeat_url: str, state: str
) -> None:
    lease_seconds = 0.3  # beats every 0.1 s
    began = ledger.begin_attempt("Load", D, "run-1", lease_seconds=lease_seconds)
    with Heartbeat(heartbeat_url, "run-1", lease_seconds) as beating:
        if state == "abandoned":  # a later attempt takes over once the lease has expired
            ledger.begin_attempt(
                "Load", D, "run-2", lease_seconds=60, now=began.started_at + dt.timedelta(hours=1)
            )
        else:
            ledger.record("Load", D, 1, "run-1", state, began.started_at)
        assert beating.lost.wait(timeout=10), f"lease of a {state} attempt not reported lost"
    first = ledger.attempts("Load", D)[0]
    assert first.state.value == state
    if state != "abandoned":
        assert first.lease_expires_at is None


def test_heartbeat_thread_keeps_a_running_lease(ledger: gk.Ledger, heartbeat_url: str) -> None:
    """The other side of the rule: a running attempt's lease is renewed, not reported lost."""
    began = ledger.begin_attempt("Load", D, "run-1", lease_seconds=0.3)
    with Heartbeat(heartbeat_url, "run-1", 0.3) as beating:
        assert not beating.lost.wait(timeout=1.0)
    renewed = ledger.latest("Load", D)
    assert renewed is not None and renewed.state is gk.RunState.RUNNING
    assert renewed.lease_expires_at is not None and began.lease_expires_at is not None
    assert renewed.lease_expires_at > began.lease_expires_at


# -- a hang is a failure -------------------------------------------------------------------------
def test_every_test_has_a_timeout(request: pytest.FixtureRequest) -> None:
    """pytest-timeout is installed and on by default (setup.cfg), so a livelock fails with a
    stack trace instead of running until CI's own limit."""
    assert request.config.pluginmanager.hasplugin("timeout")
    assert float(request.config.getini("timeout")) == 120


# -- readiness: what a refusal says (mutmut survivors in readiness.py) -------------------------
END = dt.datetime(2026, 10, 23, tzinfo=UTC)  # end of D's interval in UTC


def test_not_ready_names_the_date_the_attempt_and_the_watermark(ledger: gk.Ledger) -> None:
    succeed(ledger, "Feed", D)
    seen = END - dt.timedelta(minutes=5)
    marks = Watermarks.parse(END, {"Feed": seen, "Other": None})
    succeed(ledger, "Other", D)
    rows = snapshot(ledger)

    with pytest.raises(gk.NotReady) as caught:
        ledger.publish("Report", D, ["Feed", "Other"], "fp", watermarks=marks)

    readiness = caught.value.readiness
    assert readiness.business_date == D and readiness.blockers == {
        "Feed": "watermark",
        "Other": "watermark",
    }
    assert readiness.details == {
        "Feed": f"watermark {seen.isoformat()} < required {END.isoformat()}",
        "Other": f"watermark none < required {END.isoformat()}",
    }
    assert str(caught.value) == (
        f"{D}: not ready, blocked by Feed (attempt 1 watermark {seen.isoformat()} < required "
        f"{END.isoformat()}), Other (attempt 1 watermark none < required {END.isoformat()})"
    )
    assert snapshot(ledger) == rows
    assert gk.check_ready(ledger, ["Feed"], D).business_date == D


@pytest.mark.parametrize(
    ("required", "observed", "field"),
    [
        ("2026-10-23T00:00:00", {}, "watermark_required"),  # naive: no offset
        (END, {"": END}, "watermarks[]"),
        (END, {"Feed": "yesterday"}, "watermarks[Feed]"),
    ],
)
def test_watermarks_parse_names_the_refused_field(
    required: Any, observed: dict[str, Any], field: str
) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        Watermarks.parse(required, observed)
    assert caught.value.field == field


# -- the --json records, exactly (mutmut survivors in records.py: only the CLI subprocess tests
# read them, and those run the unmutated package) ---------------------------------------------
def test_records_to_json_is_the_documented_shape(ledger: gk.Ledger) -> None:
    began = ledger.begin_attempt("Dim", D, "dim-1", lease_seconds=60, now=T0)
    ledger.record("Dim", D, 1, "dim-1", "succeeded", T0, now=T0)
    ledger.record("Dim", "2026-10-21", 1, "dim-0", "failed", T0, error="boom", now=T0)
    assert began.to_json()["lease_expires_at"] == (T0 + dt.timedelta(seconds=60)).isoformat()
    attempt = ledger.latest("Dim", "2026-10-21")
    assert attempt is not None and attempt.to_json() == {
        "job": "Dim",
        "business_date": "2026-10-21",
        "attempt": 1,
        "run_id": "dim-0",
        "state": "failed",
        "started_at": T0.isoformat(),
        "updated_at": T0.isoformat(),
        "lease_expires_at": None,
        "error": "boom",
    }
    marks = Watermarks.parse(END, {"Dim": END})
    assert ledger.publish(
        "Report", D, ["Dim"], "fp", watermarks=marks, location="/out/r.csv", now=T0
    )
    publication = ledger.publication("Report", D)
    assert publication is not None and publication.to_json() == {
        "consumer": "Report",
        "business_date": D,
        "revision": 1,
        "fingerprint": "fp",
        "required_jobs": ["Dim"],
        "evidence": {"Dim": "dim-1"},
        "evidence_attempts": {"Dim": 1},
        "watermarks": {"Dim": END.isoformat()},
        "published_at": T0.isoformat(),
        "reason": None,
        "location": "/out/r.csv",
        "run_id": None,
        "attempt": None,
    }
    succeed(ledger, "Dim", D, attempt=2, run_id="dim-2")
    [stale] = ledger.stale("Report")
    assert stale.to_json() == {
        "consumer": "Report",
        "business_date": D,
        "revision": 1,
        "job": "Dim",
        "job_date": D,
        "old_run_id": "dim-1",
        "old_attempt": 1,
        "new_run_id": "dim-2",
        "new_attempt": 2,
    }
    readiness = gk.check_ready(ledger, ["Dim", "Other"], D)
    assert readiness.to_json() == {
        "business_date": D,
        "ready": False,
        "required": ["Dim", "Other"],
        "evidence": {"Dim": "dim-2"},
        "blockers": {"Other": "missing"},
        "attempts": {"Dim": 2},
        "details": {},
    }


# -- staleness: one entry per (date, upstream) (mutmut survivors in ledger/staleness.py) -------
def test_stale_lists_every_repaired_upstream_of_every_date(ledger: gk.Ledger) -> None:
    days = ["2026-10-21", D]
    for day in days:  # the same revision and the same upstreams on both dates
        for job in ("Dim", "Fact"):
            succeed(ledger, job, day, run_id=f"{job}-{day}-1")
        ledger.publish("Report", day, ["Dim", "Fact"], f"fp-{day}")
        for job in ("Dim", "Fact"):
            succeed(ledger, job, day, attempt=2, run_id=f"{job}-{day}-2")
    found = [(s.business_date, s.job, s.old_run_id, s.new_run_id) for s in ledger.stale("Report")]
    assert found == [
        (day, job, f"{job}-{day}-1", f"{job}-{day}-2") for day in days for job in ("Dim", "Fact")
    ]
    assert [s.business_date for s in ledger.stale("Report", since=D)] == [D, D]


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"consumer": ""}, "consumer"),
        ({"consumer": "Report", "since": "2026-13-01"}, "since"),
    ],
)
def test_stale_names_the_refused_field(
    ledger: gk.Ledger, kwargs: dict[str, Any], field: str
) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        ledger.stale(**kwargs)
    assert caught.value.field == field


def test_a_job_without_a_declared_watermark_is_not_blocked_by_one(ledger: gk.Ledger) -> None:
    succeed(ledger, "Feed", D, run_id="feed-1")
    succeed(ledger, "Dim", D, run_id="dim-1")
    marks = Watermarks.parse(END, {"Feed": END})  # Dim declares none
    assert ledger.publish("Report", D, ["Dim", "Feed"], "fp", watermarks=marks)
    publication = ledger.publication("Report", D)
    assert publication is not None and publication.evidence == {"Dim": "dim-1", "Feed": "feed-1"}


def test_stale_lists_a_shared_upstream_date_once_per_publication(ledger: gk.Ledger) -> None:
    """Two dates' publications (both revision 1) rest on the same upstream date: both stale."""
    succeed(ledger, "Dim", "2026-10-20", run_id="dim-20-1")
    days = ["2026-10-21", D]
    for day in days:
        ledger.publish("Weekly", day, [("Dim", "2026-10-20")], f"fp-{day}")
    succeed(ledger, "Dim", "2026-10-20", attempt=2, run_id="dim-20-2")
    found = [
        (s.business_date, s.revision, s.job_date, s.new_run_id) for s in ledger.stale("Weekly")
    ]
    assert found == [(day, 1, "2026-10-20", "dim-20-2") for day in days]
