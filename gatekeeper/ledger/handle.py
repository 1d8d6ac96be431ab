"""The write handle a publisher's ``write`` gets: statements in the publication transaction,
and nothing that could end it.

One owner per transaction: the ledger opens, commits and rolls back the publication; user code
only adds statements. ``commit()``, ``rollback()`` and ``close()`` raise, and the publication
rolls back as a whole even if the callback swallows the error.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from gatekeeper.core.errors import GatekeeperError, InvalidInput
from gatekeeper.ledger.sqltext import session_change

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore


class Cursor:
    """The result of one statement: ``fetchone()``, ``fetchall()``, ``rowcount``, iteration."""

    def __init__(self, cursor: Any):
        self._cursor = cursor

    def fetchone(self) -> tuple[Any, ...] | None:
        row = self._cursor.fetchone()
        return None if row is None else tuple(row)

    def fetchall(self) -> list[tuple[Any, ...]]:
        return [tuple(row) for row in self._cursor.fetchall()]

    @property
    def rowcount(self) -> int:
        return int(self._cursor.rowcount)

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


class WriteHandle:
    """Statements on the publication transaction, with ``?`` placeholders on every backend.

    Usable only while ``write`` runs; afterwards every call raises GatekeeperError.
    """

    def __init__(self, sql: SqlCore, what: str):
        self._sql = sql
        self._what = what
        self._open = True
        self.misuse: str | None = None

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``, for SQL that differs between the backends."""
        return self._sql.dialect.name

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Cursor:
        """Run one statement in the publication transaction; returns its Cursor.

        Raises InvalidInput for a statement that controls the transaction or for several
        statements, and what the database raises (the publication then rolls back).
        """
        self._check(sql, "execute")
        try:
            return Cursor(self._sql.execute(sql, params))
        except Exception as exc:
            self._failed(exc)
            raise

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> Cursor:
        """Run one statement once per parameter row; returns its Cursor (``rowcount``)."""
        self._check(sql, "executemany")
        try:
            return Cursor(self._sql.executemany(sql, rows))
        except Exception as exc:
            self._failed(exc)
            raise

    def commit(self) -> None:
        self._refuse("commit")

    def rollback(self) -> None:
        self._refuse("rollback")

    def close(self) -> None:
        self._refuse("close")

    def finish(self, raising: bool = True) -> None:
        """End the handle's life (called by the ledger once ``write`` returned, with
        ``raising`` False once it raised); raises GatekeeperError when ``write`` misused it
        (tried to end the transaction, swallowed a failed statement, or changed the session
        in a way that cannot be put back).

        Whatever ``write`` ran, the session is put back for what follows (``settle_session``:
        the settings the ledger opened it with); a connection whose ``write`` raised or
        misused the handle is replaced when the transaction ends."""
        self._open = False
        if not raising or self.misuse is not None:
            self._sql.discard_connection()
        else:
            self.misuse = self._sql.settle_session()
        if raising and self.misuse is not None:
            raise GatekeeperError(
                f"{self._what}: write() made {self.misuse} on its handle; the publication "
                "and its output were rolled back together"
            )

    def _check(self, sql: str, method: str) -> None:
        self._check_open(method)
        try:
            changed = session_change(sql, self._sql.dialect.name)
        except InvalidInput:  # transaction control, several statements: fail closed
            self.misuse = self.misuse or "a refused statement through execute"
            raise
        if changed is not None:
            self.misuse = self.misuse or f"a {changed} statement through execute"
            raise InvalidInput(
                "sql",
                sql,
                f"{changed} would change the ledger connection's "
                "session beyond this transaction (use SET LOCAL on PostgreSQL)",
            )

    def _failed(self, exc: Exception) -> None:
        """A statement failed: the publication rolls back as a whole, even if ``write``
        catches the error (PostgreSQL would abort the transaction; SQLite would go on with
        part of the output)."""
        self.misuse = (
            self.misuse or f"a statement that failed ({type(exc).__name__}) through execute"
        )

    def _check_open(self, method: str) -> None:
        if not self._open:
            raise GatekeeperError(
                f"{self._what}: {method}() after write() returned; the "
                "handle belongs to a finished publication transaction"
            )
        if self.misuse is not None:
            raise GatekeeperError(
                f"{self._what}: {method}() after {self.misuse}; the publication will be rolled back"
            )

    def _refuse(self, method: str) -> None:
        self.misuse = self.misuse or f"a {method}() call"
        raise GatekeeperError(
            f"{self._what}: {method}() is not allowed on the write handle: gatekeeper commits "
            "the output together with its publication, or rolls both back; this publication "
            "will be rolled back"
        )

    def __repr__(self) -> str:
        state = "open" if self._open else "finished"
        return f"<WriteHandle {self._what} ({self._sql.dialect.name}, {state})>"
