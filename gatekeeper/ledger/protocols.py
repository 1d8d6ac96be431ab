"""What read-only callers may use of a ledger: ``LedgerReads``.

The overviews, the recovery planner, the coverage report and the gate only read; they take a
``LedgerReads`` rather than the whole ``Ledger``, so what they depend on is written down (and a
read-only double of it would do).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from gatekeeper.core.causes import JobProfile
from gatekeeper.core.readiness import Watermarks
from gatekeeper.core.records import Attempt, Publication, Readiness, Staleness
from gatekeeper.core.spans import PeriodRuns

if TYPE_CHECKING:
    from gatekeeper.ledger.fleet_reads import FleetReads
    from gatekeeper.ledger.overview import JobOverview


class LedgerReads(Protocol):
    """The reads of the ledger contract (``Ledger`` satisfies it); none of them writes. Each
    is named for what it answers: no SQL text crosses it (the SQL is the ledger's own)."""

    @property
    def fleet(self) -> FleetReads: ...  # reads of many jobs at once

    def describe(self) -> str: ...

    def db_now(self) -> dt.datetime: ...

    def job_profile(self, job: str) -> JobProfile | None: ...

    def period_span(self, job: str) -> tuple[str, str] | None: ...

    def profiles_requiring(self, job: str) -> list[JobProfile]: ...

    def recorded_freshness(self) -> dict[str, str]: ...

    def attempts(self, job: str, business_date: Any) -> list[Attempt]: ...

    def latest(self, job: str, business_date: Any) -> Attempt | None: ...

    def history(self, job: str, business_date: Any = None) -> list[Attempt]: ...

    def latest_between(self, job: str, first: str, last: str) -> dict[str, Attempt]: ...

    def latest_of(self, job: str, periods: Iterable[Any]) -> dict[str, Attempt]: ...

    def completed_periods(
        self, job: str, first: str, last: str, consumer: str | None = None
    ) -> set[str]: ...

    def complete_runs(
        self, job: str, first: str, last: str, consumer: str | None = None, *, period: Any = None
    ) -> PeriodRuns: ...

    def readiness(
        self, jobs: Iterable[Any], business_date: Any, watermarks: Watermarks | None = None
    ) -> Readiness: ...

    def publication(self, consumer: str, business_date: Any) -> Publication | None: ...

    def publications(self, consumer: str, business_date: Any) -> list[Publication]: ...

    def stale(self, consumer: str, since: Any = None) -> list[Staleness]: ...

    def has_published(self, consumer: str) -> bool: ...

    def has_names(self) -> bool: ...

    def unknown_names(self, given: Sequence[str], field: str = "job") -> list[str]: ...

    def known_names(self) -> list[str]: ...

    def newest_publications(
        self, consumer: str, first: str, last: str
    ) -> dict[str, Publication]: ...

    def jobs_overview(self, now: dt.datetime | None = None) -> list[JobOverview]: ...

    def running_attempts(self, now: dt.datetime) -> dict[str, tuple[int, int]]: ...
