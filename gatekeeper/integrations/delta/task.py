"""GatedDeltaTask: publish one business date into a Delta table, exactly once across the ledger
and the table, with the evidence inside the Delta commit.

A Delta commit and a ledger transaction cannot be one transaction, so a publication is three
steps (``docs/ownership.md``): (1) the ledger reserves revision N (gate open, producer fenced,
fingerprint and evidence stored); (2) one Delta commit replaces the date's rows, tagged with
the application transaction (``gatekeeper:{consumer}:{date}``, N), skipped when the table's
transaction version for that app ID is already >= N; (3) the ledger records N committed with
the table version. A crash between (2) and (3) is finished by the next attempt without a
second write. ``deltalake`` and ``pyarrow`` (the ``delta`` extra) are imported when used.

Every read of the table and the write go through the operations of ``delta_table`` (picklable
arguments and results, never a DeltaTable here), which ``delta_runner`` dispatches: in this
process, or, in a fork of a process that already started deltalake's runtime (Luigi's
``--workers N`` forks one process per task after its completeness checks read the table), in a
helper process started with ``spawn``; its errors arrive as their own types.
"""

from __future__ import annotations

import logging
import os
import random
import time
from typing import Any

from gatekeeper.core.errors import OutputMismatch
from gatekeeper.core.validation import check_column_name, check_name
from gatekeeper.integrations.delta.history import (
    DeltaEvidence,
    app_id,
    commit_metadata,
    find_commit,
)
from gatekeeper.integrations.delta.table import (
    check_rows,
    commit_conflicts,
    date_fingerprint,
    same_files,
    table_fingerprint,
    table_state,
    to_arrow,
    write_date,
)
from gatekeeper.ledger import Ledger
from gatekeeper.ledger import reservations as rsv
from gatekeeper.luigi import config
from gatekeeper.luigi.gated import GatedTask
from gatekeeper.luigi.targets import PublicationTarget

logger = logging.getLogger("luigi-interface.gatekeeper")


class DeltaPublicationTarget(PublicationTarget):
    """A business date published into a Delta table through the ledger.

    ``exists()`` needs both: no publication means not complete (False); a publication whose
    table is missing, whose transaction version for the app ID is below the revision, or whose
    rows for the date no longer have the published fingerprint (a RESTORE to an older version,
    an overwrite by another writer) raises OutputMismatch, never "complete".
    """

    def __init__(
        self,
        table_uri: str,
        consumer: str,
        business_date: Any,
        *,
        partition_column: str = "business_date",
        storage_options: dict[str, str] | None = None,
        ledger: Ledger | None = None,
    ):
        super().__init__(consumer, business_date, ledger)
        self.table_uri = table_uri
        self.partition_column = partition_column
        self.storage_options = storage_options

    def exists(self) -> bool:
        found = self.publication()
        if found is None:
            return False
        where = f"{self.consumer} {self.business_date} revision {found.revision}"
        if found.location != self.table_uri:
            raise OutputMismatch(f"{where} was published to {found.location}, not {self.table_uri}")
        committed = {
            r.revision: r for r in self.ledger().reservations.of(self.consumer, self.business_date)
        }
        mine = committed.get(found.revision)
        if mine is None or mine.table_version is None:
            raise OutputMismatch(f"{where} was not published to a Delta table")
        app = app_id(self.consumer, self.business_date)
        state = table_state(self.table_uri, self.storage_options, app)
        if state is None:
            raise OutputMismatch(f"{where}: Delta table {self.table_uri} is missing")
        version = state.transaction_version
        if version is None or version < found.revision:
            raise OutputMismatch(
                f"{where}: Delta table {self.table_uri} has transaction "
                f"version {version} for {app}, below the revision"
            )
        column, period = self.partition_column, self.business_date
        if same_files(self.table_uri, self.storage_options, column, period, mine.table_version):
            return True
        now = date_fingerprint(self.table_uri, self.storage_options, column, period)
        if now is None:
            raise OutputMismatch(f"{where}: Delta table {self.table_uri} is missing")
        if now[1] != found.fingerprint:
            raise OutputMismatch(
                f"{where}: Delta table {self.table_uri} (version {now[0]}) holds rows "
                f"for the date with {now[1]}, not the published {found.fingerprint} (committed "
                f"at table version {mine.table_version}; restored or overwritten since?)"
            )
        return True

    def delta_evidence(self) -> DeltaEvidence | None:
        """The evidence stored in the Delta commit of the newest revision; reads only."""
        found = self.publication()
        if found is None:
            return None
        return find_commit(
            self.table_uri, self.storage_options, self.consumer, self.business_date, found.revision
        )


