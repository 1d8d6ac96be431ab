"""Which periods of a job are complete, as a range judges them: the ``of`` class's
``bulk_complete``, called as Luigi's ranges call it (``functools.partial(of, **of_params)`` over
a list of period parameter values).

For PeriodTask's own ``bulk_complete`` with no output beyond the ledger that is one ledger query
over the window; with declared outputs (files) each succeeded period's targets are asked too;
a user's override is called as is. So a range, its chunks and ``complete()`` agree.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Any

from gatekeeper.core.planning import Completeness
from gatekeeper.ledger import Ledger
from gatekeeper.luigi.tasks import PeriodTask


def completeness(
    of: type[PeriodTask], of_params: Mapping[str, Any], ledger: Ledger, job: str
) -> Completeness:
    """The complete periods between two ledger keys (inclusive), as ``of``'s ``bulk_complete``
    says: one ledger query when the ledger alone answers it (PeriodTask's own, no outputs
    beyond the ledger), else ``bulk_complete`` over every period between them."""
    if of.ledger_answers_bulk_complete():
        return functools.partial(of.completed_between, ledger, job)
    return functools.partial(bulk_complete_between, of, of_params)


def bulk_complete_between(
    of: type[PeriodTask], of_params: Mapping[str, Any], first: str, last: str
) -> set[str]:
    """Keys in [first, last] that ``of.bulk_complete`` returns, called as Luigi's ranges call
    it: on ``functools.partial(of, **of_params)`` with a list of period parameter values.
    Reads what ``bulk_complete`` reads."""
    kind = of.period_kind
    span = range(kind.ordinal(kind.label(first)), kind.ordinal(kind.label(last)) + 1)
    values = [kind.to_param(kind.at(n)) for n in span]
    bulk = of.bulk_complete.__func__  # type: ignore[attr-defined]
    found = bulk(functools.partial(of, **dict(of_params)), values)
    return {of.key_of(of.label_of({**dict(of_params), **of.params_of(item)})) for item in found}


def complete_keys(
    of: type[PeriodTask],
    of_params: Mapping[str, Any],
    ledger: Ledger,
    keys: list[str] | tuple[str, ...],
) -> set[str]:
    """Those of ``keys`` that are complete, as a range judges them (``completeness``)."""
    if not keys:
        return set()
    job = of.job_id_for(**dict(of_params))
    return set(keys) & set(completeness(of, of_params, ledger, job)(min(keys), max(keys)))
