"""Fixtures of the CLI tests: a small SQLite ledger to read."""

from __future__ import annotations

from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.ledgers import T0

D = "2026-10-23"


@pytest.fixture
def filled(tmp_path: Path) -> str:
    """A SQLite ledger holding job A (two dates) and a publication of Sales."""
    url = f"sqlite:///{tmp_path / 'filled.db'}"
    with gk.open_ledger(url) as ledger:
        ledger.record("A", D, 1, "run-a1", "succeeded", T0)
        ledger.record("A", "2026-10-24", 1, "run-a2", "failed", T0, error="boom")
        ledger.publish("Sales", D, ["A"], "fp-1")
        ledger.record("H", "2026-10-25T04:00:00+00:00", 1, "run-h1", "succeeded", T0)
    return url
