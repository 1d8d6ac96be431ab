"""Gated tasks: publish one output per period once the readiness gate is open."""

from __future__ import annotations

import logging
import os
import uuid
from typing import Any

import luigi

from gatekeeper.core.errors import InvalidInput, NotReady, PublicationConflict
from gatekeeper.core.gate import Watermarks
from gatekeeper.core.records import fingerprint
from gatekeeper.core.validation import check_optional_name, check_reason
from gatekeeper.ledger import Ledger
from gatekeeper.ledger.requests import Output, PublicationRequest
from gatekeeper.luigi import config
from gatekeeper.luigi.period_tasks import BusinessMonthTask, BusinessQuarterTask, BusinessWeekTask
from gatekeeper.luigi.rerun import refuse_empty
from gatekeeper.luigi.targets import FilePublicationTarget, PublicationTarget, file_sha256
from gatekeeper.luigi.tasks import BusinessDateTask, BusinessHourTask, PeriodTask

logger = logging.getLogger("luigi-interface.gatekeeper")


class ReasonParameter(luigi.OptionalParameter):
    """``--republish-reason``: checked when the task is built (no blank, NUL or surrounding
    whitespace), before any attempt is recorded."""

    def normalize(self, x: Any) -> str | None:
        return check_optional_name(x, "republish_reason")


