"""A Delta table's own record of what gatekeeper committed: the ``gatekeeper.*`` commit
metadata, written beside each publication and read back from the table's history alone (no
ledger) as ``DeltaEvidence``: ``delta_evidence`` for readers, ``find_commit`` for the task.
"""

from __future__ import annotations

import datetime as dt
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from gatekeeper.core.errors import OutputMismatch
from gatekeeper.core.periods import period_key
from gatekeeper.delta import runner as delta_runner
from gatekeeper.delta.table import PREFIX, _deltalake, open_table

#: The commit metadata keys gatekeeper writes (``DESCRIBE HISTORY`` shows them).
KEYS = (
    "consumer",
    "business_date",
    "revision",
    "run_id",
    "attempt",
    "fingerprint",
    "evidence",
    "app_id",
    "reason",
)


@dataclass(frozen=True, slots=True)
class DeltaEvidence:
    """One gatekeeper commit of a Delta table, read from the table's history alone.

    ``evidence``: required job -> the run ID that authorized this revision.
    """

    table_version: int
    consumer: str
    business_date: str
    revision: int
    run_id: str
    fingerprint: str
    evidence: dict[str, str] = field(default_factory=dict)
    reason: str | None = None
    attempt: int | None = None
    committed_at: dt.datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "table_version": self.table_version,
            "consumer": self.consumer,
            "business_date": self.business_date,
            "revision": self.revision,
            "run_id": self.run_id,
            "attempt": self.attempt,
            "fingerprint": self.fingerprint,
            "evidence": dict(self.evidence),
            "reason": self.reason,
            "committed_at": None if self.committed_at is None else self.committed_at.isoformat(),
        }


def app_id(consumer: str, period: str) -> str:
    """The Delta application transaction ID of (consumer, business date)."""
    return f"gatekeeper:{consumer}:{period}"


def commit_metadata(evidence: DeltaEvidence) -> dict[str, str]:
    """The ``gatekeeper.*`` commit metadata of ``evidence`` (all strings)."""
    values = {
        "consumer": evidence.consumer,
        "business_date": evidence.business_date,
        "revision": str(evidence.revision),
        "run_id": evidence.run_id,
        "attempt": None if evidence.attempt is None else str(evidence.attempt),
        "fingerprint": evidence.fingerprint,
        "evidence": json.dumps(evidence.evidence, sort_keys=True),
        "app_id": app_id(evidence.consumer, evidence.business_date),
        "reason": evidence.reason,
    }
    return {PREFIX + k: v for k, v in values.items() if v is not None}


def fence_metadata(consumer: str, period: str, run_id: str, fenced_run_id: str) -> dict[str, str]:
    """The commit metadata of a takeover's fence (``fence_date``): run ``run_id`` shut the
    commits of ``fenced_run_id`` for (consumer, period) out. No ``gatekeeper.revision``, so
    it is never taken for a publication's commit."""
    return {
        PREFIX + "fence": app_id(consumer, period),
        PREFIX + "fence_run_id": run_id,
        PREFIX + "fenced_run_id": fenced_run_id,
    }


def _from_commit(info: Mapping[str, Any]) -> DeltaEvidence | None:
    """The DeltaEvidence of one ``history()`` entry, None when gatekeeper did not write it."""
    get = {k: info.get(PREFIX + k) for k in KEYS}
    if get["consumer"] is None or get["business_date"] is None or get["revision"] is None:
        return None
    stamp = info.get("timestamp")
    return DeltaEvidence(
        int(info["version"]),
        str(get["consumer"]),
        str(get["business_date"]),
        int(get["revision"]),
        str(get["run_id"]),
        str(get["fingerprint"]),
        json.loads(get["evidence"]) if get["evidence"] else {},
        get["reason"],
        None if get["attempt"] is None else int(get["attempt"]),
        None if stamp is None else dt.datetime.fromtimestamp(stamp / 1000, dt.timezone.utc),
    )


def find_commit(
    uri: str, storage_options: dict[str, str] | None, consumer: str, period: str, revision: int
) -> DeltaEvidence | None:
    """The commit of the table carrying (consumer, period, revision), from its history; None
    when there is none (or no table)."""
    return delta_runner.run(_find_commit, uri, storage_options, consumer, period, revision)


def _find_commit(
    uri: str, storage_options: dict[str, str] | None, consumer: str, period: str, revision: int
) -> DeltaEvidence | None:
    table = open_table(uri, storage_options)
    for info in [] if table is None else table.history():
        found = _from_commit(info)
        if found is not None and (found.consumer, found.business_date, found.revision) == (
            consumer,
            period,
            revision,
        ):
            return found
    return None


def delta_evidence(
    table_uri: str,
    business_date: Any,
    *,
    consumer: str | None = None,
    storage_options: dict[str, str] | None = None,
) -> DeltaEvidence | None:
    """The evidence of the rows ``table_uri`` holds now for ``business_date``, read from the
    table's history alone (no ledger): the newest gatekeeper commit for that date (by
    ``consumer`` if given) that a later RESTORE did not undo; None when there is none.
    Reads only. A commit by another writer after it is not judged here. Raises
    OutputMismatch when the history holds two commits of that revision (only a table
    written before gatekeeper fenced its Delta commits can: ``docs/ownership.md``)."""
    period = period_key(business_date)
    _deltalake()  # the missing extra is said here, in the caller's process
    return delta_runner.run(_delta_evidence, table_uri, period, consumer, storage_options)


def _delta_evidence(
    table_uri: str, period: str, consumer: str | None, storage_options: dict[str, str] | None
) -> DeltaEvidence | None:
    table = open_table(table_uri, storage_options)
    if table is None:
        return None
    history = sorted(table.history(), key=lambda info: -int(info["version"]))
    ceiling = math.inf
    for info in history:
        version = int(info["version"])
        if version > ceiling:
            continue
        if info.get("operation") == "RESTORE":
            ceiling = _restored_version(info, history)
            continue
        found = _from_commit(info)
        if (
            found is not None
            and found.business_date == period
            and (consumer is None or found.consumer == consumer)
        ):
            _refuse_repeated(found, history)
            return found
    return None


def _refuse_repeated(found: DeltaEvidence, history: list[dict[str, Any]]) -> None:
    """OutputMismatch when another commit of the history carries the same revision as
    ``found``: two runs' commits of one revision (a table written before commits were fenced)
    cannot both be the publication, and the history alone cannot say which one the ledger
    recorded."""
    key = (found.consumer, found.business_date, found.revision)
    for info in history:
        other = _from_commit(info)
        if (
            other is not None
            and other.table_version != found.table_version
            and (other.consumer, other.business_date, other.revision) == key
        ):
            raise OutputMismatch(
                f"{found.consumer} {found.business_date}: revision {found.revision} has two "
                f"commits in the table's history (version {other.table_version} by run "
                f"{other.run_id}, version {found.table_version} by run {found.run_id}); "
                "the ledger says which one was published (gatekeeper evidence)"
            )


def _restored_version(info: Mapping[str, Any], history: list[dict[str, Any]]) -> float:
    """The version a RESTORE commit went back to (by version, or by timestamp)."""
    params = info.get("operationParameters") or {}
    if params.get("version") is not None:
        return int(params["version"])
    when = params.get("datetime")
    if when is not None:
        at = (
            int(when)
            if str(when).isdigit()
            else int(dt.datetime.fromisoformat(str(when)).timestamp() * 1000)
        )
        before = [int(h["version"]) for h in history if int(h.get("timestamp", 0)) <= at]
        return max(before, default=-1)
    return int(info["version"]) - 1
