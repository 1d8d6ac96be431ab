"""Reading a job on a business calendar (issue 47, item 7): ``ready`` and ``evidence`` on a
day off the job's recorded calendar say so with exit 5 (nothing to do), not ``NOT READY`` /
``not published``; ``--calendar`` contradicting the recorded calendar is refused like
``--period``. The ``gatekeeper`` command in process, on both backends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.core.causes import profile
from gatekeeper.core.periods import DAILY
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import snapshot, succeed

FRIDAY, SATURDAY, MONDAY = "2026-10-23", "2026-10-24", "2026-10-26"
WEEKEND = "not a business day of weekdays (the previous is 2026-10-23 and the next is 2026-10-26)"
WINDOW = ("--start", "2026-10-19", "--stop", "2026-10-27", "--now", "2026-10-28T00:00:00Z")
WINDOW += ("--lateness", "0s", "--timezone", "UTC")


@pytest.fixture
def weekdays(ledger: gk.Ledger) -> gk.Ledger:
    """Prices and Spread on weekdays (their profiles), Feed on every day; Friday's Prices
    succeeded and Spread published; Feed succeeded on Saturday."""
    for job in ("Prices", "Spread"):
        ledger.record_profile(profile(job, DAILY.on("weekdays"), "UTC", start="2026-10-19"))
    ledger.record_profile(profile("Feed", DAILY, "UTC", start="2026-10-19"))
    succeed(ledger, "Prices", FRIDAY)
    succeed(ledger, "Feed", SATURDAY)
    ledger.publish("Spread", FRIDAY, ["Prices"], "fp-1")
    return ledger


def run(url: str, *args: str) -> tuple[int, str, str]:
    done = gatekeeper("--ledger", url, *args)
    return done.returncode, done.stdout, done.stderr


def test_ready_on_a_day_off_the_jobs_calendar_exits_5_saying_so(
    ledger_url: str, weekdays: gk.Ledger
) -> None:
    before = snapshot(weekdays)
    code, out, err = run(ledger_url, "ready", SATURDAY, "Prices")
    assert code == 5, err
    assert out.splitlines()[0] == f"{SATURDAY}: NOT A BUSINESS DAY (nothing to do)"
    assert f"Prices: {WEEKEND}" in out and "NOT READY" not in out
    code, out, _ = run(ledger_url, "--json", "ready", SATURDAY, "Prices")
    data = json.loads(out)
    assert code == 5 and data["business_day"] is False and data["ready"] is False
    assert data["non_business"] == {"Prices": WEEKEND}
    assert run(ledger_url, "ready", FRIDAY, "Prices")[0] == 0
    code, out, _ = run(ledger_url, "ready", MONDAY, "Prices")  # a business day, not run
    assert code == 1 and out.startswith(f"{MONDAY}: NOT READY")
    assert snapshot(weekdays) == before


def test_ready_judges_only_the_jobs_whose_business_day_it_is(
    ledger_url: str, weekdays: gk.Ledger
) -> None:
    code, out, err = run(ledger_url, "ready", SATURDAY, "Prices", "Feed")
    assert code == 0, err
    assert out.splitlines()[0] == f"{SATURDAY}: READY"
    rows = {line.split()[0]: line.split()[1:] for line in out.splitlines()[2:4]}
    assert rows["Prices"] == ["non_business"] and rows["Feed"][0] == "ready"
    data = json.loads(run(ledger_url, "--json", "ready", SATURDAY, "Prices", "Feed")[1])
    assert data["business_day"] is True and data["required"] == ["Feed"]
    assert data["non_business"] == {"Prices": WEEKEND}
    assert run(ledger_url, "ready", "2026-10-25", "Prices", "Feed")[0] == 1  # Feed missing


def test_evidence_on_a_day_off_the_consumers_calendar_exits_5_saying_so(
    ledger_url: str, weekdays: gk.Ledger
) -> None:
    before = snapshot(weekdays)
    code, out, err = run(ledger_url, "evidence", "Spread", SATURDAY)
    assert code == 5, err
    assert out.strip() == f"Spread {SATURDAY}: nothing to publish: {WEEKEND}"
    data = json.loads(run(ledger_url, "--json", "evidence", "Spread", SATURDAY)[1])
    assert data["revisions"] == [] and data["non_business"] == WEEKEND
    code, out, _ = run(ledger_url, "evidence", "Spread", MONDAY)  # a business day, not yet
    assert code == 1 and out.strip() == f"Spread {MONDAY}: not published"
    assert run(ledger_url, "evidence", "Spread", FRIDAY)[0] == 0
    assert snapshot(weekdays) == before


@pytest.mark.parametrize("command", ["status", "report"])
def test_calendar_flag_contradicting_the_recorded_calendar_is_refused(
    ledger_url: str, weekdays: gk.Ledger, tmp_path: Path, command: str
) -> None:
    before = snapshot(weekdays)
    out = tmp_path / "report.html"
    extra = ("-o", str(out)) if command == "report" else ()
    code, stdout, err = run(ledger_url, command, "Prices", *WINDOW, "--calendar", "all", *extra)
    assert code == 2, stdout
    assert err.strip() == (
        "gatekeeper: InvalidInput: invalid calendar='all': Prices follows weekdays in the "
        "ledger (its range's profile); drop --calendar"
    )
    assert snapshot(weekdays) == before and not out.exists()
    agreeing = run(ledger_url, command, "Prices", *WINDOW, "--calendar", "weekdays", *extra)
    assert agreeing[0] in (0, 1), agreeing[2]  # the recorded calendar itself is accepted
