"""A task on ``firm``, a calendar only a luigi.cfg with ``[gatekeeper.calendars]`` defines
(imported by the `luigi` command the test runs with that file, never in the test process)."""

from __future__ import annotations

import gatekeeper as gk


class FirmLoad(gk.BusinessDateTask):
    calendar = "firm"

    def run(self) -> None:
        pass
