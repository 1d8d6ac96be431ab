"""``/metrics``: the jobs of the grid in the Prometheus text format (prometheus_client).

Built per scrape from the ``JobView`` list the grid uses (``views.job_views``: every job's
counts read at once, in proportion to the jobs and what is not complete), into a fresh
CollectorRegistry: nothing is kept between
scrapes, so a job that leaves the ledger leaves the exposition.

Freshness: ``gatekeeper_freshness_breached{job}`` (0/1) for every job with a deadline, from
the view's ``freshness`` (``freshness_families``); ``gatekeeper_config_unknown_jobs``, how
many ``[gatekeeper.freshness]`` keys name no job of the ledger (served by ``--allow-unknown``:
a key whose deadline judges nothing, which an alert can see).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.report.states import PeriodState
from gatekeeper.web.views import JobView


def families(
    ledger: LedgerReads, views: Sequence[JobView], unknown: Sequence[str] = ()
) -> list[Any]:
    """The metric families of ``views`` and of the ``[gatekeeper.freshness]`` keys naming
    no job (``unknown``), as prometheus_client ``GaugeMetricFamily`` objects."""
    from prometheus_client.core import GaugeMetricFamily

    periods = GaugeMetricFamily(
        "gatekeeper_periods",
        "Periods of the job's serve window in each state (the states gatekeeper status shows).",
        labels=["job", "state"],
    )
    through = GaugeMetricFamily(
        "gatekeeper_complete_through_timestamp_seconds",
        "End of the job's contiguous-through period (every period of the window up to it "
        "succeeded), else the start of the window; Unix time.",
        labels=["job"],
    )
    lag = GaugeMetricFamily(
        "gatekeeper_lag_seconds",
        "Now minus the due time (end of its interval + lateness) of the first due business "
        "period of the window not filled; 0 when every due period is filled.",
        labels=["job"],
    )
    running = GaugeMetricFamily(
        "gatekeeper_running_attempts",
        "Attempts of the job recorded running with a live lease.",
        labels=["job"],
    )
    expired = GaugeMetricFamily(
        "gatekeeper_expired_leases",
        "Attempts of the job recorded running whose lease expired (shown abandoned).",
        labels=["job"],
    )
    for view in views:
        for state, n in view.counts.items():
            periods.add_metric([view.job, PeriodState(state).value], n)
        through.add_metric([view.job], view.through_end.timestamp())
        lag.add_metric([view.job], view.lag_seconds)
        running.add_metric([view.job], view.running)
        expired.add_metric([view.job], view.expired)
    config = GaugeMetricFamily(
        "gatekeeper_config_unknown_jobs",
        "[gatekeeper.freshness] keys naming no job of the ledger (a typo, or a job not yet "
        "run; served with --allow-unknown): their deadlines judge nothing.",
        value=len(unknown),
    )
    return [periods, through, lag, running, expired, *freshness_families(ledger, views), config]


def freshness_families(ledger: LedgerReads, views: Sequence[JobView]) -> Iterable[Any]:
    """``gatekeeper_freshness_breached{job}``: 1 while a deadline in force of the job
    (``core/freshness.py``, over the serve window at the view's ``now``) is not met, else 0;
    only jobs with a deadline (``[gatekeeper.freshness]`` or their class's ``freshness``)."""
    from prometheus_client.core import GaugeMetricFamily

    breached = GaugeMetricFamily(
        "gatekeeper_freshness_breached",
        "1 while a period of the job is past its freshness deadline (end of its interval + "
        "the job's freshness) and not succeeded (and published, for a publishing job).",
        labels=["job"],
    )
    for view in views:
        if view.freshness is not None:
            breached.add_metric([view.job], 0 if view.freshness.met else 1)
    return (breached,)


def exposition(ledger: LedgerReads, views: Sequence[JobView], unknown: Sequence[str] = ()) -> bytes:
    """The Prometheus text exposition of ``views`` and ``unknown`` (``families``; a fresh
    registry per call); reads only."""
    from prometheus_client import CollectorRegistry, generate_latest

    registry = CollectorRegistry(auto_describe=False)
    found = families(ledger, views, unknown)

    class _Collector:
        def collect(self) -> Iterable[Any]:
            return found

    registry.register(_Collector())
    return bytes(generate_latest(registry))
