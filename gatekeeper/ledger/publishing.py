"""The two forms of a publication: keywords in, one ``PublicationRequest`` through.

``publish(...)`` and ``republish(...)`` are what users call (docs/gate.md): each checks its
arguments once, builds the request and hands it to ``publish_request``, the one method that
takes it. ``Ledger`` publishes the request in one transaction; the owned view of a running
attempt (``owned.py``) fences it first. Both inherit these forms, so the keyword signature
is written here alone.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable
from typing import Any

from gatekeeper.core.readiness import Watermarks
from gatekeeper.core.validation import check_optional_name, check_reason
from gatekeeper.ledger.requests import Output, PublicationRequest, WriteFn


class Publishing:
    """``publish`` and ``republish`` with keywords, over ``publish_request``."""

    def publish_request(self, request: PublicationRequest) -> bool:
        """Publish the checked ``request`` (a correction when its ``reason`` is set)."""
        raise NotImplementedError

    def publish(
        self,
        consumer: str,
        business_date: Any,
        required_jobs: Iterable[Any],
        fingerprint: str,
        write: WriteFn | None = None,
        *,
        location: str | None = None,
        watermarks: Watermarks | None = None,
        now: dt.datetime | None = None,
        producer: str | None = None,
    ) -> bool:
        """Publish ``consumer``'s output for the period with its evidence, in one transaction.

        With ``producer`` (the run ID of the consumer's attempt) the publication is fenced: the
        producer must be the latest attempt of (consumer, period), running with a lease live by
        the database's clock, else LeaseLost. Then reads readiness, calls ``write(tx)`` (a
        WriteHandle on this transaction) for the caller's own rows, stores the publication, its
        producer and the authorizing run IDs (and watermarks), and commits. Returns True for
        the first publication and False for a retry (same fingerprint, required jobs and
        location: nothing is written, ``write`` is not called). Raises NotReady when the gate
        is closed, PublicationConflict for a different fingerprint, required jobs or location
        (a correction is ``republish``), InvalidInput for bad values; any exception rolls back
        the output rows and the evidence together. ``location``: where an output outside the
        database lives (a file).
        """
        output = Output.checked(fingerprint, location, write)
        request = PublicationRequest.checked(consumer, business_date, required_jobs, output)
        producer = check_optional_name(producer, "producer")
        return self.publish_request(
            request.having(watermarks=watermarks, producer=producer, now=now)
        )

    def republish(
        self,
        consumer: str,
        business_date: Any,
        required_jobs: Iterable[Any],
        fingerprint: str,
        write: WriteFn | None = None,
        *,
        reason: str,
        location: str | None = None,
        watermarks: Watermarks | None = None,
        now: dt.datetime | None = None,
        producer: str | None = None,
    ) -> bool:
        """Publish a correction as revision n+1 with fresh evidence, in one transaction.

        Earlier revisions and their evidence stay. Returns False (nothing written) when the
        newest revision already has this fingerprint, location, reason and evidence; True
        otherwise. Fenced by ``producer`` as ``publish`` is (LeaseLost). Raises InvalidInput
        for an empty ``reason`` and NotReady when the gate is closed.
        """
        reason = check_reason(reason, "reason")
        output = Output.checked(fingerprint, location, write)
        request = PublicationRequest.checked(consumer, business_date, required_jobs, output)
        producer = check_optional_name(producer, "producer")
        return self.publish_request(
            request.having(watermarks=watermarks, reason=reason, producer=producer, now=now)
        )
