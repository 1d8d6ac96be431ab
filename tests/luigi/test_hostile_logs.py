"""What gatekeeper logs while Luigi runs its tasks shows no password and no raw control
character: a range over a task whose error retitles the terminal, and ranges whose ledger URL
carries a password (the real ``luigi`` command, a local scheduler; PostgreSQL where a URL with a
password is involved)."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.cli.test_cli_secrets import PW, with_password
from tests.helpers.ledgers import PG_DSN, drop_pg_schema, require_pg
from tests.helpers.luigi_support import run_luigi, write_config

NOW_S = str(int(dt.datetime(2026, 11, 30, tzinfo=dt.timezone.utc).timestamp()))
HOSTILE = "\x1b]0;pwned\x07disk\rfull abc\u202egnp.exe"


def range_cmd(folder: Path) -> tuple[str, ...]:
    return (
        "--module", "tests.helpers.luigi_tasks", "RangeBusinessDaily", "--of", "Controlled",
        "--of-params", f'{{"control": "{folder}"}}', "--start", "2026-10-01",
        "--stop", "2026-10-04", "--now", NOW_S,
    )  # fmt: skip


def gatekeeper_lines(output: str) -> list[str]:
    """The lines gatekeeper logged (Luigi's own, such as its traceback, are Luigi's)."""
    return [line for line in output.split("\n") if "gatekeeper: " in line]


@pytest.fixture
def pg_schema_with_password() -> Iterator[str]:
    require_pg()
    schema = f"gk_logs_{uuid.uuid4().hex[:10]}"
    try:
        yield schema
    finally:
        drop_pg_schema(schema)


def test_luigi_range_logs_a_hostile_error_escaped(sqlite_url: str, tmp_path: Path) -> None:
    cfg = write_config(tmp_path, sqlite_url)
    (tmp_path / "fail-2026-10-02").write_bytes(HOSTILE.encode("utf-8"))
    done = run_luigi(cfg, *range_cmd(tmp_path), cwd=tmp_path)
    assert done.returncode == 30, done.stderr
    lines = gatekeeper_lines(done.stdout + done.stderr)
    closing = [line for line in lines if "failed at 2026-10-02" in line]
    # the closing line keeps the message on one line (\r is a blank there), the rest escaped
    assert closing and "\\x1b]0;pwned\\x07disk full abc\\u202egnp.exe" in closing[0], lines
    for line in lines:
        assert not any(char in line for char in "\x1b\x07\r\u202e"), ascii(line)
    with gk.open_ledger(sqlite_url) as ledger:  # stored as given
        assert ledger.latest("Controlled", "2026-10-02").error == f"RuntimeError: {HOSTILE}"  # type: ignore[union-attr]


@pytest.mark.postgres
@pytest.mark.parametrize("query", ["schema={schema}", "schema={schema}&busy_timeout=abc"])
def test_luigi_range_never_logs_the_ledger_password(
    tmp_path: Path, pg_schema_with_password: str, query: str
) -> None:
    url = with_password(PG_DSN, query=query.format(schema=pg_schema_with_password))
    cfg = write_config(tmp_path, url)
    (tmp_path / "fail-2026-10-02").touch()
    done = run_luigi(cfg, *range_cmd(tmp_path), cwd=tmp_path)
    assert done.returncode in (30, 35), done.stderr  # the task failed; the URL was refused
    assert PW not in done.stdout + done.stderr
    if "busy_timeout" in query:
        assert "ledger_url.busy_timeout" in done.stdout + done.stderr
