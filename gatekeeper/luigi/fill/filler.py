"""How a range's chunks fill their periods: one interface (``Filler``), two ways, one switch.

- ``INLINE`` (the default): a period whose requirements are complete, and whose Luigi settings
  running inline honours (``policy.py``), runs inside its chunk's process, reported to the
  scheduler and the execution summary (``inline.py``, ``channel.py``, ``wire.py``,
  ``local.py``); any other period is yielded to the scheduler.
- ``SCHEDULED`` (``[gatekeeper] inline = false``): every period is yielded to Luigi's
  scheduler as its own task (dynamic dependencies), so Luigi's worker runs, retries, times out
  and summarises it: only Luigi's public API. Nothing above is imported, no summary channel
  is opened and no worker's bookkeeping is replaced.

``choose`` is the one place that picks: the range's ``--inline`` given explicitly, else
``[gatekeeper] inline`` (``--gatekeeper-inline``, ``$GATEKEEPER_INLINE``, luigi.cfg), else true
(docs/inline.md, "The switch"). The day a Luigi release breaks inline running, ``inline =
false`` in luigi.cfg gives scheduled periods everywhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol

import luigi.task

from gatekeeper.luigi import config
from gatekeeper.luigi.fill import policy

if TYPE_CHECKING:
    from gatekeeper.luigi.tasks import PeriodTask


class PeriodRuns(Protocol):
    """Where one run of a chunk runs its inline periods and reports them."""

    @property
    def remote(self) -> bool:
        """True under luigid (the range's watch then shows the chunk's progress there)."""

    @property
    def reaches_scheduler(self) -> bool:
        """False where an inline period's outcome could not reach the scheduler."""

    def run(self, task: PeriodTask) -> bool:
        """Run ``task`` in this process as Luigi's worker would; False if already complete."""

    def flush(self) -> None:
        """Wait until every report is sent (before the chunk yields or ends)."""

    def show(self, task: luigi.Task, message: str, percentage: int) -> None:
        """Set ``task``'s status message and progress, in order with the reports."""


class Filler(Protocol):
    """How a range's chunks fill their periods (see the module docstring)."""

    @property
    def inline(self) -> bool:
        """True when periods may run inside their chunk."""

    def taken_up(self) -> None:
        """A Luigi worker schedules a range or a chunk (their ``deps()``, in its process)."""

    def runs(self, chunk: luigi.Task) -> PeriodRuns:
        """Where one run of ``chunk`` runs and reports its inline periods."""

    def may_run_inline(self, task: PeriodTask, runs: PeriodRuns) -> bool:
        """True when ``task`` runs inside the chunk (else the chunk yields it)."""


class _NoRuns:
    """The PeriodRuns of a scheduled fill: nothing runs inline, nothing is reported."""

    remote = False
    reaches_scheduler = False

    def run(self, task: PeriodTask) -> bool:
        raise AssertionError(f"{task}: a scheduled fill runs no period inline")

    def flush(self) -> None:
        pass

    def show(self, task: luigi.Task, message: str, percentage: int) -> None:
        pass


class ScheduledFiller:
    """Every period is its own Luigi task, yielded to the scheduler: Luigi's public API only."""

    inline = False

    def taken_up(self) -> None:
        pass

    def runs(self, chunk: luigi.Task) -> PeriodRuns:
        return _NoRuns()

    def may_run_inline(self, task: PeriodTask, runs: PeriodRuns) -> bool:
        return False


class InlineFiller:
    """Periods run inside their chunk where Luigi could not tell the difference."""

    inline = True

    def taken_up(self) -> None:
        """Open the summary channel for the task processes the worker may fork."""
        from gatekeeper.luigi.fill import channel

        channel.open_summary_channel()

    def runs(self, chunk: luigi.Task) -> PeriodRuns:
        from gatekeeper.luigi.fill.inline import InlineRuns

        return InlineRuns(chunk)

    def may_run_inline(self, task: PeriodTask, runs: PeriodRuns) -> bool:
        """When the outcome reaches the scheduler, when running inline honours the period's
        settings (``policy.py``), and once its requirements are complete; under any scheduler
        (a period another chunk or range runs meanwhile is deduplicated by its lease)."""
        return (
            runs.reaches_scheduler
            and policy.may_run_inline(task)
            and all(r.complete() for r in luigi.task.flatten(task.requires()))
        )


INLINE: Filler = InlineFiller()
SCHEDULED: Filler = ScheduledFiller()


def choose(inline: Any) -> Filler:
    """The filler of a range or chunk whose ``--inline`` is ``inline``: True or False when
    given explicitly, else (None) ``[gatekeeper] inline`` (``config.inline``, which raises
    InvalidInput naming the option or ``GATEKEEPER_INLINE`` for a bad value)."""
    found = config.inline() if inline is None else bool(inline)
    return INLINE if found else SCHEDULED
