"""The one place that reads the wall clock (of this host).

Durations and polling use ``time.monotonic``, which is not a clock of the business: it says
how long, never when. Leases are not judged here: the ledger reads the database's clock for
them (see ``docs/ownership.md``). Everything else that needs "now" takes it as a parameter and
falls back to ``utc_now()`` or ``epoch_seconds()``.
"""

from __future__ import annotations

import datetime as dt
import time

from gatekeeper.core.validation import check_datetime


def epoch_seconds() -> float:
    """This host's current time in seconds since the epoch (as Luigi's ``--now`` counts)."""
    return time.time()


def utc_now(now: dt.datetime | None = None) -> dt.datetime:
    """Return ``now`` (validated, in UTC) or this host's current time; raises InvalidInput."""
    if now is None:
        return dt.datetime.now(dt.timezone.utc)
    return check_datetime(now, "now")
