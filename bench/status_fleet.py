"""``gatekeeper status`` of many jobs (issue 49, item 1) beside its floor: the real command's
text and ``--json`` over 50 daily jobs x 10 years (``--jobs``, ``--days``), on SQLite or
PostgreSQL.

The ledger is fleet_readers.py's (``Shape``, ``build``: every 211th period of a job has no
attempt, every 97th is failed; bulk SQL, runs rebuilt), each job's profile recorded as its
range records it. Each figure is a median of ``--runs`` rounds alternating with the floor
(``_common.alternating_ms``): the latest attempt of every cell of the jobs, one statement on
a raw connection, what the text (counts and runs of states) could at most need and what
``--json`` (every period with its attempt and run ID) reads; and the process's start-up
(``status --help``). Every result is checked: exit 1 (gaps remain), every job named, the
JSON's periods counted. The load average is printed before and after. Not a test.

    python bench/status_fleet.py --runs 3
    python bench/status_fleet.py --runs 3 --backend postgresql

To time another commit, run it from that commit's checkout: ``python -m gatekeeper.cli`` puts
the working directory first on ``sys.path``, so it imports the package found there.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
import tempfile
from pathlib import Path

from _common import alternating_ms, environment_line, load_line, print_table, runs_option
from fleet_readers import LATEST, PG_DSN, Backend, Shape, build, command, seconds, start_of


def measure(backend: Backend, cfg: Path, shape: Shape, runs: int) -> dict[str, float]:
    """``status`` of ``shape``'s jobs as text and as JSON, and the floor; checked."""
    jobs = [shape.job(j) for j in range(shape.jobs)]
    cells = shape.cells()
    with backend.ledger("status") as (url, query):
        build(url, [shape])
        medians, results = alternating_ms(
            {
                "text": lambda: command("status", "--ledger", url, *jobs, cfg=cfg),
                "json": lambda: command("status", "--ledger", url, "--json", *jobs, cfg=cfg),
                "startup": lambda: command("status", "--help", cfg=cfg),
                "floor": lambda: len(query(LATEST, ("", "~", ""))),
            },
            runs,
        )
    for done in (*results["text"], *results["json"]):
        if done.returncode != 1 or jobs[0] not in done.stdout or jobs[-1] not in done.stdout:
            raise SystemExit(f"status: exit {done.returncode}\n{done.stderr}")
    found = json.loads(results["json"][-1].stdout)
    attempted = sum(p["attempt"] is not None for job in found for p in job["periods"])
    if attempted != cells:
        raise SystemExit(f"status --json: {attempted} periods with an attempt, not {cells}")
    if {d.returncode for d in results["startup"]} != {0}:
        raise SystemExit("gatekeeper status --help failed")
    if set(results["floor"]) != {cells}:
        raise SystemExit(f"status floor: {set(results['floor'])} rows, not {cells}")
    return medians


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=50, help="daily jobs (default 50)")
    parser.add_argument("--days", type=int, default=3653, help="days per job (default 3653)")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-dsn", default=PG_DSN, help="default $GATEKEEPER_TEST_PG_DSN")
    args = runs_option(parser, argv, 3)
    today = dt.datetime.now(dt.timezone.utc).date()
    shape = Shape("Stat", args.jobs, args.days, start_of(today, args.days), False)
    print(environment_line())
    print(f"status of {args.jobs} daily jobs x {args.days:,} days, {args.backend}")
    print(load_line("before"))
    with tempfile.TemporaryDirectory(prefix="gk-bench-status-") as tmp:
        cfg = Path(tmp) / "luigi.cfg"  # none of the checkout's: the defaults, the ledger given
        cfg.write_text("[gatekeeper]\n")
        got = measure(Backend(args.backend, args.pg_dsn, Path(tmp)), cfg, shape, args.runs)
    floor = got["floor"]
    print_table(
        ["measure", "gatekeeper", "floor: latest attempt of every cell", "ratio"],
        [
            [f"status of {args.jobs} jobs, text", seconds(got["text"]), seconds(floor),
             f"{got['text'] / floor:.1f}x"],
            [f"status of {args.jobs} jobs, --json", seconds(got["json"]), seconds(floor),
             f"{got['json'] / floor:.1f}x"],
            ["  their start-up (status --help)", seconds(got["startup"]), "", ""],
        ],
    )  # fmt: skip
    print(load_line("after"))


if __name__ == "__main__":
    sys.exit(main())
