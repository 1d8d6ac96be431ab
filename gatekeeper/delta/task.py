"""GatedDeltaTask: publish one business date into a Delta table, exactly once across the ledger
and the table, with the evidence inside the Delta commit.

A Delta commit and a ledger transaction cannot be one transaction, so a publication is three
steps (``docs/ownership.md``): (1) the ledger reserves revision N (gate open, producer fenced,
fingerprint, evidence and the table version read before the fence stored); (2) one Delta
commit replaces the date's rows, tagged with the application transaction
(``gatekeeper:{consumer}:{date}``, N), made against that table version so that any commit of
the app ID since (a successor's, or the fence commit of a takeover) fails it, skipped when
the table's transaction version for that app ID is already >= N; a lost race re-enters the
fence before the next try; (3) the ledger records N committed with the table version. A crash
between (2) and (3) is finished by the next attempt without a second write; a frozen attempt's
commit lands before its successor checks the table or never. ``deltalake`` and ``pyarrow``
(the ``delta`` extra) are imported when used.

Every read of the table and the write go through the operations of ``table.py`` and
``history.py`` (picklable arguments and results, never a DeltaTable here), which ``runner.py``
dispatches: in this process, or, in a fork of a process that already started deltalake's
runtime (Luigi's ``--workers N`` forks one process per task after its completeness checks read
the table), in a helper process started with ``spawn``; its errors arrive as their own types.
"""

from __future__ import annotations

import logging
import os
import random
import time
from dataclasses import replace
from typing import Any

from gatekeeper.core.errors import GatekeeperError, OutputMismatch
from gatekeeper.core.validation import check_column_name, check_name
from gatekeeper.delta.history import (
    DeltaEvidence,
    app_id,
    commit_metadata,
    fence_metadata,
    find_commit,
)
from gatekeeper.delta.table import (
    check_rows,
    fence_date,
    table_fingerprint,
    table_state,
    to_arrow,
    write_date,
)
from gatekeeper.delta.target import DeltaPublicationTarget
from gatekeeper.ledger import reservations as rsv
from gatekeeper.luigi import integration_config
from gatekeeper.luigi.gated import GatedTask

