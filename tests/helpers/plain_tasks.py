"""Plain Luigi tasks (no gatekeeper) for differential tests: what Luigi itself does."""

from __future__ import annotations

import luigi


class RaisesInRequires(luigi.Task):
    """Scheduling fails: requires() raises (Luigi's scheduling_error)."""

    def requires(self) -> list[luigi.Task]:
        raise ValueError("bad parameter")


class PlainDated(luigi.Task):
    """A plain task with a DateParameter (a bad --day fails when the task is built)."""

    day = luigi.DateParameter()