class GatedPeriodTask(PeriodTask):
    """What GatedTask does, for a period of any kind: mix it in before a period task class
    (``class MonthReport(gk.GatedPeriodTask, gk.BusinessMonthTask)``) for a publication per
    week, month or quarter. A required task of a finer kind (the daily runs of every business
    day of the month) is required for its own period, and the publication's evidence names
    each of their run IDs. See GatedTask.
    """

    republish_reason: Any = ReasonParameter(
        default=None,
        significant=False,
        description="Publish a correction (a new revision) for this date, with this reason",
    )

    publishes = True
    outputs_in_ledger = True

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        """PeriodTask's, then ``--republish-reason ""`` on the luigi command line refused
        (``rerun.refuse_empty``; nothing is written)."""
        super().__init__(*args, **kwargs)
        refuse_empty(self.get_task_family(), "republish_reason", self.republish_reason)

    def output(self) -> PublicationTarget:
        return PublicationTarget(self.job_id, self.period_key, self.ledger())

    @property
    def publish_reason(self) -> str | None:
        """The reason of this run's republication: ``--republish-reason``, else ``--rerun``'s
        (a rerun of a publisher republishes with its reason), else None (a publication)."""
        return self.republish_reason if self.republish_reason is not None else self.rerun

    def complete(self) -> bool:
        """Published (see BusinessDateTask); with ``--republish-reason`` (or ``--rerun``),
        once the newest revision carries that reason and, with an explicit ``--attempt N``
        (or ``--rerun``) too, attempt N (the rerun's) or a later one succeeded (a republish
        that is also a repair: ``--reprocess all``)."""
        reason = self.publish_reason
        if reason is None:
            return super().complete()
        rerun = bool(self.attempt) or self.rerun is not None
        repaired = not rerun or super().complete()  # judges N first (repair_accepted)
        newest = self.ledger().publication(self.job_id, self.period_key)
        return repaired and newest is not None and newest.reason == reason

    def required_jobs(self) -> list[Any]:
        """The requirements the gate judges: each period task in ``requires()``, for the
        period it is built for. One for this period is its job; one for another period (a
        finer one, or ``self.previous_period()``'s) is the pair ``(job, period key)``, and
        the evidence names that period. Override for an upstream that is no task here.
        """
        jobs: list[Any] = []
        for task in luigi.task.flatten(self.requires()):
            if not isinstance(task, PeriodTask):
                continue
            if task.period_key == self.period_key:
                jobs.append(task.job_id)
            else:  # a finer period, or another one of this kind: its own key
                jobs.append((task.job_id, task.period_key))
        if not jobs:
            raise InvalidInput(
                "required_jobs",
                jobs,
                f"{self.job_id} requires no gatekeeper "
                "job; return BusinessDateTasks from requires() or override "
                "required_jobs()",
            )
        return jobs

    def watermarks(self) -> Watermarks | None:
        """Watermarks of the same-date upstream tasks that declare one, required to reach the
        end of this date's interval in the business time zone; None when none declares one."""
        observed = {
            task.job_id: task.watermark()
            for task in luigi.task.flatten(self.requires())
            if isinstance(task, PeriodTask)
            and task.declares_watermark()
            and task.period_key == self.period_key
        }
        if not observed:
            return None
        zone = config.timezone()
        end = self.period_kind.closes_at(self.period_key, zone)
        return Watermarks.parse(end, observed)

    def before_attempt(self, ledger: Ledger) -> None:
        readiness = ledger.readiness(self.required_jobs(), self.period_key, self.watermarks())
        if not readiness:
            raise NotReady(readiness)

    def reruns_succeeded(self) -> bool:
        """A republish runs again a period whose latest attempt succeeded (as ``--attempt``
        and ``--rerun``)."""
        return self.republish_reason is not None or super().reruns_succeeded()

    def build(self) -> Any:
        """Compute the output payload (JSON-serializable, or bytes)."""
        raise NotImplementedError(f"{type(self).__name__} must implement build()")

    def write(self, tx: Any, payload: Any) -> None:
        """Write ``payload`` through ``tx`` (a WriteHandle on the publication transaction:
        ``execute``/``executemany`` with ``?`` placeholders; no commit) (default: nothing)."""

    def fingerprint_of(self, payload: Any) -> str:
        return fingerprint(payload)

    def location_of(self, payload: Any) -> str | None:
        return None

    def run(self) -> None:
        self.publish_payload(self.build())

    def _publication_request(self, payload: Any) -> PublicationRequest:
        """The request to publish ``payload`` for this period (a republication with
        ``--republish-reason``), fenced by this attempt's run ID, checked as
        ``Ledger.publish`` and ``republish`` check their arguments; raises InvalidInput."""
        key, required = self.period_key, self.required_jobs()
        digest = self.fingerprint_of(payload)
        location, watermarks = self.location_of(payload), self.watermarks()
        reason = self.publish_reason
        if reason is not None:
            reason = check_reason(reason, "reason")
        output = Output.checked(digest, location, lambda conn: self.write(conn, payload))
        request = PublicationRequest.checked(self.job_id, key, required, output)
        producer = check_optional_name(self.run_id, "producer")
        return request.having(watermarks=watermarks, reason=reason, producer=producer)

    def publish_payload(self, payload: Any) -> None:
        """Publish (or, with ``--republish-reason``, republish) ``payload``, fenced by this
        attempt's run ID; ``write(tx, payload)`` runs inside the transaction."""
        request = self._publication_request(payload)
        changed = self.ledger().publish_request(request)
        if self.publish_reason is not None:
            done = "republished" if changed else "already republished (no-op)"
        else:
            done = "published" if changed else "already published with this output (no-op)"
        logger.info("gatekeeper: %s %s %s", self.job_id, self.period_key, done)


class GatedTask(GatedPeriodTask, BusinessDateTask):
    """A task that publishes one output per business date once its upstream jobs are ready.

    Implement ``build()`` (returns a JSON-serializable payload or bytes; its canonical sha256
    is the fingerprint) and ``write(tx, payload)`` (writes the payload through ``tx``, a
    handle on the publication transaction: ``tx.execute(sql, params)`` with ``?``
    placeholders). ``run()`` opens the gate first: while any required job's latest attempt has
    not succeeded for this date it fails with NotReady and records nothing. Output and evidence
    then commit together, fenced by this attempt's run ID (a worker that lost its lease gets
    LeaseLost and writes nothing); a retry with the same payload writes nothing, a different
    payload fails with PublicationConflict. ``GatedPeriodTask`` is the same for any period.
    """


