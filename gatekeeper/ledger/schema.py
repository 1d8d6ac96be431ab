"""The ledger's versioned schema: forward-only migrations shared by both dialects.

Each migration is a list of statements; ``{ts}`` is replaced by the dialect's timestamp type.
A step may also be a function of the SQL core, run in the migration's transaction (building
data the new tables derive from the old ones).
A ledger records the version it reached in ``gk_schema``; a newer version than this code
knows is refused rather than guessed at.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from gatekeeper.core.errors import LedgerError
from gatekeeper.ledger import outages
from gatekeeper.ledger.compaction import TABLE as COMPACTED_TABLE
from gatekeeper.ledger.runs import LINE_COLUMN, CompleteRuns
from gatekeeper.ledger.runs import TABLE as RUNS_TABLE

if TYPE_CHECKING:
    from gatekeeper.ledger.connection import SqlConnection
    from gatekeeper.ledger.sql import SqlCore

Step = str | Callable[["SqlCore"], None]


def _build_runs(sql: SqlCore) -> None:
    CompleteRuns(sql).rebuild(tagged=False)  # the runs as schema 6 holds them


def _bridge_runs(sql: SqlCore) -> None:
    """Tag every run with its line (``calendar``, ``all`` so far) unless the table has the
    column, then rebuild the runs of the jobs whose profile names a business calendar, so
    their complete weekdays bridge weekends (``ledger/run_lines.py``)."""
    columns = {d[0] for d in sql.execute("SELECT * FROM gk_complete_runs WHERE 1 = 0").description}
    if "calendar" not in columns:
        sql.execute(LINE_COLUMN)
    runs = CompleteRuns(sql)
    runs.rebuild(runs.bridged_jobs())


def _add_freshness(sql: SqlCore) -> None:
    """Add ``gk_jobs.freshness`` unless the table has it (``gk_jobs`` is created with
    ``IF NOT EXISTS``: a ledger taken back to an older version may keep a newer one)."""
    columns = {d[0] for d in sql.execute("SELECT * FROM gk_jobs WHERE 1 = 0").description}
    if "freshness" not in columns:
        sql.execute("ALTER TABLE gk_jobs ADD COLUMN freshness TEXT")


def _add_calendar(sql: SqlCore) -> None:
    """Add ``gk_jobs.calendar`` unless the table has it (as ``_add_freshness``)."""
    columns = {d[0] for d in sql.execute("SELECT * FROM gk_jobs WHERE 1 = 0").description}
    if "calendar" not in columns:
        sql.execute("ALTER TABLE gk_jobs ADD COLUMN calendar TEXT")


def _add_attempt_reason(sql: SqlCore) -> None:
    """Add ``gk_attempts.reason`` unless the table has it (as ``_add_freshness``): why an
    attempt was asked for (``--rerun REASON``); NULL for every attempt before."""
    columns = {d[0] for d in sql.execute("SELECT * FROM gk_attempts WHERE 1 = 0").description}
    if "reason" not in columns:
        sql.execute("ALTER TABLE gk_attempts ADD COLUMN reason TEXT")


def _add_evidence_revision(sql: SqlCore) -> None:
    """Add ``gk_evidence.job_revision`` unless the table has it (as ``_add_freshness``): the
    upstream pair's newest publication revision when the publication read its evidence;
    NULL for the evidence before (never stale by revision) and for an upstream that does
    not publish that period."""
    columns = {d[0] for d in sql.execute("SELECT * FROM gk_evidence WHERE 1 = 0").description}
    if "job_revision" not in columns:
        sql.execute("ALTER TABLE gk_evidence ADD COLUMN job_revision INTEGER")


#: the migration to schema 13: the running attempts indexed apart (``overview._RUNNING_SQL``)
RUNNING_INDEX = (
    "CREATE INDEX IF NOT EXISTS gk_attempts_running ON gk_attempts (job, lease_expires_at) "
    "WHERE state = 'running'"
)

MIGRATIONS: tuple[tuple[Step, ...], ...] = (
    # 1: attempts with leases, publications with revisions, evidence rows.
    (
        """CREATE TABLE gk_attempts (
            job TEXT NOT NULL,
            period TEXT NOT NULL,
            attempt INTEGER NOT NULL CHECK (attempt > 0),
            run_id TEXT NOT NULL UNIQUE,
            state TEXT NOT NULL
                CHECK (state IN ('running', 'succeeded', 'failed', 'abandoned')),
            started_at {ts} NOT NULL,
            updated_at {ts} NOT NULL,
            lease_expires_at {ts},
            error TEXT,
            PRIMARY KEY (job, period, attempt)
        )""",
        """CREATE TABLE gk_publications (
            consumer TEXT NOT NULL,
            period TEXT NOT NULL,
            revision INTEGER NOT NULL CHECK (revision > 0),
            fingerprint TEXT NOT NULL,
            required_jobs TEXT NOT NULL,
            published_at {ts} NOT NULL,
            reason TEXT,
            PRIMARY KEY (consumer, period, revision)
        )""",
        """CREATE TABLE gk_evidence (
            consumer TEXT NOT NULL,
            period TEXT NOT NULL,
            revision INTEGER NOT NULL,
            job TEXT NOT NULL,
            job_period TEXT NOT NULL,
            run_id TEXT NOT NULL,
            attempt INTEGER NOT NULL,
            PRIMARY KEY (consumer, period, revision, job, job_period),
            FOREIGN KEY (consumer, period, revision)
                REFERENCES gk_publications (consumer, period, revision)
        )""",
        "CREATE INDEX gk_evidence_by_job ON gk_evidence (job, job_period)",
    ),
    # 2: where a publication's output lives when it is not in the ledger database (a file).
    ("ALTER TABLE gk_publications ADD COLUMN location TEXT",),
    # 3: the data-time watermark an upstream declared when the publication read it.
    ("ALTER TABLE gk_evidence ADD COLUMN watermark {ts}",),
    # 4: the attempt that produced a publication (fencing); None for API publications without
    # a producer and for rows written before version 4.
    (
        "ALTER TABLE gk_publications ADD COLUMN producer_run_id TEXT",
        "ALTER TABLE gk_publications ADD COLUMN producer_attempt INTEGER",
    ),
    # 5: publications whose output lives in another system's transaction (a Delta table):
    # revision N is reserved (fingerprint, evidence, producer) before the external commit and
    # recorded committed, with the external table version, after it (ledger/reservations.py).
    (
        """CREATE TABLE gk_reservations (
            consumer TEXT NOT NULL,
            period TEXT NOT NULL,
            revision INTEGER NOT NULL CHECK (revision > 0),
            fingerprint TEXT NOT NULL,
            required_jobs TEXT NOT NULL,
            evidence TEXT NOT NULL,
            reason TEXT,
            location TEXT NOT NULL,
            producer_run_id TEXT NOT NULL,
            producer_attempt INTEGER NOT NULL,
            state TEXT NOT NULL CHECK (state IN ('reserved', 'committed')),
            reserved_at {ts} NOT NULL,
            committed_at {ts},
            table_version INTEGER CHECK (table_version >= 0),
            writer_run_id TEXT,
            PRIMARY KEY (consumer, period, revision)
        )""",
    ),
    # 6: each job's complete periods as coalesced runs (ledger/runs.py), built once from the
    # attempts and publications, then kept by every write that can change them.
    (*RUNS_TABLE, _build_runs),
    # 7: what each job is known to be besides its attempts (core/causes.py JobProfile): its
    # period kind, the zone, lateness, catch-up, strategy and window its range planned with,
    # and the upstream jobs it requires; recorded by a range as it takes a fill up.
    (
        """CREATE TABLE IF NOT EXISTS gk_jobs (
            job TEXT PRIMARY KEY,
            period_kind TEXT NOT NULL,
            timezone TEXT NOT NULL,
            lateness TEXT,
            catchup TEXT,
            strategy TEXT,
            window_start TEXT,
            window_stop TEXT,
            requires TEXT NOT NULL,
            updated_at {ts} NOT NULL
        )""",
    ),
    # 8: the freshness deadline a job's task class declares (``freshness = "6h"``), recorded
    # in its profile by its range so that ``gatekeeper check`` knows it without the class.
    (_add_freshness,),
    # 9: the business calendar a job's periods follow (``calendar = "weekdays"``), recorded in
    # its profile by its range so that ``status`` counts its business periods only.
    (_add_calendar,),
    # 10: runs of complete periods tagged with their line: a job on a business calendar keeps
    # its complete weekdays as runs that bridge weekends (ledger/run_lines.py), so a weekday
    # job with no gaps is one run; built from the attempts for the jobs whose profile has one.
    (_bridge_runs,),
    # 11: nothing to change in the tables, but what their rows may hold: ``gk_jobs.requires``
    # may name every day of a daily job within a period (``["TradingDayLoad", 0, "daily",
    # "weekdays"]``, issue 47 item 2: a monthly range's requirement, which also gives the
    # daily job its window), and ``gk_jobs.calendar`` a calendar object's import path
    # (``pipelines.days:MWF``, item 5). A gatekeeper before this version would refuse such
    # rows one command at a time, or take a window over other rows than the range planned;
    # knowing up to version 10, it refuses the whole ledger instead (``refuse_newer``).
    (),
    # 12: how many superseded attempts compaction removed from each (job, period)
    # (ledger/compaction.py), so that verify still knows its attempts were numbered 1..n.
    (COMPACTED_TABLE,),
    # 13: the running attempts indexed apart (a partial index: only rows in state running),
    # so the readers' count of each job's running attempts (``overview.running_attempts``,
    # every scrape of /metrics) reads those rows, not every attempt of the ledger.
    (RUNNING_INDEX,),
    # 14: why an attempt was asked for (a task's ``--rerun REASON``: the period run again as
    # its next attempt), stored with it; NULL for the attempts before and for plain runs.
    (_add_attempt_reason,),
    # 15: the upstream's publication revision each evidence row was read at (issue 50, item
    # 1): a republished upstream (a new revision, the same attempt) makes the consumers built
    # on the older revision stale (``staleness.py``); NULL for the evidence before.
    (_add_evidence_revision,),
)

SCHEMA_VERSION = len(MIGRATIONS)


def read_version(sql: SqlCore) -> int:
    """The schema version the database holds (0 before the first migration)."""
    if not sql.dialect.table_exists(sql, "gk_schema"):
        return 0
    rows = sql.execute("SELECT version FROM gk_schema").fetchall()
    return int(rows[0][0]) if rows else 0


def migrate(sql: SqlCore) -> None:
    """Bring the ledger to ``SCHEMA_VERSION`` (the dialect's setup first), each step in the
    migration's transaction under the schema lock; a newer schema is refused."""
    setup = sql.dialect.setup_sql()
    if setup:
        with sql.migration("the schema"):
            for statement in setup:
                sql.execute(statement)
    try:  # an up-to-date ledger opens without waiting for the write lock
        if read_version(sql) == SCHEMA_VERSION:
            return
    except LedgerError:
        pass  # e.g. the schema table is being created right now: decide under the lock
    with sql.migration("the schema migration"):
        version = read_version(sql)
        refuse_newer(sql, version)
        if version == 0:
            sql.execute("CREATE TABLE gk_schema (version INTEGER NOT NULL)")
            sql.execute("INSERT INTO gk_schema (version) VALUES (0)")
        for number in range(version, SCHEMA_VERSION):
            for step in MIGRATIONS[number]:
                if isinstance(step, str):
                    sql.execute(step.replace("{ts}", sql.dialect.ts_type))
                else:
                    step(sql)
            sql.execute("UPDATE gk_schema SET version = ?", (number + 1,))


def prepare(sql: SqlCore) -> None:
    """Migrate the schema (``migrate``) or, for a ledger opened read-only, check it is this
    code's (``check_readable``); a driver error there is a LedgerError."""
    if not sql.dialect.read_only:
        migrate(sql)
        return
    try:
        check_readable(sql)
    except sql.dialect.driver_errors() as exc:
        raise outages.wrap(sql, exc, committing=False) from exc


def check_readable(sql: SqlCore) -> None:
    """Refuse to read a ledger opened read-only (``open_ledger(create=False)``) whose schema is
    not this code's, creating and migrating nothing: none there (InvalidInput from the
    dialect: a typo must not read as an empty ledger), an older one (LedgerError: the
    read paths rely on every migration: complete runs since 6, reservations since 5, and
    answering from an older schema would mean a second, version-dependent reading of each),
    a newer one (``refuse_newer``)."""
    version = read_version(sql)
    if version == 0:
        sql.dialect.refuse_absent(sql)
    refuse_newer(sql, version)
    if version < SCHEMA_VERSION:
        raise LedgerError(
            f"ledger {sql.describe()} has schema version {version}; this gatekeeper reads "
            f"version {SCHEMA_VERSION} and a read-only command migrates nothing: open it once "
            "to write with this gatekeeper (any task, or gatekeeper record), or read it with "
            "the gatekeeper that wrote it",
            retryable=False,
        )


def refuse_newer(sql: SqlConnection, version: int) -> None:
    """A schema newer than this code is refused, also by a process that opened the ledger
    before the upgrade: checked in every write transaction and before a migration."""
    if version > SCHEMA_VERSION:
        raise LedgerError(
            f"ledger {sql.describe()} has schema version {version}; this gatekeeper "
            f"knows up to {SCHEMA_VERSION}: upgrade gatekeeper",
            retryable=False,
        )


def version_guard() -> str:
    """A condition true while the ledger's schema is not newer than this code's: a statement
    sent before the version is read (``SqlCore.lock_key(commit=True)``) writes nothing under
    a newer one."""
    return f"(SELECT version FROM gk_schema) <= {SCHEMA_VERSION}"
