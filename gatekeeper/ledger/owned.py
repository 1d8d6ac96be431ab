"""The ledger as one running attempt writes through it: ``Ledger.owned_by(attempt)``.

A task body writes its rows through the ledger (``self.ledger().run_in_transaction(...)``,
``execute``, ``executemany``, ``transaction()``, ``publish``): through this view every one of
those transactions first checks, inside itself, that the attempt still owns its period
(``fencing.fence_owner``: running, its lease live by the database's clock), and again just
before its COMMIT, its row then locked against a takeover until the COMMIT. A zombie (a
worker that lost its lease while paused) gets LeaseLost and its transaction writes nothing,
however late it wakes. Reads and the ledger's own bookkeeping are the ledger's, unchanged.

A fenced transaction whose COMMIT's answer is lost is read back (``readback.fenced_commit``,
by the transaction's ID the last check read): committed, the call returns as if answered
(``run_in_transaction``: what ``work()`` returned), so the attempt is not recorded ``failed``
for rows that committed (an append-only body would write them twice when run again); not
committed, LedgerError saying so.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from gatekeeper.core.records import Attempt
from gatekeeper.ledger import fencing, readback
from gatekeeper.ledger.outages import UnknownOutcome
from gatekeeper.ledger.publishing import Publishing
from gatekeeper.ledger.requests import PublicationRequest

if TYPE_CHECKING:
    from gatekeeper.ledger.contract import Ledger

T = TypeVar("T")


class Rows:
    """The result of a fenced statement run in a transaction of its own: its rows (read
    before the COMMIT) and ``rowcount``, as a cursor gives them."""

    def __init__(self, cursor: Any):
        self.rowcount = int(cursor.rowcount)
        self._rows = [tuple(r) for r in cursor.fetchall()] if cursor.description else []
        self.description = cursor.description

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._rows.pop(0) if self._rows else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        rows, self._rows = self._rows, []
        return rows

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


class OwnedLedger(Publishing):
    """A view of ``ledger`` whose writes belong to ``attempt`` (see the module docstring).

    It has the ledger's interface: what it does not fence is the ledger's own (attribute
    lookups go to it), on the ledger's connection (it opens nothing of its own). Fenced:
    ``transaction``, ``run_in_transaction``, ``execute`` and ``executemany`` (a statement
    outside a transaction runs in one of its own), and ``publish``/``republish``: fenced by
    the attempt's own run ID as producer for its own job and period, else inside a fenced
    transaction. Each raises LeaseLost (nothing written) once the attempt lost its period.
    """

    def __init__(self, ledger: Ledger, attempt: Attempt):
        self.base = ledger
        self.sql = ledger.sql
        self.owner = attempt

    def __getattr__(self, name: str) -> Any:
        if name == "base":  # not set yet (a copy being made): not the ledger's
            raise AttributeError(name)
        return getattr(self.base, name)

    def __enter__(self) -> OwnedLedger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.base.close()

    def fence(self) -> None:
        """In a transaction: LeaseLost unless the attempt still owns its period
        (``fencing.fence_owner``), checked before its first write (so a zombie does no work
        in vain) and again just before its COMMIT, its row then locked to the COMMIT (so a
        body's long transaction never holds up its own heartbeat, nor a takeover for long)."""
        reads, run_id = self.base.attempt_reads, self.owner.run_id
        if not self.sql.held("fence", run_id):
            fencing.fence_owner(reads, run_id, lock=False)
            self.sql.hold("fence", run_id)
            self.sql.before_commit(lambda: fencing.fence_owner(reads, run_id))

    @contextlib.contextmanager
    def transaction(self, waiting_for: str = "") -> Iterator[OwnedLedger]:
        """``Ledger.transaction``, fenced: LeaseLost before the block runs (rolled back). A
        lost COMMIT's answer is read back (see the module docstring)."""
        ran = False
        try:
            with self.sql.transaction(waiting_for):
                self.fence()
                yield self
                ran = True
        except UnknownOutcome as lost:
            if not ran:  # the block's own error (another connection's COMMIT): not this one's
                raise
            readback.fenced_commit(self.sql, self.owner, lost)

    def run_in_transaction(self, work: Callable[[], T], waiting_for: str = "") -> T:
        """``Ledger.run_in_transaction``, each try fenced before ``work()`` runs. A lost
        COMMIT's answer is read back: what ``work()`` returned, when it committed."""
        done: list[T] = []  # what the try that reached the COMMIT returned

        def fenced() -> T:
            done.clear()
            self.fence()
            done.append(work())
            return done[0]

        try:
            return self.sql.run_in_transaction(fenced, waiting_for)
        except UnknownOutcome as lost:
            if not done:  # ``work``'s own error (another connection's COMMIT): not this one's
                raise
            readback.fenced_commit(self.sql, self.owner, lost)
            return done[0]

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        """``Ledger.execute``, fenced: in the caller's transaction, or in one of its own
        (its rows are then read before the COMMIT)."""
        values = tuple(params)
        if self.sql.in_transaction:
            self.fence()
            return self.sql.execute(sql, values)
        return self.run_in_transaction(lambda: Rows(self.sql.execute(sql, values)))

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> Any:
        """``Ledger.executemany``, fenced as ``execute`` is."""
        values = [tuple(row) for row in rows]
        if self.sql.in_transaction:
            self.fence()
            return self.sql.executemany(sql, values)
        return self.run_in_transaction(lambda: Rows(self.sql.executemany(sql, values)))

    def publish_request(self, request: PublicationRequest) -> bool:
        """``Ledger.publish_request``, fenced (see the class docstring)."""
        own = (request.consumer, request.period) == (self.owner.job, self.owner.business_date)
        if request.producer is None and own:  # its own period: fenced by its own run ID
            request = replace(request, producer=self.owner.run_id)
        if request.producer is not None:
            return self.base.publish_request(request)
        with self.transaction(f"publication {request.consumer}"):
            return self.base.publish_request(request)

    def __repr__(self) -> str:
        return f"<OwnedLedger {self.describe()} run {self.owner.run_id}>"