class GatedHourTask(GatedPeriodTask, BusinessHourTask):
    """GatedTask for one business hour (``--business-hour 2026-10-23T05``): it publishes one
    output per hour once the latest attempt of every required job succeeded for that hour
    (a BusinessHourTask in ``requires()``; a daily one is required for its own date), with the
    same gate, fencing, retry and republish rules; ``RangeBusinessHourly --of`` fills it."""


class GatedWeekTask(GatedPeriodTask, BusinessWeekTask):
    """GatedTask for one ISO week (``--business-week 2026-W41``); ``RangeBusinessWeekly``
    fills it. A required daily task is required for its own date (each day of the week)."""


class GatedMonthTask(GatedPeriodTask, BusinessMonthTask):
    """GatedTask for one calendar month (``--business-month 2026-10``);
    ``RangeBusinessMonthly`` fills it."""


class GatedQuarterTask(GatedPeriodTask, BusinessQuarterTask):
    """GatedTask for one calendar quarter (``--business-quarter 2026-Q4``);
    ``RangeBusinessQuarterly`` fills it."""


class GatedFileTask(GatedTask):
    """A GatedTask whose output is a file: written atomically, then published with its sha256.

    Implement ``output_path()`` and ``build_file(path)`` (write the content to ``path``, a
    temporary file beside the final one). gatekeeper renames it into place inside the
    publication transaction, once the gate is open, this attempt still owns the date (fencing)
    and no different output is published; then it publishes the path and checksum.
    """

    outputs_in_ledger = False

    def output_path(self) -> str:
        raise NotImplementedError(f"{type(self).__name__} must implement output_path()")

    def build_file(self, path: str) -> None:
        raise NotImplementedError(f"{type(self).__name__} must implement build_file(path)")

    def output(self) -> FilePublicationTarget:
        return FilePublicationTarget(
            self.output_path(), self.job_id, self.period_key, self.ledger()
        )

    def build(self) -> dict[str, str]:
        final = os.path.abspath(self.output_path())
        os.makedirs(os.path.dirname(final), exist_ok=True)
        temporary = f"{final}.tmp-{uuid.uuid4().hex}"
        try:
            self.build_file(temporary)
            checksum = file_sha256(temporary)
        except BaseException:
            _remove(temporary)
            raise
        published = self.ledger().publication(self.job_id, self.period_key)
        if published is not None and published.fingerprint != checksum:
            _remove(temporary)
            raise PublicationConflict(
                f"{self.job_id} {self.period_key}: {final} was published with "
                f"{published.fingerprint}, the new file has {checksum}; the published file "
                "is left untouched (a correction is an explicit republish)",
                consumer=self.job_id,
                period=self.period_key,
                revision=published.revision,
            )
        return {"path": final, "sha256": checksum, "temporary": temporary}

    def write(self, tx: Any, payload: Any) -> None:
        """Rename the file into place: called inside the publication transaction, after the
        fencing and gate checks, only when this publication is new. A try after one whose
        COMMIT was lost (``ledger/readback.py``: found not committed, run again) finds the
        file in place already, moved by that try: it is kept when it is this output."""
        if not os.path.exists(payload["temporary"]) and os.path.exists(payload["path"]):
            if file_sha256(payload["path"]) == payload["sha256"]:
                return
        os.replace(payload["temporary"], payload["path"])

    def run(self) -> None:
        payload = self.build()
        try:
            self.publish_payload(payload)
        finally:
            _remove(payload["temporary"])

    def fingerprint_of(self, payload: Any) -> str:
        return str(payload["sha256"])

    def location_of(self, payload: Any) -> str | None:
        return str(payload["path"])


def _remove(path: str) -> None:
    if os.path.exists(path):
        os.remove(path)
