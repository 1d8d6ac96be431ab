"""A GatedDeltaTask attempt frozen at one point of its publication, in a real process.

``FencedSales`` is DeltaSales with a pause at each point of the publication's timeline
(docs/ownership.md): ``before-reserve`` (in ``build()``), ``before-check`` (reserved, the
table not yet read), ``before-write`` (checked, the Delta commit not yet made) and
``after-commit`` (committed in Delta, not yet recorded in the ledger). ``Zombie`` runs one
attempt of it in a child process that stops itself with SIGSTOP at the chosen point (its
heartbeat stops with it, as in any freeze), then resumes it on request and reads how the
attempt ended. The child stops between two renewals of its lease, never inside one: a process
frozen inside a ledger transaction keeps SQLite's write lock (docs/ownership.md, "Left open"),
and the successor would wait on that instead of on the lease these tests are about.
The children fork from a forkserver that imported gatekeeper, Luigi and deltalake once (cheap
to start, and deltalake's runtime is not started in it, so the child runs its Delta operations
itself).
"""

from __future__ import annotations

import datetime as dt
import multiprocessing
import os
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import luigi
import luigi.configuration

from gatekeeper.delta.history import DeltaEvidence
from gatekeeper.ledger.reservations import Reservation
from gatekeeper.luigi.lease import Heartbeat
from tests.helpers.delta_tasks import DeltaSales

POINTS = ("before-reserve", "before-check", "before-write", "after-commit")


class FencedSales(DeltaSales):
    """DeltaSales calling ``pause(point)`` (set by the test, per process) at each point."""

    pause: ClassVar[Callable[[str], None] | None] = None

    def _at(self, point: str) -> None:
        if FencedSales.pause is not None:
            FencedSales.pause(point)

    def build(self) -> Any:
        self._at("before-reserve")
        return super().build()

    def delta_commit(self, reserved: Reservation, data: Any) -> DeltaEvidence:
        self._at("before-check")
        commit = super().delta_commit(reserved, data)
        self._at("after-commit")
        return commit

    def write_revision(self, reserved: Reservation, data: Any) -> int | None:
        self._at("before-write")
        return super().write_revision(reserved, data)


def _attempt(settings: dict[str, dict[str, str]], date: str, point: str, report: str) -> None:
    """In the child: Luigi configured with ``settings``, one attempt of FencedSales for
    ``date`` that stops this process at ``point``; how it ended goes to ``report``."""
    cfg = luigi.configuration.get_config()
    for section, options in settings.items():
        if not cfg.has_section(section):
            cfg.add_section(section)
        for key, value in options.items():
            cfg.set(section, key, value)

    renewing = threading.Lock()  # held by a renewal, and by the freeze
    renew = Heartbeat.renew

    def renew_whole(beat: Heartbeat) -> bool:
        with renewing:
            return renew(beat)

    Heartbeat.renew = renew_whole  # type: ignore[method-assign,assignment]

    def freeze(at: str) -> None:
        if at == point:
            Path(report + ".frozen").write_text(str(os.getpid()))
            with renewing:  # between two renewals (see the module)
                os.kill(os.getpid(), signal.SIGSTOP)

    FencedSales.pause = freeze
    task = FencedSales(business_date=dt.date.fromisoformat(date))
    try:
        task.run()
        outcome = "succeeded"
    except BaseException as exc:  # noqa: BLE001 - the report says what ended the attempt
        outcome = f"{type(exc).__name__}: {exc}"
    Path(report).write_text(f"{task.run_id}\n{outcome}")


def _context() -> Any:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return context


class Zombie:
    """One attempt of FencedSales in a child process, frozen at ``point`` (see the module)."""

    def __init__(self, settings: dict[str, dict[str, str]], date: str, point: str, folder: Path):
        self.report = folder / f"zombie-{point}"
        self.process = _context().Process(
            target=_attempt, args=(settings, date, point, str(self.report))
        )
        self.process.start()
        self.run_id = ""

    def wait_frozen(self, timeout: float = 60) -> None:
        """Until the child stopped itself at its point (AssertionError if it ended first)."""
        frozen = Path(str(self.report) + ".frozen")
        deadline = time.monotonic() + timeout
        while not (frozen.exists() and self._stopped()):
            assert self.process.is_alive(), f"the attempt ended before freezing: {self.outcome()}"
            assert time.monotonic() < deadline, "the attempt did not reach its point"
            time.sleep(0.01)

    def _stopped(self) -> bool:
        stat = Path(f"/proc/{self.process.pid}/stat").read_text()
        return stat.rsplit(")", 1)[1].split()[0] == "T"

    def resume(self, timeout: float = 60) -> str:
        """SIGCONT, wait for the attempt to end; returns how it ended (``outcome``)."""
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGCONT)
        self.process.join(timeout)
        assert not self.process.is_alive(), "the resumed attempt did not end"
        return self.outcome()

    def outcome(self) -> str:
        """``succeeded`` or ``ErrorType: message``; sets ``run_id``."""
        if not self.report.exists():
            return f"no report (exit code {self.process.exitcode})"
        self.run_id, outcome = self.report.read_text().split("\n", 1)
        return outcome

    def stop(self) -> None:
        """End the child if it is still there (a failed test): resume, then kill."""
        if self.process.is_alive():
            os.kill(self.process.pid, signal.SIGCONT)
            self.process.join(10)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(10)
