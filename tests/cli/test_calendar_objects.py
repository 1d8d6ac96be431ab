"""A calendar object of one's own (``calendar = MWF()``, issue 47 item 5): the ledger names it
by its import path, so ``gatekeeper status`` rebuilds it with the job's module importable as
``luigi --module`` needs it, and says in one line how to make it so when it is not."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import snapshot
from tests.helpers.luigi_support import build, configure

pytestmark = pytest.mark.luigi

UTC = dt.timezone.utc
#: after the window: Monday 2 to Sunday 15 November 2026 closed (faked clock)
NOW = dt.datetime(2026, 11, 20, 6, tzinfo=UTC)

MODULE = """
import gatekeeper as gk


class MWF(gk.BusinessCalendar):
    name = "mwf"

    def is_business_day(self, day):
        return day.weekday() in (0, 2, 4)


class {task}(gk.BusinessDateTask):
    calendar = MWF()

    def run(self):
        pass
"""


@contextlib.contextmanager
def importable(folder: Path) -> Iterator[None]:
    """``folder`` on sys.path while it runs; sys.path and sys.modules put back after."""
    saved_path, saved_modules = sys.path[:], set(sys.modules)
    sys.path.insert(0, str(folder))
    try:
        yield
    finally:
        sys.path[:] = saved_path
        for name in set(sys.modules) - saved_modules:
            del sys.modules[name]


def fill(ledger_url: str, folder: Path, module: str) -> str:
    """A module in ``folder`` with MWF and a daily task on it (a family no other test
    uses: one per module name), filled over two weeks by a range in process; the job."""
    task = "MwfLoad" + module.rsplit("_", 1)[-1].capitalize()
    (folder / f"{module}.py").write_text(MODULE.format(task=task))
    with importable(folder):
        of = getattr(__import__(module), task)
        for _ in configure({"ledger_url": ledger_url, "lateness": "0s", "timezone": "UTC"}):
            rng = gk.RangeBusinessDaily(
                of=of,
                start=dt.date(2026, 11, 2),
                stop=dt.date(2026, 11, 16),
                now=int(NOW.timestamp()),
            )
            assert build(rng).scheduling_succeeded
    return task


def status(ledger_url: str, job: str, *flags: str, **env: str) -> Any:
    return gatekeeper(
        "--ledger", ledger_url, "status", job, "--now", NOW.isoformat(), *flags, env=env
    )


def test_calendar_object_status_rebuilds_it_from_its_import_path(
    ledger_url: str, tmp_path: Path
) -> None:
    module = f"gk_mwf_{ledger_url.split(':')[0]}"
    job = fill(ledger_url, tmp_path, module)
    with importable(tmp_path):  # what the reads import is put back too
        with gk.open_ledger(ledger_url) as ledger:
            profile = ledger.job_profile(job)
        done = status(ledger_url, job, "--json", PYTHONPATH=str(tmp_path))
    assert profile is not None and profile.calendar == f"{module}:MWF"
    assert done.returncode == 0, done.stderr
    shown = json.loads(done.stdout)
    states = {p["period"]: p["state"] for p in shown["periods"]}
    assert [k for k, s in states.items() if s == "succeeded"] == [
        "2026-11-02", "2026-11-04", "2026-11-06", "2026-11-09", "2026-11-11", "2026-11-13"
    ]  # fmt: skip
    assert {states[k] for k in ("2026-11-03", "2026-11-05", "2026-11-07", "2026-11-08")} == {
        "non_business"
    }
    assert shown["total"] == shown["complete_count"] == 6
    assert "missing" not in states.values()


def test_calendar_object_not_importable_is_refused_in_one_line(
    ledger_url: str, tmp_path: Path
) -> None:
    module = f"gk_mwf_gone{ledger_url.split(':')[0]}"
    job = fill(ledger_url, tmp_path, module)
    with gk.open_ledger(ledger_url) as ledger:
        before = snapshot(ledger)
    refused = status(ledger_url, job)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stdout == ""
    line = refused.stderr.strip()
    assert "\n" not in line
    assert f"{module}:MWF" in line and "cannot be rebuilt" in line and "PYTHONPATH" in line
    with gk.open_ledger(ledger_url) as ledger:
        assert snapshot(ledger) == before
