"""The output of a GatedDeltaTask: a business date published through the ledger into a Delta
table, complete only when the ledger and the table agree (``task.py`` writes it)."""

from __future__ import annotations

from typing import Any

from gatekeeper.core.errors import OutputMismatch
from gatekeeper.delta.history import DeltaEvidence, app_id, find_commit
from gatekeeper.delta.table import date_fingerprint, same_files, table_state
from gatekeeper.ledger import Ledger
from gatekeeper.luigi.targets import PublicationTarget


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
