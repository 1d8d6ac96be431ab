"""What one ``gatekeeper`` process costs to start: ``gatekeeper status`` on the README's ledger.

Runs the README's main job once (the example sales backfill of October 2026, on a SQLite
ledger in a temporary folder), compiles the checkout's bytecode (``python -m compileall``, as
the test sessions do), then times, round by round, each the median of ``--runs`` runs:

- ``python -c pass``: the interpreter alone (the floor of any process);
- ``python -c "import luigi"``: the interpreter and Luigi, which every gatekeeper process imports;
- ``gatekeeper status DailySalesLoad --start 2026-10-01 --stop 2026-11-01``: the command, with
  the bytecode compiled;
- the same with no bytecode at all (``PYTHONPYCACHEPREFIX`` at an empty folder and
  ``PYTHONDONTWRITEBYTECODE=1``: every module compiled from source, as an editable install is
  on a machine that exports that variable, as this one and CI do).

Not a test.

    python bench/startup.py
    python bench/startup.py --runs 20
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _common import alternating_ms, environment_line, load_line, print_table

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent
WINDOW = ("--start", "2026-10-01", "--stop", "2026-11-01")


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")
    return done


def main_job(folder: Path, env: dict[str, str]) -> None:
    """The README's main job, in ``folder`` (its luigi.cfg: the repository's own)."""
    (folder / "luigi.cfg").write_text((ROOT / "luigi.cfg").read_text())
    run(
        [
            str(BIN / "luigi"),
            "--module",
            "example_pipelines.sales",
            "RangeBusinessDaily",
            "--of",
            "DailySalesLoad",
            *WINDOW,
            "--lateness",
            "2h",
            "--local-scheduler",
        ],
        folder,
        env,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10, help="timed runs of each (median)")
    args = parser.parse_args()
    print(environment_line())
    print(load_line("before"))
    run([sys.executable, "-m", "compileall", "-q", "gatekeeper"], ROOT, dict(os.environ))
    with tempfile.TemporaryDirectory() as scratch:
        folder, empty = Path(scratch) / "job", Path(scratch) / "no-bytecode"
        folder.mkdir()
        empty.mkdir()
        env = {k: v for k, v in os.environ.items() if k != "GATEKEEPER_LEDGER_URL"}
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
        main_job(folder, env)
        cold = {**env, "PYTHONPYCACHEPREFIX": str(empty), "PYTHONDONTWRITEBYTECODE": "1"}
        status = [str(BIN / "gatekeeper"), "status", "DailySalesLoad", *WINDOW]
        calls = {
            "python -c pass": lambda: run([sys.executable, "-c", "pass"], folder, env),
            "python -c 'import luigi'": lambda: run(
                [sys.executable, "-c", "import luigi"], folder, env
            ),
            "gatekeeper status": lambda: run(status, folder, env),
            "gatekeeper status, no bytecode": lambda: run(status, folder, cold),
        }
        medians, results = alternating_ms(calls, args.runs)
    assert "filled 31/31" in results["gatekeeper status"][-1].stdout, results
    floor = medians["python -c pass"]
    print_table(
        ["process", "median ms", "x python -c pass"],
        [[name, f"{ms:.0f}", f"{ms / floor:.1f}"] for name, ms in medians.items()],
    )
    print(load_line("after"))


if __name__ == "__main__":
    main()
