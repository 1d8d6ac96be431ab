"""The ledger: one contract over its stores, on one SQL core and one dialect.

``Ledger`` is what ``open_ledger(url)`` returns. It holds a ``SqlCore`` (connection,
transactions, schema) made for a dialect, and the stores that work on it: attempts,
publications, staleness and reservations (``ledger.reservations``, the two-phase
publication of an output that commits elsewhere). Its methods are the public contract and
delegate to the stores; the stores share the core, never each other's state.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, TypeVar, cast

from gatekeeper.core.causes import JobProfile
from gatekeeper.core.periods import period_key
from gatekeeper.core.readiness import Watermarks
from gatekeeper.core.records import Attempt, Publication, Readiness, Staleness
from gatekeeper.core.spans import PeriodRuns
from gatekeeper.core.validation import check_name
from gatekeeper.ledger import names, overview
from gatekeeper.ledger.attempt_reads import AttemptReads
from gatekeeper.ledger.attempts import AttemptStore
from gatekeeper.ledger.compaction import CompactResult, Horizon, compact
from gatekeeper.ledger.dialect import Dialect
from gatekeeper.ledger.fleet_reads import FleetReads
from gatekeeper.ledger.overview import JobOverview
from gatekeeper.ledger.owned import OwnedLedger
from gatekeeper.ledger.profiles import JobProfiles
from gatekeeper.ledger.publications import PublicationStore
from gatekeeper.ledger.publishing import Publishing
from gatekeeper.ledger.requests import PublicationRequest
from gatekeeper.ledger.reservations import ReservationStore
from gatekeeper.ledger.sql import DEFAULT_BUSY_TIMEOUT, DEFAULT_RECONNECT_WINDOW, SqlCore
from gatekeeper.ledger.staleness import StalenessStore
from gatekeeper.ledger.verify import Violation, verify

T = TypeVar("T")


class Ledger(Publishing):
    """A ledger of attempts and publications on one database connection.

    Thread-safe: transactions on the shared connection are serialized by a lock. Reads and
    writes raise LedgerError when the database fails; the driver error is its ``__cause__``.
    ``business_date`` (the public keyword, kept for callers) is any period: a period key or
    what ``period_key`` accepts (a date, a tz-aware hour start); inside the ledger it is a
    ``period``.
    """

    def __init__(
        self,
        dialect: Dialect,
        url: str,
        busy_timeout: float = DEFAULT_BUSY_TIMEOUT,
        reconnect_window: float = DEFAULT_RECONNECT_WINDOW,
    ):
        self.sql = SqlCore(dialect, url, busy_timeout, reconnect_window)
        self._attempts = AttemptStore(self.sql)
        self._publications = PublicationStore(self.sql, self._attempts)
        self._staleness = StalenessStore(self.sql)
        #: two-phase publications: ``reserve``, ``commit``, ``release`` and ``of``
        self.reservations = ReservationStore(self.sql, self._attempts, self._publications)
        self._profiles = JobProfiles(self.sql)
        #: reads of many jobs at once (``fleet_reads.py``): what a fleet's readers need
        self.fleet = FleetReads(self.sql)

    # -- what a job is (gk_jobs) ------------------------------------------------------------
    def job_profile(self, job: str) -> JobProfile | None:
        """The profile a range recorded for ``job`` (its period kind, zone, planned window
        and requirements), or None; reads only."""
        return self._profiles.of(job)

    def profiles_requiring(self, job: str) -> list[JobProfile]:
        """The recorded profiles that require ``job``, by job name; reads only."""
        return self._profiles.requiring(job)

    def record_profile(self, profile: JobProfile) -> bool:
        """Record ``job``'s profile; False (nothing written) when it is already recorded."""
        return self._profiles.record(profile)

    def record_schedule(self, schedule: JobProfile) -> bool:
        """Record ``job``'s own period kind, calendar and zone (``schedule``, a profile with
        no window: its class's), keeping what a range planned for it; False (nothing
        written) when they are already recorded."""
        return self._profiles.record_schedule(schedule)

    def recorded_freshness(self) -> dict[str, str]:
        """Job -> the freshness its task class declared (its profile), for every job with one;
        reads only."""
        return self._profiles.freshness()

    def period_span(self, job: str) -> tuple[str, str] | None:
        """``job``'s first and last period key with an attempt or a publication, or None."""
        return self._profiles.span(check_name(job, "job"))

    # -- the database --------------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.sql.url

    @property
    def dialect(self) -> str:
        """``sqlite`` or ``postgresql``, for SQL that differs between the backends."""
        return self.sql.dialect.name

    @property
    def ts_type(self) -> str:
        """The column type of a timestamp on this backend."""
        return self.sql.dialect.ts_type

    def describe(self) -> str:
        """Where the ledger lives, for messages."""
        return self.sql.describe()

    @property
    def connection(self) -> Any:
        """The driver connection, for inspection (tests, benchmarks). Writes go through
        ``execute`` inside ``transaction()``, or the handle ``publish`` gives ``write``."""
        return self.sql.connection

    def execute(self, sql: str, params: Iterable[Any] = ()) -> Any:
        """Run one statement (``?`` placeholders on every backend) and return the cursor.

        Placeholders are translated by a tokenizer; a statement that would control the
        transaction, or several statements, raise InvalidInput.
        """
        return self.sql.execute(sql, params)

    def executemany(self, sql: str, rows: Iterable[Iterable[Any]]) -> Any:
        """Run one statement for each parameter row (``?`` placeholders); returns the cursor."""
        return self.sql.executemany(sql, rows)

    def read(self, sql: str, params: Iterable[Any] = ()) -> list[Any]:
        """Fetch all rows of a read-only query of the caller's own tables (on a fresh
        connection if it dropped, riding out a database that cannot be reached); raises
        LedgerError. Not part of ``LedgerReads``: gatekeeper's own reads are named methods."""
        return self.sql.read(sql, params)

    @contextlib.contextmanager
    def transaction(self, waiting_for: str = "") -> Iterator[Ledger]:
        """Run the block in one write transaction: commit on success, roll back on any error.

        Driver errors are raised as LedgerError (``retryable`` when the transaction cannot have
        committed and may run again on a fresh connection); gatekeeper and caller errors pass
        unchanged. ``waiting_for`` names the key in a lock-timeout message.
        """
        with self.sql.transaction(waiting_for):
            yield self

    def run_in_transaction(self, work: Callable[[], T], waiting_for: str = "") -> T:
        """Run ``work()`` in a transaction, again when the database reports a race, and while
        it cannot be reached (up to ``reconnect_window``): a transaction whose connection
        dropped before the commit was sent cannot have committed."""
        return self.sql.run_in_transaction(work, waiting_for)

    def owned_by(self, attempt: Attempt) -> Ledger:
        """This ledger as ``attempt`` (running, holding its lease) writes through it: its
        transactions, ``execute``, ``executemany`` and publications first check, inside the
        same transaction, that the attempt still owns its period (running, its lease live by
        the database's clock), else LeaseLost and nothing written. A view with this class's
        interface (``ledger/owned.py``) on this ledger's connection; the rest is this
        ledger's."""
        return cast(Ledger, OwnedLedger(self, attempt))

    @property
    def attempt_reads(self) -> AttemptReads:
        """The reads of attempts the ledger's own checks use (``fencing.py``)."""
        return self._attempts

    def db_now(self) -> dt.datetime:
        """The database's clock, by which leases are judged (this host's on SQLite)."""
        return self.sql.db_now()

    def schema_version(self) -> int:
        return self.sql.schema_version()

    def close(self) -> None:
        """Close the connection; the next use opens a new one."""
        self.sql.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- attempts ------------------------------------------------------------------------------
    def record(
        self,
        job: str,
        business_date: Any,
        attempt: int,
        run_id: str,
        state: Any,
        started_at: dt.datetime,
        *,
        error: str | None = None,
        now: dt.datetime | None = None,
    ) -> bool:
        """Record one observation of an attempt; writes.

        Returns True when the ledger changed and False for a harmless replay. Raises
        InvalidInput (nothing written) for bad values and StateConflict when a terminal state
        would change or the run ID belongs to another (job, period, attempt).
        """
        store = self._attempts
        return store.record(
            job, business_date, attempt, run_id, state, started_at, error=error, now=now
        )

    def begin_attempt(
        self,
        job: str,
        business_date: Any,
        run_id: str,
        *,
        lease_seconds: float,
        attempt: int = 0,
        now: dt.datetime | None = None,
        skip_succeeded: bool = False,
        reason: str | None = None,
    ) -> Attempt:
        """Allocate and record a ``running`` attempt holding a lease; writes.

        ``attempt=0`` takes the next ordinal; an explicit ordinal must exceed every recorded
        one (else StateConflict). A live lease of another attempt raises LeaseHeld and writes
        nothing; running attempts whose lease expired are recorded ``abandoned`` first.
        With ``skip_succeeded`` (and ``attempt=0``), a period whose latest attempt succeeded
        gets no new attempt: that succeeded Attempt is returned and nothing is written.
        Leases are judged by the database's clock, read once the key's lock is held (so time
        spent waiting for another writer neither shortens the new lease nor predates the
        previous attempt); ``now`` replaces it (a fake clock). ``reason``, why the attempt
        was asked for (a task's ``--rerun REASON``), is stored with it (``Attempt.reason``):
        one-line text that says something, else InvalidInput, nothing written. Returns the
        Attempt.
        """
        return self._attempts.begin_attempt(
            job,
            business_date,
            run_id,
            lease_seconds=lease_seconds,
            attempt=attempt,
            now=now,
            skip_succeeded=skip_succeeded,
            reason=reason,
        )

    def heartbeat(
        self, run_id: str, *, lease_seconds: float, now: dt.datetime | None = None
    ) -> bool:
        """Extend a running attempt's lease by the database's clock; writes. False when the
        attempt is no longer running (it finished, or a later attempt marked it abandoned)."""
        return self._attempts.heartbeat(run_id, lease_seconds=lease_seconds, now=now)

    def abandon(
        self, job: str, business_date: Any, *, reason: str, now: dt.datetime | None = None
    ) -> Attempt | None:
        """Record the latest attempt of ``job`` for the period ``abandoned`` now, its lease
        live or not, with ``reason`` as its error; writes (one transaction, the key's lock).

        Its worker's next heartbeat returns False and its publish is refused (LeaseLost): the
        fence admits only the running latest attempt. The next attempt need not wait for the
        lease. An attempt a committed publication names as its producer (its worker stopped
        after the publication committed) is recorded ``succeeded`` instead: the evidence never
        names an abandoned producer. Returns the Attempt as recorded, or None (nothing written)
        when the period has no attempt. Raises StateConflict when the latest attempt is not
        running and InvalidInput for a bad job, period or reason (an empty one); nothing is
        written then. A COMMIT whose answer is lost is read back (``ledger/abandons.py``):
        the Attempt it recorded when it committed, else it runs again; UnknownOutcome when
        even the read-back cannot be made.
        """
        return self._attempts.abandon(job, business_date, reason=reason, now=now)

    def attempts(self, job: str, business_date: Any) -> list[Attempt]:
        """Every attempt of ``job`` for the period, ordered by attempt; reads only."""
        return self._attempts.attempts(job, business_date)

    def latest(self, job: str, business_date: Any) -> Attempt | None:
        """The greatest recorded attempt of ``job`` for the period, or None; reads only."""
        return self._attempts.latest(job, business_date)

    def history(self, job: str, business_date: Any = None) -> list[Attempt]:
        """Attempts of ``job`` (for one period, or all) by period then attempt; reads only."""
        return self._attempts.history(job, business_date)

    def latest_between(self, job: str, first: str, last: str) -> dict[str, Attempt]:
        """Period key -> the latest attempt of ``job``, for keys in [first, last] of ``first``'s
        kind (daily or hourly); one query."""
        return self._attempts.latest_between(job, first, last)

    # -- readiness and publications ------------------------------------------------------------
    def latest_of(self, job: str, periods: Iterable[Any]) -> dict[str, Attempt]:
        """Period key -> the latest attempt of ``job``, for each of ``periods`` that has one:
        lookups of those periods only (one query per 500), however far apart. Reads only."""
        keys = tuple(period_key(p, "periods") for p in periods)
        return self._attempts.latest_of(check_name(job, "job"), keys)

    def readiness(
        self, jobs: Iterable[Any], business_date: Any, watermarks: Watermarks | None = None
    ) -> Readiness:
        """Return the Readiness of ``jobs`` for the period; reads only (one query).

        With ``watermarks``, a succeeded upstream whose declared watermark is before the
        period's end blocks with ``watermark``.
        """
        return self._publications.readiness(jobs, business_date, watermarks)

    def publish_request(self, request: PublicationRequest) -> bool:
        """Publish the checked ``request`` in one transaction: ``publish`` when its
        ``reason`` is None, else ``republish`` (what both do once their arguments are
        checked; the raises and the return are theirs)."""
        return self._publications.publish(request)

    def completed_periods(
        self, job: str, first: str, last: str, consumer: str | None = None
    ) -> set[str]:
        """Period keys in [first, last] of ``first``'s kind (daily or hourly) whose latest
        attempt of ``job`` succeeded and, with ``consumer``, that have a publication by it; one
        query, reads only. Keys of the other kind (never written since a job keeps one kind)
        are left out, so a planner never meets them."""
        return self._publications.completed_periods(job, first, last, consumer)

    def complete_runs(
        self, job: str, first: str, last: str, consumer: str | None = None, *, period: Any = None
    ) -> PeriodRuns:
        """``completed_periods`` as coalesced runs (``PeriodRuns``), read from the runs the
        ledger keeps in every write for a job and for a job that publishes (``consumer`` the
        job itself): one query over the runs overlapping [first, last], not its keys; for
        another consumer, from the full scan. ``period``: the runs of that kind (the keys'
        kind, maybe on a calendar: its business periods alone; default the keys' kind).
        Reads only."""
        return self._publications.complete_runs(job, first, last, consumer, period=period)

    def publication(self, consumer: str, business_date: Any) -> Publication | None:
        """The newest revision of the publication for the period, or None; reads only."""
        return self._publications.publication(consumer, business_date)

    def publications(self, consumer: str, business_date: Any) -> list[Publication]:
        """Every revision of the publication for the period, newest first; reads only."""
        return self._publications.publications(consumer, business_date)

    def verify(self, jobs: Iterable[str] = ()) -> list[Violation]:
        """Every violation of the ledger's invariants (``ledger/verify.py``), of ``jobs``
        alone when given; one read transaction of set-based queries, writes nothing."""
        return verify(self.sql, [check_name(j, "job") for j in jobs])

    def compact(
        self, *, before: Any, jobs: Iterable[str] = (), dry_run: bool = False
    ) -> CompactResult:
        """Remove the superseded ``failed`` and ``abandoned`` attempts of periods older than
        ``before`` (a ``Horizon``, or a period key of any kind or a date: ``Horizon.parse``;
        ``ledger/compaction.py`` says which periods that is and which attempts are always
        kept), of ``jobs`` alone when given; one write transaction, or with ``dry_run`` none
        (nothing written). Returns what was (would be) removed per job. Raises InvalidInput
        (nothing written) for a bad ``before`` or job."""
        horizon = before if isinstance(before, Horizon) else Horizon.parse(before)
        named = list(dict.fromkeys(check_name(j, "job") for j in jobs))
        return compact(self.sql, horizon, named, dry_run=dry_run)

    def stale(self, consumer: str, since: Any = None) -> list[Staleness]:
        """Publications of ``consumer`` (periods >= ``since``) whose newest revision's
        evidence names an upstream run older than that upstream's newest succeeded attempt for
        the same period: one entry per (period, upstream), with the old and new run IDs.
        Reads only."""
        return self._staleness.stale(consumer, since)

    # -- names and overviews (the SQL in ``names.py`` and ``overview.py``) -------------------
    def has_published(self, consumer: str) -> bool:
        """True when ``consumer`` has published any period; reads only."""
        return self._publications.has_published(consumer)

    def has_names(self) -> bool:
        """True when the ledger knows any job or consumer (False for a new, empty one)."""
        return names.has_names(self.sql)

    def unknown_names(self, given: Sequence[str], field: str = "job") -> list[str]:
        """The ``given`` names no attempt, profile, publication or reservation carries, in
        order; one query. Raises InvalidInput (naming ``field``) for a malformed name."""
        return names.unknown(self.sql, given, field)

    def known_names(self) -> list[str]:
        """Every job and consumer the ledger knows, sorted; reads only."""
        return names.known_names(self.sql)

    def newest_publications(self, consumer: str, first: str, last: str) -> dict[str, Publication]:
        """Period key -> the newest revision of ``consumer``'s publication with its evidence,
        for keys in [first, last] of ``first``'s kind; reads only."""
        return overview.newest_publications(self.sql, consumer, first, last)

    def jobs_overview(self, now: dt.datetime | None = None) -> list[JobOverview]:
        """Every job and consumer at a glance, by name; leases judged at ``now`` (default:
        the database's clock). Reads only."""
        return overview.jobs_overview(self.sql, now)

    def running_attempts(self, now: dt.datetime) -> dict[str, tuple[int, int]]:
        """Job -> (running attempts with a live lease at ``now``, running attempts whose lease
        expired or was never set); jobs with none left out. Reads only."""
        return overview.running_attempts(self.sql, now)
