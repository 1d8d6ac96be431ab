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
    """Fails while ``<control>/fail`` (or ``fail-<date>``) exists; hangs while ``hang`` does.

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
            if (folder / "fail").exists() or (folder / f"fail-{self.business_date}").exists():
                raise RuntimeError(f"injected failure for {self.business_date}")


class RegionLoad(gk.BusinessDateTask):
    region = luigi.Parameter()
    tier = luigi.IntParameter(default=1)
    debug = luigi.BoolParameter(default=False, significant=False)

    def run(self) -> None:
        pass


class Trivial(gk.BusinessDateTask):
    def run(self) -> None:
        pass


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

    def write(self, conn: Any, payload: dict[str, int]) -> None:
        ledger = self.ledger()
        ledger.execute("CREATE TABLE IF NOT EXISTS slow_totals "
                       "(business_date TEXT PRIMARY KEY, cents INTEGER NOT NULL)")
        ledger.execute("INSERT INTO slow_totals VALUES (?, ?)",
                       (self.business_date.isoformat(), payload["cents"]))


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
