"""The closing line names the first obstacle in fill order (period order; newest first for
``reverse``), whatever it is, through the real ``luigi`` command: an upstream's live lease
(``waiting on``, with the run and its lease), the period's own lease, its own failure, an
upstream failure or a missing upstream, whichever period comes first; a later obstacle never
stands in for an earlier one."""

from __future__ import annotations

import datetime as dt
import json
import re
import subprocess
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.luigi_support import run_luigi, write_config

pytestmark = [pytest.mark.luigi, pytest.mark.slow]

UTC = dt.timezone.utc
NOW_S = str(int(dt.datetime(2026, 11, 30, tzinfo=UTC).timestamp()))


def fill(cfg: Path, folder: Path, of: str, *extra: str) -> subprocess.CompletedProcess[str]:
    """``luigi RangeBusinessDaily --of OF`` over 2026-10-01..05, controlled by ``folder``."""
    return run_luigi(
        cfg,
        "--module",
        "tests.helpers.luigi_tasks",
        "RangeBusinessDaily",
        "--of",
        of,
        "--of-params",
        json.dumps({"control": str(folder)}),
        "--start",
        "2026-10-01",
        "--stop",
        "2026-10-06",
        "--now",
        NOW_S,
        *extra,
        cwd=folder,
    )


def closing(done: subprocess.CompletedProcess[str], job: str) -> str:
    found = re.findall(rf"gatekeeper: RangeBusiness\w+ {job}: filled \d+/\d+ due .*", done.stderr)
    assert len(found) == 1, done.stderr[-3000:]
    return str(found[0])


def hold(ledger_url: str, job: str, key: str, run_id: str) -> dt.datetime:
    """A worker that died holding ``job``'s ``key``: a running attempt on a live lease."""
    with gk.open_ledger(ledger_url) as ledger:
        ledger.begin_attempt(job, key, run_id, lease_seconds=3600)
        until = ledger.latest(job, key).lease_expires_at
    assert until is not None
    return until


def test_an_upstream_lease_is_named_before_the_missing_upstreams_it_causes(
    ledger_url: str, tmp_path: Path
) -> None:
    """Controlled 10-03 is held by another run: ControlledTotal's 10-03 waits on it, and the
    line names that, not 10-04's missing upstream (its effect)."""
    cfg = write_config(tmp_path, ledger_url)
    until = hold(ledger_url, "Controlled", "2026-10-03", "other-run")
    done = fill(cfg, tmp_path, "ControlledTotal")
    assert done.returncode == 30, done.stderr[-3000:]
    assert closing(done, "ControlledTotal") == (
        "gatekeeper: RangeBusinessDaily ControlledTotal: filled 2/5 due (2 this run); "
        f"2026-10-03 waiting on Controlled, held by run other-run until {until.isoformat()}; "
        "3 gaps remain"
    )


def test_an_upstream_lease_on_an_earlier_period_comes_before_a_later_failure(
    ledger_url: str, tmp_path: Path
) -> None:
    """forward: every period is tried; 10-02 waits on a held upstream, 10-04's upstream fails:
    the line names 10-02 (period order), not the failure that came later."""
    cfg = write_config(tmp_path, ledger_url)
    until = hold(ledger_url, "Controlled", "2026-10-02", "other-run")
    (tmp_path / "fail-2026-10-04").touch()
    done = fill(cfg, tmp_path, "ControlledTotal", "--strategy", "forward")
    assert done.returncode == 30, done.stderr[-3000:]
    assert closing(done, "ControlledTotal") == (
        "gatekeeper: RangeBusinessDaily ControlledTotal: filled 3/5 due (3 this run); "
        f"2026-10-02 waiting on Controlled, held by run other-run until {until.isoformat()}; "
        "2 gaps remain"
    )


def test_an_own_failure_comes_before_a_later_lease(ledger_url: str, tmp_path: Path) -> None:
    """forward: the period's own failure at 10-02 and another run's lease on 10-04: the line
    names the failure (period order), not the lease."""
    cfg = write_config(tmp_path, ledger_url)
    hold(ledger_url, "TimedControlled", "2026-10-04", "other-run")
    (tmp_path / "fail-2026-10-02").write_text("bad row")
    done = fill(cfg, tmp_path, "TimedControlled", "--strategy", "forward")
    assert done.returncode == 30, done.stderr[-3000:]
    assert closing(done, "TimedControlled") == (
        "gatekeeper: RangeBusinessDaily TimedControlled: filled 3/5 due (3 this run); "
        "failed at 2026-10-02 (RuntimeError: bad row); 2 gaps remain"
    )


def test_an_own_lease_comes_before_a_later_failure(ledger_url: str, tmp_path: Path) -> None:
    """forward: another run's lease on 10-02 and the period's own failure at 10-04: the line
    names the lease (period order)."""
    cfg = write_config(tmp_path, ledger_url)
    until = hold(ledger_url, "TimedControlled", "2026-10-02", "other-run")
    (tmp_path / "fail-2026-10-04").write_text("bad row")
    done = fill(cfg, tmp_path, "TimedControlled", "--strategy", "forward")
    assert done.returncode == 30, done.stderr[-3000:]
    assert closing(done, "TimedControlled") == (
        "gatekeeper: RangeBusinessDaily TimedControlled: filled 3/5 due (3 this run); "
        f"2026-10-02 held by run other-run until {until.isoformat()}; 2 gaps remain"
    )


def test_a_reverse_fill_names_the_newest_obstacle_first(ledger_url: str, tmp_path: Path) -> None:
    """reverse fills newest first: a failure at 10-02 and another run's lease on 10-04, the
    lease is what the fill met first."""
    cfg = write_config(tmp_path, ledger_url)
    until = hold(ledger_url, "TimedControlled", "2026-10-04", "other-run")
    (tmp_path / "fail-2026-10-02").write_text("bad row")
    done = fill(cfg, tmp_path, "TimedControlled", "--strategy", "reverse")
    assert done.returncode == 30, done.stderr[-3000:]
    assert closing(done, "TimedControlled") == (
        "gatekeeper: RangeBusinessDaily TimedControlled: filled 3/5 due (3 this run); "
        f"2026-10-04 held by run other-run until {until.isoformat()}; 2 gaps remain"
    )
