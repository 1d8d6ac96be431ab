"""``[gatekeeper]`` configuration, read from luigi.cfg when used, never at import.

Every value can be overridden on the luigi command line (``--gatekeeper-ledger-url ...``) and
``${ENV}`` interpolation works as everywhere in luigi.cfg. ``GATEKEEPER_LEDGER_URL`` in the
environment overrides the configured ledger URL for the ``gatekeeper`` command.
"""

from __future__ import annotations

import configparser
import datetime as dt
import os
import re
from collections.abc import Callable
from typing import Any

import luigi

from gatekeeper.core.display import redact_url
from gatekeeper.core.errors import InvalidInput
from gatekeeper.integrations.lineage import LineageSettings
from gatekeeper.luigi.compat import instance_cache_token

DEFAULT_LEDGER_URL = "sqlite:///gatekeeper.db"


class gatekeeper(luigi.Config):  # noqa: N801 - the class name is the luigi.cfg section
    """The ``[gatekeeper]`` section of luigi.cfg."""

    ledger_url = luigi.Parameter(
        default=DEFAULT_LEDGER_URL,
        description="Ledger URL: sqlite:///relative.db, sqlite:////abs.db or postgresql://...",
    )
    timezone = luigi.Parameter(
        default="UTC", description="IANA time zone in which business dates start at midnight"
    )
    lateness = luigi.Parameter(
        default="0s",
        description="How long after a period ends before it is due (e.g. 2h, 30m, 1d)",
    )
    lease_seconds = luigi.FloatParameter(
        default=300.0,
        description="Seconds a running attempt's lease lasts; renewed by a heartbeat",
    )
    delta_storage_options = luigi.Parameter(
        default="",
        description="Object-store options of GatedDeltaTask tables, as a JSON object of strings "
        "(passed to deltalake as storage_options)",
    )
    openlineage = luigi.Parameter(
        default="false",
        description="Emit OpenLineage run events for every attempt (true/false; "
        "$GATEKEEPER_OPENLINEAGE overrides; the transport is OpenLineage's own "
        "configuration: OPENLINEAGE_URL, OPENLINEAGE_CONFIG, openlineage.yml)",
    )
    openlineage_namespace = luigi.Parameter(
        default="gatekeeper", description="OpenLineage namespace of the jobs' run events"
    )
    openlineage_timeout = luigi.FloatParameter(
        default=5.0,
        description="Seconds a task waits, at most, for its OpenLineage events to be delivered "
        "(and the process at exit); a slow or down backend never fails a task",
    )


_cached: tuple[object, gatekeeper] | None = None


def settings() -> gatekeeper:
    """The current ``[gatekeeper]`` configuration.

    Building a luigi.Config reads every option from the config files and the command line,
    which is slow on hot paths (every attempt, every completeness check), so the instance is
    reused until Luigi's own instance cache is cleared (``Register.clear_instance_cache``).
    """
    global _cached
    token = instance_cache_token()
    if _cached is None or _cached[0] is not token:  # held, so never an id reused
        _cached = (token, _read_section())
    return _cached[1]


def _read_section() -> gatekeeper:
    """Build the section; a luigi.cfg interpolation error becomes one InvalidInput."""
    try:
        return gatekeeper()
    except ValueError as exc:  # luigi wraps configparser's error in a ValueError
        problem = config_error(exc)
        if problem is None:
            raise
        raise problem from None


def config_error(exc: BaseException) -> InvalidInput | None:
    """The InvalidInput naming the option and the unset variable of a luigi.cfg interpolation
    error found in ``exc``'s chain (``${VAR}`` not set, a stray ``%``), else None."""
    cause: BaseException | None = exc
    while cause is not None and not isinstance(cause, configparser.InterpolationError):
        cause = cause.__cause__ or cause.__context__
    if cause is None:
        return None
    field = f"{cause.section}.{cause.option}"
    try:
        raw = luigi.configuration.get_config().get(cause.section, cause.option, raw=True)
    except configparser.Error:
        raw = None
    unset = [name for name in re.findall(r"\$\{([^}]+)\}", raw or "") if name not in os.environ]
    secret = "url" in cause.option or "password" in cause.option  # configparser quotes it
    if unset:
        reason = f"environment variable {unset[0]} is not set (luigi.cfg refers to it)"
    elif secret:
        reason = (
            f"luigi.cfg: cannot interpolate it (write %% for a literal %; {type(cause).__name__})"
        )
    else:
        reason = f"luigi.cfg: {' '.join(cause.message.split())}"
    return InvalidInput(field, redact_url(raw) if secret and raw is not None else raw, reason)


