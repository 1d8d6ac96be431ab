"""How the ledger names a calendar object so that another process rebuilds it
(core/periods/calendar_paths.py): its name, or its import path ``module:attribute``."""

from __future__ import annotations

import datetime as dt
import sys
import types
from collections.abc import Iterator

import pytest

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.calendar_paths import calendar_ref
from gatekeeper.core.periods.calendars import (
    WEEKDAYS,
    BusinessCalendar,
    import_calendar,
    parse_calendar,
)


class Odd(BusinessCalendar):
    name = "odd"

    def is_business_day(self, day: dt.date) -> bool:
        return day.day % 2 == 1


class Closed(BusinessCalendar):
    """A calendar made with arguments: its class alone does not say which days."""

    name = "closed"

    def __init__(self, *days: dt.date):
        self.days = frozenset(days)

    def is_business_day(self, day: dt.date) -> bool:
        return day not in self.days


@pytest.fixture
def module() -> Iterator[types.ModuleType]:
    """A module ``gk_paths_mod`` holding the classes above and a module-level instance."""
    found = types.ModuleType("gk_paths_mod")
    for cls in (Odd, Closed):
        setattr(found, cls.__name__, cls)
    found.FIRM = Closed(dt.date(2026, 10, 14))  # type: ignore[attr-defined]
    sys.modules[found.__name__] = found
    saved = {cls: cls.__module__ for cls in (Odd, Closed)}
    for cls in saved:
        cls.__module__ = found.__name__
    try:
        yield found
    finally:
        for cls, name in saved.items():
            cls.__module__ = name
        del sys.modules[found.__name__]


def test_calendar_ref_names_a_builtin_calendar_by_name() -> None:
    assert calendar_ref(WEEKDAYS) == "weekdays"
    assert calendar_ref(parse_calendar("all")) == "all"


def test_calendar_ref_names_an_object_by_its_import_path(module: types.ModuleType) -> None:
    assert calendar_ref(Odd()) == "gk_paths_mod:Odd"  # its class, made without arguments
    assert calendar_ref(module.FIRM) == "gk_paths_mod:FIRM"  # a module-level name
    assert calendar_ref(Closed(dt.date(2026, 1, 1))) == "closed"  # neither: its name only


def test_import_calendar_rebuilds_the_object(module: types.ModuleType) -> None:
    odd = parse_calendar("gk_paths_mod:Odd")
    assert isinstance(odd, Odd) and odd is import_calendar("gk_paths_mod:Odd")
    assert parse_calendar("gk_paths_mod:FIRM") is module.FIRM


@pytest.mark.parametrize(
    ("ref", "says"),
    [
        ("gk_paths_absent:Odd", "importing gk_paths_absent fails (ModuleNotFoundError"),
        ("gk_paths_mod:Nothing", "AttributeError"),
        ("gk_paths_mod:Closed.days", "AttributeError"),
    ],
)
def test_import_calendar_refuses_what_cannot_be_rebuilt_in_one_line(
    module: types.ModuleType, ref: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as refused:
        parse_calendar(ref, "gk_jobs.calendar")
    text = str(refused.value)
    assert text.startswith(f"invalid gk_jobs.calendar='{ref}': ") and "\n" not in text
    assert says in text and "cannot be rebuilt" in text
