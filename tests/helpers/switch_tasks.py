"""A period task that writes down, as it runs, what its Luigi worker holds (``[gatekeeper]
inline`` tests).

``Probed`` appends one JSON line per run to ``<control>/probe.jsonl``: its date, the type of
the worker's task history (Luigi's own ``list``, or gatekeeper's ``ForkedHistory`` when an
inline fill replaced it), and which modules of gatekeeper's inline machinery are loaded.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import luigi

import gatekeeper as gk
from gatekeeper.luigi import compat as luigi_compat

INLINE_MODULES = ("channel", "inline", "local", "wire")


class Probed(gk.BusinessDateTask):
    control = luigi.Parameter(significant=False)

    def run(self) -> None:
        worker = luigi_compat.scheduling_worker()
        history = None if worker is None else type(worker._add_task_history).__name__
        loaded = [m for m in INLINE_MODULES if f"gatekeeper.luigi.fill.{m}" in sys.modules]
        line = {"date": str(self.business_date), "history": history, "loaded": loaded}
        with (Path(self.control) / "probe.jsonl").open("a") as out:
            out.write(json.dumps(line) + "\n")
