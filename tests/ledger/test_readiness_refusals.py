"""What a readiness refusal says: the date, the attempt and the watermark; and a job that
declares no watermark is not blocked by one. Both backends."""

from __future__ import annotations

import datetime as dt

import pytest

import gatekeeper as gk
from gatekeeper.core.readiness import Watermarks
from tests.helpers.ledgers import snapshot, succeed

UTC = dt.timezone.utc


D = "2026-10-22"


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


def test_a_job_without_a_declared_watermark_is_not_blocked_by_one(ledger: gk.Ledger) -> None:
    succeed(ledger, "Feed", D, run_id="feed-1")
    succeed(ledger, "Dim", D, run_id="dim-1")
    marks = Watermarks.parse(END, {"Feed": END})  # Dim declares none
    assert ledger.publish("Report", D, ["Dim", "Feed"], "fp", watermarks=marks)
    publication = ledger.publication("Report", D)
    assert publication is not None and publication.evidence == {"Dim": "dim-1", "Feed": "feed-1"}
