"""Configuration and input errors: one line, naming the variable, option or source, exit 2,
nothing written; values shown as the user typed them, never a Python repr."""

from __future__ import annotations

from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.cli import clean_env, files_in, run_gatekeeper
from tests.helpers.ledgers import snapshot

D = "2026-10-23"


@pytest.mark.parametrize(
    "command",
    [["history", "A"], ["record", "A", D, "1", "r1", "running"], ["status", "A", "--start", D]],
)
def test_cli_unset_variable_in_luigi_cfg_is_one_line(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "luigi.cfg").write_text("[gatekeeper]\nledger_url = ${GK_TEST_UNSET_DSN}\n")
    env = clean_env()
    env.pop("GK_TEST_UNSET_DSN", None)
    done = run_gatekeeper(*command, cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("gatekeeper: InvalidInput: ")
    assert "GK_TEST_UNSET_DSN is not set" in done.stderr
    assert "gatekeeper.ledger_url" in done.stderr
    assert done.stdout == "" and files_in(tmp_path) == {"luigi.cfg"}


def test_cli_set_variable_in_luigi_cfg_is_used(tmp_path: Path) -> None:
    (tmp_path / "luigi.cfg").write_text("[gatekeeper]\nledger_url = ${GK_TEST_DSN}\n")
    done = run_gatekeeper(
        "record",
        "A",
        D,
        "1",
        "r1",
        "running",
        cwd=tmp_path,
        env=clean_env(GK_TEST_DSN="sqlite:///from-env-var.db"),
        process=True,  # luigi.cfg found in the working directory by a real process
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "from-env-var.db").exists()


@pytest.mark.parametrize(
    ("where", "url", "named"),
    [
        ("--ledger", "mysql://host/db", "--ledger"),
        ("env", "sqlite:/one-slash.db", "$GATEKEEPER_LEDGER_URL"),
        ("cfg", "sqlite:///x.db?timeout=3", "[gatekeeper] ledger_url"),
        ("cfg", "gatekeeper.db", "[gatekeeper] ledger_url"),
    ],
)
def test_cli_bad_ledger_url_is_one_line_naming_its_source(
    tmp_path: Path, where: str, url: str, named: str
) -> None:
    args = ["record", "A", D, "1", "r1", "running"]
    env = clean_env()
    if where == "--ledger":
        args += ["--ledger", url]
    elif where == "env":
        env["GATEKEEPER_LEDGER_URL"] = url
    else:
        (tmp_path / "luigi.cfg").write_text(f"[gatekeeper]\nledger_url = {url}\n")
    before = files_in(tmp_path)
    done = run_gatekeeper(*args, cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "ledger_url" in done.stderr and named in done.stderr and url in done.stderr
    assert files_in(tmp_path) == before


@pytest.mark.parametrize(
    ("args", "typed"),
    [
        (
            ["status", "H", "--period", "hourly", "--start", "2026-10-25T05:30Z"],
            "'2026-10-25T05:30Z'",
        ),
        (
            ["status", "H", "--period", "hourly", "--start", "2026-10-25T05:00"],
            "'2026-10-25T05:00'",
        ),
        (["history", "A", "2026-02-30"], "'2026-02-30'"),
        (["ready", "2026-10-25T05:00:00", "A"], "'2026-10-25T05:00:00'"),
    ],
)
def test_cli_messages_show_the_value_as_typed(
    filled: str, tmp_path: Path, args: list[str], typed: str
) -> None:
    with gk.open_ledger(filled) as ledger:
        before = snapshot(ledger)
    done = run_gatekeeper(*args, "--ledger", filled, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert typed in done.stderr, done.stderr
    assert "datetime." not in done.stderr and "Traceback" not in done.stderr
    with gk.open_ledger(filled) as ledger:
        assert snapshot(ledger) == before
