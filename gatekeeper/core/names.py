"""Names the ledger has never seen: the closest known ones, and the error that lists them (pure).

A job name is a family, optionally followed by its significant parameters:
``Refunds(region=eu)``. A typed name is matched to known names by family (``Refunds`` names
every ``Refunds(...)`` job) and by closeness of the whole name (``NetRevnue`` names
``NetRevenue``).
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence

from gatekeeper.core.errors import InvalidInput

#: at most this many suggestions per unknown name
SUGGESTIONS = 5
#: difflib's ratio a name must reach to be suggested
CUTOFF = 0.6


def family(name: str) -> str:
    """The part of a job name before its parameters: ``Refunds`` of ``Refunds(region=eu)``."""
    return name.split("(", 1)[0]


def closest(name: str, known: Iterable[str], limit: int = SUGGESTIONS) -> tuple[str, ...]:
    """The known names closest to ``name``, best first, at most ``limit``.

    First the known names of the same family (compared without case), then those close to the
    whole name (difflib), then the members of families close to ``name``'s family. ``name``
    itself is never suggested.
    """
    pool = sorted(set(known) - {name})
    own = family(name).casefold()
    found = [k for k in pool if family(k).casefold() == own]
    found += difflib.get_close_matches(name, pool, n=limit, cutoff=CUTOFF)
    families = sorted({family(k) for k in pool})
    for near in difflib.get_close_matches(family(name), families, n=limit, cutoff=CUTOFF):
        found += [k for k in pool if family(k) == near]
    return tuple(dict.fromkeys(found))[:limit]


def suggest(unknown: Sequence[str], known: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """Each unknown name -> its closest known names (``closest``), in the order given."""
    pool = tuple(known)
    return {name: closest(name, pool) for name in unknown}


def describe_unknown(kind: str, suggestions: Mapping[str, Sequence[str]]) -> str:
    """``no such job 'NetRevnue' (did you mean 'NetRevenue'?)``, one clause per unknown name,
    joined by ``;``; ``kind`` is ``job`` or ``consumer``."""
    clauses = []
    for name, near in suggestions.items():
        hint = f" (did you mean {', '.join(map(_quoted, near))}?)" if near else ""
        clauses.append(f"no such {kind} {_quoted(name)}{hint}")
    return "; ".join(clauses)


def unknown_names_error(
    kind: str, suggestions: Mapping[str, Sequence[str]], ledger: str
) -> InvalidInput:
    """The InvalidInput for names ``ledger`` (its description) has never seen: ``field`` is
    ``kind``, ``value`` the unknown names, ``reason`` the message without the ledger."""
    reason = describe_unknown(kind, suggestions)
    return InvalidInput(
        kind,
        tuple(suggestions),
        reason,
        message=f"{reason} in the ledger ({ledger}); --allow-unknown accepts a {kind} "
        + ("not yet run" if kind == "job" else "not yet published"),
    )


def _quoted(name: str) -> str:
    return f"'{name}'" if name.isprintable() else repr(name)
