"""A backfill to review, at its floor: ``gatekeeper plan`` over 10 years daily with 7 gaps beside a
plain SELECT of the job's keys, and beside the plan the range itself makes (issue 50).

Builds ``plan_ledger.py``'s ledger (its ``Gappy`` job: 3,653 dates from 2016-01-01, 7 gaps,
alternately no attempt and a failed one, every 10th date succeeded on its second attempt),
then times, in this process, alternating round by round (median of ``--runs`` after a warm-up
round), each result checked:

- ``plan --json``: ``gatekeeper.cli.main(["plan", "Gappy", ...])`` over the 10 years, its
  JSON printed to a buffer (every one of the 3,653 periods with its action and reason);
- ``plan -o FILE``: the same, writing the plan with the ledger facts it read and their digest
  (what ``--plan FILE`` checks before it applies it);
- the range's plan: ``RangeBusinessDaily(of=Gappy, ...).session.plan``, the plan one range
  invocation makes (``plan_cost.py``'s measure), which ``plan`` starts from;
- the floor: ``SELECT period FROM gk_attempts WHERE job = ?`` on a raw sqlite3 connection
  (every row fetched): the simplest read of the job's keys.

The plan's ``run`` and ``rerun`` periods must be the 7 gaps, its exit code 1 (something to do).
Prints the load average before and after. Not a test.

    python bench/plan_review.py
    python bench/plan_review.py --runs 15
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import (
    alternating_ms,
    environment_line,
    load_line,
    print_table,
    runs_option,
)
from plan_ledger import FLOOR_SQL, GAPPY, NOW, built, floor, planned, states

from gatekeeper.cli import main as gatekeeper

WINDOW = ["--start", GAPPY.key(0), "--stop", "2026-01-01", "--now", NOW.isoformat()]
ARGS = ["plan", "Gappy", *WINDOW, "--task-limit", "100000"]


def plan_command(url: str, *extra: str) -> Callable[[], tuple[int, str]]:
    """``gatekeeper plan`` in process: (exit code, what it printed)."""

    def run() -> tuple[int, str]:
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = gatekeeper([*ARGS, "--ledger", url, *extra])
        return code, out.getvalue()

    return run


def acted_on(printed: str) -> set[str]:
    """The periods a ``plan --json`` run would run or rerun."""
    found = json.loads(printed)
    return {p["period"] for p in found["periods"] if p["action"] in ("run", "rerun", "republish")}


def check(what: str, found: Any, expected: Any) -> None:
    if found != expected:
        raise SystemExit(f"{what}: got {str(found)[:200]}, expected {str(expected)[:200]}")


def measure(folder: Path, url: str, tasks: Any, conn: sqlite3.Connection, runs: int) -> dict:
    written = folder / "plan.json"
    calls: dict[str, Callable[[], Any]] = {
        "plan --json": plan_command(url, "--json"),
        "plan -o FILE": plan_command(url, "-o", str(written)),
        "range plan": planned(GAPPY, tasks),
        "floor": floor(GAPPY, conn),
    }
    ms, results = alternating_ms(calls, runs)
    gaps = GAPPY.gaps()
    for code, printed in results["plan --json"]:
        check("plan --json exit code", code, 1)
        check("plan --json periods acted on", acted_on(printed), gaps)
    for code, _ in results["plan -o FILE"]:
        check("plan -o exit code", code, 1)
    saved = json.loads(written.read_text())
    check("plan -o digest", isinstance(saved.get("digest"), str), True)
    for found in results["range plan"]:
        check("range plan gaps", found, gaps)
    rows = sum(len(states(GAPPY, i)) for i in range(GAPPY.count))
    for found in results["floor"]:
        check("floor rows", len(found), rows)
    return ms


def report(ms: dict[str, float], runs: int) -> None:
    print(
        f"\nmedian of {runs} rounds after a warm-up round, every call once per round in turn, "
        f"milliseconds; every result checked; floor = {FLOOR_SQL} (raw sqlite3, every row "
        "fetched)\n"
    )
    base = ms["floor"]
    rows = [
        (what, f"{ms[what]:.2f}", f"{base:.2f}", f"{ms[what] / base:.1f}x")
        for what in ("plan --json", "plan -o FILE", "range plan")
    ]
    print_table(("10 y daily, 7 gaps", "gatekeeper ms", "floor ms", "ratio"), rows)
    print(f"\nplan --json / the range's own plan: {ms['plan --json'] / ms['range plan']:.1f}x")


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    return runs_option(parser, argv, default=9)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    print(environment_line())
    print(load_line("before"))
    with built("gk-bench-plan-review-") as (folder, url, tasks, conn):
        report(measure(folder, url, tasks, conn, args.runs), args.runs)
    print(load_line("after"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
