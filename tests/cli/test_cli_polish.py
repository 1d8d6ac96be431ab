"""A CLI without surprises: --version, global options anywhere, read-only commands that create
nothing, one-line configuration errors, values shown as typed, Luigi's hour form, a closed pipe,
an unknown job; and the shipped luigi.cfg logging at INFO."""

from __future__ import annotations

import argparse
import configparser
import datetime as dt
import json
import os
import re
import subprocess
import sys
from collections.abc import Sequence
from decimal import Decimal
from importlib import metadata
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest

import gatekeeper as gk
from gatekeeper.cli import build_parser, main
from gatekeeper.core.errors import show_value
from gatekeeper.core.periods import HOURLY, hour_key, parse_hour, parse_label, period_key
from tests.helpers.ledgers import T0, snapshot
from tests.helpers.luigi_support import ROOT, luigi_command

UTC = dt.timezone.utc
CONSOLE_SCRIPT = Path(sys.executable).parent / "gatekeeper"
D = "2026-10-23"


def clean_env(**extra: str) -> dict[str, str]:
    """The environment minus anything that would pick a ledger or a luigi.cfg for the test."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("GATEKEEPER_LEDGER_URL", "LUIGI_CONFIG_PATH")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env.update(extra)
    return env


def gatekeeper(
    *args: str, cwd: Path, script: bool = False, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """The real command: ``python -m gatekeeper.cli`` or the installed ``gatekeeper`` script."""
    command = [str(CONSOLE_SCRIPT)] if script else [sys.executable, "-m", "gatekeeper.cli"]
    return subprocess.run(
        [*command, *args],
        cwd=cwd,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def run_main(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def filled(tmp_path: Path) -> str:
    """A SQLite ledger holding job A (two dates) and a publication of Sales."""
    url = f"sqlite:///{tmp_path / 'filled.db'}"
    with gk.open_ledger(url) as ledger:
        ledger.record("A", D, 1, "run-a1", "succeeded", T0)
        ledger.record("A", "2026-10-24", 1, "run-a2", "failed", T0, error="boom")
        ledger.publish("Sales", D, ["A"], "fp-1")
        ledger.record("H", "2026-10-25T04:00:00+00:00", 1, "run-h1", "succeeded", T0)
    return url


# --- --version -----------------------------------------------------------------------------------


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "console script"])
def test_cli_version_prints_the_package_version(tmp_path: Path, script: bool) -> None:
    done = gatekeeper("--version", cwd=tmp_path, script=script)
    assert done.returncode == 0, done.stderr
    pyproject = (ROOT / "pyproject.toml").read_text()
    declared = re.search(r'^version = "([^"]+)"', pyproject, re.MULTILINE)
    assert declared is not None
    assert done.stdout == f"gatekeeper {declared.group(1)}\n"
    assert metadata.version("luigi-gatekeeper") == declared.group(1)
    assert files_in(tmp_path) == set()


# --- --ledger and --json before or after the subcommand ------------------------------------------


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
    done = gatekeeper(*argv, cwd=tmp_path)
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


# --- read-only commands refuse a SQLite file that does not exist ---------------------------------

READ_ONLY = {
    "ready": [D, "A"],
    "history": ["A"],
    "evidence": ["Sales", D],
    "stale": ["Sales"],
    "status": ["A", "--start", D, "--stop", "2026-10-25"],
    "jobs": [],
    "report": ["A", "--start", D, "--stop", "2026-10-25", "-o", "{tmp}/coverage.html"],
    "plan-recovery": ["--stages", "A,B", "--business-date", D],
    "check": ["A"],
}


def ledger_commands() -> dict[str, bool]:
    """Every subcommand that opens the ledger, and whether it writes."""
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    found = {}
    for name, p in sub.choices.items():
        defaults = p._defaults
        opens = defaults["needs_ledger"] or name == "plan-recovery"  # --stages opens it itself
        if opens:
            found[name] = bool(defaults["writes"])
    return found


def test_cli_every_read_only_command_is_in_the_table() -> None:
    commands = ledger_commands()
    assert {name for name, writes in commands.items() if not writes} == set(READ_ONLY)
    assert {name for name, writes in commands.items() if writes} == {"record", "abandon"}


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "console script"])
@pytest.mark.parametrize("command", sorted(READ_ONLY))
def test_cli_read_only_command_refuses_a_missing_sqlite_file_and_creates_nothing(
    tmp_path: Path, command: str, script: bool
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    args = [a.replace("{tmp}", str(work)) for a in READ_ONLY[command]]
    for url, path in (
        ("sqlite:///nonexist.db", work / "nonexist.db"),
        (f"sqlite:///{work / 'abs.db'}", work / "abs.db"),
    ):
        done = gatekeeper(command, *args, "--ledger", url, cwd=work, script=script)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert "ledger_url" in done.stderr and str(path) in done.stderr
        assert "nothing was created" in done.stderr
    assert files_in(work) == set()


def test_cli_read_only_command_refuses_a_missing_file_from_luigi_cfg(tmp_path: Path) -> None:
    (tmp_path / "luigi.cfg").write_text("[gatekeeper]\nledger_url = sqlite:///typo.db\n")
    done = gatekeeper("status", "A", "--start", D, cwd=tmp_path)
    assert done.returncode == 2
    assert "[gatekeeper] ledger_url" in done.stderr and "typo.db" in done.stderr
    assert files_in(tmp_path) == {"luigi.cfg"}


def test_cli_record_creates_the_ledger_then_reads_work(tmp_path: Path) -> None:
    done = gatekeeper(
        "record", "A", D, "1", "r1", "succeeded", "--ledger", "sqlite:///new.db", cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "new.db").exists()
    ready = gatekeeper("ready", D, "A", "--ledger", "sqlite:///new.db", cwd=tmp_path)
    assert ready.returncode == 0 and "READY" in ready.stdout


def test_open_ledger_create_false_refuses_a_missing_file_only(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.db'}"
    with pytest.raises(gk.InvalidInput) as caught:
        gk.open_ledger(url, create=False)
    assert caught.value.field == "ledger_url" and caught.value.value == url
    assert files_in(tmp_path) == set()
    gk.open_ledger(url).close()
    with gk.open_ledger(url, create=False) as ledger:
        assert ledger.history("A") == []


# --- configuration errors: one line, naming the variable or option, exit 2 -----------------------


@pytest.mark.parametrize(
    "command",
    [["history", "A"], ["record", "A", D, "1", "r1", "running"], ["status", "A", "--start", D]],
)
def test_cli_unset_variable_in_luigi_cfg_is_one_line(tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "luigi.cfg").write_text("[gatekeeper]\nledger_url = ${GK_TEST_UNSET_DSN}\n")
    env = clean_env()
    env.pop("GK_TEST_UNSET_DSN", None)
    done = gatekeeper(*command, cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("gatekeeper: InvalidInput: ")
    assert "GK_TEST_UNSET_DSN is not set" in done.stderr
    assert "gatekeeper.ledger_url" in done.stderr
    assert done.stdout == "" and files_in(tmp_path) == {"luigi.cfg"}


def test_cli_set_variable_in_luigi_cfg_is_used(tmp_path: Path) -> None:
    (tmp_path / "luigi.cfg").write_text("[gatekeeper]\nledger_url = ${GK_TEST_DSN}\n")
    done = gatekeeper(
        "record",
        "A",
        D,
        "1",
        "r1",
        "running",
        cwd=tmp_path,
        env=clean_env(GK_TEST_DSN="sqlite:///from-env-var.db"),
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
    done = gatekeeper(*args, cwd=tmp_path, env=env)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "ledger_url" in done.stderr and named in done.stderr and url in done.stderr
    assert files_in(tmp_path) == before


# --- values shown as typed, never a Python repr --------------------------------------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("2026-10-25T05:30Z", "'2026-10-25T05:30Z'"),
        ("C:\\ledger", "'C:\\ledger'"),
        ("two\nlines", "'two\\nlines'"),  # escaped, so a message stays on one line
        (dt.datetime(2026, 10, 25, 0, 0), "2026-10-25T00:00:00"),
        (dt.datetime(2026, 10, 25, 5, tzinfo=UTC), "2026-10-25T05:00:00+00:00"),
        (dt.date(2026, 10, 25), "2026-10-25"),
        (3, "3"),
        (2.5, "2.5"),
        (Decimal("1.10"), "1.10"),
        (True, "True"),
        (ZoneInfo("Europe/London"), "Europe/London"),
        (gk.RunState.SUCCEEDED, "succeeded"),
        (int, "int"),
        (["a", dt.date(2026, 1, 1)], "['a', 2026-01-01]"),
    ],
)
def test_show_value_renders_what_the_user_typed(value: Any, shown: str) -> None:
    assert show_value(value) == shown
    error = gk.InvalidInput("field", value, "why")
    assert str(error) == f"invalid field={shown}: why"
    assert error.value is value


def test_invalid_input_without_a_value_names_only_the_field() -> None:
    error = gk.InvalidInput("run_id", None, "required with --events")
    assert str(error) == "invalid run_id: required with --events" and error.value is None


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
    done = gatekeeper(*args, "--ledger", filled, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert typed in done.stderr, done.stderr
    assert "datetime." not in done.stderr and "Traceback" not in done.stderr
    with gk.open_ledger(filled) as ledger:
        assert snapshot(ledger) == before


# --- Luigi's hour form ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "hour"),
    [
        ("2026-10-25T05", dt.datetime(2026, 10, 25, 5, tzinfo=UTC)),  # Luigi's DateHourParameter
        ("2026-10-25T00", dt.datetime(2026, 10, 25, 0, tzinfo=UTC)),
        ("2026-10-25T23", dt.datetime(2026, 10, 25, 23, tzinfo=UTC)),
        ("2028-02-29T12", dt.datetime(2028, 2, 29, 12, tzinfo=UTC)),
        ("2026-10-25T05:00Z", dt.datetime(2026, 10, 25, 5, tzinfo=UTC)),
        ("2026-10-25T05:00:00+00:00", dt.datetime(2026, 10, 25, 5, tzinfo=UTC)),
        ("2026-10-25T06:00+01:00", dt.datetime(2026, 10, 25, 5, tzinfo=UTC)),
    ],
)
def test_hour_forms_are_accepted_everywhere_an_hour_is(text: str, hour: dt.datetime) -> None:
    assert parse_hour(text) == hour and parse_hour(text).tzinfo is UTC
    assert parse_label(text, HOURLY) == hour
    key = hour.strftime("%Y-%m-%dT%H:00Z")
    assert hour_key(text) == key and period_key(text) == key


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("2026-10-25T24", "not a calendar hour"),
        ("2026-02-30T01", "not a calendar hour"),
        ("2026-10-25T5", "expected an ISO 8601 timestamp"),
        ("2026-10-25T05:00", "no time zone"),  # naive, and not Luigi's form: ambiguous
        ("2026-10-25", "expected an hour such as 2026-10-25T05"),
        ("2026-10-25T05:30Z", "not on an hour boundary"),
    ],
)
def test_hour_forms_refused_name_the_field_and_the_text(text: str, reason: str) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        parse_hour(text, "start")
    assert caught.value.field == "start" and caught.value.value == text
    assert reason in str(caught.value) and f"'{text}'" in str(caught.value)


def test_cli_luigi_hour_form_in_record_history_and_status(tmp_path: Path) -> None:
    url = "sqlite:///hours.db"
    for hour, run in (("2026-10-25T05", "r5"), ("2026-10-25T06:00Z", "r6")):
        done = gatekeeper("record", "H", hour, "1", run, "succeeded", "--ledger", url, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
    history = gatekeeper("history", "H", "2026-10-25T05", "--ledger", url, "--json", cwd=tmp_path)
    assert history.returncode == 0, history.stderr
    assert [a["business_date"] for a in json.loads(history.stdout)] == ["2026-10-25T05:00Z"]
    status = gatekeeper(
        "status",
        "H",
        "--period",
        "hourly",
        "--start",
        "2026-10-25T05",
        "--stop",
        "2026-10-25T07",
        "--now",
        "2026-10-26T00:00:00Z",
        "--ledger",
        url,
        cwd=tmp_path,
    )
    assert status.returncode == 0, status.stdout + status.stderr
    assert "filled 2/2" in status.stdout


# --- a closed pipe ends quietly ------------------------------------------------------------------


@pytest.mark.parametrize("script", [False, True], ids=["python -m", "console script"])
def test_cli_reader_gone_before_output_ends_quietly(
    filled: str, tmp_path: Path, script: bool
) -> None:
    command = [str(CONSOLE_SCRIPT)] if script else [sys.executable, "-m", "gatekeeper.cli"]
    proc = subprocess.Popen(
        [*command, "history", "A", "--ledger", filled],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the interpreter has even started: every write hits EPIPE
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 0
    assert err == ""


def test_cli_history_piped_to_head_ends_quietly(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'big.db'}"
    with gk.open_ledger(url) as ledger:
        start = dt.date(2020, 1, 1)
        for day in range(1500):  # ~200 kB of table: more than a pipe buffer holds
            date = (start + dt.timedelta(days=day)).isoformat()
            ledger.record("Big", date, 1, f"run-{date}-" + "x" * 60, "succeeded", T0)
    script = (
        f'"{sys.executable}" -m gatekeeper.cli history Big --ledger "{url}" | head -1; '
        'echo "status=${PIPESTATUS[0]}"'
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stdout.splitlines()
    assert lines[0].split() == [
        "date",
        "attempt",
        "state",
        "run_id",
        "started_at",
        "lease",
        "error",
    ]
    assert lines[1] == "status=0"
    assert done.stderr == ""


# --- history of an unknown job -------------------------------------------------------------------


def test_cli_history_of_an_unknown_job_is_bad_input(filled: str, tmp_path: Path) -> None:
    done = gatekeeper("history", "a", "--ledger", filled, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "no such job 'a' (did you mean 'A'?) in the ledger (sqlite file" in done.stderr
    dated = gatekeeper("history", "Nope", D, "--ledger", filled, "--json", cwd=tmp_path)
    assert dated.returncode == 2
    assert json.loads(dated.stdout)["message"].startswith("no such job 'Nope' in the ledger")


def test_cli_history_of_an_unknown_job_allowed_says_so(filled: str, tmp_path: Path) -> None:
    done = gatekeeper("history", "Nope", "--allow-unknown", "--ledger", filled, cwd=tmp_path)
    assert done.returncode == 1
    assert done.stdout.startswith("no such job Nope in the ledger")
    dated = gatekeeper(
        "history", "Nope", D, "--allow-unknown", "--ledger", filled, "--json", cwd=tmp_path
    )
    assert dated.returncode == 1 and json.loads(dated.stdout) == []


def test_cli_history_of_a_known_job_on_an_empty_date_says_that(
    filled: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run_main(["history", "A", "2026-10-30", "--ledger", filled], capsys)
    assert code == 0, err
    assert out == "A has no attempts for 2026-10-30\n"


# --- the shipped luigi.cfg and docs --------------------------------------------------------------


def test_shipped_luigi_cfg_logs_at_info() -> None:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "luigi.cfg")
    assert cfg.get("core", "log_level") == "INFO"


def test_luigi_with_the_shipped_cfg_prints_no_debug_lines(tmp_path: Path) -> None:
    (tmp_path / "luigi.cfg").write_text((ROOT / "luigi.cfg").read_text())  # gatekeeper.db here
    done = subprocess.run(
        luigi_command(
            "--module",
            "example_pipelines.sales",
            "RangeBusinessDaily",
            "--of",
            "DailySalesLoad",
            "--start",
            "2026-10-01",
            "--stop",
            "2026-10-04",
            "--lateness",
            "2h",
            "--local-scheduler",
        ),
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    assert "DEBUG" not in output
    assert "INFO" in output and "Luigi Execution Summary" in output
    # the docs' one-liner that reads the output rows (docs/getting-started.md)
    readme = (ROOT / "docs" / "getting-started.md").read_text()
    one_liner = next(
        line
        for line in readme.splitlines()
        if line.startswith('python -c "import sqlite3') and "sales_totals" in line
    )
    rows = subprocess.run(
        ["bash", "-c", one_liner.replace("python ", f"{sys.executable} ", 1)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert rows.returncode == 0, rows.stderr
    assert [line.split()[0] for line in rows.stdout.splitlines()] == [
        "2026-10-01",
        "2026-10-02",
        "2026-10-03",
    ]
    assert all(line.split()[1].isdigit() for line in rows.stdout.splitlines())


def test_bench_readme_uses_plain_python() -> None:
    text = (ROOT / "bench" / "README.md").read_text()
    assert "/work/" not in text and "venv/bin" not in text
    assert "    python bench/ledger_throughput.py" in text
