"""Unknown names are errors: every command naming a job or consumer the ledger has never seen
exits 2 with the closest known names and writes nothing; ``--allow-unknown`` keeps the answer
for a name not yet run. The ``gatekeeper`` command in process, on both backends."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import T0, snapshot, succeed

D = "2026-10-23"
WINDOW = ("--start", "2026-10-22", "--stop", "2026-10-25", "--now", "2026-10-26T00:00:00Z")
WINDOW += ("--lateness", "0s", "--timezone", "UTC")


@pytest.fixture
def known(ledger: gk.Ledger) -> gk.Ledger:
    """NetRevenue (two dates), Refunds of two regions, and the publication DailyRevenue."""
    succeed(ledger, "NetRevenue", "2026-10-22")
    succeed(ledger, "NetRevenue", D)
    succeed(ledger, "Refunds(region=eu)", D)
    succeed(ledger, "Refunds(region=us)", D)
    ledger.publish("DailyRevenue", D, ["NetRevenue"], "fp-1")
    return ledger


def commands(name: str, out: Path) -> dict[str, tuple[str, ...]]:
    """Each command that names jobs (or, for stale and evidence, consumers) with ``name``."""
    return {
        "status": ("status", name, *WINDOW),
        "report": ("report", name, *WINDOW, "-o", str(out)),
        "stale": ("stale", name),
        "evidence": ("evidence", name, D),
        "history": ("history", name),
        "ready": ("ready", D, name),
        "plan-recovery": ("plan-recovery", "--stages", name, "--business-date", D),
    }


COMMANDS = tuple(commands("x", Path("x")))
TYPO = {"stale": "DailyRevenu", "evidence": "DailyRevenu"}  # consumers; the rest name jobs
RIGHT = {"DailyRevenu": "DailyRevenue", "NetRevnue": "NetRevenue"}


Run = Callable[..., tuple[int, str, str]]


@pytest.fixture
def run(ledger_url: str) -> Iterator[Run]:
    """``gatekeeper --ledger URL ARGS...`` on the test's ledger: (exit code, stdout, stderr)."""

    def run_it(*args: str) -> tuple[int, str, str]:
        done = gatekeeper("--ledger", ledger_url, *args)
        return done.returncode, done.stdout, done.stderr

    yield run_it


@pytest.mark.parametrize("command", COMMANDS)
def test_unknown_name_exits_2_with_the_closest_name_and_writes_nothing(
    known: gk.Ledger, run: Run, tmp_path: Path, command: str
) -> None:
    typo = TYPO.get(command, "NetRevnue")
    kind = "consumer" if command in TYPO else "job"
    out = tmp_path / "coverage.html"
    before = snapshot(known)
    code, stdout, stderr = run(*commands(typo, out)[command], "--json")
    message = (
        f"no such {kind} '{typo}' (did you mean '{RIGHT[typo]}'?) in the ledger "
        f"({known.describe()}); --allow-unknown accepts a {kind} not yet "
        + ("run" if kind == "job" else "published")
    )
    assert code == 2, stderr
    assert stderr == f"gatekeeper: InvalidInput: {message}\n"
    assert json.loads(stdout) == {"error": "InvalidInput", "message": message}
    assert snapshot(known) == before
    assert not out.exists()


@pytest.mark.parametrize(
    ("command", "code", "shown"),
    [
        ("status", 1, "3 missing"),
        ("report", 0, "wrote "),
        ("stale", 0, "Nope: no stale publications"),
        ("evidence", 1, f"Nope {D}: not published"),
        ("history", 1, "no such job Nope in the ledger"),
        ("ready", 1, "NOT READY"),
        ("plan-recovery", 0, "restart at stage 1 (Nope)"),
    ],
)
def test_unknown_name_allowed_keeps_the_answer_for_a_name_not_yet_run(
    known: gk.Ledger, run: Run, tmp_path: Path, command: str, code: int, shown: str
) -> None:
    before = snapshot(known)
    done, stdout, stderr = run(*commands("Nope", tmp_path / "r.html")[command], "--allow-unknown")
    assert done == code, stderr
    assert shown in stdout
    assert snapshot(known) == before
    assert (tmp_path / "r.html").exists() is (command == "report")