def ledger_url() -> str:
    """The configured ledger URL (luigi.cfg or ``--gatekeeper-ledger-url``)."""
    return str(settings().ledger_url)


def cli_ledger_source(explicit: str | None = None) -> tuple[str, str]:
    """The ``gatekeeper`` command's ledger URL and where it came from: ``--ledger``, else
    ``$GATEKEEPER_LEDGER_URL``, else luigi.cfg (raises InvalidInput for a bad luigi.cfg)."""
    if explicit:
        return explicit, "--ledger"
    if os.environ.get("GATEKEEPER_LEDGER_URL"):
        return os.environ["GATEKEEPER_LEDGER_URL"], "$GATEKEEPER_LEDGER_URL"
    return ledger_url(), "[gatekeeper] ledger_url"


def cli_ledger_url(explicit: str | None = None) -> str:
    """The ``gatekeeper`` command's ledger: ``--ledger``, else ``$GATEKEEPER_LEDGER_URL``,
    else luigi.cfg."""
    return cli_ledger_source(explicit)[0]


_checked: dict[str, tuple[object, object, Any]] = {}  # name -> (token, key, checked value)


def _checked_once(name: str, key: object, check: Callable[[], Any]) -> Any:
    """``check()`` once per generation of Luigi's instance cache (as ``settings()``) and per
    ``key`` (what else it reads, e.g. an environment variable): every attempt asks for
    these. A check that raises is not remembered."""
    token = instance_cache_token()
    found = _checked.get(name)
    if found is None or found[0] is not token or found[1] != key:
        found = _checked[name] = (token, key, check())
    return found[2]


def lease_seconds() -> float:
    """``[gatekeeper] lease_seconds``: finite, > 0 and at most a week (else InvalidInput)."""
    from gatekeeper.core.validation import check_lease

    return float(
        _checked_once(
            "lease_seconds",
            None,
            lambda: check_lease(settings().lease_seconds, "gatekeeper.lease_seconds"),
        )
    )


def lateness() -> dt.timedelta:
    from gatekeeper.core.periods import parse_lateness

    return parse_lateness(str(settings().lateness))


def openlineage() -> bool:
    """``[gatekeeper] openlineage`` (``$GATEKEEPER_OPENLINEAGE`` overrides it): true or false;
    raises InvalidInput naming the option (or the variable) and the value."""
    from gatekeeper.core.validation import parse_flag

    if "GATEKEEPER_OPENLINEAGE" in os.environ:
        return parse_flag(os.environ["GATEKEEPER_OPENLINEAGE"], "GATEKEEPER_OPENLINEAGE")
    return parse_flag(settings().openlineage, "gatekeeper.openlineage")


def openlineage_namespace() -> str:
    """``[gatekeeper] openlineage_namespace`` (default ``gatekeeper``); raises InvalidInput."""
    from gatekeeper.core.validation import check_lineage_namespace

    return check_lineage_namespace(
        settings().openlineage_namespace, "gatekeeper.openlineage_namespace"
    )


def openlineage_timeout() -> float:
    """``[gatekeeper] openlineage_timeout``: seconds, > 0 and at most 300; raises InvalidInput."""
    from gatekeeper.core.validation import check_wait_seconds

    return check_wait_seconds(settings().openlineage_timeout, "gatekeeper.openlineage_timeout")


def lineage() -> LineageSettings | None:
    """The OpenLineage settings when ``openlineage`` is on, else None; raises InvalidInput for
    a bad ``openlineage``, ``openlineage_namespace`` or ``openlineage_timeout``."""
    found: LineageSettings | None = _checked_once(
        "lineage", os.environ.get("GATEKEEPER_OPENLINEAGE"), _lineage
    )
    return found


def _lineage() -> LineageSettings | None:
    if not openlineage():
        return None
    return LineageSettings(openlineage_namespace(), str(settings().timezone), openlineage_timeout())


def delta_storage_options() -> dict[str, str] | None:
    """``[gatekeeper] delta_storage_options`` parsed (None when empty); InvalidInput if bad."""
    from gatekeeper.core.validation import check_storage_options

    return check_storage_options(
        settings().delta_storage_options, "gatekeeper.delta_storage_options"
    )
