"""The forked runner ``run_luigi`` uses (``tests/helpers/forked.py``) gives what the ``luigi``
command gives: the same exit code, stdout and stderr for the same command line, working
directory and configuration; it forgets what the test process holds; it leaves the test
process as it found it."""

from __future__ import annotations

import ast
import datetime as dt
import os
import re
import sys
from pathlib import Path

import luigi
import pytest
from luigi.task_register import Register

import gatekeeper as gk
from tests.helpers import forked
from tests.helpers.luigi_support import build, configure, run_luigi, write_config

pytestmark = pytest.mark.luigi

D = "2026-10-23"
TASKS = ("--module", "tests.helpers.luigi_tasks")
CASES = {
    "succeeds (0)": [*TASKS, "Trivial", "--business-date", D],
    "fails (30)": [*TASKS, "Controlled", "--business-date", D, "--control", "control"],
    "bad parameter": [*TASKS, "Trivial", "--business-date", "2026-02-30"],
    "unknown task": [*TASKS, "NoSuchTask", "--business-date", D],
    "range, 2 worker processes": [
        *TASKS,
        "RangeBusinessDaily",
        "--of",
        "TimedTrivial",
        "--start",
        "2026-10-01",
        "--stop",
        "2026-10-05",
        "--workers",
        "2",
    ],
}


def _folder(tmp_path: Path, name: str) -> tuple[Path, Path]:
    folder = tmp_path / name
    (folder / "control").mkdir(parents=True)
    (folder / "control" / "fail").write_text("boom")
    return folder, write_config(folder, f"sqlite:///{folder / 'ledger.db'}")


def _same_shape(text: str, folder: Path) -> list[str]:
    """``text``'s lines with what differs between two runs of one command put aside: the
    folder, pids, Luigi's worker salt, run IDs, and Luigi's DEBUG lines (how often a worker
    asks for work, and what it finds pending meanwhile, depends on timing); sorted, since two
    worker processes interleave."""
    text = text.replace(str(folder), "<folder>")
    text = re.sub(r"pid[ =]\d+", "pid N", text)
    text = re.sub(r"salt=\d+", "salt=N", text)
    text = re.sub(r"\b[0-9a-f]{32}\b", "<run>", text)
    lines = [line for line in text.splitlines() if not line.startswith("DEBUG: ")]
    return sorted(_without_the_callers_frames(lines))


def _without_the_callers_frames(lines: list[str]) -> list[str]:
    """A traceback's lines without the frames that call Luigi: the console script's in a
    process, the runner's in a child."""
    kept: list[str] = []
    skipping = False
    for line in lines:
        if line.startswith('  File "'):
            where = line.split('"')[1]
            skipping = where.endswith(f"{os.sep}bin{os.sep}luigi") or "/tests/helpers/" in where
        elif not line.startswith("    "):
            skipping = False
        if not skipping:
            kept.append(line)
    return kept


@pytest.mark.process
@pytest.mark.parametrize("case", list(CASES))
def test_forked_gives_what_the_luigi_command_gives(tmp_path: Path, case: str) -> None:
    (real_dir, real_cfg), (fork_dir, fork_cfg) = _folder(tmp_path, "a"), _folder(tmp_path, "b")
    real = run_luigi(real_cfg, *CASES[case], cwd=real_dir, process=True)
    here = run_luigi(fork_cfg, *CASES[case], cwd=fork_dir)
    assert here.returncode == real.returncode
    assert _same_shape(here.stdout, fork_dir) == _same_shape(real.stdout, real_dir)
    assert _same_shape(here.stderr, fork_dir) == _same_shape(real.stderr, real_dir)


def test_forked_forgets_what_the_test_process_holds(tmp_path: Path) -> None:
    """A class of the task's family defined here (Luigi's registry would call the name
    ambiguous) and the ledger already named once in this process (gatekeeper says it once
    per process): the child sees neither, as a new process would not."""
    folder, cfg = _folder(tmp_path, "run")
    registry = list(Register._reg)
    try:

        class Trivial(gk.BusinessDateTask):
            """Of tests.helpers.luigi_tasks.Trivial's family: Luigi's registry holds both."""

            def run(self) -> None:
                pass

        for _ in configure({"ledger_url": f"sqlite:///{folder / 'ledger.db'}"}):
            assert build(Trivial(business_date=dt.date.fromisoformat(D))).scheduling_succeeded
        done = run_luigi(cfg, *TASKS, "Trivial", "--business-date", D, cwd=folder)
    finally:
        Register._reg[:] = registry  # the other tests name Trivial
    assert done.returncode == 0, done.stderr
    assert f"gatekeeper: ledger: sqlite file {folder / 'ledger.db'}" in done.stderr
    with gk.open_ledger(f"sqlite:///{folder / 'ledger.db'}") as ledger:
        assert [a.state.value for a in ledger.attempts("Trivial", D)] == ["succeeded"]
    assert "Did not run any tasks" in done.stderr  # this process's Trivial published it


def test_forked_leaves_this_process_as_it_was(tmp_path: Path) -> None:
    cwd, env, path, modules = os.getcwd(), dict(os.environ), sys.path[:], set(sys.modules)
    registry, config = list(Register._reg), luigi.configuration.get_config()
    folder, cfg = _folder(tmp_path, "run")
    done = run_luigi(
        cfg, *TASKS, "Controlled", "--business-date", D, "--control", "control", cwd=folder
    )
    assert done.returncode == 30, done.stderr
    assert (os.getcwd(), dict(os.environ), sys.path, Register._reg) == (cwd, env, path, registry)
    assert set(sys.modules) == modules and luigi.configuration.get_config() is config
    print("still here")  # this process's stdout still works


def _module_state(root: Path) -> set[tuple[str, str]]:
    """Every module-level name of gatekeeper/ bound to an empty dict, set or list: memory a
    process keeps (constants are tuples, frozensets or filled literals)."""
    found = set()
    for file in root.rglob("*.py"):
        module = ".".join(file.relative_to(root.parent).with_suffix("").parts)
        for node in ast.parse(file.read_text()).body:
            target, value = None, None
            if isinstance(node, ast.Assign) and len(node.targets) == 1:
                target, value = node.targets[0], node.value
            elif isinstance(node, ast.AnnAssign):
                target, value = node.target, node.value
            empty = isinstance(value, ast.Dict | ast.Set | ast.List) and not (
                getattr(value, "keys", None) or getattr(value, "elts", None)
            )
            made = (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Name)
                and value.func.id in ("set", "dict", "list")
                and not value.args
            )
            if isinstance(target, ast.Name) and (empty or made):
                found.add((module.removesuffix(".__init__"), target.id))
    return found


def test_forked_knows_every_memory_gatekeeper_keeps_per_process() -> None:
    root = Path(gk.__file__).parent
    known = set(forked.PROCESS_STATE) | set(forked.PER_PID)
    state = _module_state(root)
    assert state - known == set(), "add each to PROCESS_STATE (emptied) or PER_PID (why not)"
    assert known - state == set(), "no longer in gatekeeper/: drop it from forked.py"
