"""gatekeeper: be right about which business period a Luigi pipeline processed.

The public API is what ``__all__`` lists; everything else is importable but not promised.
"""

from __future__ import annotations

from gatekeeper.core.errors import (
    GatekeeperError,
    InvalidInput,
    LeaseHeld,
    LeaseLost,
    LedgerError,
    NotReady,
    OutputMismatch,
    PublicationConflict,
    RecoveryNotSafe,
    StateConflict,
)
from gatekeeper.core.gate import check_ready
from gatekeeper.core.periods.calendars import BusinessCalendar, Calendar
from gatekeeper.core.planning import RangePlan
from gatekeeper.core.records import Attempt, Publication, Readiness, RunState, fingerprint
from gatekeeper.core.version import package_version
from gatekeeper.delta.history import delta_evidence
from gatekeeper.delta.task import GatedDeltaTask
from gatekeeper.ledger import Ledger, open_ledger
from gatekeeper.ledger.outages import UnknownOutcome
from gatekeeper.luigi.configured import plan_range, shift
from gatekeeper.luigi.gated import (
    GatedFileTask,
    GatedHourTask,
    GatedMonthTask,
    GatedPeriodTask,
    GatedQuarterTask,
    GatedTask,
    GatedWeekTask,
)
from gatekeeper.luigi.period_ranges import (
    RangeBusinessMonthly,
    RangeBusinessQuarterly,
    RangeBusinessWeekly,
)
from gatekeeper.luigi.period_tasks import BusinessMonthTask, BusinessQuarterTask, BusinessWeekTask
from gatekeeper.luigi.range import RangeBusinessDaily, RangeBusinessHourly
from gatekeeper.luigi.targets import FilePublicationTarget, PublicationTarget
from gatekeeper.luigi.tasks import BusinessDateTask, BusinessHourTask, PeriodTask

__version__ = package_version()  # pyproject.toml's, from the installed metadata

__all__ = [
    "Attempt",
    "BusinessCalendar",
    "BusinessDateTask",
    "BusinessHourTask",
    "BusinessMonthTask",
    "BusinessQuarterTask",
    "BusinessWeekTask",
    "Calendar",
    "FilePublicationTarget",
    "GatedDeltaTask",
    "GatedFileTask",
    "GatedHourTask",
    "GatedMonthTask",
    "GatedPeriodTask",
    "GatedQuarterTask",
    "GatedTask",
    "GatedWeekTask",
    "GatekeeperError",
    "InvalidInput",
    "LeaseHeld",
    "LeaseLost",
    "Ledger",
    "LedgerError",
    "NotReady",
    "OutputMismatch",
    "PeriodTask",
    "Publication",
    "PublicationConflict",
    "PublicationTarget",
    "RangeBusinessDaily",
    "RangeBusinessHourly",
    "RangeBusinessMonthly",
    "RangeBusinessQuarterly",
    "RangeBusinessWeekly",
    "RangePlan",
    "Readiness",
    "RecoveryNotSafe",
    "RunState",
    "StateConflict",
    "UnknownOutcome",
    "check_ready",
    "delta_evidence",
    "fingerprint",
    "open_ledger",
    "plan_range",
    "shift",
]