@pytest.mark.parametrize("command", ["status", "history", "evidence"])
def test_unknown_name_of_a_parameterised_family_suggests_its_members(
    known: gk.Ledger, run: Run, tmp_path: Path, command: str
) -> None:
    code, stdout, stderr = run(*commands("Refunds", tmp_path / "r.html")[command])
    kind = "consumer" if command == "evidence" else "job"
    assert code == 2 and stdout == ""
    assert (
        f"no such {kind} 'Refunds' (did you mean 'Refunds(region=eu)', 'Refunds(region=us)'?)"
        in stderr
    )


@pytest.mark.parametrize(
    "args",
    [
        ("status", "NetRevenue", "NetRevnue", "Refunds(region=eu)", "Inventory", *WINDOW),
        ("ready", D, "NetRevenue", "NetRevnue", "Refunds(region=eu)", "Inventory"),
        ("report", "NetRevenue", "NetRevnue", "Refunds(region=eu)", "Inventory", *WINDOW),
        ("plan-recovery", "--stages", "NetRevenue,NetRevnue,Refunds(region=eu),Inventory"),
    ],
    ids=["status", "ready", "report", "plan-recovery"],
)
def test_unknown_names_among_several_are_each_named(
    known: gk.Ledger, run: Run, tmp_path: Path, args: tuple[str, ...]
) -> None:
    extra = {"report": ("-o", str(tmp_path / "r.html")), "plan-recovery": ("--business-date", D)}
    before = snapshot(known)
    code, stdout, stderr = run(*args, *extra.get(args[0], ()))
    assert code == 2 and stdout == ""
    assert (
        "no such job 'NetRevnue' (did you mean 'NetRevenue'?); no such job 'Inventory' in the "
        f"ledger ({known.describe()})" in stderr
    )
    assert snapshot(known) == before and not (tmp_path / "r.html").exists()


def test_unknown_names_known_ones_pass(known: gk.Ledger, run: Run) -> None:
    code, stdout, stderr = run("status", "NetRevenue", "DailyRevenue", *WINDOW)
    assert code == 1, stderr  # 2026-10-24 is missing: a real gap, not a typo
    assert stdout.startswith("NetRevenue: filled 2/3")
    assert run("stale", "DailyRevenue")[0] == 0
    assert run("evidence", "DailyRevenue", D)[0] == 0


def test_unknown_names_bad_date_is_refused_first(known: gk.Ledger, run: Run) -> None:
    code, _, stderr = run("ready", "23/10/2026", "NetRevnue")
    assert code == 2 and "invalid business_date='23/10/2026'" in stderr


def test_unknown_names_allow_unknown_is_refused_with_events(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_text("")
    done = gatekeeper(
        "plan-recovery",
        "--events",
        str(log),
        "--run-id",
        "r",
        "--expected-stages",
        "2",
        "--allow-unknown",
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert "invalid allow_unknown: not allowed with --events" in done.stderr
    assert list(tmp_path.iterdir()) == [log]


def test_unknown_names_of_an_empty_ledger_suggest_nothing(ledger: gk.Ledger, run: Run) -> None:
    code, _, stderr = run("stale", "DailyRevenue")
    assert code == 2
    assert f"no such consumer 'DailyRevenue' in the ledger ({ledger.describe()})" in stderr


def test_unknown_names_a_job_only_running_is_known(known: gk.Ledger, run: Run) -> None:
    """A job whose only attempt is running is known: its name was recorded."""
    known.record("Inventory", D, 1, "run-inv", "running", T0)
    code, stdout, _ = run("ready", D, "Inventory")
    assert code == 1 and "running" in stdout
