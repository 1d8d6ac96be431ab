"""The parameter values of gatekeeper's task classes (periods, ranges, chunks), resolved once
per generation of Luigi's instance cache.

Luigi resolves every parameter not passed against luigi.cfg and the command line each time a
task is built or named (``get_param_values``), and scans ``dir(cls)`` for the parameters each
time it asks ``get_params``; for a range of ~20 parameters that was half of a fresh plan. Here
``get_params`` is computed once per class (``class_params``) and the values Luigi resolved for
the parameters not passed are remembered until its instance cache or command-line parser
changes (``param_values``): Luigi's own answer whenever the remembered values cannot give it
exactly.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import luigi

from gatekeeper.luigi import compat as luigi_compat


@functools.cache
def class_params(cls: type[luigi.Task]) -> tuple[tuple[str, luigi.Parameter], ...]:
    """Luigi's ``get_params`` of ``cls``, computed once per class: Luigi's scans ``dir(cls)``
    on every call, several times per task built or named (parameters are class attributes,
    fixed once the class and its decorators are done; the first call comes after that).
    The gatekeeper task classes (periods, ranges, chunks) answer ``get_params`` with it."""
    return tuple(luigi.Task.get_params.__func__(cls))  # type: ignore[attr-defined]


#: class -> (instance cache token, command-line parser, {parameter: value when not passed})
_defaults: dict[type, tuple[object, object, dict[str, Any]]] = {}


def _generation() -> tuple[object, object]:
    """What Luigi's resolved parameter values depend on, besides luigi.cfg: the generation of
    its instance cache (a cleared cache reads luigi.cfg afresh, as config.settings() does)
    and the command-line parser in force."""
    return luigi_compat.instance_cache_token(), luigi_compat.command_line_parser()


def param_values(
    cls: type[luigi.Task],
    params: Any,
    args: Any,
    kwargs: Any,
    luigis: Callable[[Any, Any, Any], list[tuple[str, Any]]],
) -> list[tuple[str, Any]]:
    """``get_param_values`` of the gatekeeper task classes (periods and ranges): Luigi's own
    (``luigis``) on the first call of a generation and on any call the remembered values
    cannot answer exactly, else the passed values and the remembered others."""
    passed = _passed_values(cls, params, args, kwargs)
    if passed is None:
        values = luigis(params, args, kwargs)
        _remember_defaults(cls, params, kwargs, values)
        return values
    return passed


def _passed_values(
    cls: type[luigi.Task], params: Any, args: Any, kwargs: Any
) -> list[tuple[str, Any]] | None:
    """Luigi's ``get_param_values`` result from ``kwargs`` and the remembered values of the
    others; None where only Luigi's own answers exactly."""
    if args or not _is_class_params(cls, params):
        return None
    defaults = _remembered(cls)
    if defaults is None:
        return None
    if len(kwargs) + sum(name not in kwargs for name, _ in params) != len(params):
        return None  # a name the class does not have: Luigi's error
    values = []
    for name, param in params:
        if name in kwargs:
            values.append((name, _hashable(param.normalize(kwargs[name]))))
        elif name in defaults:
            values.append((name, defaults[name]))
        else:
            return None
    return values


def _remember_defaults(cls: type[luigi.Task], params: Any, kwargs: Any, values: Any) -> None:
    """Keep the values Luigi resolved for the parameters not in ``kwargs`` (this generation)."""
    if not _is_class_params(cls, params):
        return
    defaults = _remembered(cls)
    if defaults is None:
        defaults = {}
        _defaults[cls] = (*_generation(), defaults)
    defaults.update((name, value) for name, value in values if name not in kwargs)


def _remembered(cls: type[luigi.Task]) -> dict[str, Any] | None:
    """The values remembered for ``cls`` in the current generation; None if none yet."""
    found = _defaults.get(cls)
    if found is None:
        return None
    token, parser = _generation()
    return found[2] if found[0] is token and found[1] is parser else None


def _is_class_params(cls: type[luigi.Task], params: Any) -> bool:
    known = class_params(cls)
    return len(params) == len(known) and all(
        p is q for (_, p), (_, q) in zip(params, known, strict=True)
    )


def _hashable(value: Any) -> Any:
    """Lists and sets as tuples, as Luigi's ``get_param_values`` returns them."""
    return tuple(value) if isinstance(value, (list, set)) else value
