"""The write paths take their time from the database's clock, not the host's."""

from __future__ import annotations

import datetime as dt

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import T0, succeed

UTC = dt.timezone.utc


D = "2026-10-22"


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
