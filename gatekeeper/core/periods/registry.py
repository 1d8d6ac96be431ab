"""The calendars a configuration defines by name: ``DEFINED``, the one registry of them (pure).

``calendars.parse_calendar`` looks a name up here before the built-in names. The registry is
empty until a caller fills it, where it resolves a calendar, never at import: the Luigi
adapter fills it with ``[gatekeeper.calendars]`` of luigi.cfg
(``luigi/calendar_config.py use_defined_calendars``) when a task class of one's own binds its
calendar, a range or the ``gatekeeper`` command resolves a schedule, or a job's recorded
calendar is checked (importing gatekeeper fills nothing: its own task classes are on the
built-in ``all``). Other code passes ``defined=`` to ``parse_calendar``, or fills the registry
itself (``DEFINED.use``).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from gatekeeper.core.periods.calendars import Calendar

__all__ = ["DEFINED", "DefinedCalendars", "Source"]

#: ``source(name)``: the calendar a configuration defines under ``name``, None when it
#: defines none; raises InvalidInput for that name's line only
Source = Callable[[str], "Calendar | None"]


class DefinedCalendars:
    """Where named calendars come from: one ``Source``, or none (only built-in names and
    import paths resolve)."""

    def __init__(self) -> None:
        self._source: Source | None = None
        self._lock = threading.Lock()

    @property
    def source(self) -> Source | None:
        """The source in use, None when none is."""
        return self._source

    def use(self, source: Source | None) -> None:
        """Take ``source`` as where named calendars come from (None: none are defined).
        It is asked at every lookup of a name, so it should cache what it read; a bad line
        then stops only what uses its calendar."""
        with self._lock:
            self._source = source

    def find(self, name: str) -> Calendar | None:
        """The calendar defined under ``name``, None when none is (or no source is in use);
        raises InvalidInput for a bad definition of that name."""
        source = self._source
        return None if source is None else source(name)


#: the registry ``parse_calendar`` reads and the Luigi adapter fills
DEFINED = DefinedCalendars()
