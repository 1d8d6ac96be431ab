"""One configuration precedence for tasks and the ``gatekeeper`` command: the flag (the luigi
command line, ``--ledger``), then ``GATEKEEPER_*`` in the environment, then luigi.cfg, then the
default. The ledger through the real ``luigi`` and ``gatekeeper`` commands; the other options
through the settings API, a real luigi command line and ``luigi.build``."""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from luigi.cmdline_parser import CmdlineParser

import gatekeeper as gk
from gatekeeper.luigi import config, integration_config
from gatekeeper.luigi.config import Source
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import fresh_pg_schema, snapshot
from tests.helpers.luigi_support import (
    build,
    configure,
    failures_of,
    luigi_command,
    luigi_env,
    run_command,
)
from tests.helpers.luigi_tasks import Trivial

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

D = "2026-10-23"
TASK = ("--module", "tests.helpers.luigi_tasks", "Trivial", "--business-date", D)
#: The ledger file each source names, relative to the test's folder (the default's is the
#: working directory's gatekeeper.db).
FILES = {"flag": "flag.db", "env": "env.db", "cfg": "cfg.db", "default": "gatekeeper.db"}


@pytest.fixture(autouse=True)
def no_gatekeeper_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No ``GATEKEEPER_<option>`` of the calling shell leaks into a test or its subprocesses."""
    for name, _ in config.options():
        monkeypatch.delenv(config.env_var(name), raising=False)


def write_cfg(folder: Path, **options: str) -> Path:
    """A luigi.cfg (outside the working directory) with these ``[gatekeeper]`` options, exit
    codes and a process-lock folder of its own."""
    path = folder / "etc" / "luigi.cfg"
    path.parent.mkdir(exist_ok=True)
    section = "".join(f"{key} = {value}\n" for key, value in options.items())
    path.write_text(
        f"[gatekeeper]\n{section}[retcode]\ntask_failed = 30\nscheduling_error = 35\n"
        f"unhandled_exception = 40\n[core]\nlock_pid_dir = {tempfile.mkdtemp(prefix='locks-')}\n"
    )
    return path


def url_of(folder: Path, source: str) -> str:
    return f"sqlite:///{folder / FILES[source]}"


def run_task(
    folder: Path, cfg: Path, *flags: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``luigi --module ... Trivial --local-scheduler`` run from ``folder``."""
    return run_command(
        luigi_command(*TASK, "--local-scheduler", *flags),
        cwd=folder,
        env={**luigi_env(cfg), **(env or {})},
    )


@pytest.mark.parametrize(
    ("sources", "wins"),
    [
        (("flag",), "flag"),
        (("env",), "env"),
        (("cfg",), "cfg"),
        ((), "default"),
        (("flag", "env"), "flag"),
        (("env", "cfg"), "env"),
        (("flag", "env", "cfg"), "flag"),
    ],
)
@pytest.mark.process
def test_ledger_url_same_for_luigi_task_and_cli(
    sources: tuple[str, ...], wins: str, tmp_path: Path
) -> None:
    """The task writes its attempt where the precedence says, and the CLI given the same
    sources reads that very ledger."""
    cfg = write_cfg(
        tmp_path, **({"ledger_url": url_of(tmp_path, "cfg")} if "cfg" in sources else {})
    )
    env = {"GATEKEEPER_LEDGER_URL": url_of(tmp_path, "env")} if "env" in sources else {}
    task_flags = ("--gatekeeper-ledger-url", url_of(tmp_path, "flag")) if "flag" in sources else ()
    done = run_task(tmp_path, cfg, *task_flags, env=env)
    assert done.returncode == 0, done.stderr
    assert {p.name for p in tmp_path.glob("*.db")} == {FILES[wins]}
    cli_flags = ("--ledger", url_of(tmp_path, "flag")) if "flag" in sources else ()
    assert_cli_reads_the_task(url_of(tmp_path, wins), tmp_path, cfg, env, *cli_flags)


def assert_cli_reads_the_task(
    url: str, folder: Path, cfg: Path, env: dict[str, str], *cli_flags: str
) -> None:
    """The task's attempt succeeded in the ledger at ``url``, and ``gatekeeper history`` given
    ``cli_flags``, ``cfg`` and ``env`` shows that very run."""
    with gk.open_ledger(url) as ledger:
        latest = ledger.latest("Trivial", D)
    assert latest is not None and latest.state is gk.RunState.SUCCEEDED
    shown = gatekeeper(
        *cli_flags,
        "history",
        "Trivial",
        "--json",
        cwd=folder,
        env={"LUIGI_CONFIG_PATH": str(cfg), **env},
    )
    assert shown.returncode == 0, shown.stderr
    assert [a["run_id"] for a in json.loads(shown.stdout)] == [latest.run_id]


