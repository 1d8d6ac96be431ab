"""Late data: watermark gates, explicit republish with revisions, stale publications."""

from __future__ import annotations

import datetime as dt
import json
import logging
import subprocess
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from example_pipelines.sales import DailySalesLoad, DimCustomer
from gatekeeper.core.gate import Watermarks
from tests.helpers.in_process import gatekeeper_in_process
from tests.helpers.ledgers import T0, count_rows, snapshot, succeed
from tests.helpers.luigi_support import build, failures_of
from tests.helpers.luigi_tasks import FeedReport

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

UTC = dt.timezone.utc
D = "2026-10-24"
END = dt.datetime(2026, 10, 25, tzinfo=UTC)  # end of the 24th's interval in UTC
TICK = dt.timedelta(microseconds=1)


@pytest.mark.parametrize(
    ("seen", "ready"), [(END - TICK, False), (END, True), (END + TICK, True), (None, False)]
)
def test_watermark_gate_half_open(ledger: gk.Ledger, seen: dt.datetime | None, ready: bool) -> None:
    run_id = succeed(ledger, "Feed", D)
    marks = Watermarks.parse(END, {"Feed": seen})
    readiness = ledger.readiness(["Feed"], D, marks)
    assert readiness.ready is ready
    if not ready:
        assert readiness.blockers == {"Feed": "watermark"}
        assert "required 2026-10-25T00:00:00+00:00" in readiness.describe_blockers()
        rows = snapshot(ledger)
        with pytest.raises(gk.NotReady, match="watermark"):
            ledger.publish("Report", D, ["Feed"], "fp", watermarks=marks)
        assert snapshot(ledger) == rows
    else:
        assert readiness.evidence == {"Feed": run_id}
        assert ledger.publish("Report", D, ["Feed"], "fp", watermarks=marks)
        pub = ledger.publication("Report", D)
        assert pub is not None and pub.items[0].watermark == seen


def test_watermark_in_other_time_zone_is_compared_as_an_instant(ledger: gk.Ledger) -> None:
    succeed(ledger, "Feed", D)
    tokyo = dt.timezone(dt.timedelta(hours=9))
    assert ledger.readiness(["Feed"], D, Watermarks.parse(END, {"Feed": END.astimezone(tokyo)}))
    with pytest.raises(gk.InvalidInput, match="watermarks"):
        Watermarks.parse(END, {"Feed": dt.datetime(2026, 10, 25)})


@pytest.mark.parametrize("reason", [None, "", "   "])
def test_republish_needs_a_reason(ledger: gk.Ledger, reason: Any) -> None:
    succeed(ledger, "A", D)
    ledger.publish("C", D, ["A"], "fp1")
    rows = snapshot(ledger)
    with pytest.raises(gk.InvalidInput, match="reason"):
        ledger.republish("C", D, ["A"], "fp2", reason=reason)
    assert snapshot(ledger) == rows


def test_publish_after_republish_with_old_fingerprint_conflicts(ledger: gk.Ledger) -> None:
    succeed(ledger, "A", D)
    assert ledger.publish("C", D, ["A"], "fp1")
    assert ledger.republish("C", D, ["A"], "fp2", reason="late conversions")
    rows = snapshot(ledger)
    with pytest.raises(gk.PublicationConflict, match="fingerprint"):
        ledger.publish("C", D, ["A"], "fp1")
    assert ledger.publish("C", D, ["A"], "fp2") is False  # a retry of the newest revision
    assert snapshot(ledger) == rows


def test_revision_history_intact_after_three_republishes(ledger: gk.Ledger) -> None:
    runs = [succeed(ledger, "A", D, attempt=1)]
    ledger.publish("C", D, ["A"], "fp1")
    for n in (2, 3, 4):
        runs.append(succeed(ledger, "A", D, attempt=n))
        assert ledger.republish("C", D, ["A"], f"fp{n}", reason=f"correction {n}")
    assert ledger.republish("C", D, ["A"], "fp4", reason="correction 4") is False  # retry
    revisions = ledger.publications("C", D)
    assert [(p.revision, p.fingerprint, p.reason) for p in revisions] == [
        (4, "fp4", "correction 4"),
        (3, "fp3", "correction 3"),
        (2, "fp2", "correction 2"),
        (1, "fp1", None),
    ]
    assert [p.evidence["A"] for p in revisions] == runs[::-1]


def test_republish_writes_output_and_evidence_together(ledger: gk.Ledger) -> None:
    with ledger.transaction():
        ledger.execute("CREATE TABLE totals (business_date TEXT, revision INTEGER)")
    succeed(ledger, "A", D)
    ledger.publish("C", D, ["A"], "fp1")

    def failing(conn: Any) -> None:
        ledger.execute("INSERT INTO totals VALUES (?, ?)", (D, 2))
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        ledger.republish("C", D, ["A"], "fp2", failing, reason="late")
    assert count_rows(ledger, "totals") == 0 and len(ledger.publications("C", D)) == 1


def test_repaired_upstream_marks_exactly_dependent_dates_stale(ledger: gk.Ledger) -> None:
    dates = ["2026-10-22", "2026-10-23", "2026-10-24"]
    first = {}
    for day in dates:
        first[day] = succeed(ledger, "Dim", day)
        succeed(ledger, "Other", day)
        ledger.publish("Report", day, ["Dim", "Other"], f"fp-{day}")
    assert ledger.stale("Report") == []
    ledger.record("Dim", "2026-10-22", 2, "dim-22-2", "failed", T0)  # a failed repair: not stale
    repaired = succeed(ledger, "Dim", "2026-10-23", attempt=2)
    found = ledger.stale("Report")
    assert [(s.business_date, s.job, s.old_run_id, s.new_run_id, s.new_attempt) for s in found] == [
        ("2026-10-23", "Dim", first["2026-10-23"], repaired, 2)
    ]
    assert found[0].reason == "upstream repaired: Dim attempt 2"
    assert ledger.stale("Report", since="2026-10-24") == []