class GatedDeltaTask(GatedTask):
    """A GatedTask whose output is one business date of a Delta table.

    Implement ``table_uri()`` (a local path or an object-store URI; storage options from
    ``[gatekeeper] delta_storage_options``) and ``build()`` returning Arrow-compatible data
    (a pyarrow Table, polars, pandas...). Every row's ``partition_column`` (default
    ``business_date``) must be the task's business date (else InvalidInput before anything is
    written). One revision replaces exactly that date's rows in one Delta commit whose metadata
    carries ``gatekeeper.consumer``, ``.business_date``, ``.revision``, ``.run_id``,
    ``.attempt``, ``.fingerprint``, ``.evidence`` (JSON: job -> run ID), ``.app_id`` and, for a
    ``--republish-reason``, ``.reason``.
    """

    partition_column = "business_date"
    outputs_in_ledger = False
    commit_retries = 10

    def table_uri(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement table_uri()")

    def _uri(self) -> str:
        """``table_uri()``; a local path made absolute (the ledger records where it is)."""
        uri = check_name(self.table_uri(), "table_uri")
        return uri if "://" in uri else os.path.abspath(uri)

    def storage_options(self) -> dict[str, str] | None:
        """Object-store options for deltalake (default: ``[gatekeeper] delta_storage_options``)."""
        return config.delta_storage_options()

    def output(self) -> DeltaPublicationTarget:
        return DeltaPublicationTarget(
            self._uri(),
            self.job_id,
            self.period_key,
            partition_column=check_column_name(self.partition_column, "partition_column"),
            storage_options=self.storage_options(),
            ledger=self.ledger(),
        )

    def complete(self) -> bool:
        """Published and in the table (see DeltaPublicationTarget); with ``--republish-reason``
        once the newest revision carries that reason and is in the table."""
        if not super().complete():
            return False
        return self.republish_reason is None or self.output().exists()

    def run(self) -> None:
        data = to_arrow(self.build())
        check_rows(
            data, check_column_name(self.partition_column, "partition_column"), self.period_key
        )
        fingerprint = table_fingerprint(data)
        uri = self._uri()
        self._settle_pending(uri, fingerprint)
        reserved = self.ledger().reservations.reserve(
            self.job_id,
            self.period_key,
            self.required_jobs(),
            fingerprint,
            producer=str(self.run_id),
            location=uri,
            reason=self.republish_reason,
            watermarks=self.watermarks(),
        )
        if reserved.committed:
            logger.info(
                "gatekeeper: %s %s revision %d already published at table version %s (no-op)",
                self.job_id,
                self.period_key,
                reserved.revision,
                reserved.table_version,
            )
            return
        commit = self.delta_commit(reserved, data)
        self._record(reserved, commit)

    def _record(self, reserved: rsv.Reservation, commit: DeltaEvidence) -> None:
        changed = self.ledger().reservations.commit(
            self.job_id,
            self.period_key,
            reserved.revision,
            producer=str(self.run_id),
            table_version=commit.table_version,
            writer=commit.run_id,
        )
        logger.info(
            "gatekeeper: %s %s revision %d %s at Delta table version %d",
            self.job_id,
            self.period_key,
            reserved.revision,
            "published" if changed else "already recorded",
            commit.table_version,
        )

    def delta_commit(self, reserved: rsv.Reservation, data: Any) -> DeltaEvidence:
        """Step 2: commit revision ``reserved.revision`` to the table, unless the table's
        transaction version for the app ID already reached it (an earlier attempt committed it
        and died); returns that commit. Retries a commit that lost a race with a concurrent
        writer. Raises OutputMismatch when the table holds that revision with other rows."""
        uri, options = reserved.location, self.storage_options()
        for tries in range(1, self.commit_retries + 1):
            done = self._committed(reserved)
            if done is not None:
                return done
            try:
                write_date(
                    uri,
                    data,
                    column=self.partition_column,
                    period=self.period_key,
                    revision=reserved.revision,
                    storage_options=options,
                    metadata=commit_metadata(self._evidence(reserved)),
                )
            except commit_conflicts():
                if tries == self.commit_retries:
                    raise
                time.sleep(random.uniform(0.05, 0.2) * tries)
                continue
            done = self._committed(reserved)
            if done is not None:
                return done
        raise OutputMismatch(
            f"{self.job_id} {self.period_key}: revision {reserved.revision} "
            f"was written to {uri} but its commit is not in the history"
        )

    def _committed(self, reserved: rsv.Reservation) -> DeltaEvidence | None:
        """The table's commit of ``reserved`` if its transaction version reached it."""
        app = app_id(self.job_id, self.period_key)
        state = table_state(reserved.location, self.storage_options(), app)
        if state is None or (state.transaction_version or 0) < reserved.revision:
            return None
        found = find_commit(
            reserved.location,
            self.storage_options(),
            self.job_id,
            self.period_key,
            reserved.revision,
        )
        if found is None or found.fingerprint != reserved.fingerprint:
            what = (
                "no commit of it"
                if found is None
                else (
                    f"commit version {found.table_version} by run {found.run_id} with "
                    f"{found.fingerprint}"
                )
            )
            raise OutputMismatch(
                f"{self.job_id} {self.period_key}: {reserved.location} has transaction version "
                f">= {reserved.revision} for {app} but {what}; the reservation has "
                f"{reserved.fingerprint}"
            )
        if found.run_id != self.run_id:
            logger.info(
                "gatekeeper: %s %s revision %d was committed at table version %d by "
                "run %s; not written again",
                self.job_id,
                self.period_key,
                reserved.revision,
                found.table_version,
                found.run_id,
            )
        return found

    def _evidence(self, reserved: rsv.Reservation) -> DeltaEvidence:
        return DeltaEvidence(
            -1,
            self.job_id,
            self.period_key,
            reserved.revision,
            str(self.run_id),
            reserved.fingerprint,
            reserved.evidence,
            reserved.reason,
            self.attempt_ordinal,
        )

    def _settle_pending(self, uri: str, fingerprint: str) -> None:
        """A pending reservation for another output (an attempt that died): record it if its
        commit reached the table (reserve then judges this run against it), release it if not
        (the table proves it never happened). Same output: reserve adopts it."""
        found = self.ledger().reservations.of(self.job_id, self.period_key)
        pending = found[0] if found and not found[0].committed else None
        if pending is None or (pending.fingerprint, pending.location, pending.reason) == (
            fingerprint,
            uri,
            self.republish_reason,
        ):
            return
        app = app_id(self.job_id, self.period_key)
        state = table_state(pending.location, self.storage_options(), app)
        if state is None or (state.transaction_version or 0) < pending.revision:
            self.ledger().reservations.release(
                self.job_id,
                self.period_key,
                pending.revision,
                producer=str(self.run_id),
            )
            logger.info(
                "gatekeeper: %s %s: released revision %d reserved by run %s (it never reached %s)",
                self.job_id,
                self.period_key,
                pending.revision,
                pending.producer_run_id,
                pending.location,
            )
            return
        self._record(pending, self._committed(pending) or _missing(pending))


def _missing(pending: rsv.Reservation) -> DeltaEvidence:
    raise OutputMismatch(
        f"{pending.consumer} {pending.business_date}: revision "
        f"{pending.revision} reached {pending.location} without its commit"
    )
