"""Task classes the Luigi integration tests run, in-process and through the `luigi` command.

Behaviour is steered through files in a control directory (an insignificant parameter), so a
test can make a run fail, or hang, in another process.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any

import luigi

import gatekeeper as gk


class Controlled(gk.BusinessDateTask):
    """Fails while ``<control>/fail`` (or ``fail-<date>``) exists (with the file's text as the
    error's message, if it has any); hangs while ``hang`` does.

    Every run appends ``<pid> <attempt> <date>`` to ``<control>/ran``.
    """

    control = luigi.Parameter(default="", significant=False)

    def run(self) -> None:
        folder = Path(self.control) if self.control else None
        if folder is not None:
            with (folder / "ran").open("a") as ran:
                ran.write(f"{os.getpid()} {self.attempt_ordinal} {self.business_date}\n")
            if (folder / "hang").exists():
                (folder / "started").write_text(str(os.getpid()))
                time.sleep(120)
            for fail in (folder / "fail", folder / f"fail-{self.business_date}"):
                if fail.exists():  # its text, if any, is the error's message
                    text = fail.read_bytes().decode("utf-8")  # as written: \r kept
                    raise RuntimeError(text or f"injected failure for {self.business_date}")


class RegionLoad(gk.BusinessDateTask):
    region = luigi.Parameter()
    tier = luigi.IntParameter(default=1)
    debug = luigi.BoolParameter(default=False, significant=False)

    def run(self) -> None:
        pass


class Trivial(gk.BusinessDateTask):
    def run(self) -> None:
        pass


class TimedTrivial(Trivial):
    """Trivial with a worker timeout: a range schedules its periods (never inline), so under
    ``--workers N`` each runs in a task process of its own."""

    worker_timeout = 600


class ExternalGated(gk.GatedTask):
    """Gated on jobs that no Luigi task here produces (the gate alone decides)."""

    built = 0

    def required_jobs(self) -> list[Any]:
        return ["DimCustomer", "DimProduct"]

    def build(self) -> dict[str, int]:
        type(self).built += 1
        return {"cents": 1}


class SlowGated(gk.GatedTask):
    """Requires Trivial; build() sleeps to widen races between processes."""

    def requires(self) -> Trivial:
        return Trivial(business_date=self.business_date)

    def build(self) -> dict[str, int]:
        time.sleep(0.5)
        return {"cents": 42}

    def write(self, tx: Any, payload: dict[str, int]) -> None:
        tx.execute(
            "CREATE TABLE IF NOT EXISTS slow_totals "
            "(business_date TEXT PRIMARY KEY, cents INTEGER NOT NULL)"
        )
        tx.execute(
            "INSERT INTO slow_totals VALUES (?, ?)",
            (self.business_date.isoformat(), payload["cents"]),
        )


class Report(gk.GatedFileTask):
    """A CSV report published as a file; its content comes from ``<folder>/content``."""

    folder = luigi.Parameter(significant=False)

    def requires(self) -> Trivial:
        return Trivial(business_date=self.business_date)

    def output_path(self) -> str:
        return os.path.join(self.folder, f"report-{self.business_date}.csv")

    def build_file(self, path: str) -> None:
        content = Path(self.folder, "content").read_text()
        Path(path).write_text(content)


class HourlyLoad(gk.BusinessHourTask):
    def run(self) -> None:
        pass


class Feed(gk.BusinessDateTask):
    """An upstream whose watermark is read from ``<control>/watermark`` (ISO 8601)."""

    control = luigi.Parameter(significant=False)

    def run(self) -> None:
        pass

    def watermark(self) -> Any:
        import datetime as dt

        path = Path(self.control) / "watermark"
        return dt.datetime.fromisoformat(path.read_text().strip()) if path.exists() else None


class FeedReport(gk.GatedTask):
    control = luigi.Parameter(significant=False)

    def requires(self) -> Feed:
        return Feed(business_date=self.business_date, control=self.control)

    def build(self) -> dict[str, str]:
        return {"date": str(self.business_date)}


# -- ownership under faults (tests/luigi/test_ownership_faults.py) ---------------------------------
# A process claims a control file by renaming it, so exactly one of several racing processes
# hangs (or holds a transaction) and the others run straight through.


def claim(folder: Path, name: str) -> str | None:
    """Atomically take ``<folder>/<name>``; its text if this process got it, else None."""
    claimed = folder / f"{name}.claimed-{os.getpid()}"
    try:
        os.rename(folder / name, claimed)
    except FileNotFoundError:
        return None
    return claimed.read_text()


def signal_file(path: Path, text: str) -> None:
    """Write ``path`` atomically (a reader never sees it half written)."""
    partial = path.with_name(f"{path.name}.partial-{os.getpid()}")
    partial.write_text(text)
    os.replace(partial, path)


def wait_for_release(folder: Path, timeout: float = 120) -> None:
    """Block until ``<folder>/release`` exists (bounded: tests never hang forever)."""
    deadline = time.monotonic() + timeout
    while not (folder / "release").exists() and time.monotonic() < deadline:
        time.sleep(0.05)


class ZombieGated(gk.GatedTask):
    """Gated on two upstream jobs recorded directly in the ledger.

    The process that claims ``<control>/hang`` writes ``started`` (pid, attempt, run ID)
    inside ``build()`` and waits there for ``<control>/release``; any other runs straight
    through. ``write`` tags its row in ``zombie_out`` with the attempt that produced it.
    """

    control = luigi.Parameter(significant=False)

    def required_jobs(self) -> list[Any]:
        return ["ZombieUpstreamA", "ZombieUpstreamB"]

    def build(self) -> dict[str, int]:
        folder = Path(self.control)
        if claim(folder, "hang") is not None:
            signal_file(folder / "started", f"{os.getpid()} {self.attempt_ordinal} {self.run_id}")
            wait_for_release(folder)
        return {"cents": 7}

    def write(self, tx: Any, payload: dict[str, int]) -> None:
        tx.execute(
            "INSERT INTO zombie_out (business_date, run_id, attempt) VALUES (?, ?, ?)",
            (self.business_date.isoformat(), self.run_id, self.attempt_ordinal),
        )


class HeldTransaction(gk.BusinessDateTask):
    """The process that claims ``<control>/hold`` (its text: seconds) holds a ledger
    transaction that long inside ``run()``, after writing ``started``; then ``held-done``."""

    control = luigi.Parameter(significant=False)

    def run(self) -> None:
        folder = Path(self.control)
        seconds = claim(folder, "hold")
        if seconds is None:
            return
        signal_file(folder / "started", f"{os.getpid()} {self.attempt_ordinal} {self.run_id}")
        ledger = self.ledger()
        with ledger.transaction():
            ledger.execute("SELECT 1")
            time.sleep(float(seconds))
        signal_file(folder / "held-done", str(os.getpid()))


class Hanging(gk.BusinessDateTask):
    """The process that claims ``<control>/hang`` writes ``started`` and waits in ``run()``
    for ``<control>/release``; any other runs straight through."""

    control = luigi.Parameter(significant=False)

    def run(self) -> None:
        folder = Path(self.control)
        if claim(folder, "hang") is not None:
            signal_file(folder / "started", f"{os.getpid()} {self.attempt_ordinal} {self.run_id}")
            wait_for_release(folder)


class RaceUpstreamA(gk.BusinessDateTask):
    """Sleeps a little so two range processes really overlap."""

    def run(self) -> None:
        time.sleep(0.05)


class RaceUpstreamB(gk.BusinessDateTask):
    def run(self) -> None:
        time.sleep(0.05)


class RaceGated(gk.GatedTask):
    """Publishes once both race upstreams succeeded for its date."""

    def requires(self) -> list[gk.BusinessDateTask]:
        return [
            RaceUpstreamA(business_date=self.business_date),
            RaceUpstreamB(business_date=self.business_date),
        ]

    def build(self) -> dict[str, str]:
        time.sleep(0.05)
        return {"date": self.business_date.isoformat()}


class ControlledTotal(gk.GatedTask):
    """Requires Controlled for its date: blocked when that fails."""

    control = luigi.Parameter(default="", significant=False)

    def requires(self) -> Controlled:
        return Controlled(business_date=self.business_date, control=self.control)

    def build(self) -> dict[str, str]:
        return {"date": str(self.business_date)}


class TimedControlled(Controlled):
    """Controlled with a worker timeout: its periods are scheduled, never run inline."""

    worker_timeout = 600
