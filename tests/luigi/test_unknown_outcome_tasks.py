"""A real GatedTask whose publication's COMMIT answer is lost (issue 36): in-process Luigi on
a PostgreSQL ledger reached through the losing proxy (``tests/helpers/pg_proxy.py``).

The task succeeds and its attempt is recorded ``succeeded``, the publication naming it, whether
the COMMIT reached the server (its answer dropped: read back, committed) or not (read back, run
again). When even the read-back cannot be made, the attempt is left ``running`` (never
``failed``) and the next run, once the lease expired, finds it succeeded and runs nothing.

A task whose body appends a row through its fenced ledger (issue 48, item 3): its COMMIT's
answer lost, the row is there once and the attempt succeeded; its COMMIT lost before the
server, no row and the attempt failed, saying so.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import PG_DSN, pg_url, succeed
from tests.helpers.luigi_support import build, configure
from tests.helpers.luigi_tasks import ExternalGated, Report
from tests.helpers.pg_proxy import PgProxy, has, pg_proxy

pytestmark = [pytest.mark.luigi, pytest.mark.postgres]

D = dt.date(2026, 10, 23)
JOB = "ExternalGated"


class AppendedRow(gk.BusinessDateTask):
    """Appends one row per run through its body's fenced ledger: no key, so a run recorded
    failed though its row committed would add a second one when run again."""

    def run(self) -> None:
        ledger = self.ledger()
        row = (self.business_date.isoformat(), self.run_id)
        ledger.run_in_transaction(lambda: ledger.execute("INSERT INTO appended VALUES (?, ?)", row))


@pytest.fixture
def proxy() -> Iterator[PgProxy]:
    with pg_proxy(PG_DSN) as opened:
        yield opened


def through(proxy: PgProxy, schema: str, window: float, lease: float) -> Iterator[gk.Ledger]:
    """Luigi configured for the ledger through the proxy; yields the test's direct view."""
    url = f"{proxy.url(pg_url(schema))}&reconnect_window={window:g}"
    options = {"ledger_url": url, "lease_seconds": f"{lease:g}", "lateness": "0s"}
    for _ in configure({**options, "timezone": "UTC"}):
        with gk.open_ledger(pg_url(schema)) as direct:
            for job in ("DimCustomer", "DimProduct"):
                succeed(direct, job, D.isoformat())
            yield direct


@pytest.mark.parametrize("mode", ["answer", "request"])
def test_gated_task_whose_commit_answer_is_lost_succeeds(
    proxy: PgProxy, pg_schema: str, mode: str
) -> None:
    for direct in through(proxy, pg_schema, window=5, lease=30):
        proxy.arm(mode, has("INSERT INTO gk_publications"))
        assert build(ExternalGated(business_date=D)).scheduling_succeeded
        assert proxy.cuts == [mode]
        (only,) = direct.attempts(JOB, D)
        assert only.state is gk.RunState.SUCCEEDED
        (published,) = direct.publications(JOB, D)
        assert (published.run_id, published.attempt) == (only.run_id, 1)


def test_gated_task_whose_outcome_cannot_be_read_back_stays_running(
    proxy: PgProxy, pg_schema: str
) -> None:
    for direct in through(proxy, pg_schema, window=1, lease=1):
        proxy.arm("answer", has("INSERT INTO gk_publications"), then_refuse=True)
        assert not build(ExternalGated(business_date=D)).scheduling_succeeded
        (left,) = direct.attempts(JOB, D)
        assert left.state is gk.RunState.RUNNING  # not failed: its publication committed
        published = direct.publication(JOB, D)
        assert published is not None and published.run_id == left.run_id

        proxy.accept()
        time.sleep(1.5)  # its lease expires by the database's clock
        assert build(ExternalGated(business_date=D)).scheduling_succeeded
        (done,) = direct.attempts(JOB, D)
        assert (done.run_id, done.state) == (left.run_id, gk.RunState.SUCCEEDED)


@pytest.mark.parametrize("mode", ["answer", "request"])
def test_gated_file_task_whose_commit_is_lost_publishes_its_file_once(
    proxy: PgProxy, pg_schema: str, mode: str, tmp_path: Path
) -> None:
    (tmp_path / "content").write_text("date,cents\n2026-10-23,1\n")
    for direct in through(proxy, pg_schema, window=5, lease=30):
        proxy.arm(mode, has("INSERT INTO gk_publications"))
        assert build(Report(business_date=D, folder=str(tmp_path))).scheduling_succeeded
        assert proxy.cuts == [mode]
        (only,) = direct.attempts("Report", D)
        assert only.state is gk.RunState.SUCCEEDED
        (published,) = direct.publications("Report", D)
        final = tmp_path / f"report-{D}.csv"
        assert (published.run_id, published.location) == (only.run_id, str(final))
        assert final.read_text() == "date,cents\n2026-10-23,1\n"
        assert sorted(p.name for p in tmp_path.iterdir()) == ["content", final.name]


@pytest.mark.parametrize("mode", ["answer", "request"])
def test_task_body_write_whose_commit_is_lost_is_read_back(
    proxy: PgProxy, pg_schema: str, mode: str
) -> None:
    for direct in through(proxy, pg_schema, window=5, lease=30):
        with direct.transaction():
            direct.execute("CREATE TABLE appended (business_date TEXT, run_id TEXT)")
        proxy.arm(mode, has("INSERT INTO appended"))
        result = build(AppendedRow(business_date=D))
        assert proxy.cuts == [mode]
        (only,) = direct.attempts("AppendedRow", D)
        written = [tuple(r) for r in direct.read("SELECT business_date, run_id FROM appended")]
        if mode == "answer":  # committed: read back, the attempt succeeded, its row there once
            assert result.scheduling_succeeded
            assert (only.state, written) == (gk.RunState.SUCCEEDED, [(str(D), only.run_id)])
        else:  # not committed: the failure is reported as before, nothing written
            assert not result.scheduling_succeeded
            assert (only.state, written) == (gk.RunState.FAILED, [])
            assert only.error is not None and "it did not commit" in only.error
