"""Values shown as typed, never a Python repr: ``show_value`` and the ``InvalidInput`` message
built on it."""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import gatekeeper as gk
from gatekeeper.core.errors import show_value

UTC = dt.timezone.utc


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("2026-10-25T05:30Z", "'2026-10-25T05:30Z'"),
        ("C:\\ledger", "'C:\\ledger'"),
        ("two\nlines", "'two\\nlines'"),  # escaped, so a message stays on one line
        (dt.datetime(2026, 10, 25, 0, 0), "2026-10-25T00:00:00"),
        (dt.datetime(2026, 10, 25, 5, tzinfo=UTC), "2026-10-25T05:00:00+00:00"),
        (dt.date(2026, 10, 25), "2026-10-25"),
        (3, "3"),
        (2.5, "2.5"),
        (Decimal("1.10"), "1.10"),
        (True, "True"),
        (ZoneInfo("Europe/London"), "Europe/London"),
        (gk.RunState.SUCCEEDED, "succeeded"),
        (int, "int"),
        (["a", dt.date(2026, 1, 1)], "['a', 2026-01-01]"),
    ],
)
def test_show_value_renders_what_the_user_typed(value: Any, shown: str) -> None:
    assert show_value(value) == shown
    error = gk.InvalidInput("field", value, "why")
    assert str(error) == f"invalid field={shown}: why"
    assert error.value is value


def test_invalid_input_without_a_value_names_only_the_field() -> None:
    error = gk.InvalidInput("run_id", None, "required with --events")
    assert str(error) == "invalid run_id: required with --events" and error.value is None
