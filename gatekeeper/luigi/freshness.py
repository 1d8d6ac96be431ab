"""``[gatekeeper.freshness]``: the freshness deadline of each job, as luigi.cfg sets it, and
which deadline each job of a ledger has (``core/freshness.py`` judges them).

```ini
[gatekeeper.freshness]
DailySalesLoad = 6h
RegionLoad = 2h       ; every RegionLoad(region=...) job
```

A key is a job name, or a task family for all its jobs (a job name with ``=`` in it cannot be
a luigi.cfg key: name its family). luigi.cfg wins over the ``freshness`` a task class
declares (recorded in the job's profile by its range): the operator's override of the code,
as every other setting. Read when used, never at import; writes nothing.
"""

from __future__ import annotations

import configparser
import datetime as dt
from collections.abc import Sequence

import luigi

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.freshness import choose_within, parse_freshness
from gatekeeper.core.names import describe_unknown, suggest
from gatekeeper.core.validation import check_name
from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.luigi.config_errors import config_error

SECTION = "gatekeeper.freshness"

#: job -> (its freshness, where it was set)
Rules = dict[str, tuple[dt.timedelta, str]]


def configured() -> dict[str, dt.timedelta]:
    """Key -> freshness of every ``[gatekeeper.freshness]`` entry; InvalidInput naming the
    section, the key and the value for a bad duration, key or interpolation."""
    cfg = luigi.configuration.get_config()
    if not cfg.has_section(SECTION):
        return {}
    found = {}
    for key in cfg.options(SECTION):
        field = f"[{SECTION}] {key}"
        try:
            raw = cfg.get(SECTION, key)
        except configparser.Error as exc:
            raise (config_error(exc) or InvalidInput(field, None, str(exc))) from None
        check_name(key, f"[{SECTION}] key")
        found[key] = parse_freshness(raw, field)
    return found


def freshness_rules(ledger: LedgerReads, jobs: Sequence[str] | None = None) -> Rules:
    """The deadline of each of ``jobs`` that has one (by ``choose_within``), or, for None,
    of every job with one: each job of the ledger a ``[gatekeeper.freshness]`` key names
    (exactly or as its family), and each whose profile records its class's ``freshness``.

    A key naming no job of the ledger names none here (``check_config`` finds those).
    Reads the ledger (one or two queries); writes nothing."""
    settings = configured()
    recorded = ledger.recorded_freshness()
    names = ledger.known_names() if settings and (jobs is None or _keys_folded()) else []
    settings = _as_named(settings, names)
    if jobs is None:
        configured_jobs = _configured_jobs(names, settings) if settings else []
        jobs = configured_jobs + sorted(recorded)
    rules: Rules = {}
    for job in dict.fromkeys(jobs):
        found = choose_within(job, settings, recorded.get(job))
        if found is not None:
            rules[job] = found
    return rules


def check_config(ledger: LedgerReads, allow_unknown: bool = False) -> tuple[str, ...]:
    """The one check of ``[gatekeeper.freshness]`` every reader makes before it judges
    (``check``, ``status``, ``report``, ``serve``): each duration parses, and each key names
    a job of the ledger (exactly or as its family). The keys naming none are returned (their
    deadlines judge nothing; ``serve`` exposes them as ``gatekeeper_config_unknown_jobs``);
    unless ``allow_unknown``, they are an InvalidInput with the closest names, for the
    readers that must not go on with a typo silencing a deadline (``check`` of every job,
    ``serve``). Reads the ledger (one query, with keys); writes nothing."""
    settings = configured()
    if not settings:
        return ()
    names = ledger.known_names()
    settings = _as_named(settings, names)
    named = {n for job in _configured_jobs(names, settings) for n in (job, _family(job))}
    missing = tuple(key for key in settings if key not in named)
    if missing and not allow_unknown:
        reason = _unknown_reason(missing, names)
        raise InvalidInput(
            f"[{SECTION}]",
            missing,
            reason,
            message=f"[{SECTION}]: {reason} in the ledger ({ledger.describe()}); "
            "--allow-unknown accepts a job not yet run",
        )
    return missing


def unknown_keys_line(ledger: LedgerReads, missing: Sequence[str]) -> str:
    """One line for keys of ``[gatekeeper.freshness]`` naming no job of the ledger, with the
    closest names, for a reader that goes on without them: ``[gatekeeper.freshness]: no such
    job 'Lod' (did you mean 'Load'?) in the ledger (...): its deadline judges nothing``.
    Reads the ledger (one query); writes nothing."""
    reason = _unknown_reason(missing, ledger.known_names())
    its = "its deadline judges" if len(missing) == 1 else "their deadlines judge"
    return f"[{SECTION}]: {reason} in the ledger ({ledger.describe()}): {its} nothing"


def _unknown_reason(missing: Sequence[str], names: Sequence[str]) -> str:
    return describe_unknown("job", suggest(missing, names))


def _family(job: str) -> str:
    return job.split("(", 1)[0]


def _keys_folded() -> bool:
    """True when Luigi's parser lowercases luigi.cfg's keys (ConfigParser's ``optionxform``,
    as Luigi 3.2 does; later releases keep them as written)."""
    return bool(luigi.configuration.get_config().optionxform("Aa") != "Aa")


def _as_named(settings: dict[str, dt.timedelta], names: Sequence[str]) -> dict[str, dt.timedelta]:
    """``settings`` keyed by the job or family of ``names`` each key names: as written where
    Luigi keeps keys as written, else matched in any case (``TradingDayLoad = 1d`` reaches
    Luigi 3.2 as ``tradingdayload``). A folded key that fits two names is InvalidInput naming
    both; one that fits none is left as it is (``check_config`` names it)."""
    if not settings or not _keys_folded():
        return settings
    spelled: dict[str, set[str]] = {}
    for name in names:
        for form in (name, _family(name)):
            spelled.setdefault(form.lower(), set()).add(form)
    found = {}
    for key, value in settings.items():
        forms = sorted(spelled.get(key.lower(), ()))
        if len(forms) > 1:
            raise InvalidInput(
                f"[{SECTION}] {key}",
                key,
                f"names {' and '.join(forms)} alike: this Luigi lowercases luigi.cfg's keys",
            )
        found[forms[0] if forms else key] = value
    return found


def _configured_jobs(names: Sequence[str], settings: dict[str, dt.timedelta]) -> list[str]:
    """The jobs of ``names`` the keys of ``settings`` name (exactly or as their family)."""
    return [n for n in names if n in settings or _family(n) in settings]
