"""Luigi targets backed by the ledger: a publication, and a published file."""

from __future__ import annotations

import hashlib
import os
from typing import Any

import luigi

from gatekeeper.core.errors import OutputMismatch
from gatekeeper.core.periods import period_key
from gatekeeper.core.records import Publication
from gatekeeper.ledger import Ledger


def file_sha256(path: str) -> str:
    """``sha256:<hex>`` of a file's bytes, read in chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return "sha256:" + digest.hexdigest()


class PublicationTarget(luigi.Target):
    """The publication of ``consumer`` for ``business_date`` in the ledger.

    ``exists()`` is true once it is published; ``evidence()`` returns the authorizing run IDs.
    """

    def __init__(self, consumer: str, business_date: Any, ledger: Ledger | None = None):
        self.consumer = consumer
        self.business_date = period_key(business_date)
        self._ledger = ledger

    def ledger(self) -> Ledger:
        if self._ledger is None:
            from gatekeeper.luigi.tasks import shared_ledger

            self._ledger = shared_ledger()
        return self._ledger

    def publication(self) -> Publication | None:
        """The newest revision, or None; reads the ledger."""
        return self.ledger().publication(self.consumer, self.business_date)

    def exists(self) -> bool:
        return self.publication() is not None

    def evidence(self) -> dict[str, str]:
        """Requirement -> run ID of the newest revision; {} when not published."""
        found = self.publication()
        return dict(found.evidence) if found else {}

    def __repr__(self) -> str:
        return f"PublicationTarget({self.consumer!r}, {self.business_date!r})"


class FilePublicationTarget(PublicationTarget):
    """A file published through the ledger: the publication records its path and sha256.

    ``exists()`` needs both: no publication means not complete (False); a publication whose
    file is missing, elsewhere or has other bytes raises OutputMismatch — never "complete".
    """

    def __init__(self, path: str, consumer: str, business_date: Any, ledger: Ledger | None = None):
        super().__init__(consumer, business_date, ledger)
        self.path = os.path.abspath(path)

    def exists(self) -> bool:
        found = self.publication()
        if found is None:
            return False
        where = f"{self.consumer} {self.business_date} revision {found.revision}"
        if found.location != self.path:
            raise OutputMismatch(f"{where} was published at {found.location}, not {self.path}")
        if not os.path.exists(self.path):
            raise OutputMismatch(f"{where}: published file {self.path} is missing")
        actual = file_sha256(self.path)
        if actual != found.fingerprint:
            raise OutputMismatch(
                f"{where}: file {self.path} has {actual}, the publication recorded "
                f"{found.fingerprint}"
            )
        return True
