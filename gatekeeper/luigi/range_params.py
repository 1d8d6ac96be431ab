"""The parameters every range takes (``RangeBusinessBase``'s, ``range.py``), and how Luigi
resolves them: once per class and generation of its instance cache (``param_cache.py``).

Luigi's ``RangeDaily`` names are kept where the meaning is the same (``--of``,
``--of-params``, ``--start``, ``--stop``, ``--task-limit``, ``--now``, ``--reverse``); the
rest are gatekeeper's (docs/ranges.md). The period conversions of ``--start`` and ``--stop``
are the period kind's.
"""

from __future__ import annotations

from typing import Any

import luigi

from gatekeeper.core.periods import DAILY
from gatekeeper.core.schedule import STRATEGIES
from gatekeeper.luigi.param_cache import class_params, param_values


class RangeParameters(luigi.Task):
    """The parameters of RangeBusinessBase and its period kind's conversions of them."""

    of: Any = luigi.TaskParameter(description="The PeriodTask class to fill, e.g. DailySalesLoad")
    of_params: Any = luigi.DictParameter(
        default={}, description="Other parameters of the 'of' task (JSON object)"
    )
    inline: Any = luigi.OptionalBoolParameter(  # type: ignore[call-arg]  # parsing: BoolParameter's
        default=None,
        significant=False,
        parsing=luigi.BoolParameter.EXPLICIT_PARSING,
        description="Run a period whose requirements are complete inside the range's chunk "
        "task (the same Luigi task to its code, reported to the scheduler) instead of "
        "scheduling it; under luigid too (leases dedupe it). Default: [gatekeeper] inline "
        "(true); given explicitly, it wins over that",
    )
    task_limit = luigi.IntParameter(
        default=50, description="Most periods this invocation fills (Luigi's name and default)"
    )
    now = luigi.OptionalIntParameter(
        default=None,
        significant=False,
        description="The clock, in epoch seconds (default: the current time)",
    )
    reverse = luigi.BoolParameter(default=False, description="Alias of --strategy reverse")
    lateness = luigi.Parameter(
        default="", description="How long after a period ends it is due (default [gatekeeper])"
    )
    strategy = luigi.ChoiceParameter(
        choices=STRATEGIES,
        default="contiguous",
        description="contiguous (oldest first, one at a time, stop at a failure), forward "
        "(oldest first, independent) or reverse (newest first, independent)",
    )
    catchup = luigi.Parameter(
        default="all", description="all, none (only the latest due period) or last:N"
    )
    timezone = luigi.Parameter(
        default="", description="IANA zone of business midnights (default [gatekeeper])"
    )
    reprocess = luigi.Parameter(
        default="missing",
        description="missing (default), failed, stale or all: the periods gatekeeper plan "
        "--reprocess lists (the gaps; also failed ones; stale publications; every period)",
    )
    plan_file = luigi.OptionalParameter(
        default=None,
        description="Apply this plan (gatekeeper plan -o FILE): exactly its periods, refused "
        "if any ledger fact it read changed or it is older than --max-age",
    )
    max_age = luigi.Parameter(default="1d", description="The oldest --plan-file applied (1d)")
    refresh_stale = luigi.BoolParameter(
        default=False,
        description="Alias of --reprocess stale: also republish published periods whose "
        "upstream evidence a newer attempt replaced (reason: stale: upstream JOB PERIOD ...)",
    )
    no_progress = luigi.BoolParameter(
        default=False,
        significant=False,
        description="No one-line progress bar on a terminal (--local-scheduler only)",
    )

    period_kind = DAILY
    start: Any  # declared by each subclass with its period's parameter type
    stop: Any

    @classmethod
    def get_params(cls) -> list[tuple[str, luigi.Parameter]]:
        """Luigi's ``get_params``, computed once per class (``param_cache.class_params``)."""
        return list(class_params(cls))

    @classmethod
    def get_param_values(
        cls, params: list[tuple[str, luigi.Parameter]], args: Any, kwargs: Any
    ) -> list[tuple[str, Any]]:
        """Luigi's ``get_param_values``, the values of the parameters not passed resolved once
        per generation of Luigi's instance cache and command-line parser, as a period task's
        are (``param_cache.param_values``): Luigi resolves the range's ~20 parameters against
        luigi.cfg twice for each instance built (its instance cache key, then ``__init__``),
        more than the plan of a fresh range costs."""
        return param_values(cls, params, args, kwargs, super().get_param_values)

    def start_label(self) -> Any:
        return self.period_kind.from_param(self.start, "start")

    def stop_label(self) -> Any:
        return None if self.stop is None else self.period_kind.from_param(self.stop, "stop")

    def label_to_param(self, label: Any) -> Any:
        return self.period_kind.to_param(label)
