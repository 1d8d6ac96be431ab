"""Unknown names are errors: the one check every command naming jobs or consumers makes first.

``status``, ``report``, ``stale``, ``evidence``, ``history``, ``ready`` and
``plan-recovery --stages`` refuse a job or consumer the ledger has never seen (InvalidInput,
exit 2, the closest known names suggested) before computing anything; ``--allow-unknown``
accepts one not yet run (an empty answer, as for any name before its first attempt).
``abandon`` and ``check`` refuse one the same way, without that hint (``refuse_unknown``:
a job never run has nothing to abandon or judge). A period key of another kind than the
job's (an hour for a daily job) is refused naming the job's kind (``check_key``); one off
the calendar the job's profile records is named so (``off_calendar``).
A ``[gatekeeper.freshness]`` key naming no job stops only the gates an alert relies on
(``check_freshness_keys``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.names import suggest, unknown_names_error
from gatekeeper.core.periods import kind_of_key, period_key
from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.luigi.freshness import check_config, unknown_keys_line


def check_known(
    ledger: LedgerReads, names: Sequence[str], allow_unknown: bool = False, kind: str = "job"
) -> None:
    """Raise InvalidInput naming every one of ``names`` the ledger has never seen, each with
    its closest known names, unless ``--allow-unknown`` was given. Reads only: one query,
    and a second listing the known names only when one is unknown."""
    if allow_unknown:
        return
    missing = ledger.unknown_names(names, kind)
    if missing:
        raise unknown_names_error(kind, suggest(missing, ledger.known_names()), ledger.describe())


def refuse_unknown(ledger: LedgerReads, names: Sequence[str], kind: str = "job") -> None:
    """``check_known``'s refusal (the closest names suggested), without its
    ``--allow-unknown`` hint, for a command without that option."""
    try:
        check_known(ledger, names, kind=kind)
    except InvalidInput as exc:
        where = f" in the ledger ({ledger.describe()})"
        raise InvalidInput(exc.field, exc.value, exc.reason, message=exc.reason + where) from None


def check_key(ledger: LedgerReads, job: str, value: Any, field: str = "date") -> str:
    """The ledger key ``value`` names, refused (InvalidInput naming ``field``) when it is
    not of ``job``'s period kind (its range's profile, else its recorded periods): an hour
    for a daily job is a mistake, not a period with nothing recorded. Any kind for a job
    the ledger does not know. Reads only: one or two queries."""
    key = period_key(value, field)
    profile = ledger.job_profile(job)
    span = ledger.period_span(job)
    kind = profile.period if profile is not None else kind_of_key(span[0]) if span else None
    if kind is None or kind.base.owns_key(key):
        return key
    name, given = kind.base.name, kind_of_key(key).name
    example = f" such as {span[0]}" if span else ""
    raise InvalidInput(
        field,
        value,
        f"{job} is {_a(name)} {name} job: expected {_a(name)} {name} period{example}, "
        f"got {_a(given)} {given} one",
    )


def off_calendar(ledger: LedgerReads, job: str, key: str) -> str | None:
    """Why ``key`` (of ``job``'s kind: ``check_key``) is no business period of the calendar
    ``job``'s profile records (``not a business day of weekdays (the previous is ...)``);
    None when it is one, or when the ledger records no profile of the job. Reads only: one
    query."""
    found = ledger.job_profile(job)
    if found is None or not found.period.owns_key(key):
        return None
    label = found.period.base.label(key)
    if found.period.is_business(label):
        return None
    return str(found.period.not_business(label))  # type: ignore[attr-defined]


def _a(word: str) -> str:
    return "an" if word == "hourly" else "a"


def add_allow_unknown(parser: Any, kind: str = "job", freshness: bool = False) -> None:
    """Add ``--allow-unknown`` to a command naming jobs (or consumers); ``freshness``: one
    that reads ``[gatekeeper.freshness]`` too (``luigi/freshness.py check_config``)."""
    later = "not yet run" if kind == "job" else "that has not published yet"
    keys = (
        "; and a [gatekeeper.freshness] key naming none without the warning line"
        if freshness
        else ""
    )
    parser.add_argument(
        "--allow-unknown",
        action="store_true",
        help=f"accept a {kind} the ledger has never seen (a {kind} {later}) instead "
        f"of refusing it with the closest known names (exit 2){keys}",
    )


def check_freshness_keys(ledger: LedgerReads, allow_unknown: bool, strict: bool) -> None:
    """``[gatekeeper.freshness]`` keys naming no job of the ledger (a typo, or a job not yet
    run): refused (InvalidInput, exit 2, the closest names) when ``strict`` (``check`` of
    every job, ``serve``: a typo must not silence an alert), else one warning line on stderr
    and the command goes on judging the rest (``check JOB``, ``status``, ``report``);
    ``--allow-unknown`` accepts them silently. A bad duration is refused either way. Reads
    the ledger; writes nothing."""
    missing = check_config(ledger, allow_unknown or not strict)
    if missing and not allow_unknown:
        print(f"gatekeeper: warning: {unknown_keys_line(ledger, missing)}", file=sys.stderr)
