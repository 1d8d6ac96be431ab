"""The names a ledger knows: jobs with an attempt or a profile (a range planned them), consumers
with a publication or reservation.

Two reads, both served by the primary keys (each table's key starts with the job or consumer),
whatever the size of the ledger: ``unknown`` asks about the given names only; ``known_names``,
needed only when one is unknown, walks the distinct names by index probes (one per name)
instead of scanning every attempt of ten years. Neither writes. They are the SQL behind the
ledger contract's ``has_names``, ``unknown_names`` and ``known_names``, on its SQL core.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from gatekeeper.core.validation import check_name

if TYPE_CHECKING:
    from gatekeeper.ledger.sql import SqlCore

#: (table, name column) of every table whose rows make a name known
_TABLES = (
    ("gk_attempts", "job"),
    ("gk_jobs", "job"),
    ("gk_publications", "consumer"),
    ("gk_reservations", "consumer"),
)

#: the given name at ordinal {i} when some table has a row of it
_SEEN = "SELECT {i} WHERE " + " OR ".join(
    f"EXISTS (SELECT 1 FROM {table} WHERE {column} = ?)" for table, column in _TABLES
)

#: every distinct name of one table, walked by index: the smallest, then the next greater...
_WALK = (
    "{cte}(name) AS (SELECT MIN({column}) FROM {table} UNION ALL "
    "SELECT (SELECT {column} FROM {table} WHERE {column} > {cte}.name ORDER BY {column} LIMIT 1) "
    "FROM {cte} WHERE {cte}.name IS NOT NULL)"
)
_KNOWN_SQL = (
    "WITH RECURSIVE "
    + ", ".join(
        _WALK.format(cte=f"w{n}", table=table, column=column)
        for n, (table, column) in enumerate(_TABLES)
    )
    + " "
    + " UNION ".join(f"SELECT name FROM w{n} WHERE name IS NOT NULL" for n in range(len(_TABLES)))
)


#: one row when any table has any row: the ledger has a history
_ANY_SQL = "SELECT 1 WHERE " + " OR ".join(f"EXISTS (SELECT 1 FROM {t})" for t, _ in _TABLES)


def has_names(core: SqlCore) -> bool:
    """True when the ledger knows any name (an attempt, a profile, a publication or a
    reservation); False for a new, empty one. One query of four index probes; reads only."""
    return bool(core.read(_ANY_SQL))


def unknown(core: SqlCore, names: Sequence[str], field: str = "job") -> list[str]:
    """The ``names`` no attempt, profile, publication or reservation carries, in the
    order given (each once). One query; reads only. Raises InvalidInput (naming ``field``)
    for a malformed name."""
    wanted = list(dict.fromkeys(check_name(name, field) for name in names))
    if not wanted:
        return []
    sql = " UNION ALL ".join(_SEEN.format(i=i) for i in range(len(wanted)))
    params = [name for name in wanted for _ in _TABLES]
    seen = {int(row[0]) for row in core.read(sql, params)}
    return [name for i, name in enumerate(wanted) if i not in seen]


def known_names(core: SqlCore) -> list[str]:
    """Every job with an attempt or a profile and every consumer with a publication or
    reservation, sorted. One query of an index probe per distinct name; reads only."""
    return sorted(row[0] for row in core.read(_KNOWN_SQL))
