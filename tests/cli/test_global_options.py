"""``--version``, and the global options (``--ledger``, ``--json``) before or after the
subcommand. The real command and ``main`` in process."""

from __future__ import annotations

import json
import re
from importlib import metadata
from pathlib import Path

import pytest

from tests.helpers.cli import files_in, run_gatekeeper, run_main
from tests.helpers.luigi_support import ROOT

D = "2026-10-23"


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "console script"])
def test_cli_version_prints_the_package_version(tmp_path: Path, script: bool) -> None:
    done = run_gatekeeper("--version", cwd=tmp_path, script=script)
    assert done.returncode == 0, done.stderr
    pyproject = (ROOT / "pyproject.toml").read_text()
    declared = re.search(r'^version = "([^"]+)"', pyproject, re.MULTILINE)
    assert declared is not None
    assert done.stdout == f"gatekeeper {declared.group(1)}\n"
    assert metadata.version("luigi-gatekeeper") == declared.group(1)
    assert files_in(tmp_path) == set()


@pytest.mark.parametrize(
    "layout",
    [
        "{L} {J} history A",
        "history A {L} {J}",
        "{L} history A {J}",
        "{J} history A {L}",
        "history {L} A {J}",
    ],
)
def test_cli_global_options_before_or_after_the_subcommand(
    filled: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], layout: str
) -> None:
    argv = [
        part
        for word in layout.split()
        for part in {"{L}": ["--ledger", filled], "{J}": ["--json"]}.get(word, [word])
    ]
    code, out, err = run_main(argv, capsys)
    assert code == 0, err
    assert [a["run_id"] for a in json.loads(out)] == ["run-a1", "run-a2"]
    done = run_gatekeeper(*argv, cwd=tmp_path)
    assert (done.returncode, json.loads(done.stdout)) == (0, json.loads(out))


def test_cli_ledger_after_the_subcommand_wins_over_before(
    filled: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = f"sqlite:///{tmp_path / 'other.db'}"
    code, out, err = run_main(["--ledger", missing, "history", "A", "--ledger", filled], capsys)
    assert code == 0, err and "run-a1" in out
    code, _, err = run_main(["--ledger", filled, "history", "A", "--ledger", missing], capsys)
    assert code == 2 and "other.db" in err
    assert not (tmp_path / "other.db").exists()


def test_cli_json_before_the_subcommand_also_formats_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.db"
    code, out, err = run_main(
        ["--json", "--ledger", f"sqlite:///{missing}", "ready", D, "A"], capsys
    )
    assert code == 2
    assert json.loads(out)["error"] == "InvalidInput"
    assert not missing.exists()
