"""A heartbeat renews ``running`` attempts only, and the heartbeat thread reports the lease
lost once the attempt is recorded finished or abandoned. Both backends.

A ``Fails if`` comment names the single-point bug its test was checked to fail with (and to
pass without): hand-made mutation testing, docs/mutation.md."""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Iterator

import pytest

import gatekeeper as gk
from gatekeeper.luigi import lease
from gatekeeper.luigi.lease import Heartbeat
from tests.helpers.ledgers import T0

D = "2026-10-22"


# -- heartbeats renew running attempts only ---------------------------------------------------
# Fails if heartbeat accepted any non-abandoned state.
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
