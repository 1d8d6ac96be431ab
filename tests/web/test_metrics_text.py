"""``/metrics`` is written byte for byte as prometheus_client writes the same gauges
(web/metrics.py writes the text itself, without an object per sample)."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.web import metrics, views
from tests.helpers.ledgers import T0
from tests.helpers.stale import repaired_upstream

pytest.importorskip("prometheus_client")

NOW = dt.datetime(2026, 10, 25, 6, tzinfo=dt.timezone.utc)
#: job names a label must escape or carry as they are: quotes, backslashes, non-ASCII
NAMES = ('Load"quoted"', "Back\\slash", "Région(eu)", "Plain", "Total")


def reference(found: list[metrics.Family]) -> bytes:
    """The same families through prometheus_client's own registry and ``generate_latest``."""
    from prometheus_client import CollectorRegistry, generate_latest
    from prometheus_client.core import GaugeMetricFamily

    built = []
    for name, text, labels, samples in found:
        if labels:
            family = GaugeMetricFamily(name, text, labels=list(labels))
            for values, value in samples:
                family.add_metric(list(values), value)
        else:
            ((_, value),) = samples
            family = GaugeMetricFamily(name, text, value=value)
        built.append(family)

    class Collector:
        def collect(self) -> Any:
            return built

    registry = CollectorRegistry(auto_describe=False)
    registry.register(Collector())  # type: ignore[arg-type]
    return bytes(generate_latest(registry))


def test_metrics_text_is_prometheus_clients_byte_for_byte(
    ledger: gk.Ledger, luigi_config: Any
) -> None:
    from gatekeeper.luigi.freshness import SECTION

    for n, job in enumerate(NAMES):
        for day in range(18, 25):
            state = "failed" if (n + day) % 4 == 0 else "succeeded"
            ledger.record(job, f"2026-10-{day}", 1, f"r-{n}-{day}", state, T0)
    ledger.begin_attempt("Plain", "2026-10-25", "live", lease_seconds=3600, now=NOW)
    ledger.begin_attempt("Total", "2026-10-25", "stale", lease_seconds=1, now=T0)
    luigi_config(SECTION, "Plain", "1h")  # a deadline: its breached gauge
    repaired_upstream(ledger)  # publishers: their stale gauge (Report's 2026-10-22)
    found, _ = views.job_views(ledger, dt.timedelta(days=5), NOW)
    families = metrics.families(found, ["Typo\\Job"])
    text = metrics.exposition(found, ["Typo\\Job"])
    assert text == reference(families)
    assert b'job="Load\\"quoted\\""' in text and b'job="Back\\\\slash"' in text
    assert 'job="Région(eu)"'.encode() in text
    assert b'gatekeeper_running_attempts{job="Plain"} 1.0\n' in text
    assert b'gatekeeper_expired_leases{job="Total"} 1.0\n' in text
    assert b'gatekeeper_freshness_breached{job="Plain"} ' in text
    assert b"gatekeeper_config_unknown_jobs 1.0\n" in text
    assert b'gatekeeper_stale_publications{job="Report"} 1.0\n' in text
    assert b'gatekeeper_stale_publications{job="Other"} 0.0\n' in text
    assert b'gatekeeper_stale_publications{job="Orders"}' not in text
    assert b'gatekeeper_complete_through_timestamp_seconds{job="Plain"} 1.79' in text
