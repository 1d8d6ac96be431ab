"""The reference pages are committed Markdown, readable as files: docs/cli-reference.md and the
option table of docs/configuration.md are what ``python tools/references.py`` generates from
the code now (regenerated here in memory and compared), and the command rewrites a stale page
and says so, leaving a fresh one as it is."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from tools import references

ROOT = Path(__file__).resolve().parents[2]


def test_references_committed_pages_are_what_the_code_generates() -> None:
    assert references.stale(ROOT) == [], (
        "the reference pages differ from the code: run `python tools/references.py`"
    )
    cli = (ROOT / "docs" / "cli-reference.md").read_text()
    assert "### `gatekeeper abandon`" in cli and "#### `gatekeeper collect databricks`" in cli
    assert "`--expected-stages" in cli
    config = (ROOT / "docs" / "configuration.md").read_text()
    assert "| `lease_seconds` | - | `--gatekeeper-lease-seconds` |" in config
    assert "`openlineage_timeout`" in config


def test_references_command_rewrites_only_a_stale_page(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    for page in ("cli-reference.md", "configuration.md"):
        shutil.copy(ROOT / "docs" / page, tmp_path / "docs" / page)
    page = tmp_path / "docs" / "configuration.md"
    fresh = page.read_text()
    page.write_text(fresh.replace("| `timezone` |", "| `time_zone` |"))
    assert references.stale(tmp_path) == ["docs/configuration.md"]  # found, not written
    assert "`time_zone`" in page.read_text()
    assert references.stale(tmp_path, write=True) == ["docs/configuration.md"]
    assert page.read_text() == fresh
    assert references.stale(tmp_path) == []


def test_references_check_exits_one_on_a_page_without_its_markers(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "cli-reference.md").write_text("# Command-line reference\n")
    try:
        references.stale(tmp_path)
    except ValueError as exc:
        assert "<!-- end generated: cli -->" in str(exc)
    else:
        raise AssertionError("a page without its markers was accepted")
    done = subprocess.run(
        [sys.executable, "tools/references.py", "--check"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (done.returncode, done.stdout) == (0, ""), done.stdout + done.stderr
