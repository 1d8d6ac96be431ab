"""Business calendars: which days a business runs on (pure, but for the lazily imported
``holidays`` and ``exchange_calendars`` packages that two kinds read their days from).

A calendar answers one question, *is this date a business day?*, and from it the next and
previous business day. Built in, by name (``parse_calendar``):

- ``all``: every day (the default; what gatekeeper did before calendars);
- ``weekdays``: Monday to Friday;
- ``holidays:CC`` / ``holidays:CC-SUBDIV``: weekdays less the public holidays of the
  ``holidays`` package (``holidays:US``, ``holidays:GB-ENG``, ``holidays:DE-BY``);
- ``exchange:MIC``: the sessions of ``exchange_calendars`` (extra ``calendars``), within the
  years that package knows;
- a name defined in ``[gatekeeper.calendars]``: another calendar with days closed or opened.

Any object with a ``name`` and the three methods of ``Calendar`` plugs in (subclass
``BusinessCalendar`` and write ``is_business_day`` alone to get the other two). The ledger
names it so that every process can rebuild it (``calendar_paths.py``): by its name when that
resolves to it, else by its import path ``module:attribute``, which ``parse_calendar``
imports (``import_calendar``) with the job's module importable as ``luigi --module`` needs.
"""

from __future__ import annotations

import datetime as dt
import functools
import importlib
import re
import sys
import threading
import types
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping
from typing import Protocol, runtime_checkable

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.registry import DEFINED

__all__ = [
    "ALL",
    "WEEKDAYS",
    "AdjustedCalendar",
    "BusinessCalendar",
    "Calendar",
    "import_calendar",
    "parse_calendar",
    "parse_calendar_overrides",
    "weekdays_only",
]

#: how far ``next_business_day``/``previous_business_day`` look before giving up (ten years)
SEARCH_DAYS = 3660
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_HOLIDAYS = re.compile(r"^holidays:([A-Z]{2,3})(?:-([A-Za-z0-9]{1,8}))?$")
_EXCHANGE = re.compile(r"^exchange:([A-Z0-9]{2,8})$")
_DOTTED = r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*"
#: an import path naming a calendar object (``calendar_paths.py``)
_PATH = re.compile(rf"^{_DOTTED}:{_DOTTED}$")
_ONE_DAY = dt.timedelta(days=1)


@runtime_checkable
class Calendar(Protocol):
    """What gatekeeper asks of a business calendar.

    ``name`` is how the ledger, the CLI and the page name it (``weekdays``, ``holidays:US``).
    ``next_business_day(day)`` is the first business day strictly after ``day``,
    ``previous_business_day(day)`` the last strictly before; both raise InvalidInput where the
    calendar does not know (beyond its years).
    """

    name: str

    def is_business_day(self, day: dt.date) -> bool: ...

    def next_business_day(self, day: dt.date) -> dt.date: ...

    def previous_business_day(self, day: dt.date) -> dt.date: ...


class BusinessCalendar(ABC):
    """A base for one's own calendar: write ``is_business_day``; the next and previous
    business days are found by stepping a day at a time (at most ``SEARCH_DAYS``)."""

    name: str = "custom"

    @abstractmethod
    def is_business_day(self, day: dt.date) -> bool:
        """True when ``day`` is a business day."""

    def next_business_day(self, day: dt.date) -> dt.date:
        return _step(self, day, 1)

    def previous_business_day(self, day: dt.date) -> dt.date:
        return _step(self, day, -1)

    def __repr__(self) -> str:
        return f"<calendar {self.name}>"


def _step(calendar: Calendar, day: dt.date, direction: int) -> dt.date:
    """The first business day of ``calendar`` from ``day`` (exclusive) in ``direction``."""
    at = day
    for _ in range(SEARCH_DAYS):
        try:
            at = at + _ONE_DAY if direction > 0 else at - _ONE_DAY
        except OverflowError:
            break
        if calendar.is_business_day(at):
            return at
    side = "after" if direction > 0 else "before"
    raise InvalidInput(
        "calendar", calendar.name, f"no business day within {SEARCH_DAYS} days {side} {day}"
    )


class _Builtin(BusinessCalendar):
    """A calendar ``parse_calendar`` makes from its name alone: pickled as that name."""

    def __reduce__(self) -> tuple[object, ...]:
        return parse_calendar, (self.name,)


class _EveryDay(_Builtin):
    name = "all"

    def is_business_day(self, day: dt.date) -> bool:
        return True


class _Weekdays(_Builtin):
    name = "weekdays"
    weekdays_only = True

    def is_business_day(self, day: dt.date) -> bool:
        return day.weekday() < 5


