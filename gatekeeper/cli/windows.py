"""The window options ``status`` and ``report`` share, and what they say: each flag becomes a
field of a ``ScheduleInput`` (``core/schedule.py``); ``report/windows.py job_window``
resolves the job's Schedule from it, the job's recorded profile and the ``[gatekeeper]``
settings. No argparse value leaves this module.
"""

from __future__ import annotations

import argparse

from gatekeeper.core.periods import PERIODS
from gatekeeper.core.schedule import ScheduleInput
from gatekeeper.ledger.protocols import LedgerReads
from gatekeeper.luigi import config
from gatekeeper.report.windows import JobWindow, job_window


def given(args: argparse.Namespace) -> ScheduleInput:
    """What the window flags of ``args`` say (those a command lacks say nothing)."""
    return ScheduleInput(
        **{name: getattr(args, name, None) for name in _FLAGS},
    )


def flagged_window(ledger: LedgerReads, job: str, args: argparse.Namespace) -> JobWindow:
    """``job``'s window as its flags, its profile and the settings say (``job_window``)."""
    return job_window(ledger, job, given(args), config.schedule_settings())


_FLAGS = ("start", "stop", "period", "calendar", "timezone", "lateness", "catchup", "strategy")


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
        help="daily, hourly, weekly, monthly or quarterly: only for a job the ledger does not "
        "know (default: the ledger's)",
    )
    parser.add_argument(
        "--timezone", help="IANA zone (default: its range's, else [gatekeeper] timezone)"
    )
    parser.add_argument(
        "--calendar",
        help="weekdays, holidays:CC, exchange:MIC...: the business calendar the job follows "
        "(default: its range's, else all; contradicting its range's is refused)",
    )


def fill_options(parser: argparse.ArgumentParser) -> None:
    """What a fill of the window would take, which ``status`` and ``plan`` share: its
    strategy and how many periods it schedules."""
    parser.add_argument("--strategy", help="contiguous, forward or reverse (default: its range's)")
    parser.add_argument("--task-limit", default="50", help="periods a fill would schedule")
