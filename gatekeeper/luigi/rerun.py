"""A task's ``--rerun REASON``: run one period again as its next attempt, whatever its
history, with the reason recorded on the attempt (issue 50, item 6).

The mechanism is an explicit ``--attempt N``'s (``completeness.period_complete``): the attempt
that completes the rerun is fixed the first time the task is asked (``rerun_from``), so the
run's own success completes it and Luigi does not loop; an identical invocation afterwards
finds the latest attempt succeeded with that reason and runs nothing. A publisher republishes
with the reason (``gated.py``).
"""

from __future__ import annotations

from typing import Any

import luigi

from gatekeeper.core.errors import InvalidInput
from gatekeeper.core.records import Attempt, RunState
from gatekeeper.core.validation import check_optional_reason
from gatekeeper.luigi.compat import empty_on_command_line

NOT_GIVEN = "expected a non-empty string"


class RerunParameter(luigi.OptionalParameter):
    """``--rerun REASON``: one line that says something, checked when the task is built
    (before any attempt is recorded). Its text form is Luigi's (None is ``""``, so a task
    rebuilt from its string parameters has no rerun); an empty one passed or given on the
    luigi command line is refused (``check_rerun``), not taken for "no rerun"."""

    def normalize(self, x: Any) -> str | None:
        return check_optional_reason(x, "rerun")


def check_rerun(family: str, rerun: str | None, attempt: int) -> None:
    """Refuse, naming ``rerun`` (InvalidInput, nothing written): ``--rerun`` with an explicit
    ``--attempt N`` (each picks the ordinal), and ``--rerun ""`` on the luigi command line
    (Luigi reads an empty value there as not given, which would run nothing)."""
    if rerun is not None and attempt:
        raise InvalidInput(
            "rerun", rerun, f"--rerun runs the next attempt: not with --attempt {attempt}"
        )
    refuse_empty(family, "rerun", rerun)


def refuse_empty(family: str, name: str, value: str | None) -> None:
    """Refuse, naming ``name`` (InvalidInput), a reason parameter given empty on the luigi
    command line (``--rerun ""``, ``--republish-reason ""``): Luigi reads it as not given,
    which would run nothing, or publish where a correction was asked for."""
    if value is None and empty_on_command_line(family, name):
        raise InvalidInput(name, "", NOT_GIVEN)


def rerun_from(latest: Attempt | None, reason: str) -> int:
    """The attempt whose success completes a rerun with ``reason``, given the period's
    ``latest`` attempt when the task is first asked: that one when it succeeded with this
    reason (the rerun is done), else the next (1 with none)."""
    if latest is None:
        return 1
    done = latest.state is RunState.SUCCEEDED and latest.reason == reason
    return latest.attempt if done else latest.attempt + 1