logger = logging.getLogger("luigi-interface.gatekeeper")


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
        return integration_config.delta_storage_options()

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
        (or ``--rerun``) once the newest revision carries that reason and is in the table."""
        if not super().complete():
            return False
        return self.publish_reason is None or self.output().exists()

    def run(self) -> None:
        data = to_arrow(self.build())
        check_rows(
            data, check_column_name(self.partition_column, "partition_column"), self.period_key
        )
        fingerprint = table_fingerprint(data)
        uri = self._uri()
        self._settle_pending(uri, fingerprint, data)
        # read before the fence: the commit is made against this version (docs/ownership.md)
        seen = table_state(uri, self.storage_options(), app_id(self.job_id, self.period_key))
        reserved = self.ledger().reservations.reserve(
            self.job_id,
            self.period_key,
            self.required_jobs(),
            fingerprint,
            producer=str(self.run_id),
            location=uri,
            reason=self.publish_reason,
            watermarks=self.watermarks(),
            table_version=None if seen is None else seen.version,
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
        and died); returns that commit. A try that lost a race (a concurrent commit of this
        date, or a takeover's fence) is tried again after re-entering the fence: LeaseLost
        when this run no longer owns the date. Raises OutputMismatch when the table holds
        that revision with other rows, GatekeeperError after ``commit_retries`` lost races."""
        for tries in range(1, self.commit_retries + 1):
            if tries > 1:
                time.sleep(random.uniform(0.05, 0.2) * tries)
                reserved = self._claim(reserved)
            done = self._committed(reserved)
            if done is not None:
                return done
            version = self.write_revision(reserved, data)
            if version is not None:
                return replace(self._evidence(reserved), table_version=version)
        raise GatekeeperError(
            f"{self.job_id} {self.period_key}: revision {reserved.revision} lost the race for "
            f"{reserved.location} {self.commit_retries} times (concurrent commits); none of "
            "its tries is in the table"
        )

    def write_revision(self, reserved: rsv.Reservation, data: Any) -> int | None:
        """One try of step 2: the Delta commit of ``reserved`` made against the table version
        it was fenced at (``reserved.table_version``). Returns the version it made; None when
        it lost a race (nothing of it is in the table)."""
        return write_date(
            reserved.location,
            data,
            column=self.partition_column,
            period=self.period_key,
            revision=reserved.revision,
            storage_options=self.storage_options(),
            metadata=commit_metadata(self._evidence(reserved)),
            base_version=reserved.table_version,
        )

    def _claim(self, reserved: rsv.Reservation) -> rsv.Reservation:
        """Re-enter the fence for ``reserved`` at the table's version now (read first):
        LeaseLost when this run no longer owns the date."""
        app = app_id(self.job_id, self.period_key)
        state = table_state(reserved.location, self.storage_options(), app)
        return self.ledger().reservations.claim(
            self.job_id,
            self.period_key,
            reserved.revision,
            producer=str(self.run_id),
            table_version=None if state is None else state.version,
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
            self._claim(reserved)  # a run fenced out of the date stops here with LeaseLost
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

    def _settle_pending(self, uri: str, fingerprint: str, data: Any) -> None:
        """A pending reservation of another run (an attempt that died or froze): first shut
        its commit out of the table (``_fence_out``). Then, for another output, record it if
        its commit reached the table (reserve then judges this run against it), release it
        if not (the table proves it never happened). Same output: reserve adopts it."""
        found = self.ledger().reservations.of(self.job_id, self.period_key)
        pending = found[0] if found and not found[0].committed else None
        if pending is None:
            return
        if pending.producer_run_id != str(self.run_id):
            self._fence_out(pending, data)
        if (pending.fingerprint, pending.location, pending.reason) == (
            fingerprint,
            uri,
            self.publish_reason,
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

    def _fence_out(self, pending: rsv.Reservation, data: Any) -> None:
        """Take ``pending`` over: under the fence (``claim``: LeaseLost if this run lost the
        date meanwhile), one commit of the app ID that changes no rows (``fence_date``), so
        the commit of its producer, if still in flight, can no longer land. Nothing to do
        when the table already has it. Writes the claim and the fence commit."""
        app = app_id(self.job_id, self.period_key)
        options = self.storage_options()
        for tries in range(1, self.commit_retries + 1):
            state = table_state(pending.location, options, app)
            if state is not None and (state.transaction_version or 0) >= pending.revision:
                return  # its commit landed before the fence: the check records it
            base = None if state is None else state.version
            self.ledger().reservations.claim(
                self.job_id,
                self.period_key,
                pending.revision,
                producer=str(self.run_id),
                table_version=base,
            )
            version = fence_date(
                pending.location,
                data.schema,
                column=self.partition_column,
                app=app,
                metadata=fence_metadata(
                    self.job_id, self.period_key, str(self.run_id), pending.producer_run_id
                ),
                storage_options=options,
                base_version=base,
                transaction_version=None if state is None else state.transaction_version,
            )
            if version is not None:
                logger.info(
                    "gatekeeper: %s %s: took revision %d over from run %s (fence commit at "
                    "table version %d)",
                    self.job_id,
                    self.period_key,
                    pending.revision,
                    pending.producer_run_id,
                    version,
                )
                return
            time.sleep(random.uniform(0.05, 0.2) * tries)
        raise GatekeeperError(
            f"{self.job_id} {self.period_key}: the fence commit of revision "
            f"{pending.revision} lost the race for {pending.location} "
            f"{self.commit_retries} times (concurrent commits)"
        )


def _missing(pending: rsv.Reservation) -> DeltaEvidence:
    raise OutputMismatch(
        f"{pending.consumer} {pending.business_date}: revision "
        f"{pending.revision} reached {pending.location} without its commit"
    )