ALL: Calendar = _EveryDay()
WEEKDAYS: Calendar = _Weekdays()


class HolidayCalendar(_Builtin):
    """Weekdays less the public holidays of ``holidays.country_holidays(country, subdiv)``;
    the holidays of a year are computed the first time a date of it is asked."""

    weekdays_only = True

    def __init__(self, name: str, country: str, subdiv: str | None):
        holidays = _import("holidays", "holidays", name)
        try:
            self._days = holidays.country_holidays(country, subdiv=subdiv)
        except (NotImplementedError, KeyError) as exc:
            raise InvalidInput(
                "calendar", name, f"the holidays package refuses it ({exc})"
            ) from None
        self.name = name
        self._lock = threading.Lock()  # the package fills a year's holidays on first use

    def is_business_day(self, day: dt.date) -> bool:
        if day.weekday() >= 5:
            return False
        with self._lock:
            return day not in self._days


class ExchangeCalendar(_Builtin):
    """The sessions of ``exchange_calendars.get_calendar(mic)``; a date outside the years the
    package knows for it is refused (InvalidInput naming them), never guessed."""

    FIRST = dt.date(1990, 1, 1)
    LAST = dt.date(2050, 12, 31)

    def __init__(self, name: str, mic: str):
        xcals = _import("exchange_calendars", "calendars", name)
        try:
            found = xcals.get_calendar(mic, start=self.FIRST.isoformat(), end=self.LAST.isoformat())
            self.first, self.last = self.FIRST, self.LAST
        except Exception as exc:  # the package's own errors: an unknown MIC, bounds refused
            try:
                found = xcals.get_calendar(mic)
            except Exception:
                raise InvalidInput(
                    "calendar", name, f"exchange_calendars refuses it ({exc})"
                ) from None
            self.first, self.last = found.first_session.date(), found.last_session.date()
        self.name = name
        self._sessions = frozenset(d.date() for d in found.sessions)
        self.weekdays_only = all(day.weekday() < 5 for day in self._sessions)

    def is_business_day(self, day: dt.date) -> bool:
        if not self.first <= day <= self.last:
            raise InvalidInput(
                "business_date",
                day,
                f"{self.name} knows sessions from {self.first} to {self.last} only",
            )
        return day in self._sessions


class AdjustedCalendar(BusinessCalendar):
    """``base`` with the days of ``close`` closed and those of ``open`` opened (an exceptional
    closure, a Saturday session): what ``[gatekeeper.calendars]`` defines."""

    def __init__(
        self, name: str, base: Calendar, close: Iterable[dt.date], open: Iterable[dt.date] = ()
    ):
        self.name = name
        self.base = base
        self.close = frozenset(close)
        self.open = frozenset(open)
        both = self.close & self.open
        if both:
            raise InvalidInput("calendar", name, f"both closes and opens {min(both)}")
        self.weekdays_only = weekdays_only(base) and all(d.weekday() < 5 for d in self.open)

    def is_business_day(self, day: dt.date) -> bool:
        if day in self.close:
            return False
        return day in self.open or self.base.is_business_day(day)


def weekdays_only(calendar: Calendar) -> bool:
    """True when every business day of ``calendar`` is a weekday (Monday to Friday), as the
    calendar says by a true ``weekdays_only`` attribute (the built-in ones but ``all`` say
    it where it holds; one's own may promise it); False when it does not say. A reader of
    the ledger's runs relies on it (``ledger/run_lines.py``)."""
    return getattr(calendar, "weekdays_only", False) is True


def _import(module: str, extra: str, name: str) -> types.ModuleType:
    try:
        return __import__(module)
    except ImportError:
        raise InvalidInput(
            "calendar",
            name,
            f"needs the {module} package, the extra {extra!r}: pip install "
            f"'luigi-gatekeeper[{extra}]' (from a checkout: pip install -e '.[{extra}]')",
        ) from None


@functools.cache
def _builtin(name: str) -> Calendar:
    """The built-in calendar ``name``, made once per process; raises InvalidInput."""
    if name == "all":
        return ALL
    if name == "weekdays":
        return WEEKDAYS
    holiday = _HOLIDAYS.match(name)
    if holiday:
        return HolidayCalendar(name, holiday.group(1), holiday.group(2))
    exchange = _EXCHANGE.match(name)
    if exchange:
        return ExchangeCalendar(name, exchange.group(1))
    raise InvalidInput(
        "calendar",
        name,
        "unknown calendar; expected all, weekdays, holidays:CC[-SUBDIV], exchange:MIC, a name "
        "[gatekeeper.calendars] defines, or module:attribute naming a calendar object (one "
        "of one's own is recorded so when its module is importable: docs/calendars.md)",
    )


