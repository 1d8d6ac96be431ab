"""A Delta reservation's lost COMMIT is read back too (issue 36): reserve, claim, commit and
release, each through the real TCP proxy in front of PostgreSQL that drops the server's
answer to the COMMIT (``answer``) or the COMMIT itself (``request``). Afterwards the ledger
holds exactly one outcome, the one a call whose answer arrived would have left."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import PG_DSN, pg_url, succeed
from tests.helpers.pg_proxy import PgProxy, has, pg_proxy

pytestmark = pytest.mark.postgres

D = "2026-10-23"
CONSUMER = "DeltaSales"
UPSTREAM = ("DimCustomer",)
MODES = ["answer", "request"]


@pytest.fixture
def proxy() -> Iterator[PgProxy]:
    with pg_proxy(PG_DSN) as opened:
        yield opened


@pytest.fixture
def direct(pg_schema: str) -> Iterator[gk.Ledger]:
    with gk.open_ledger(pg_url(pg_schema)) as opened:
        for job in UPSTREAM:
            succeed(opened, job, D)
        yield opened


def proxied(proxy: PgProxy, schema: str) -> gk.Ledger:
    return gk.open_ledger(f"{proxy.url(pg_url(schema))}&reconnect_window=5")


def reserve(ledger: gk.Ledger) -> object:
    return ledger.reservations.reserve(
        CONSUMER, D, UPSTREAM, "fp-1", producer="run-1", location="s3://t", table_version=None
    )


@pytest.mark.parametrize("mode", MODES)
def test_lost_reserve_commit_is_read_back_to_one_reservation(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, mode: str
) -> None:
    with proxied(proxy, pg_schema) as ledger:
        ledger.begin_attempt(CONSUMER, D, "run-1", lease_seconds=60)
        proxy.arm(mode, has("INSERT INTO gk_reservations"))
        found = ledger.reservations.reserve(
            CONSUMER, D, UPSTREAM, "fp-1", producer="run-1", location="s3://t"
        )
        assert proxy.cuts == [mode]
    (only,) = direct.reservations.of(CONSUMER, D)
    assert (only.revision, only.fingerprint, only.committed) == (1, "fp-1", False)
    assert found.revision == only.revision


@pytest.mark.parametrize("mode", MODES)
def test_lost_claim_commit_is_read_back(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, mode: str
) -> None:
    direct.begin_attempt(CONSUMER, D, "run-1", lease_seconds=60)
    pending = reserve(direct)
    with proxied(proxy, pg_schema) as ledger:
        proxy.arm(mode, has("UPDATE gk_reservations SET producer_run_id"))
        claimed = ledger.reservations.claim(
            CONSUMER,
            D,
            pending.revision,
            producer="run-1",
            table_version=4,  # type: ignore[attr-defined]
        )
        assert proxy.cuts == [mode]
    (only,) = direct.reservations.of(CONSUMER, D)
    assert (claimed.table_version, only.table_version) == (4, 4)


@pytest.mark.parametrize("mode", MODES)
def test_lost_commit_of_a_reservation_is_read_back_and_published_once(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, mode: str
) -> None:
    direct.begin_attempt(CONSUMER, D, "run-1", lease_seconds=60)
    pending = reserve(direct)
    with proxied(proxy, pg_schema) as ledger:
        proxy.arm(mode, has("INSERT INTO gk_publications"))
        recorded = ledger.reservations.commit(
            CONSUMER,
            D,
            pending.revision,
            producer="run-1",
            table_version=0,
            writer="run-1",  # type: ignore[attr-defined]
        )
        assert proxy.cuts == [mode]
    assert recorded is True  # this call recorded it, whichever try's COMMIT did
    (only,) = direct.publications(CONSUMER, D)
    assert (only.revision, only.run_id) == (1, "run-1")
    (reservation,) = direct.reservations.of(CONSUMER, D)
    assert reservation.committed and reservation.table_version == 0


@pytest.mark.parametrize("mode", MODES)
def test_lost_release_commit_is_read_back(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, mode: str
) -> None:
    direct.begin_attempt(CONSUMER, D, "run-1", lease_seconds=60)
    pending = reserve(direct)
    with proxied(proxy, pg_schema) as ledger:
        proxy.arm(mode, has("DELETE FROM gk_reservations"))
        released = ledger.reservations.release(
            CONSUMER,
            D,
            pending.revision,
            producer="run-1",  # type: ignore[attr-defined]
        )
        assert proxy.cuts == [mode]
    assert released is True
    assert direct.reservations.of(CONSUMER, D) == []
