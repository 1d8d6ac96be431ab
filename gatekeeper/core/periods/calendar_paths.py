"""A calendar object of one's own, named by its import path so that every process rebuilds
it (issue 47, item 5).

A task class's ``calendar = MWF()`` works in the process that imports the class; ``status``,
``report``, ``check`` and ``serve`` read the job from the ledger alone. So the ledger names
the object (``calendar_ref``): by its name when ``parse_calendar`` resolves that name to it (a
built-in or ``[gatekeeper.calendars]`` calendar), else by ``module:attribute``: a module-level
name bound to it, else its class when an instance made without arguments has the same
attributes. ``parse_calendar`` rebuilds it (``calendars.import_calendar``: importing the
module, whose import runs), or says in one line which object cannot be rebuilt and how to
make it importable.
"""

from __future__ import annotations

import sys

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.calendars import Calendar, parse_calendar

__all__ = ["calendar_ref"]


def calendar_ref(calendar: Calendar) -> str:
    """How the ledger names ``calendar`` so that every process rebuilds it
    (``parse_calendar``): its name when that name resolves to it (a built-in or defined
    calendar); else its import path ``module:attribute``, a name bound to it at module level
    of its class's module, else its class when made without arguments it has the same
    attributes; else its name (a reader then refuses it, naming it). Reads only."""
    try:
        if _same(parse_calendar(calendar.name), calendar):
            return calendar.name
    except InvalidInput:
        pass
    cls = type(calendar)
    module = sys.modules.get(cls.__module__)
    if module is None or cls.__module__ == "__main__":
        return calendar.name
    for name, value in vars(module).items():
        if value is calendar and not name.startswith("_"):
            return f"{cls.__module__}:{name}"
    if "<" not in cls.__qualname__ and _same(_made(cls), calendar):
        return f"{cls.__module__}:{cls.__qualname__}"
    return calendar.name


def _made(cls: type) -> object:
    """An instance of ``cls`` made without arguments, or None when it needs some."""
    try:
        return cls()
    except Exception:
        return None


def _same(one: object, other: object) -> bool:
    """True when ``one`` is ``other``, or of its very class with equal attributes."""
    if one is other:
        return True
    if type(one) is not type(other) or not hasattr(one, "__dict__"):
        return False
    return bool(vars(one) == vars(other))
