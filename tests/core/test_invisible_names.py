"""Names refuse invisible and format characters (Unicode category Cf and the soft hyphen) as
they refuse control and bidi ones: ``Sales``, ``Sa\\u200bles`` and ``Sales\\ufeff`` would be
three jobs that look identical on a page or a terminal."""

from __future__ import annotations

import datetime as dt
import unicodedata

import pytest

import gatekeeper as gk
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.validation import check_name
from tests.helpers.ledgers import snapshot

INVISIBLE = ["\u200b", "\u200c", "\u200d", "\u2060", "\ufeff", "\u00ad", "\u2061", "\U000e0001"]


@pytest.mark.parametrize("char", INVISIBLE)
def test_check_name_refuses_invisible_and_format_characters(char: str) -> None:
    assert char == "\u00ad" or unicodedata.category(char) == "Cf"
    name = f"Sa{char}les"
    with pytest.raises(InvalidInput) as raised:
        check_name(name, "job")
    assert raised.value.field == "job" and raised.value.value == name
    assert f"\\u{ord(char):04x}" in str(raised.value) and "invisible" in str(raised.value)


@pytest.mark.parametrize("name", ["Sales", "Ventes_été", "売上", "Refunds(region=eu)", "a-b.c"])
def test_check_name_keeps_visible_names(name: str) -> None:
    assert check_name(name, "job") == name


def test_ledger_refuses_an_invisible_job_name_and_writes_nothing(sqlite_url: str) -> None:
    now = dt.datetime(2026, 10, 23, 7, 0, tzinfo=dt.timezone.utc)
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.record("Sales", "2026-10-01", 1, "s-1", "succeeded", now)
        before = snapshot(ledger)
        for name in ("Sa\u200bles", "Sales\ufeff", "Sa\u00adles"):
            with pytest.raises(InvalidInput) as raised:
                ledger.record(name, "2026-10-01", 1, f"r-{len(name)}", "succeeded", now)
            assert raised.value.field == "job"
            with pytest.raises(InvalidInput):
                ledger.record("Sales", "2026-10-02", 1, f"run\u2060{len(name)}", "succeeded", now)
        assert snapshot(ledger) == before
