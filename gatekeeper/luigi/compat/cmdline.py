"""The luigi command line, the run's ``core`` settings, and Luigi's instance cache.

- ``command_line_parser`` / ``command_line_options``: the ``CmdlineParser`` of the ``luigi``
  command now in force, and which ``[section]`` options it gives (private
  ``CmdlineParser.known_args`` and ``Parameter._parser_global_dest``);
- ``empty_on_command_line``: whether it gives a task's parameter an empty value (the same
  internals);
- ``command_core``: Luigi's ``core`` parameters inside the ``luigi`` command
  (``luigi.interface.core``), None elsewhere;
- ``instance_cache_token``: an object that changes exactly when Luigi's instance cache is
  cleared (public behaviour of a parameterless Config);
- ``environment_probe``: the environment read on hot paths (a Python internal, not Luigi's).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import luigi
import luigi.interface
from luigi.cmdline_parser import CmdlineParser

from gatekeeper.luigi.compat.internals import LuigiInternalMissing, probe

COMMAND_LINE_ARGS = "luigi.cmdline_parser.CmdlineParser.known_args"
GLOBAL_DEST = "luigi.parameter.Parameter._parser_global_dest"
PARSER_INSTANCE = "luigi.cmdline_parser.CmdlineParser.get_instance"
CORE = "luigi.interface.core"


def command_line_parser() -> object | None:
    """The ``CmdlineParser`` of the luigi command line in force (set by ``luigi.interface`` for
    the whole run, inherited by forked workers); None in ``luigi.build`` and outside Luigi."""
    return CmdlineParser.get_instance()


probe(PARSER_INSTANCE)(lambda: callable(CmdlineParser.get_instance))


def command_line_options(section: str, names: Iterable[str]) -> frozenset[str]:
    """The options of the Config ``section`` given on the luigi command line now in force
    (``--gatekeeper-ledger-url URL`` gives ``ledger_url``); empty outside one.

    Private internals: ``CmdlineParser.known_args`` (the namespace Luigi parsed) and
    ``Parameter._parser_global_dest`` (its attribute for ``--section-option``, None when not
    given), which ``Parameter._value_iterator`` reads first. gatekeeper puts
    ``$GATEKEEPER_*`` between the command line and luigi.cfg, so it must know what the
    command line gives. Both unchanged since Luigi 2.x (3.2.0 included)."""
    parser = CmdlineParser.get_instance()
    if parser is None:
        return frozenset()
    try:
        known = parser.known_args
    except AttributeError:
        raise LuigiInternalMissing(COMMAND_LINE_ARGS) from None
    dest = getattr(luigi.Parameter, "_parser_global_dest", None)
    if not callable(dest):
        raise LuigiInternalMissing(GLOBAL_DEST)
    return frozenset(
        name for name in names if getattr(known, dest(name, section), None) is not None
    )


probe(GLOBAL_DEST)(lambda: luigi.Parameter._parser_global_dest("a", "b") == "b_a")


def empty_on_command_line(family: str, name: str) -> bool:
    """True when the luigi command line in force gives task ``family``'s parameter ``name``
    an empty value (``--family-name ""``, or ``--name ""`` for the root task), which Luigi
    takes for "not given"; False outside one. Private internals as ``command_line_options``'
    (the root task's own flags are stored under the parameter's name, ``root_task`` naming
    the task)."""
    parser = CmdlineParser.get_instance()
    if parser is None:
        return False
    try:
        known = parser.known_args
    except AttributeError:
        raise LuigiInternalMissing(COMMAND_LINE_ARGS) from None
    given = [getattr(known, luigi.Parameter._parser_global_dest(name, family), None)]
    if getattr(known, "root_task", None) == family:
        given.append(getattr(known, name, None))
    return "" in given


def command_core() -> Any | None:
    """Luigi's ``core`` parameters when running inside the ``luigi`` command, else None (an
    in-process ``luigi.build`` passes its scheduler choice only to the worker)."""
    if CmdlineParser.get_instance() is None:
        return None
    return luigi.interface.core()


probe(CORE)(lambda: hasattr(luigi.interface.core(), "local_scheduler"))


class GatekeeperInstanceCacheProbe(luigi.Config):
    """A parameterless Config whose instance is Luigi's instance cache generation.

    Luigi documents instance caching: instantiating a task class with the same parameters
    returns the same object until ``Register.clear_instance_cache()`` (or a disabled cache
    gives a new object every time). The overrides return what Luigi's would for a class
    without parameters, without Luigi's ``dir()`` scan and config walk: ~1 µs a call instead
    of ~80 µs.
    """

    @classmethod
    def get_params(cls) -> list[tuple[str, luigi.Parameter]]:
        return []

    @classmethod
    def get_param_values(
        cls, params: list[tuple[str, luigi.Parameter]], args: Any, kwargs: Any
    ) -> list[tuple[str, Any]]:
        return []


def instance_cache_token() -> object:
    """An object that stays the same until Luigi's task instance cache is cleared.

    Public behaviour only: the cached instance of a parameterless Config. Callers that cache
    values Luigi reads from luigi.cfg and the command line compare it by identity, and so
    re-read exactly when Luigi's own cached Config instances would be rebuilt."""
    return GatekeeperInstanceCacheProbe()


@probe(COMMAND_LINE_ARGS)
def _has_known_args() -> bool:
    args = ["GatekeeperInstanceCacheProbe", "--scheduler-retry-count", "3"]
    with CmdlineParser.global_instance(args) as parser:
        dest = luigi.Parameter._parser_global_dest("retry_count", "scheduler")
        return getattr(parser.known_args, dest, None) == "3"


probe("luigi.task_register.Register instance cache")(
    lambda: instance_cache_token() is instance_cache_token()
)


def environment_probe(names: tuple[str, ...]) -> Callable[[], tuple[object, ...]]:
    """A function returning what the environment variables ``names`` hold now, fit only for
    comparison (``config.resolve``'s cache keys on it). ``os.environ.get`` of an unset variable
    costs microseconds (a KeyError inside); the dict of encoded contents ``os.environ`` keeps
    (private ``os._Environ._data``, CPython 3.2+) answers in nanoseconds. Falls back to
    ``os.environ.get`` without it."""
    data = getattr(os.environ, "_data", None)
    encode = getattr(os.environ, "encodekey", None)
    if not isinstance(data, dict) or not callable(encode):
        return lambda: tuple(map(os.environ.get, names))
    keys = tuple(encode(name) for name in names)
    return lambda: tuple(map(data.get, keys))
