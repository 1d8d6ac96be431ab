"""``[gatekeeper]`` configuration, resolved when used, never at import.

One precedence for every option, in the ``luigi`` command and the ``gatekeeper`` command alike:
the explicit flag or parameter (``--gatekeeper-ledger-url`` on the luigi command line,
``--ledger`` for the ``gatekeeper`` command, a task's own parameter), then the environment
(``GATEKEEPER_LEDGER_URL``: ``GATEKEEPER_`` and the option upper-cased), then luigi.cfg's
``[gatekeeper]`` section (``${ENV}`` interpolation works there), then the default.

The integrations' options are read through ``integration_config``, the
``[gatekeeper.calendars]`` section through ``calendar_config``; a luigi.cfg interpolation
error becomes one InvalidInput in ``config_errors``.
"""

from __future__ import annotations

import datetime as dt
import enum
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import luigi
import luigi.configuration

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.validation import DEFAULT_MAX_PAGES, DEFAULT_TIME_BUDGET
from gatekeeper.luigi.compat import (
    command_line_options,
    command_line_parser,
    environment_probe,
    instance_cache_token,
)
from gatekeeper.luigi.config_errors import config_error

if TYPE_CHECKING:
    from gatekeeper.core.schedule import ScheduleInput

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
    inline = luigi.Parameter(
        default="true",
        description="Let a range run a period whose requirements are complete inside its chunk "
        "task (true, the default; docs/inline.md) or schedule every period as its own Luigi "
        "task through Luigi's public API only (false: the switch for a Luigi release that "
        "breaks inline running); a range's explicit --inline wins",
    )
    delta_storage_options = luigi.Parameter(
        default="",
        description="Object-store options of GatedDeltaTask tables, as a JSON object of strings "
        "(passed to deltalake as storage_options)",
    )
    openlineage = luigi.Parameter(
        default="false",
        description="Emit OpenLineage run events for every attempt (true/false; the "
        "transport is OpenLineage's own configuration: OPENLINEAGE_URL, OPENLINEAGE_CONFIG, "
        "openlineage.yml)",
    )
    openlineage_namespace = luigi.Parameter(
        default="gatekeeper", description="OpenLineage namespace of the jobs' run events"
    )
    openlineage_timeout = luigi.FloatParameter(
        default=5.0,
        description="Seconds a process waits, at most, at its end for its OpenLineage events "
        "to be delivered; a backend that is down or hangs costs a whole invocation one such "
        "wait and never fails a task",
    )
    databricks_max_pages = luigi.IntParameter(
        default=DEFAULT_MAX_PAGES,
        description="Pages of runs/list (25 runs each) `gatekeeper collect databricks` reads at "
        "most; a listing with more records nothing and exits 1 (use --since)",
    )
    databricks_time_budget = luigi.FloatParameter(
        default=DEFAULT_TIME_BUDGET,
        description="Seconds `gatekeeper collect databricks` may spend reading Databricks; past "
        "them it records nothing and exits 1",
    )


#: Environment variables are named ``GATEKEEPER_`` and the option upper-cased.
ENV_PREFIX = "GATEKEEPER_"
SECTION = "gatekeeper"


def env_var(option: str) -> str:
    """The environment variable of ``option``: ``ledger_url`` -> ``GATEKEEPER_LEDGER_URL``."""
    return ENV_PREFIX + option.upper()


class Source(enum.Enum):
    """Where a resolved option's value came from, highest precedence first."""

    FLAG = "flag"
    ENV = "env"
    CONFIG = "config"
    DEFAULT = "default"


@dataclass(frozen=True, slots=True)
class Origin:
    """Where one option's value came from, in the words an error message uses."""

    option: str
    source: Source

    def describe(self) -> str:
        """``--gatekeeper-ledger-url``, ``$GATEKEEPER_LEDGER_URL``, ``[gatekeeper] ledger_url``
        or ``the default [gatekeeper] ledger_url``."""
        if self.source is Source.FLAG:
            return f"--{SECTION}-{self.option.replace('_', '-')}"
        if self.source is Source.ENV:
            return f"${env_var(self.option)}"
        where = f"[{SECTION}] {self.option}"
        return where if self.source is Source.CONFIG else f"the default {where}"

    @property
    def field(self) -> str:
        """The field an InvalidInput about the value names: the environment variable when it
        came from there, else ``gatekeeper.<option>``."""
        if self.source is Source.ENV:
            return env_var(self.option)
        return f"{SECTION}.{self.option}"


