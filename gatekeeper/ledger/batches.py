"""Statements over many rows at once: a ``VALUES`` list of ``BATCH`` rows a statement (a
common table expression on both dialects), what the set-based reads of a fleet share
(``fleet_reads.py``, ``staleness.py``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

#: rows of a VALUES list per statement (at most 3 parameters each: under SQLite's old
#: limit of 999 parameters)
BATCH = 300


def values(width: int, count: int) -> str:
    """The placeholders of a VALUES list of ``count`` rows of ``width`` values."""
    row = "(" + ", ".join("?" for _ in range(width)) + ")"
    return ", ".join(row for _ in range(count))


def batches(items: Sequence[Any]) -> Iterator[Sequence[Any]]:
    """``items`` in slices of at most BATCH."""
    for at in range(0, len(items), BATCH):
        yield items[at : at + BATCH]