def test_luigi_watermark_blocks_until_the_source_reaches_the_period_end(
    ledger_cfg: gk.Ledger, tmp_path: Path
) -> None:
    day = dt.date(2026, 10, 24)
    task = FeedReport(business_date=day, control=str(tmp_path))
    (tmp_path / "watermark").write_text((END - TICK).isoformat())
    messages = failures_of(task)
    assert len(messages) == 1 and "watermark" in messages[0] and "< required" in messages[0]
    assert ledger_cfg.publication("FeedReport", day) is None
    assert ledger_cfg.attempts("FeedReport", day) == []
    (tmp_path / "watermark").write_text(END.isoformat())
    assert build(FeedReport(business_date=day, control=str(tmp_path))).scheduling_succeeded
    pub = ledger_cfg.publication("FeedReport", day)
    assert pub is not None and pub.items[0].watermark == END


def test_luigi_republish_reason_creates_a_revision_once(ledger_cfg: gk.Ledger) -> None:
    day = dt.date(2026, 10, 24)
    assert build(DailySalesLoad(business_date=day)).scheduling_succeeded
    assert build(DimCustomer(business_date=day, attempt=2)).scheduling_succeeded
    fix = DailySalesLoad(business_date=day, republish_reason="late conversions")
    assert not fix.complete()
    assert build(fix).scheduling_succeeded
    rows = snapshot(ledger_cfg)
    assert build(
        DailySalesLoad(business_date=day, republish_reason="late conversions")
    ).scheduling_succeeded
    assert snapshot(ledger_cfg) == rows
    revisions = ledger_cfg.publications("DailySalesLoad", day)
    assert [(p.revision, p.reason) for p in revisions] == [(2, "late conversions"), (1, None)]
    latest = ledger_cfg.latest("DimCustomer", day)
    assert latest is not None and revisions[0].evidence["DimCustomer"] == latest.run_id


def test_refresh_stale_republishes_exactly_the_stale_dates(
    ledger_cfg: gk.Ledger, sqlite_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    start, stop = dt.date(2026, 10, 1), dt.date(2026, 10, 6)
    now = int(dt.datetime(2026, 11, 1, tzinfo=UTC).timestamp())

    def fill(refresh: bool) -> Any:
        return build(
            gk.RangeBusinessDaily(
                of=DailySalesLoad, start=start, stop=stop, now=now, refresh_stale=refresh
            )
        )

    assert fill(False).scheduling_succeeded
    assert build(DimCustomer(business_date=dt.date(2026, 10, 3), attempt=2)).scheduling_succeeded
    stale = ledger_cfg.stale("DailySalesLoad")
    assert [s.business_date for s in stale] == ["2026-10-03"]
    assert gk.RangeBusinessDaily(of=DailySalesLoad, start=start, stop=stop, now=now).complete()
    assert not gk.RangeBusinessDaily(
        of=DailySalesLoad, start=start, stop=stop, now=now, refresh_stale=True
    ).complete()
    with caplog.at_level(logging.INFO, logger="luigi-interface.gatekeeper"):
        assert fill(True).scheduling_succeeded
    closing = [r.getMessage() for r in caplog.records if "filled 5/5 due" in r.getMessage()]
    assert closing == [  # the republication is this run's work, and said so
        "gatekeeper: RangeBusinessDaily DailySalesLoad: filled 5/5 due (0 this run); "
        "republished 1 stale (DailySalesLoad 1)"
    ]
    for day in ("2026-10-01", "2026-10-02", "2026-10-04", "2026-10-05"):
        assert [p.revision for p in ledger_cfg.publications("DailySalesLoad", day)] == [1]
    fixed = ledger_cfg.publications("DailySalesLoad", "2026-10-03")
    assert [(p.revision, p.reason) for p in fixed] == [
        (2, "stale: upstream DimCustomer 2026-10-03 attempt 1 → 2"),
        (1, None),
    ]
    assert ledger_cfg.stale("DailySalesLoad") == []
    rows = snapshot(ledger_cfg)
    assert fill(True).scheduling_succeeded  # a second run does nothing
    assert snapshot(ledger_cfg) == rows


def test_cli_stale_and_evidence_show_revisions(sqlite_url: str) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        old = succeed(ledger, "Dim", D)
        ledger.publish("Report", D, ["Dim"], "fp1", watermarks=Watermarks.parse(END, {"Dim": END}))
        new = succeed(ledger, "Dim", D, attempt=2)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return gatekeeper_in_process("--ledger", sqlite_url, *args)

    stale = cli("stale", "Report", "--json")
    assert stale.returncode == 1
    assert [(s["old_run_id"], s["new_run_id"]) for s in json.loads(stale.stdout)] == [(old, new)]
    shown = cli("stale", "Report")  # the table names the upstream's period and its attempts
    header, row = shown.stdout.splitlines()[:2]
    assert header.split() == [
        "date", "revision", "upstream", "upstream", "period", "old", "attempt", "old", "run_id",
        "new", "attempt", "new", "run_id",
    ]  # fmt: skip
    assert row.split() == [D, "1", "Dim", D, "1", old, "2", new]
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.republish("Report", D, ["Dim"], "fp2", reason="upstream repaired: Dim attempt 2")
    assert cli("stale", "Report").returncode == 0
    shown = cli("evidence", "Report", D)
    assert "revision 2" in shown.stdout and "revision 1" in shown.stdout
    assert "reason: upstream repaired: Dim attempt 2" in shown.stdout
    assert END.isoformat() in shown.stdout
