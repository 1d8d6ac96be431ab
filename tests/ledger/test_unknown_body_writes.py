"""A task body's fenced write whose COMMIT is lost is read back (issue 48, item 3).

The body writes through ``Ledger.owned_by(attempt)`` (``ledger/owned.py``); its COMMIT is lost
through a real TCP proxy in front of PostgreSQL (``tests/helpers/pg_proxy.py``): ``answer``,
the server commits and its answer is dropped: the write returns as if answered, its rows there
once; ``request``, the COMMIT never reaches the server: LedgerError saying it did not commit
(not UnknownOutcome), nothing written, and the attempt can write again. When even the
read-back cannot be made, UnknownOutcome with ``probed``, as for the ledger's own writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.ledger.outages import UnknownOutcome
from tests.helpers.ledgers import PG_DSN, pg_url
from tests.helpers.pg_proxy import PgProxy, has, pg_proxy

pytestmark = pytest.mark.postgres

D = "2026-10-23"
JOB = "DimCustomer"
INSERT = "INSERT INTO body_rows VALUES (?, ?)"


@pytest.fixture
def proxy() -> Iterator[PgProxy]:
    with pg_proxy(PG_DSN) as opened:
        yield opened


@pytest.fixture
def direct(pg_schema: str) -> Iterator[gk.Ledger]:
    """The test's own view of the ledger, not through the proxy."""
    with gk.open_ledger(pg_url(pg_schema)) as opened:
        with opened.transaction():
            opened.execute("CREATE TABLE body_rows (business_date TEXT, n INT)")
        yield opened


def owner(proxy: PgProxy, schema: str, window: float = 5) -> gk.Ledger:
    """The ledger through the proxy, as a running attempt of JOB writes through it."""
    ledger = gk.open_ledger(f"{proxy.url(pg_url(schema))}&reconnect_window={window:g}")
    return ledger.owned_by(ledger.begin_attempt(JOB, D, "body-1", lease_seconds=60))


def _in_transaction(body: gk.Ledger) -> str:
    with body.transaction():
        body.execute(INSERT, (D, 1))
    return "done"


#: Each fenced way a body writes one row; what it returns when answered.
WRITES: dict[str, Callable[[gk.Ledger], Any]] = {
    "run_in_transaction": lambda b: b.run_in_transaction(
        lambda: (b.execute(INSERT, (D, 1)), "done")[1]
    ),
    "transaction": _in_transaction,
    "execute": lambda b: b.execute(INSERT, (D, 1)).rowcount,
    "executemany": lambda b: b.executemany(INSERT, [(D, 1)]).rowcount,
}
ANSWERED = {"run_in_transaction": "done", "transaction": "done", "execute": 1, "executemany": 1}


def rows(direct: gk.Ledger) -> list[tuple[Any, ...]]:
    return [tuple(r) for r in direct.read("SELECT business_date, n FROM body_rows")]


@pytest.mark.parametrize("write", list(WRITES))
def test_body_write_whose_commit_answer_is_lost_returns_its_rows_there_once(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, write: str
) -> None:
    body = owner(proxy, pg_schema)
    with body:
        proxy.arm("answer", has("INSERT INTO body_rows"))
        assert WRITES[write](body) == ANSWERED[write]
        assert proxy.cuts == ["answer"]
    assert rows(direct) == [(D, 1)]
    (attempt,) = direct.attempts(JOB, D)
    assert (attempt.run_id, attempt.state) == ("body-1", gk.RunState.RUNNING)


@pytest.mark.parametrize("write", list(WRITES))
def test_body_write_whose_commit_never_reached_the_server_raises_and_writes_nothing(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str, write: str
) -> None:
    body = owner(proxy, pg_schema)
    with body:
        proxy.arm("request", has("INSERT INTO body_rows"))
        with pytest.raises(gk.LedgerError) as caught:
            WRITES[write](body)
        assert proxy.cuts == ["request"]
        assert not isinstance(caught.value, UnknownOutcome)
        assert "it did not commit" in str(caught.value)
        assert rows(direct) == []
        assert WRITES[write](body) == ANSWERED[write]  # it still owns its period
    assert rows(direct) == [(D, 1)]


def test_body_write_whose_outcome_cannot_be_read_back_is_unknown(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str
) -> None:
    body = owner(proxy, pg_schema, window=1)
    with body:
        proxy.arm("answer", has("INSERT INTO body_rows"), then_refuse=True)
        with pytest.raises(UnknownOutcome) as caught:
            WRITES["run_in_transaction"](body)
        assert caught.value.probed is not None and "body-1" in caught.value.probed
    proxy.accept()
    assert rows(direct) == [(D, 1)]  # it had committed: the Luigi adapter leaves it running


def test_body_failure_that_is_an_unknown_outcome_elsewhere_is_not_read_back(
    proxy: PgProxy, direct: gk.Ledger, pg_schema: str
) -> None:
    """An UnknownOutcome the body's work raises (another connection's lost COMMIT) is that
    write's: the body's own transaction rolls back and the error passes unchanged."""
    body = owner(proxy, pg_schema)
    elsewhere = UnknownOutcome("another ledger's COMMIT")

    def work() -> None:
        body.execute(INSERT, (D, 1))
        raise elsewhere

    with body:
        with pytest.raises(UnknownOutcome) as caught:
            body.run_in_transaction(work)
        with pytest.raises(UnknownOutcome) as caught_in_block:
            with body.transaction():
                work()
    assert caught.value is elsewhere and caught_in_block.value is elsewhere
    assert rows(direct) == []
