"""The integrations' ``[gatekeeper]`` options, read and checked when used, never at import.

- ``openlineage()``: whether every attempt emits OpenLineage run events.
- ``openlineage_namespace()``: the namespace of the jobs' run events.
- ``openlineage_timeout()``: seconds a process waits at its end for its events' delivery.
- ``lineage()``: the OpenLineage settings when ``openlineage`` is on, else None.
- ``delta_storage_options()``: the object-store options of GatedDeltaTask tables.
- ``databricks_max_pages()``: pages of runs ``gatekeeper collect databricks`` reads at most.
- ``databricks_time_budget()``: seconds ``gatekeeper collect databricks`` may spend reading.

Each resolves by ``config``'s one precedence (flag, ``GATEKEEPER_*``, luigi.cfg, default) and
raises InvalidInput naming the option, or its variable, and the value.
"""

from __future__ import annotations

from gatekeeper.integrations.lineage import LineageSettings
from gatekeeper.luigi.config import checked_once, field_of, settings, timezone


def openlineage() -> bool:
    """``openlineage``: true or false; raises InvalidInput naming the option (or
    ``GATEKEEPER_OPENLINEAGE``) and the value."""
    from gatekeeper.core.validation import parse_flag

    return parse_flag(settings().openlineage, field_of("openlineage"))


def openlineage_namespace() -> str:
    """``openlineage_namespace`` (default ``gatekeeper``); raises InvalidInput."""
    from gatekeeper.core.validation import check_lineage_namespace

    return check_lineage_namespace(
        settings().openlineage_namespace, field_of("openlineage_namespace")
    )


def openlineage_timeout() -> float:
    """``openlineage_timeout``: seconds, > 0 and at most 300; raises InvalidInput."""
    from gatekeeper.core.validation import check_wait_seconds

    return check_wait_seconds(settings().openlineage_timeout, field_of("openlineage_timeout"))


def lineage() -> LineageSettings | None:
    """The OpenLineage settings when ``openlineage`` is on, else None; raises InvalidInput for
    a bad ``openlineage``, ``openlineage_namespace``, ``openlineage_timeout`` or ``timezone``."""
    found: LineageSettings | None = checked_once("lineage", _lineage)
    return found


def _lineage() -> LineageSettings | None:
    if not openlineage():
        return None
    return LineageSettings(openlineage_namespace(), timezone(), openlineage_timeout())


def delta_storage_options() -> dict[str, str] | None:
    """``delta_storage_options`` parsed (None when empty); InvalidInput if bad."""
    from gatekeeper.core.validation import check_storage_options

    return check_storage_options(
        settings().delta_storage_options, field_of("delta_storage_options")
    )


def databricks_max_pages() -> int:
    """``databricks_max_pages``: an integer from 1 to 1,000,000; raises InvalidInput naming
    the option (or ``GATEKEEPER_DATABRICKS_MAX_PAGES``) and the value."""
    from gatekeeper.core.validation import check_max_pages

    return check_max_pages(settings().databricks_max_pages, field_of("databricks_max_pages"))


def databricks_time_budget() -> float:
    """``databricks_time_budget``: seconds, > 0 and at most a day; raises InvalidInput."""
    from gatekeeper.core.validation import check_time_budget

    return check_time_budget(settings().databricks_time_budget, field_of("databricks_time_budget"))
