"""docs/extending.md's examples work as the page says: its calendar object (the python block
headed ``# pipelines/firm_days.py``, written to a module and imported as ``luigi --module``
would), its ``[gatekeeper.calendars]`` line, and the line a reader prints when it cannot
import the calendar."""

from __future__ import annotations

import contextlib
import datetime as dt
import importlib
import re
import sys
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods.calendar_paths import calendar_ref
from gatekeeper.core.periods.calendars import (
    import_calendar,
    parse_calendar,
    parse_calendar_overrides,
)

pytestmark = pytest.mark.luigi

PAGE = Path(__file__).resolve().parents[2] / "docs" / "extending.md"
REF = "pipelines.firm_days:FIRM_DAYS"


def block(lang: str, first_line: str = "") -> str:
    """The first ``lang`` block of the page whose text starts with ``first_line``."""
    for match in re.finditer(rf"^```{lang}\n(.*?)^```$", PAGE.read_text(), re.M | re.S):
        if match.group(1).startswith(first_line):
            return match.group(1)
    raise AssertionError(f"no {lang} block starting {first_line!r} in {PAGE}")


@pytest.fixture
def firm_days(tmp_path: Path) -> Iterator[types.ModuleType]:
    """The page's module, ``pipelines.firm_days``, importable while the test runs."""
    (tmp_path / "pipelines").mkdir()
    (tmp_path / "pipelines" / "__init__.py").write_text("")
    (tmp_path / "pipelines" / "firm_days.py").write_text(block("python", "# pipelines/"))
    with importable(tmp_path):
        yield importlib.import_module("pipelines.firm_days")


@contextlib.contextmanager
def importable(folder: Path) -> Iterator[None]:
    """``folder`` on sys.path while it runs; sys.path and sys.modules put back after."""
    saved_path, saved_modules = sys.path[:], set(sys.modules)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            del sys.modules[name]


def test_extending_calendar_object_is_named_by_its_import_path(
    firm_days: types.ModuleType,
) -> None:
    assert calendar_ref(firm_days.FIRM_DAYS) == REF
    assert calendar_ref(firm_days.FirmDays()) == "pipelines.firm_days:FirmDays"  # its class
    assert parse_calendar(REF) is firm_days.FIRM_DAYS
    assert parse_calendar(firm_days.FIRM_DAYS).name == "firm-days"


def test_extending_calendar_object_task_counts_the_firm_days(
    firm_days: types.ModuleType,
) -> None:
    task_class = firm_days.FirmLedgerClose
    kind = task_class.period_kind
    assert kind.shift(dt.date(2026, 12, 28), -1) == dt.date(2026, 12, 23)
    assert not kind.is_business(dt.date(2026, 12, 24))
    with pytest.raises(InvalidInput) as refused:
        task_class(business_date=dt.date(2026, 12, 24))
    assert (
        "not a business day of firm-days (the previous is 2026-12-23 and the next is "
        "2026-12-28)" in str(refused.value)
    )


def test_extending_calendar_line_of_luigi_cfg_reads() -> None:
    text = block("ini")
    key, _, line = text.splitlines()[1].partition(" = ")
    firm = parse_calendar_overrides({key: line})[key]
    assert not firm.is_business_day(dt.date(2026, 12, 24))
    assert firm.is_business_day(dt.date(2026, 10, 17))  # a Saturday opened
    assert firm.is_business_day(dt.date(2026, 12, 23))


def test_extending_unimportable_calendar_is_the_line_the_page_shows() -> None:
    shown = block("", "invalid gk_jobs.calendar=").strip()
    assert "pipelines" not in sys.modules
    with pytest.raises(InvalidInput) as refused:
        import_calendar(REF, "gk_jobs.calendar")
    assert str(refused.value) == shown