@dataclass(frozen=True, slots=True)
class Resolved:
    """The ``[gatekeeper]`` section as resolved now, and where each value came from."""

    section: gatekeeper
    origins: dict[str, Origin]


@functools.cache
def options() -> tuple[tuple[str, luigi.Parameter], ...]:
    """The options of the section: (name, parameter), in declaration order."""
    return tuple(gatekeeper.get_params())


def _environment() -> tuple[str | None, ...]:
    """The ``GATEKEEPER_*`` variable of each option; an empty one counts as unset."""
    return tuple(os.environ.get(env_var(name)) or None for name, _ in options())


@functools.cache
def _environment_probe() -> Callable[[], tuple[object, ...]]:
    """What the ``GATEKEEPER_*`` variables hold now, cheaply, for the cache to compare."""
    return environment_probe(tuple(env_var(name) for name, _ in options()))


#: (instance cache token, command-line parser, environment probe, what was resolved from them)
_cached: tuple[object, object, tuple[object, ...], Resolved] | None = None


def resolve() -> Resolved:
    """Every ``[gatekeeper]`` option by the one precedence (module docstring), with its origin.

    Building a luigi.Config reads every option from the config files and the command line,
    which is slow on hot paths (every attempt, every completeness check), so the result is
    reused until Luigi's own instance cache is cleared (``Register.clear_instance_cache``),
    another luigi command line is in force, or a ``GATEKEEPER_*`` variable changes. Raises
    InvalidInput for a bad luigi.cfg interpolation or an environment value of the wrong type
    (naming the variable); writes nothing.
    """
    global _cached
    token, parser, probe = instance_cache_token(), command_line_parser(), _environment_probe()()
    found = _cached
    if found is None or found[0] is not token or found[1] is not parser or found[2] != probe:
        found = _cached = (token, parser, probe, _resolve(_environment()))  # held: no id reused
    return found[3]


def resolved_here() -> bool:
    """True once this process resolved the options (``resolve``): reading them again then
    fixes nothing the process had not fixed itself (a fork hook must not be the first)."""
    return _cached is not None


def _resolve(env: tuple[str | None, ...]) -> Resolved:
    given = command_line_options(SECTION, (name for name, _ in options()))
    overrides: dict[str, Any] = {}
    origins: dict[str, Origin] = {}
    cfg = luigi.configuration.get_config()
    for (name, param), raw in zip(options(), env, strict=True):
        if name in given:
            source = Source.FLAG
        elif raw is not None:
            overrides[name] = _parse_env(name, param, raw)
            source = Source.ENV
        else:
            source = Source.CONFIG if cfg.has_option(SECTION, name) else Source.DEFAULT
        origins[name] = Origin(name, source)
    return Resolved(_read_section(overrides), origins)


def _parse_env(name: str, param: luigi.Parameter, raw: str) -> Any:
    """An environment variable's text as the option's type; InvalidInput naming it."""
    from gatekeeper.core.validation import parse_number_text

    if isinstance(param, luigi.FloatParameter):
        return parse_number_text(raw, env_var(name))
    try:
        return param.parse(raw)
    except (ValueError, TypeError, KeyError):
        raise InvalidInput(env_var(name), raw, f"expected a {type(param).__name__}") from None


def settings() -> gatekeeper:
    """The current ``[gatekeeper]`` configuration (``resolve().section``)."""
    return resolve().section


def origin(option: str) -> Origin:
    """Where ``option``'s current value came from."""
    return resolve().origins[option]


