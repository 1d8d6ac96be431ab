"""``[gatekeeper.calendars]`` of luigi.cfg: the calendars a deployment defines by name.

- ``CALENDARS``: the section's name.
- ``defined_calendar(name)``: the calendar the section defines under ``name``, else None.
- ``use_defined_calendars()``: fill the core's registry of named calendars with the section.

Read a name at a time when a calendar is looked up, never at import (docs/calendars.md).
"""

from __future__ import annotations

import configparser
import threading
from typing import Any

import luigi.configuration

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.registry import DEFINED
from gatekeeper.luigi.config_errors import config_error

#: ``[gatekeeper.calendars]``: the calendars luigi.cfg defines (docs/calendars.md)
CALENDARS = "gatekeeper.calendars"
_calendars: dict[tuple[str, str], Any] = {}  # (key, its line) -> the calendar it defines
_calendars_lock = threading.Lock()


def defined_calendar(name: str) -> Any:
    """The calendar ``[gatekeeper.calendars]`` of luigi.cfg defines under ``name`` (keys are
    case-insensitive), None when it defines none. Only that key's line is read, parsed once
    for as long as it reads the same: a bad line stops only what uses its calendar
    (InvalidInput naming the key and the word), never ``--version`` or another job."""
    from gatekeeper.core.periods.calendars import parse_calendar_overrides

    parser = luigi.configuration.get_config()
    key = name.lower()
    if not parser.has_option(CALENDARS, key):
        return None
    try:
        line = str(parser.get(CALENDARS, key))
    except configparser.Error as exc:
        raise (config_error(exc) or InvalidInput(f"{CALENDARS}.{key}", None, str(exc))) from None
    with _calendars_lock:
        if (key, line) not in _calendars:
            _calendars[(key, line)] = parse_calendar_overrides({key: line})[key]
        return _calendars[(key, line)]


def use_defined_calendars() -> None:
    """Fill the core's one registry of named calendars (``core/periods/registry.py``
    ``DEFINED``) with ``defined_calendar``: ``[gatekeeper.calendars]`` of luigi.cfg, read a
    name at a time when one is looked up. Called where the adapter resolves a calendar (a
    task class binding its own, a range's schedule, a ``gatekeeper`` command), never at
    import; calling it again changes nothing."""
    if DEFINED.source is not defined_calendar:
        DEFINED.use(defined_calendar)