def test_ledger_url_from_env_for_luigi_build_callers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``luigi.build`` has no command line: the environment still beats luigi.cfg."""
    env_url = url_of(tmp_path, "env")
    with contextlib.contextmanager(configure)({"ledger_url": url_of(tmp_path, "cfg")}):
        monkeypatch.setenv("GATEKEEPER_LEDGER_URL", env_url)
        assert build(Trivial(business_date=dt.date(2026, 10, 23))).scheduling_succeeded
        assert config.cli_ledger_source() == (env_url, "$GATEKEEPER_LEDGER_URL")
    assert {p.name for p in tmp_path.glob("*.db")} == {"env.db"}


# --- every option: the environment between the command line and luigi.cfg ----------------------

OPTIONS: list[tuple[str, str, str, Callable[[], Any], Any, Any]] = [
    # option, luigi.cfg value, environment value, accessor, value from cfg, value from env
    ("timezone", "UTC", "Europe/Paris", config.timezone, "UTC", "Europe/Paris"),
    ("lateness", "0s", "2h", config.lateness, dt.timedelta(0), dt.timedelta(hours=2)),
    ("lease_seconds", "300", "45", config.lease_seconds, 300.0, 45.0),
    ("openlineage", "false", "true", integration_config.openlineage, False, True),
    ("openlineage_timeout", "5", "2.5", integration_config.openlineage_timeout, 5.0, 2.5),
    ("databricks_max_pages", "1000", "5", integration_config.databricks_max_pages, 1000, 5),
    ("databricks_time_budget", "300", "2.5", integration_config.databricks_time_budget, 300.0, 2.5),
]


@contextlib.contextmanager
def cfg_options(**options: str) -> Iterator[None]:
    with contextlib.contextmanager(configure)(options):
        yield


@pytest.mark.parametrize(("option", "in_cfg", "in_env", "read", "from_cfg", "from_env"), OPTIONS)
def test_config_env_beats_luigi_cfg_and_a_changed_env_is_seen(
    option: str,
    in_cfg: str,
    in_env: str,
    read: Callable[[], Any],
    from_cfg: Any,
    from_env: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    variable = config.env_var(option)
    with cfg_options(**{option: in_cfg}):
        assert read() == from_cfg
        assert config.origin(option).describe() == f"[gatekeeper] {option}"
        monkeypatch.setenv(variable, in_env)  # no cache cleared: the environment is the key
        assert read() == from_env
        assert config.origin(option).source is Source.ENV
        assert config.origin(option).describe() == f"${variable}"
        monkeypatch.setenv(variable, "")  # empty counts as unset
        assert read() == from_cfg
        monkeypatch.delenv(variable)
        assert read() == from_cfg


@pytest.mark.parametrize(("option", "in_cfg", "in_env", "read", "from_cfg", "from_env"), OPTIONS)
def test_config_luigi_command_line_beats_env(
    option: str,
    in_cfg: str,
    in_env: str,
    read: Callable[[], Any],
    from_cfg: Any,
    from_env: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A real luigi command line (``--gatekeeper-<option> VALUE``) beats the environment."""
    flag = f"--gatekeeper-{option.replace('_', '-')}"
    with cfg_options(**{option: in_env}):
        monkeypatch.setenv(config.env_var(option), in_env)
        with CmdlineParser.global_instance([*TASK, flag, in_cfg]):
            assert read() == from_cfg
            assert config.origin(option).source is Source.FLAG
            assert config.origin(option).describe() == flag
        assert read() == from_env  # that command line is over


def test_config_every_option_has_its_variable() -> None:
    names = {name for name, _ in config.options()}
    assert {"ledger_url", "timezone", "lateness", "lease_seconds", "openlineage"} <= names
    assert config.env_var("ledger_url") == "GATEKEEPER_LEDGER_URL"
    assert config.env_var("delta_storage_options") == "GATEKEEPER_DELTA_STORAGE_OPTIONS"


# --- a bad value from the environment names the variable ---------------------------------------


