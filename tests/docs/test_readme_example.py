"""The README's five-minute example runs as written: its Python block, saved as the file the
README names in an empty directory, and its bash block, run there, publish the total with
the evidence of both loads into the default ledger, which the run names."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.docs.test_docs import ROOT, _env, blocks, commands

TEST = "test_readme_example.py::test_readme_five_minute_example_runs_as_written"


def five_minutes() -> tuple[str, str, list[str]]:
    """(the file name the README saves the example as, the example, the commands that run
    it): the Python block of "## Five minutes" and the bash block this test proves."""
    page = ROOT / "README.md"
    section = page.read_text().split("## Five minutes", 1)[1]
    offset = page.read_text().count("\n", 0, page.read_text().index("## Five minutes"))
    found = [b for b in blocks(page) if b.line > offset]
    code = next(b for b in found if b.lang == "python")
    proved = next(b for b in found if b.directive("proved-by") == TEST)
    name = re.search(r"Save it as `(\w+\.py)`", section)
    assert name is not None, "the README no longer says which file to save the example as"
    return name.group(1), code.text, [command for command, _, _ in commands(proved)]


@pytest.mark.luigi
@pytest.mark.slow
def test_readme_five_minute_example_runs_as_written(tmp_path: Path) -> None:
    filename, code, todo = five_minutes()
    assert f"--module {filename.removesuffix('.py')} " in todo[0]
    (tmp_path / filename).write_text(code)
    done = subprocess.run(
        ["bash", "-c", "set -e\n" + "\n".join(todo)],
        cwd=tmp_path,
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr[-4000:]
    named = "ledger: sqlite file gatekeeper.db (the default: no [gatekeeper] ledger_url)"
    assert done.stderr.count(named) == 1, done.stderr[-4000:]
    assert "gatekeeper: DailySalesLoad 2026-10-23 published" in done.stderr
    with gk.open_ledger(f"sqlite:///{tmp_path / 'gatekeeper.db'}") as ledger:
        published = ledger.publication("DailySalesLoad", "2026-10-23")
        assert published is not None and published.fingerprint == gk.fingerprint({"cents": 17500})
        runs = {
            job: ledger.latest(job, "2026-10-23").run_id for job in ("DimCustomer", "DimProduct")
        }
        assert published.evidence == runs
        assert ledger.read("SELECT business_date, cents FROM sales_totals") == [
            ("2026-10-23", 17500)
        ]
    for run_id in runs.values():
        assert run_id in done.stdout  # gatekeeper evidence shows what authorized it


def test_gate_page_shows_the_readme_example() -> None:
    """docs/gate.md shows the same example, so it runs as written there too."""
    _, code, _ = five_minutes()
    gate = [b.text for b in blocks(ROOT / "docs" / "gate.md") if b.lang == "python"]
    assert gate[0] == code
