"""An applied plan's periods under ``forward`` and ``reverse``, started in the plan's order.

A ``contiguous`` range runs an applied plan's periods one at a time, in its order
(``reprocess.in_order``). ``forward`` and ``reverse`` hand them to Luigi's scheduler at once,
to run in parallel with ``--workers`` whatever happens to the others; but the scheduler takes
tasks of equal priority in the order it first heard of them, which is not the order a range
lists them in. So each period is required through a ``PlanStep``: a task of ours that
requires the period's task and whose priority is the period's own plus less than a
thousandth for its place in the plan (as a forward fill's chunks rank theirs). Luigi's
scheduler raises a dependency's priority to its dependent's, so among the plan's periods it
starts them in the plan's order; against any other task they weigh what they weigh.

A step is complete when its period's task is: it does nothing itself. Its parameters name
the period's task (its class and every parameter, the attempt and republish reason
included), so every process that adds the range names the same steps and luigid runs each
once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import luigi

from gatekeeper.luigi.tasks import PeriodTask


class PlanStep(luigi.Task):
    """One period of an applied plan under ``forward`` or ``reverse`` (module docstring)."""

    of: Any = luigi.TaskParameter(description="The period's task class")
    params: Any = luigi.DictParameter(description="The period task's parameters, as strings")
    order: Any = luigi.FloatParameter(description="Place in the plan, 0 (first) to 1 (excluded)")

    def period(self) -> PeriodTask:
        """The period's task, as the range made it."""
        task = self.of.from_str_params(dict(self.params))
        assert isinstance(task, PeriodTask)
        return task

    @property
    def priority(self) -> float:  # type: ignore[override]
        """The period's own priority plus less than a thousandth for its place in the plan."""
        return float(self.period().priority) + (1.0 - float(self.order)) / 1000

    def requires(self) -> PeriodTask:
        return self.period()

    def complete(self) -> bool:
        return self.period().complete()

    def run(self) -> None:
        """Nothing: its period ran as its requirement."""


def plan_steps(tasks: Sequence[PeriodTask]) -> list[PlanStep]:
    """A PlanStep for each of ``tasks`` (an applied plan's periods, in its order)."""
    count = len(tasks)
    return [
        PlanStep(of=type(task), params=task.to_str_params(), order=rank / count)
        for rank, task in enumerate(tasks)
    ]
