"""``/metrics``: the jobs of the grid in the Prometheus text format.

Built per scrape from the ``JobView`` list the grid uses (``views.job_views``: every job's
counts read at once, in proportion to the jobs and what is not complete) and written as
prometheus_client writes the same gauges, line by line (its value formatting, its escaping),
without a registry or an object per sample: a 5,000-job scrape is 60,000 samples. Nothing is
kept between scrapes, so a job that leaves the ledger leaves the exposition.

Staleness: ``gatekeeper_stale_publications{job}``, for every job that publishes, how many
periods of its window are stale (``report/stale.py``: ``gatekeeper stale``'s rule).

Freshness: ``gatekeeper_freshness_breached{job}`` (0/1) for every job with a deadline, from
the view's ``freshness``; ``gatekeeper_config_unknown_jobs``, how
many ``[gatekeeper.freshness]`` keys name no job of the ledger (served by ``--allow-unknown``:
a key whose deadline judges nothing, which an alert can see).
"""

from __future__ import annotations

from collections.abc import Sequence

from gatekeeper.web.views import JobView

#: (name, help) of each family, in the order of the exposition
PERIODS = (
    "gatekeeper_periods",
    "Periods of the job's serve window in each state (the states gatekeeper status shows).",
)
THROUGH = (
    "gatekeeper_complete_through_timestamp_seconds",
    "End of the job's contiguous-through period (every period of the window up to it "
    "succeeded), else the start of the window; Unix time.",
)
LAG = (
    "gatekeeper_lag_seconds",
    "Now minus the due time (end of its interval + lateness) of the first due business "
    "period of the window not filled; 0 when every due period is filled.",
)
RUNNING = (
    "gatekeeper_running_attempts",
    "Attempts of the job recorded running with a live lease.",
)
EXPIRED = (
    "gatekeeper_expired_leases",
    "Attempts of the job recorded running whose lease expired (shown abandoned).",
)
BREACHED = (
    "gatekeeper_freshness_breached",
    "1 while a period of the job is past its freshness deadline (end of its interval + "
    "the job's freshness) and not succeeded (and published, for a publishing job).",
)
STALE = (
    "gatekeeper_stale_publications",
    "Periods of the job's serve window whose newest publication's evidence names an "
    "upstream attempt a newer succeeded attempt superseded, or an upstream revision a newer "
    "one did (gatekeeper stale); every publishing job, 0 when none is stale.",
)
CONFIG = (
    "gatekeeper_config_unknown_jobs",
    "[gatekeeper.freshness] keys naming no job of the ledger (a typo, or a job not yet "
    "run; served with --allow-unknown): their deadlines judge nothing.",
)

#: a gauge family: name, help, label names and its samples (label values, value)
Family = tuple[str, str, tuple[str, ...], list[tuple[tuple[str, ...], float]]]


def families(views: Sequence[JobView], unknown: Sequence[str] = ()) -> list[Family]:
    """The gauge families of ``views`` and of the ``[gatekeeper.freshness]`` keys naming no
    job (``unknown``), in the order of the exposition."""
    job = ("job",)
    periods: Family = (*PERIODS, ("job", "state"), [])
    through: Family = (*THROUGH, job, [])
    lag: Family = (*LAG, job, [])
    running: Family = (*RUNNING, job, [])
    expired: Family = (*EXPIRED, job, [])
    breached: Family = (*BREACHED, job, [])
    stale: Family = (*STALE, job, [])
    for view in views:
        name = (view.job,)
        periods[3].extend(((view.job, state.value), n) for state, n in view.counts.items())
        through[3].append((name, view.through_end.timestamp()))
        lag[3].append((name, view.lag_seconds))
        running[3].append((name, view.running))
        expired[3].append((name, view.expired))
        if view.freshness is not None:
            breached[3].append((name, 0 if view.freshness.met else 1))
        if view.stale is not None:
            stale[3].append((name, view.stale))
    config: Family = (*CONFIG, (), [((), len(unknown))])
    return [periods, through, lag, running, expired, breached, stale, config]


def exposition(views: Sequence[JobView], unknown: Sequence[str] = ()) -> bytes:
    """The Prometheus text exposition (format 0.0.4) of ``views`` and ``unknown``: every
    family as a gauge, byte for byte as prometheus_client's ``generate_latest`` writes the
    same families (``tests/web/test_metrics_text.py``), without an object per sample."""
    from prometheus_client.utils import floatToGoString

    def number(value: float) -> str:  # a count as floatToGoString writes it, without a float
        small = type(value) is int and 0 <= value < 1_000_000
        return f"{value}.0" if small else floatToGoString(value)

    escaped: dict[str, str] = {}  # each job's name escaped once, not once per sample
    out: list[str] = []
    for name, text, labels, samples in families(views, unknown):
        out.append(f"# HELP {name} {_escaped(text, quotes=False)}\n# TYPE {name} gauge\n")
        for values, value in samples:
            shown = ",".join(
                f'{k}="{escaped.get(v) or escaped.setdefault(v, _escaped(v))}"'
                for k, v in zip(labels, values, strict=True)
            )
            out.append(
                f"{name}{{{shown}}} {number(value)}\n" if shown else f"{name} {number(value)}\n"
            )
    return "".join(out).encode("utf-8")


def _escaped(text: str, quotes: bool = True) -> str:
    """``text`` as a label value (``quotes``) or a help text: backslash and newline escaped,
    and a label value's double quotes."""
    text = text.replace("\\", r"\\").replace("\n", r"\n")
    return text.replace('"', r"\"") if quotes else text
