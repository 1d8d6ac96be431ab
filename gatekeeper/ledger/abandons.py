"""Abandoning an attempt by hand (``Ledger.abandon``, ``gatekeeper abandon``): its period's
latest attempt, running (its lease live or not), recorded ``abandoned`` with a reason, in one
transaction under the attempt key's lock; ``succeeded`` instead when a committed publication
names it as producer (its worker stopped after the publication committed).

A COMMIT whose answer is lost is read back (``readback.py``, issue 48): the attempt's row as
the transaction left it (its state, stamp and error) means it committed, and the abandon
returns what it recorded; any other row means it did not, and the abandon runs again (and is
judged then: done, or a StateConflict when the attempt ended meanwhile).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from typing import TYPE_CHECKING, Any

from gatekeeper.core.errors import StateConflict
from gatekeeper.core.periods import period_key
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.validation import check_name
from gatekeeper.ledger import readback
from gatekeeper.ledger.requests import fixed_clock

if TYPE_CHECKING:
    from gatekeeper.ledger.attempts import AttemptStore


def abandon(
    store: AttemptStore, job: str, period: Any, *, reason: str, now: dt.datetime | None = None
) -> Attempt | None:
    """The latest attempt of (job, period) as recorded: ``abandoned`` (or ``succeeded``, see
    the module docstring); None, nothing written, when the period has no attempt. Writes.
    Raises StateConflict when the latest attempt is not running, InvalidInput for a bad job,
    period or reason (nothing written then), and UnknownOutcome (``probed``) when a lost
    COMMIT cannot be read back either."""
    job, key = check_name(job, "job"), period_key(period)
    reason, fixed = check_name(reason, "reason"), fixed_clock(now)
    ended = readback.Ended()

    def work() -> Attempt | None:
        return store.sql.run_in_transaction(
            lambda: _abandon(store, job, key, reason, fixed, ended), f"attempt {job} {key}"
        )

    probe = readback.abandon_probe(store.sql, job, key, ended)
    return readback.settle(store.sql, work, probe, f"the abandon of {job} {key}")


def _abandon(
    store: AttemptStore,
    job: str,
    key: str,
    reason: str,
    fixed: dt.datetime | None,
    ended: readback.Ended,
) -> Attempt | None:
    """In a transaction: the abandon itself; what it records is kept in ``ended`` too."""
    sql, ended.attempt = store.sql, None
    sql.lock_key("attempt", job, key)  # pragma: no mutate
    existing = store.of_period(job, key)
    if not existing:
        return None
    latest = existing[-1]
    if latest.state is not RunState.RUNNING:
        raise StateConflict(
            f"{job} {key}: attempt {latest.attempt} (run {latest.run_id}) is already "
            f"{latest.state.value}; only a running latest attempt can be abandoned",
            job=job,
            period=key,
            attempt=latest.attempt,
        )
    at = fixed if fixed is not None else sql.db_now()
    if readback.names_as_producer(sql, latest):  # it published: it succeeded
        ended.attempt = store.succeed_published(latest, at, latest=True)
        return ended.attempt
    sql.execute(
        "UPDATE gk_attempts SET state = ?, updated_at = ?, error = ?, "
        "lease_expires_at = NULL WHERE job = ? AND period = ? AND attempt = ?",
        (RunState.ABANDONED.value, sql.ts_in(at), reason, job, key, latest.attempt),
    )
    # a running latest attempt ended: its period was not complete, nor is it now (no runs
    # of complete periods change)
    ended.attempt = dataclasses.replace(
        latest, state=RunState.ABANDONED, updated_at=at, lease_expires_at=None, error=reason
    )
    return ended.attempt