@pytest.mark.parametrize(
    ("variable", "value", "read", "message"),
    [
        (
            "GATEKEEPER_LEASE_SECONDS",
            "abc",
            config.lease_seconds,
            "invalid GATEKEEPER_LEASE_SECONDS='abc': expected a number",
        ),
        (
            "GATEKEEPER_LEASE_SECONDS",
            "nan",
            config.lease_seconds,
            "invalid GATEKEEPER_LEASE_SECONDS='nan': expected a number",
        ),
        (
            "GATEKEEPER_LEASE_SECONDS",
            "0",
            config.lease_seconds,
            "invalid GATEKEEPER_LEASE_SECONDS=",
        ),
        (
            "GATEKEEPER_TIMEZONE",
            "Mars/Olympus",
            config.timezone,
            "invalid GATEKEEPER_TIMEZONE='Mars",
        ),
        ("GATEKEEPER_LATENESS", "-2h", config.lateness, "invalid GATEKEEPER_LATENESS='-2h'"),
        ("GATEKEEPER_LATENESS", "soon", config.lateness, "invalid GATEKEEPER_LATENESS='soon'"),
        (
            "GATEKEEPER_OPENLINEAGE_TIMEOUT",
            "1e9",
            integration_config.openlineage_timeout,
            "invalid GATEKEEPER_OPENLINEAGE_TIMEOUT=",
        ),
        (
            "GATEKEEPER_OPENLINEAGE",
            "maybe",
            integration_config.openlineage,
            "invalid GATEKEEPER_OPENLINEAGE=",
        ),
        (
            "GATEKEEPER_DATABRICKS_MAX_PAGES",
            "0",
            integration_config.databricks_max_pages,
            "invalid GATEKEEPER_DATABRICKS_MAX_PAGES=0: expected an integer from 1 to 1000000",
        ),
        (
            "GATEKEEPER_DATABRICKS_MAX_PAGES",
            "1e3",
            integration_config.databricks_max_pages,
            "invalid GATEKEEPER_DATABRICKS_MAX_PAGES='1e3'",
        ),
        (
            "GATEKEEPER_DATABRICKS_TIME_BUDGET",
            "-1",
            integration_config.databricks_time_budget,
            "invalid GATEKEEPER_DATABRICKS_TIME_BUDGET=-1.0: expected seconds > 0",
        ),
    ],
)
def test_config_bad_env_value_names_the_variable(
    variable: str,
    value: str,
    read: Callable[[], Any],
    message: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(variable, value)
    with pytest.raises(gk.InvalidInput, match="^" + message.replace("(", r"\(")) as caught:
        read()
    assert caught.value.field == variable


def test_config_bad_env_lease_fails_the_task_before_anything_is_written(
    sqlite_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
    with cfg_options(ledger_url=sqlite_url, lease_seconds="30"):
        monkeypatch.setenv("GATEKEEPER_LEASE_SECONDS", "0")
        failures = failures_of(Trivial(business_date=dt.date(2026, 10, 23)))
    assert len(failures) == 1 and "invalid GATEKEEPER_LEASE_SECONDS=0" in failures[0], failures
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


@pytest.mark.process
@pytest.mark.oldest
def test_config_bad_env_value_refused_by_luigi_and_the_cli(tmp_path: Path) -> None:
    """The real commands: a non-zero exit naming the variable and the value, no ledger made."""
    cfg = write_cfg(tmp_path, ledger_url=url_of(tmp_path, "cfg"))
    bad = {"GATEKEEPER_LEASE_SECONDS": "abc"}
    done = run_task(tmp_path, cfg, env=bad)
    assert done.returncode != 0
    assert "invalid GATEKEEPER_LEASE_SECONDS='abc'" in done.stderr + done.stdout
    shown = gatekeeper(
        "history", "Trivial", cwd=tmp_path, env={"LUIGI_CONFIG_PATH": str(cfg), **bad}
    )
    assert shown.returncode == 2 and "Traceback" not in shown.stderr, shown.stderr
    assert "invalid GATEKEEPER_LEASE_SECONDS='abc': expected a number" in shown.stderr
    assert list(tmp_path.glob("*.db")) == []


def test_config_environment_probe_follows_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cheap fingerprint the cache compares changes with every GATEKEEPER_* change."""
    probe = config._environment_probe()
    seen = [probe()]
    for value in ("a", "b", ""):
        monkeypatch.setenv("GATEKEEPER_TIMEZONE", value)
        seen.append(probe())
    monkeypatch.delenv("GATEKEEPER_TIMEZONE")
    seen.append(probe())
    assert len(set(seen[:-1])) == 4 and seen[-1] == seen[0]


@pytest.mark.postgres
@pytest.mark.process
def test_ledger_url_precedence_on_postgresql(tmp_path: Path) -> None:
    """Two PostgreSQL ledgers, one in luigi.cfg and one in ``GATEKEEPER_LEDGER_URL``: the task
    writes to the environment's, the CLI reads that one, and the luigi.cfg one is left as it
    was; then ``--gatekeeper-ledger-url``/``--ledger`` beat both."""
    with fresh_pg_schema() as cfg_url, fresh_pg_schema() as env_url, fresh_pg_schema() as flag_url:
        for url in (cfg_url, env_url, flag_url):
            gk.open_ledger(url).close()  # created, so each one's snapshot can be compared
        with gk.open_ledger(cfg_url) as ledger:
            untouched = snapshot(ledger)
        cfg = write_cfg(tmp_path, ledger_url=cfg_url)
        env = {"GATEKEEPER_LEDGER_URL": env_url}
        for flags, wanted in (((), env_url), (("--gatekeeper-ledger-url", flag_url), flag_url)):
            done = run_task(tmp_path, cfg, *flags, env=env)
            assert done.returncode == 0, done.stderr[-2000:]
            cli = ("--ledger", flag_url) if flags else ()
            assert_cli_reads_the_task(wanted, tmp_path, cfg, env, *cli)
        with gk.open_ledger(cfg_url) as ledger:
            assert snapshot(ledger) == untouched