def _read_section(overrides: dict[str, Any]) -> gatekeeper:
    """Build the section (``overrides`` win over luigi.cfg and the default: Luigi takes a
    constructor argument over every other source); a luigi.cfg interpolation error becomes
    one InvalidInput."""
    try:
        return gatekeeper(**overrides)
    except ValueError as exc:  # luigi wraps configparser's error in a ValueError
        problem = config_error(exc)
        if problem is None:
            raise
        raise problem from None


def ledger_url() -> str:
    """The ledger URL (luigi command line, ``$GATEKEEPER_LEDGER_URL``, luigi.cfg, default)."""
    return str(settings().ledger_url)


def cli_ledger_source(explicit: str | None = None) -> tuple[str, str]:
    """The ``gatekeeper`` command's ledger URL and where it came from: ``--ledger``, else as
    every task resolves it (``$GATEKEEPER_LEDGER_URL``, luigi.cfg, the default); raises
    InvalidInput for a bad luigi.cfg."""
    if explicit:
        return explicit, "--ledger"
    found = resolve()
    return str(found.section.ledger_url), found.origins["ledger_url"].describe()


def cli_ledger_url(explicit: str | None = None) -> str:
    """The ``gatekeeper`` command's ledger: ``--ledger``, else as ``ledger_url()``."""
    return cli_ledger_source(explicit)[0]


_checked: dict[str, tuple[Resolved, Any]] = {}  # name -> (resolution checked, checked value)


def checked_once(name: str, check: Callable[[], Any]) -> Any:
    """``check()`` once per resolution of the section (a new one after Luigi's instance cache
    is cleared or a ``GATEKEEPER_*`` variable changes): every attempt asks for these. A check
    that raises is not remembered."""
    current = resolve()
    found = _checked.get(name)
    if found is None or found[0] is not current:
        found = _checked[name] = (current, check())
    return found[1]


def field_of(option: str) -> str:
    """What an InvalidInput about ``option``'s value names (its variable, if from there)."""
    return origin(option).field


def lease_seconds() -> float:
    """``lease_seconds``: finite, > 0 and at most a week (else InvalidInput naming the option
    or ``GATEKEEPER_LEASE_SECONDS``)."""
    from gatekeeper.core.validation import check_lease

    return float(
        checked_once(
            "lease_seconds",
            lambda: check_lease(settings().lease_seconds, field_of("lease_seconds")),
        )
    )


def lateness() -> dt.timedelta:
    """``lateness`` as a timedelta; InvalidInput naming the option or its variable."""
    from gatekeeper.core.periods import parse_lateness

    found: dt.timedelta = checked_once(
        "lateness", lambda: parse_lateness(str(settings().lateness), field_of("lateness"))
    )
    return found


def timezone() -> str:
    """``timezone``, an IANA name; InvalidInput naming the option or its variable."""
    from gatekeeper.core.periods.intervals import parse_timezone

    def check() -> str:
        name = str(settings().timezone)
        parse_timezone(name, field_of("timezone"))
        return name

    return str(checked_once("timezone", check))


def inline() -> bool:
    """``inline``: true (the default) or false; a range's explicit ``--inline`` wins over it
    (``fill/filler.py``). Raises InvalidInput naming the option (or ``GATEKEEPER_INLINE``)
    and the value."""
    from gatekeeper.core.validation import parse_flag

    return bool(checked_once("inline", lambda: parse_flag(settings().inline, field_of("inline"))))


def schedule_settings() -> ScheduleInput:
    """What the ``[gatekeeper]`` settings say of a schedule (the zone and lateness, each from
    the luigi command line, its ``GATEKEEPER_*`` variable or luigi.cfg): the layer below a
    range's parameters and a job's recorded profile (``core/schedule.py``); fills the registry
    of named calendars (``calendar_config.use_defined_calendars``)."""
    from gatekeeper.core.schedule import ScheduleInput
    from gatekeeper.luigi.calendar_config import use_defined_calendars

    use_defined_calendars()  # the schedule's calendar may be one luigi.cfg defines
    return ScheduleInput(timezone=timezone(), lateness=lateness())
