"""OpenLineage run events for every attempt (optional extra ``openlineage``, imported lazily).

With ``[gatekeeper] openlineage = true`` (or ``$GATEKEEPER_OPENLINEAGE=true``) every attempt a
task records is an OpenLineage run of the job ``[gatekeeper] openlineage_namespace`` / job ID:

- ``START`` once the attempt is recorded running, ``COMPLETE`` or ``FAIL`` once its outcome is;
- ``ABORT`` for an attempt abandoned because its lease expired: sent by the process whose new
  attempt recorded the abandonment, the one that observes it (the abandoned worker is dead or
  paused; if it wakes, its LeaseLost records nothing, so it sends nothing).

``runId`` is the attempt's run ID when that is a UUID (gatekeeper's own are ``uuid4().hex``),
else ``uuid5(RUN_ID_NAMESPACE, run_id)`` (stable: every producer maps a collected run the same
way). Run facets: ``nominalTime`` (the business period's half-open interval in the business time
zone), ``gatekeeper`` (period, attempt; on a GatedTask's COMPLETE the publication and its
evidence; on ABORT the attempt that took over; schema in docs/openlineage/), on a publication's
COMPLETE the standard ``jobDependencies`` facet listing the authorizing upstream runs, and
``errorMessage`` on FAIL. The upstream runs are not a ``parent``: ParentRunFacet names the one
run that spawned this one (an Airflow DAG run), and a publication has several authorizing
upstream runs that did not spawn it.

Delivery never fails or holds up a task, and a lineage backend that is down or hanging costs
a whole invocation at most one wait of ``[gatekeeper] openlineage_timeout`` seconds
(``delivery``: a bounded queue and a background thread per process, one wait per process at
its end, and the verdict "down" shared by the task processes Luigi forks, ``invocation``).
The transport is ``OpenLineageClient()`` with OpenLineage's own configuration
(``OPENLINEAGE_URL``, ``OPENLINEAGE_CONFIG``, ``openlineage.yml``, ``OPENLINEAGE__...``).
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import logging
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from gatekeeper.core.clock import utc_now
from gatekeeper.core.errors import GatekeeperError
from gatekeeper.core.periods import parse_period, parse_timezone
from gatekeeper.core.records import Attempt, Publication, RunState, requirement_label
from gatekeeper.core.version import package_version
from gatekeeper.integrations.lineage.delivery import delivery, invocation, warn_once
from gatekeeper.ledger import Ledger

logger = logging.getLogger("luigi-interface.gatekeeper")

PRODUCER = f"urn:gatekeeper:{package_version()}"
FACET_SCHEMA_URL = (
    "urn:gatekeeper:spec:facets:1-0-0:GatekeeperRunFacet.json#/$defs/GatekeeperRunFacet"
)
#: uuid5 namespace of run IDs that are not UUIDs (collected runs, hand-recorded observations).
RUN_ID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:gatekeeper:run-id")
_EVENT_TYPES = {
    RunState.RUNNING: "START",
    RunState.SUCCEEDED: "COMPLETE",
    RunState.FAILED: "FAIL",
    RunState.ABANDONED: "ABORT",
}


def run_uuid(run_id: str) -> str:
    """The OpenLineage ``runId`` of a ledger run ID: itself when it is a UUID (canonical form),
    else ``uuid5(RUN_ID_NAMESPACE, run_id)``."""
    try:
        return str(uuid.UUID(run_id))
    except ValueError:
        return str(uuid.uuid5(RUN_ID_NAMESPACE, run_id))


@dataclass(frozen=True, slots=True)
class LineageSettings:
    """What the events need from ``[gatekeeper]``: read by the Luigi adapter
    (``gatekeeper.luigi.integration_config.lineage``), so this module reads no configuration
    itself."""

    namespace: str
    timezone: str
    timeout: float


def configured(settings: LineageSettings | None) -> bool:
    """True when run events are to be emitted (``settings`` given); checked before an attempt
    is allocated.

    Raises GatekeeperError when enabled but openlineage-python is not installed. Writes nothing.
    """
    if settings is None:
        return False
    try:
        importlib.import_module("openlineage.client")
    except ImportError as exc:
        raise GatekeeperError(
            "[gatekeeper] openlineage = true needs openlineage-python: "
            f"pip install 'luigi-gatekeeper[openlineage]' ({exc})"
        ) from None
    return True


def prepare(settings: LineageSettings | None) -> None:
    """In a process about to fork task processes, when events are on: import openlineage-python
    and build the facet class, and create the invocation's shared state, so that every child
    inherits them (importing openlineage-python costs about half a second of CPU, per process
    that does it). Never raises: an attempt reports what is wrong itself."""
    if settings is None:
        return
    try:
        _event_classes()
        _facet_class()
        invocation()
    except Exception:  # noqa: BLE001, S110 - the attempt's own configured() reports it
        pass


def started(settings: LineageSettings | None, task: Any, ledger: Ledger, attempt: Attempt) -> None:
    """Send START for ``attempt`` of ``task`` (a PeriodTask), and ABORT for each attempt its
    start recorded abandoned; never raises (reads the ledger once, writes nothing)."""
    _guarded(settings, lambda s: _started(s, task, ledger, attempt))


def ended(
    settings: LineageSettings | None,
    task: Any,
    ledger: Ledger,
    attempt: Attempt,
    state: RunState,
    error: str | None,
) -> None:
    """Send COMPLETE or FAIL for ``attempt`` once ``state`` is recorded (with the publication
    and its evidence for a task that publishes); never raises or waits (reads the ledger once
    for a publication, writes nothing)."""
    _guarded(settings, lambda s: _ended(s, task, ledger, attempt, state, error))


def _guarded(settings: LineageSettings | None, action: Callable[[LineageSettings], None]) -> None:
    try:
        if settings is not None:
            action(settings)
    except Exception as exc:  # lineage never fails a task
        warn_once(f"could not build or queue an OpenLineage event: {type(exc).__name__}: {exc}")


def _started(s: LineageSettings, task: Any, ledger: Ledger, attempt: Attempt) -> None:
    out = delivery(s.timeout)
    history = [] if out.shared.is_down() else ledger.attempts(task.job_id, task.period_key)
    mine = next((a for a in history if a.run_id == attempt.run_id), attempt)
    for old in history:  # abandoned by this start: in its transaction, at its instant
        if old.state is RunState.ABANDONED and old.updated_at == mine.started_at:
            abort = functools.partial(
                _event, s, task, old, RunState.ABANDONED, old.updated_at, taken_over_by=attempt
            )
            out.offer(abort)
    out.offer(lambda: _event(s, task, attempt, RunState.RUNNING, attempt.started_at))


def _ended(
    s: LineageSettings,
    task: Any,
    ledger: Ledger,
    attempt: Attempt,
    state: RunState,
    error: str | None,
) -> None:
    at = utc_now()

    def build() -> Any:
        publication = None
        if state is RunState.SUCCEEDED and getattr(task, "publishes", False):
            publication = ledger.publication(task.job_id, task.period_key)
        return _event(s, task, attempt, state, at, error=error, publication=publication)

    delivery(s.timeout).offer(build)


# -- events ----------------------------------------------------------------------------------
def _event(
    s: LineageSettings,
    task: Any,
    attempt: Attempt,
    state: RunState,
    at: dt.datetime,
    *,
    error: str | None = None,
    taken_over_by: Attempt | None = None,
    publication: Publication | None = None,
) -> Any:
    """The RunEvent of ``attempt`` reaching ``state`` (openlineage-python objects)."""
    Job, Run, RunEvent, EventType = _event_classes()  # noqa: N806 - classes
    from openlineage.client.generated import error_message_run, job_type_job, nominal_time_run

    namespace, zone = s.namespace, s.timezone
    kind = parse_period(task.period_kind)
    span = kind.interval(kind.label(attempt.period_key), zone)
    local = parse_timezone(zone)
    start, end = span.start.astimezone(local), span.end.astimezone(local)
    facets: dict[str, Any] = {
        "nominalTime": nominal_time_run.NominalTimeRunFacet(
            nominalStartTime=start.isoformat(), nominalEndTime=end.isoformat(), producer=PRODUCER
        ),
        "gatekeeper": _facet_class()(
            period={
                "kind": kind.name,
                "key": attempt.period_key,
                "timezone": zone,
                "start": start.isoformat(),
                "end": end.isoformat(),
            },
            attempt={
                "number": attempt.attempt,
                "ledgerRunId": attempt.run_id,
                "state": state.value,
                "startedAt": attempt.started_at.isoformat(),
            },
            error=error
            if error is not None
            else (attempt.error if state is RunState.ABANDONED else None),
            takenOverBy=None
            if taken_over_by is None
            else {
                "attempt": taken_over_by.attempt,
                "ledgerRunId": taken_over_by.run_id,
                "run": {"runId": run_uuid(taken_over_by.run_id)},
            },
            publication=None if publication is None else _publication(publication),
            evidence=None if publication is None else publication.evidence,
            upstream=None if publication is None else _upstream(publication, namespace),
            producer=PRODUCER,
        ),
    }
    if publication is not None:
        dependencies = _dependencies(publication, namespace)
        if dependencies is not None:
            facets["jobDependencies"] = dependencies
    if state is RunState.FAILED and error is not None:
        facets["errorMessage"] = error_message_run.ErrorMessageRunFacet(
            message=error, programmingLanguage="python", producer=PRODUCER
        )
    job_facets: dict[str, Any] = {
        "jobType": job_type_job.JobTypeJobFacet(
            processingType="BATCH", integration="GATEKEEPER", jobType="TASK", producer=PRODUCER
        )
    }
    return RunEvent(
        eventType=EventType[_EVENT_TYPES[state]],
        eventTime=at.isoformat(),
        run=Run(runId=run_uuid(attempt.run_id), facets=facets),
        job=Job(namespace=namespace, name=attempt.job, facets=job_facets),
        producer=PRODUCER,
        inputs=[],
        outputs=[],
    )


def _publication(publication: Publication) -> dict[str, Any]:
    return {
        "revision": publication.revision,
        "fingerprint": publication.fingerprint,
        "publishedAt": publication.published_at.isoformat(),
        "reason": publication.reason,
        "location": publication.location,
        "producer": {"attempt": publication.attempt, "ledgerRunId": publication.run_id},
    }


def _upstream(publication: Publication, namespace: str) -> list[dict[str, Any]]:
    """The evidence as parent-style references (``job``: namespace and name, ``run``: runId)."""
    return [
        {
            "requirement": requirement_label(i.job, i.business_date, publication.business_date),
            "job": {"namespace": namespace, "name": i.job},
            "run": {"runId": run_uuid(i.run_id)},
            "businessDate": i.business_date,
            "attempt": i.attempt,
            "ledgerRunId": i.run_id,
            "watermark": None if i.watermark is None else i.watermark.isoformat(),
        }
        for i in publication.items
    ]


def _dependencies(publication: Publication, namespace: str) -> Any:
    """The standard jobDependencies facet (openlineage-python >= 1.40), else None."""
    try:
        from openlineage.client.generated import job_dependencies_run as deps
    except ImportError:
        return None
    upstream = [
        deps.JobDependency(
            job=deps.JobIdentifier(namespace=namespace, name=i.job),
            run=deps.RunIdentifier(runId=run_uuid(i.run_id)),
            dependency_type="IMPLICIT_DEPENDENCY",
            sequence_trigger_rule="FINISH_TO_START",
            status_trigger_rule="EXECUTE_ON_SUCCESS",
        )
        for i in publication.items
    ]
    return deps.JobDependenciesRunFacet(
        upstream=upstream, trigger_rule="ALL_SUCCESS", producer=PRODUCER
    )


@functools.lru_cache(maxsize=1)
def _event_classes() -> tuple[Any, Any, Any, Any]:
    """openlineage-python's Job, Run, RunEvent and RunState, with the modules the events and
    the transport use (imported once; ``prepare`` does it before forking)."""
    from openlineage.client import OpenLineageClient  # noqa: F401 - the transport, loaded
    from openlineage.client.event_v2 import Job, Run, RunEvent, RunState
    from openlineage.client.generated import (  # noqa: F401 - the facets, loaded
        error_message_run,
        job_type_job,
        nominal_time_run,
    )

    try:
        from openlineage.client.generated import job_dependencies_run  # noqa: F401
    except ImportError:  # openlineage-python < 1.40
        pass
    return Job, Run, RunEvent, RunState


@functools.lru_cache(maxsize=1)
def _facet_class() -> type:
    """The ``gatekeeper`` run facet as an openlineage-python facet class (built lazily)."""
    import attr
    from openlineage.client.generated.base import RunFacet

    @attr.define
    class GatekeeperRunFacet(RunFacet):
        period: dict[str, Any] = attr.field(factory=dict)
        attempt: dict[str, Any] = attr.field(factory=dict)
        error: str | None = attr.field(default=None)
        takenOverBy: dict[str, Any] | None = attr.field(default=None)  # noqa: N815
        publication: dict[str, Any] | None = attr.field(default=None)
        evidence: dict[str, str] | None = attr.field(default=None)
        upstream: list[dict[str, Any]] | None = attr.field(default=None)

        @staticmethod
        def _get_schema() -> str:
            return FACET_SCHEMA_URL

    return GatekeeperRunFacet
