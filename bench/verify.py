"""``gatekeeper verify`` at its floor: every invariant of a 1,000,000-attempt ledger, checked,
against one bare scan of ``gk_attempts``.

Builds, in a temporary folder, one SQLite ledger (schema made by ``open_ledger``, rows
inserted with bare SQL on a raw ``sqlite3`` connection, the runs of complete periods then built
by the migration's own step, ``CompleteRuns.rebuild``):

- 100 jobs x ``--dates`` daily periods from 2000-01-01 (default 9,524: 26 years), one attempt
  each, and a second for every 20th (job, period): attempt 1 failed, attempt 2 succeeded;
  1,000,020 attempts by default;
- 10 of the jobs publish every period: a publication (revision 1, its producer the job's
  latest attempt) whose evidence names the latest attempts of two upstream jobs for the
  period (95,240 publications, 190,480 evidence rows by default).

Then it times, in this process, alternating round by round (median of ``--runs`` after a
warm-up round): ``Ledger.verify()`` on the ledger opened read-only (``create=False``, as
``gatekeeper verify`` opens it; every check, one read transaction; it must find nothing)
against the floor, ``SELECT count(*) FROM gk_attempts`` on a raw ``sqlite3`` connection, and
a second floor fetching every attempt's (job, period, attempt, state). Prints the load
average before and after. Not a test.

    python bench/verify.py
    python bench/verify.py --runs 3 --dates 1000
"""

from __future__ import annotations

import argparse
import datetime as dt
import sqlite3
import sys
import tempfile
from pathlib import Path

from _common import alternating_ms, environment_line, load_line, print_table, sqlite_url

import gatekeeper as gk
from gatekeeper.ledger.runs import CompleteRuns

JOBS, CONSUMERS, REPAIRED_EVERY = 100, 10, 20
TS = "2026-01-01T00:00:00.000000+00:00"
START = dt.date(2000, 1, 1)


def attempts(dates: int) -> list[tuple[object, ...]]:
    """Every attempt row: job J0..J99, each date succeeded (every 20th on its second try)."""
    rows: list[tuple[object, ...]] = []
    for j in range(JOBS):
        for d in range(dates):
            period = (START + dt.timedelta(days=d)).isoformat()
            run = f"J{j}-{period}"
            if (j + d) % REPAIRED_EVERY == 0:
                rows.append((f"J{j}", period, 1, run + "-1", "failed", TS, TS, None, "boom"))
                rows.append((f"J{j}", period, 2, run + "-2", "succeeded", TS, TS, None, None))
            else:
                rows.append((f"J{j}", period, 1, run + "-1", "succeeded", TS, TS, None, None))
    return rows


def build(path: Path, dates: int) -> int:
    """The ledger at ``path``: its schema, then the rows by bare SQL, then its runs; returns
    the number of attempts."""
    url = sqlite_url(path)
    gk.open_ledger(url).close()
    rows = attempts(dates)
    latest = {(r[0], r[1]): (r[3], r[2]) for r in rows}  # the later row of a pair wins
    conn = sqlite3.connect(path)
    with conn:
        conn.executemany("INSERT INTO gk_attempts VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
        for j in range(CONSUMERS):
            consumer, up = f"J{j}", (f"J{j + CONSUMERS}", f"J{j + 2 * CONSUMERS}")
            required = f'[["{up[0]}", "{{p}}"], ["{up[1]}", "{{p}}"]]'
            for d in range(dates):
                p = (START + dt.timedelta(days=d)).isoformat()
                run, attempt = latest[(consumer, p)]
                conn.execute(
                    "INSERT INTO gk_publications (consumer, period, revision, fingerprint, "
                    "required_jobs, published_at, producer_run_id, producer_attempt) "
                    "VALUES (?, ?, 1, 'fp', ?, ?, ?, ?)",
                    (consumer, p, required.format(p=p), TS, run, attempt),
                )
                conn.executemany(
                    "INSERT INTO gk_evidence (consumer, period, revision, job, job_period, "
                    "run_id, attempt) VALUES (?, ?, 1, ?, ?, ?, ?)",
                    [(consumer, p, u, p, *latest[(u, p)]) for u in up],
                )
    conn.close()
    with gk.open_ledger(url) as ledger, ledger.transaction():
        CompleteRuns(ledger.sql).rebuild()  # the migration's own step
    return len(rows)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="timed rounds (default 5)")
    parser.add_argument("--dates", type=int, default=9524, help="periods per job")
    args = parser.parse_args(argv)
    print(environment_line())
    print(load_line("before"))
    with tempfile.TemporaryDirectory(prefix="gk-bench-verify-") as folder:
        path = Path(folder) / "ledger.db"
        count = build(path, args.dates)
        print(f"ledger: {count:,} attempts, {JOBS} jobs x {args.dates:,} days, built")
        ledger = gk.open_ledger(sqlite_url(path), create=False)
        raw = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        calls = {
            "verify": ledger.verify,
            "count": lambda: raw.execute("SELECT count(*) FROM gk_attempts").fetchone()[0],
            "fetch": lambda: len(
                raw.execute("SELECT job, period, attempt, state FROM gk_attempts").fetchall()
            ),
        }
        medians, results = alternating_ms(calls, args.runs)
        ledger.close()
        raw.close()
    assert all(found == [] for found in results["verify"]), results["verify"][0][:3]
    assert set(results["count"]) == set(results["fetch"]) == {count}
    rows = [
        ["verify (every invariant)", f"{medians['verify']:.0f} ms", "", ""],
        [
            "floor: SELECT count(*)",
            f"{medians['count']:.0f} ms",
            f"{medians['verify'] / medians['count']:.1f}x",
            "",
        ],
        [
            "floor: fetch every attempt",
            f"{medians['fetch']:.0f} ms",
            "",
            f"{medians['verify'] / medians['fetch']:.1f}x",
        ],
    ]
    print_table(["measure", "median", "verify / count", "verify / fetch"], rows)
    print(load_line("after"))


if __name__ == "__main__":
    sys.exit(main())
