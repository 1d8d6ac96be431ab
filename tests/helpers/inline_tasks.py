"""A task that writes down everything Luigi lets its code see, run inline or scheduled.

``Hooked`` appends one JSON line per observation to ``<control>/seen.jsonl``: what ``run()``
finds bound (the reporter methods), the hooks Luigi calls (``on_success``/``on_failure`` and
their arguments) and the events it fires (handlers on the class and on ``luigi.Task``).
``<control>/fail-<date>`` makes that date fail; ``<control>/done-<date>`` makes ``complete()``
true for it (a period completed by someone else once the fill was planned).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import luigi

import gatekeeper as gk


def note(control: str, date: Any, what: str, **details: Any) -> None:
    with (Path(control) / "seen.jsonl").open("a") as seen:
        seen.write(
            json.dumps({"date": str(date), "what": what, "pid": os.getpid(), **details}) + "\n"
        )


class Hooked(gk.BusinessDateTask):
    """Sets a status message, progress and tracking URL; its hooks answer with text."""

    control = luigi.Parameter(default="", significant=False)

    def complete(self) -> bool:
        if (Path(self.control) / f"done-{self.business_date}").exists():
            return True
        return super().complete()

    def run(self) -> None:
        bound = {
            name: callable(getattr(self, name, None))
            for name in ("set_status_message", "set_progress_percentage", "set_tracking_url")
        }
        note(self.control, self.business_date, "run", bound=bound, attempt=self.attempt_ordinal)
        self.set_tracking_url(f"http://tracking.example/{self.business_date}")
        self.set_status_message(f"working on {self.business_date}")
        self.set_progress_percentage(50)
        if (Path(self.control) / f"fail-{self.business_date}").exists():
            raise RuntimeError(f"injected failure for {self.business_date}")

    def on_success(self) -> str:
        note(
            self.control, self.business_date, "on_success", bound=callable(self.set_status_message)
        )
        return f"filled {self.business_date}"

    def on_failure(self, exception: BaseException) -> str:
        note(self.control, self.business_date, "on_failure", error=str(exception))
        return f"explained {self.business_date}: {exception}"


def _event(name: str) -> Any:
    def handler(task: Any, *args: Any) -> None:
        if isinstance(task, Hooked):
            note(task.control, task.business_date, name)

    return handler


for _name in ("START", "SUCCESS", "FAILURE", "PROCESSING_TIME"):
    Hooked.event_handler(getattr(luigi.Event, _name))(_event(f"event {_name}"))
luigi.Task.event_handler(luigi.Event.SUCCESS)(_event("user handler SUCCESS"))
luigi.Task.event_handler(luigi.Event.DEPENDENCY_PRESENT)(_event("event DEPENDENCY_PRESENT"))
