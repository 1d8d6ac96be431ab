"""What ``verify`` reports (``verify.py``): a violation of an invariant, and the ledger rows
it involves."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class Row:
    """One ledger row a violation involves: its ``table`` and the ``fields`` that name it."""

    table: str
    fields: tuple[tuple[str, Any], ...]

    def to_json(self) -> dict[str, Any]:
        return {"table": self.table, **{k: plain(v) for k, v in self.fields}}

    def describe(self) -> str:
        shown = ", ".join(f"{k} {plain(v)}" for k, v in self.fields if v is not None)
        return f"{self.table}({shown})"


@dataclass(frozen=True, slots=True)
class Violation:
    """An invariant (``INVARIANTS``) that does not hold for ``job`` and ``period``: what is
    wrong (``detail``) and the rows involved."""

    invariant: str
    job: str
    period: str
    detail: str
    rows: tuple[Row, ...]

    def describe(self) -> str:
        """One line: the invariant, the job and period, the detail and the rows."""
        rows = "; ".join(r.describe() for r in self.rows)
        return f"{self.invariant}: {self.job} {self.period}: {self.detail} [{rows}]"

    def to_json(self) -> dict[str, Any]:
        return {
            "invariant": self.invariant,
            "job": self.job,
            "period": self.period,
            "detail": self.detail,
            "rows": [r.to_json() for r in self.rows],
        }


def plain(value: Any) -> Any:
    """A value as shown and in JSON: a timestamp in ISO 8601, an integer as one."""
    if isinstance(value, dt.datetime):
        return value.isoformat()
    return value
