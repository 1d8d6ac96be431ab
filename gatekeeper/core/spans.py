"""Periods in bulk without one object per period: a span of consecutive periods, and the
complete periods of a job as coalesced runs (pure).

- ``PeriodSpan``: the consecutive periods ``[lo, hi)`` of one kind, by ordinal, as a read-only
  sequence of labels made on demand (a plan's ``due``: ten years of hours cost nothing until
  someone looks at them). It equals the tuple of the same labels.
- ``PeriodRuns``: a set of periods held as sorted, disjoint, non-adjacent ``[lo, hi)`` ordinal
  intervals; what the ledger keeps per job (``ledger/runs.py``) and planning reads, so that a
  plan costs in proportion to what is missing, not to the window.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import Label, Period, parse_period

Span = tuple[int, int]  # [lo, hi) ordinals


class PeriodSpan(Sequence[Label]):
    """The labels of the periods at ordinals ``[lo, hi)`` of ``period``, made on demand."""

    __slots__ = ("hi", "lo", "period")

    def __init__(self, period: Period, lo: int, hi: int):
        self.period = period
        self.lo = lo
        self.hi = max(lo, hi)

    def __len__(self) -> int:
        return self.hi - self.lo

    @overload
    def __getitem__(self, index: int) -> Label: ...

    @overload
    def __getitem__(self, index: slice[object, object, object]) -> PeriodSpan: ...

    def __getitem__(self, index: int | slice[object, object, object]) -> Label | PeriodSpan:
        if isinstance(index, slice):
            start, stop, step = index.indices(len(self))
            if step != 1:
                raise ValueError("a PeriodSpan slice takes no step")
            return PeriodSpan(self.period, self.lo + start, self.lo + max(start, stop))
        position = index + len(self) if index < 0 else index
        if not 0 <= position < len(self):
            raise IndexError(index)
        return self.period.at(self.lo + position)

    def __iter__(self) -> Iterator[Label]:
        at = self.period.at
        return (at(n) for n in range(self.lo, self.hi))

    def __contains__(self, value: object) -> bool:
        try:
            ordinal = self.period.ordinal(value)
        except InvalidInput:
            return False
        return self.lo <= ordinal < self.hi

    def index(self, value: object, start: int = 0, stop: int | None = None) -> int:
        """The position of ``value`` (a label or its key); ValueError when it is not here."""
        if value not in self:
            raise ValueError(f"{value!r} is not in the span")
        position = self.period.ordinal(value) - self.lo
        if position < start or (stop is not None and position >= stop):
            raise ValueError(f"{value!r} is not in the span")
        return position

    def count(self, value: object) -> int:
        return 1 if value in self else 0

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PeriodSpan):
            return (self.period, self.lo, self.hi) == (other.period, other.lo, other.hi) or (
                len(self) == len(other) == 0
            )
        if isinstance(other, (tuple, list)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        if not len(self):
            return f"PeriodSpan({self.period.name}, empty)"
        return f"PeriodSpan({self.period.name}, {self[0]!r}..{self[-1]!r}, {len(self)})"


@dataclass(frozen=True, slots=True)
class PeriodRuns:
    """Periods of one kind as coalesced runs: ``spans`` are sorted, disjoint and never
    adjacent ``[lo, hi)`` ordinal intervals. Answers membership by bisection and the missing
    periods of a window in proportion to the runs and the gaps, never to the window."""

    period: Period
    spans: tuple[Span, ...]

    @classmethod
    def of(cls, period: object, ordinals: Iterable[int]) -> PeriodRuns:
        """The runs of a collection of ordinals (any order, repeats allowed)."""
        spans: list[list[int]] = []
        for n in sorted(set(ordinals)):
            if spans and spans[-1][1] == n:
                spans[-1][1] = n + 1
            else:
                spans.append([n, n + 1])
        return cls(parse_period(period), tuple((lo, hi) for lo, hi in spans))

    @classmethod
    def from_keys(cls, period: object, pairs: Iterable[tuple[str, str]]) -> PeriodRuns:
        """The runs of ``(first key, last key)`` pairs (inclusive), in any order; overlapping
        or adjacent pairs are coalesced. Raises InvalidInput naming a bad key."""
        kind = parse_period(period)
        spans = sorted((kind.ordinal(a, "first"), kind.ordinal(b, "last") + 1) for a, b in pairs)
        merged: list[list[int]] = []
        for lo, hi in spans:
            if hi <= lo:
                raise InvalidInput("last", kind.key(kind.at(hi - 1)), "before its first period")
            if merged and lo <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        return cls(kind, tuple((lo, hi) for lo, hi in merged))

    def __len__(self) -> int:
        """The number of periods in the runs."""
        return sum(hi - lo for lo, hi in self.spans)

    def __contains__(self, value: object) -> bool:
        try:
            n = self.period.ordinal(value)
        except InvalidInput:
            return False
        i = bisect.bisect_right(self.spans, (n, float("inf"))) - 1
        return i >= 0 and self.spans[i][0] <= n < self.spans[i][1]

    def __iter__(self) -> Iterator[Label]:
        """Every period of the runs, as labels, ascending."""
        at = self.period.at
        return (at(n) for lo, hi in self.spans for n in range(lo, hi))

    def keys(self) -> Iterator[str]:
        """Every period of the runs, as ledger keys, ascending."""
        key = self.period.key
        return (key(label) for label in self)

    def missing(self, lo: int, hi: int) -> Iterator[int]:
        """The ordinals of ``[lo, hi)`` that no run holds, ascending."""
        at = lo
        i = max(0, bisect.bisect_right(self.spans, (lo, float("inf"))) - 1)
        for first, end in self.spans[i:]:
            if first >= hi:
                break
            if end <= at:
                continue
            yield from range(at, min(first, hi))
            at = max(at, end)
        yield from range(at, hi)

    def on(self, kind: Period) -> PeriodRuns:
        """These runs of every period as runs of ``kind``, the same base kind bound to a
        calendar (``Period.on``): a run holds every period between its ends, so it holds
        their business periods; runs a non-business gap alone parted are joined."""
        if kind is self.period:
            return self
        if kind.base is not self.period:
            raise InvalidInput("complete", self.period.name, f"runs of another kind than {kind}")
        base = self.period
        if self.spans:  # the calendar refuses years it does not know, at either end
            kind.rank(base.at(self.spans[0][0]))
            kind.rank(base.at(self.spans[-1][1]))
        rank = kind.rank_of_ordinal  # type: ignore[attr-defined]
        spans: list[list[int]] = []
        for lo, hi in self.spans:
            a, b = rank(lo), rank(hi)
            if b <= a:
                continue
            if spans and spans[-1][1] == a:
                spans[-1][1] = b
            else:
                spans.append([a, b])
        return PeriodRuns(kind, tuple((a, b) for a, b in spans))

    def key_pairs(self) -> list[tuple[str, str]]:
        """The runs as ``(first key, last key)`` pairs (inclusive), ascending."""
        kind = self.period
        return [(kind.key(kind.at(lo)), kind.key(kind.at(hi - 1))) for lo, hi in self.spans]