def parse_calendar(
    value: object, field: str = "calendar", defined: Mapping[str, Calendar] | None = None
) -> Calendar:
    """The calendar ``value`` names (a name in ``defined``, else, when ``defined`` is None,
    one the ``DEFINED`` registry holds (``[gatekeeper.calendars]`` once the Luigi adapter
    filled it: ``registry.py``), else a built-in name or an import path; or a Calendar object
    itself); raises InvalidInput naming ``field`` for anything else."""
    if isinstance(value, str):
        if defined is None and _NAME.match(value):
            found = DEFINED.find(value)
            if found is not None:
                return found
        if defined and (value in defined or value.lower() in defined):
            return defined.get(value) or defined[value.lower()]
        if _PATH.match(value) and not (_HOLIDAYS.match(value) or _EXCHANGE.match(value)):
            return import_calendar(value, field)
        try:
            return _builtin(value)
        except InvalidInput as exc:
            raise InvalidInput(field, value, exc.reason) from None
    if isinstance(value, Calendar) and isinstance(getattr(value, "name", None), str):
        if not _NAME.match(value.name.replace(":", "-")):
            raise InvalidInput(field, value.name, "a calendar's name is 1-64 letters, digits, _.-:")
        return value
    raise InvalidInput(
        field, value, "expected a calendar name or an object with name and is_business_day"
    )


#: import path -> (the module it was found in, the calendar): rebuilt when the module is not
#: that one any more (imported anew)
_imported: dict[str, tuple[types.ModuleType, Calendar]] = {}
_imported_lock = threading.Lock()


def import_calendar(ref: str, field: str = "calendar") -> Calendar:
    """The calendar object ``ref`` (``module:attribute``, ``calendar_ref``'s) names: the
    attribute, or an instance of it made without arguments when it is a class; the same
    object while the module stays imported. Imports the module (its import runs); raises
    InvalidInput naming ``ref`` and how to make it importable when it cannot be rebuilt."""
    path = ref.split(":")[0]
    with _imported_lock:
        held = _imported.get(ref)
        if held is not None and sys.modules.get(path) is held[0]:
            return held[1]
    try:
        module = importlib.import_module(path)
    except Exception as exc:  # the module's own import errors too: one line naming them
        raise InvalidInput(
            field,
            ref,
            f"the job's calendar object cannot be rebuilt: importing {path} fails "
            f"({type(exc).__name__}: {' '.join(str(exc).split())}); run where {path} is "
            "importable, as luigi --module needs (its folder on PYTHONPATH)",
        ) from None
    found = _attribute(module, ref, field)
    with _imported_lock:
        _imported[ref] = (module, found)
    return found


def _attribute(module: object, ref: str, field: str) -> Calendar:
    """The calendar at ``ref``'s attribute of ``module`` (a class: made without arguments)."""
    found: object = module
    try:
        for name in ref.split(":")[1].split("."):
            found = getattr(found, name)
        if isinstance(found, type):
            found = found()
    except Exception as exc:
        raise InvalidInput(
            field,
            ref,
            f"the job's calendar object cannot be rebuilt ({type(exc).__name__}: "
            f"{' '.join(str(exc).split())}); define it at module level there",
        ) from None
    return parse_calendar(found, field)


def parse_calendar_overrides(section: Mapping[str, str]) -> dict[str, Calendar]:
    """The calendars ``[gatekeeper.calendars]`` defines: ``NAME = BASE [close D ...] [open D
    ...]`` (dates ``YYYY-MM-DD``; a NAME may be a built-in one, adjusted in place). Raises
    InvalidInput naming the key and the word or date it cannot read."""
    found: dict[str, Calendar] = {}
    for name, text in section.items():
        field = f"gatekeeper.calendars.{name}"
        if not _NAME.match(name):
            raise InvalidInput(field, name, "a calendar name is letters, digits, _ . -")
        words = text.split()
        if not words:
            raise InvalidInput(field, text, "expected BASE [close DATE ...] [open DATE ...]")
        base = parse_calendar(words[0], field, defined={})  # a built-in one
        days: dict[str, list[dt.date]] = {"close": [], "open": []}
        into: list[dt.date] | None = None
        for word in words[1:]:
            if word in days:
                into = days[word]
                continue
            if into is None:
                raise InvalidInput(field, word, "expected close or open before the dates")
            try:
                into.append(dt.date.fromisoformat(word.rstrip(",")))
            except ValueError:
                raise InvalidInput(field, word, "expected a date YYYY-MM-DD") from None
        found[name] = AdjustedCalendar(name, base, days["close"], days["open"])
    return found
