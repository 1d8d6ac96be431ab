"""The window ``status`` and ``report`` judge for a job: what the ledger knows of the job
(its recorded profile and first and last periods), then the ``[gatekeeper]`` settings.

Each value, in order: the flag given, the job's profile (what its range planned with:
``core/causes.py`` JobProfile), then for the zone and lateness the ``[gatekeeper]``
settings, else the range's defaults. ``--start`` defaults to the window the range planned,
else the job's first recorded period; ``--period`` only overrides the kind the ledger knows,
and contradicting it is an error. The window runs on through the job's last recorded period.
"""

from __future__ import annotations

import argparse
from typing import Any

from gatekeeper.core.causes import JobProfile, Requirement
from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.periods import DAILY, PERIODS, Period, kind_of_key, parse_period
from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.luigi import config


def job_request(ledger: LedgerReads, job: str, args: argparse.Namespace) -> dict[str, Any]:
    """``window_states``' keyword arguments for ``job`` (but ``now`` and ``task_limit``);
    reads the ledger (two or three queries); raises InvalidInput for a ``--period`` that
    contradicts the ledger, or no ``--start`` for a job with no recorded period."""
    found = ledger.job_profile(job)
    span = ledger.period_span(job)
    kind = _kind(job, args.period, found, span)
    calendar = getattr(args, "calendar", None)
    if calendar is not None:  # a job the ledger knows no calendar of (run as a dependency)
        kind = kind.base.on(calendar)
    start = args.start or (found.start if found else None) or (span[0] if span else None)
    if start is None:
        raise InvalidInput("start", None, f"{job} has no period in the ledger; give --start")
    return {
        "start": start,
        "stop": args.stop or (found.stop if found else None),
        "period": kind,
        "timezone": args.timezone or (found.timezone if found else None) or config.timezone(),
        "lateness": args.lateness or (found.lateness if found else None) or config.lateness(),
        "catchup": args.catchup or (found.catchup if found else None) or "all",
        "strategy": getattr(args, "strategy", None)
        or (found.strategy if found else None)
        or "contiguous",
        "requires": found.requires if found else _published_requires(ledger, job, span),
        "through": span[1] if span and kind.owns_key(span[1]) else None,
    }


def _kind(
    job: str, given: str | None, found: JobProfile | None, span: tuple[str, str] | None
) -> Period:
    """The period kind: the profile's, else that of the job's recorded keys; ``--period``
    overrides a job the ledger does not know, and must agree with one it does."""
    known = found.period if found else kind_of_key(span[0]) if span else None
    if given is None:
        return known or DAILY
    kind = parse_period(given)
    if known is not None and kind == known:
        return known  # with the calendar the ledger knows
    if known is not None:
        source = "its range's profile" if found else "its recorded periods"
        raise InvalidInput(
            "period", given, f"{job} is {known.name} in the ledger ({source}); drop --period"
        )
    return kind


def _published_requires(
    ledger: LedgerReads, job: str, span: tuple[str, str] | None
) -> tuple[Requirement, ...]:
    """Without a profile: the jobs the job's newest publication required, for the same
    period (a consumer run without a range)."""
    newest = None if span is None else ledger.publication(job, span[1])
    return () if newest is None else tuple(Requirement(j) for j in newest.required_jobs)


def window_options(parser: argparse.ArgumentParser) -> None:
    """The window options ``status`` and ``report`` share; each defaults to what the ledger
    knows of the job (see the module docstring)."""
    parser.add_argument(
        "--start", help="first period, inclusive (default: its range's, else its first recorded)"
    )
    parser.add_argument("--stop", help="end period, exclusive (default: its range's, else open)")
    parser.add_argument(
        "--lateness", help="e.g. 2h (default: its range's, else [gatekeeper] lateness)"
    )
    parser.add_argument("--now", help="ISO 8601 with offset (default: the current time)")
    parser.add_argument("--catchup", help="all, none or last:N (default: its range's, else all)")
    parser.add_argument(
        "--period",
        choices=[k.name for k in PERIODS],
        help="daily or hourly: only for a job the ledger does not know (default: the ledger's)",
    )
    parser.add_argument(
        "--timezone", help="IANA zone (default: its range's, else [gatekeeper] timezone)"
    )
    parser.add_argument(
        "--calendar",
        help="weekdays, holidays:CC, exchange:MIC...: the business calendar the job follows "
        "(default: its range's, else all)",
    )
