"""A ledger URL's password never reaches a terminal, a log or a file: it is shown as ``***``.

Every path that prints or describes a URL, through the ``gatekeeper`` command in process
(its stdout and stderr as a process's; SQLite files in tmp_path, real PostgreSQL schemas; the
test server trusts local connections, so a URL with a password opens it). Refusals also write
nothing.
"""

from __future__ import annotations

import json
import traceback
import uuid
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import PG_DSN, drop_pg_schema, require_pg

PW = "s3cr3t-PW"
D = "2026-10-01"


def with_password(dsn: str, password: str = PW, query: str = "") -> str:
    """``dsn`` (the test server) with ``password`` in its userinfo and ``query`` as its query."""
    parts = urlsplit(dsn)
    user = parts.username or "postgres"
    netloc = f"{user}:{password}@{parts.hostname}:{parts.port or 5432}"
    return urlunsplit(parts._replace(netloc=netloc, query=query))


def schema_exists(schema: str) -> bool:
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        found = conn.execute(
            "SELECT 1 FROM information_schema.schemata WHERE schema_name = %s", (schema,)
        ).fetchall()
    return bool(found)


def files_in(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def assert_never_shown(done: object, *texts: str) -> None:
    """The password appears in none of ``texts`` nor the process's stdout and stderr."""
    out = f"{getattr(done, 'stdout', '')}{getattr(done, 'stderr', '')}"
    for text in (out, *texts):
        assert PW not in text, text


@pytest.fixture
def pg_secret_schema() -> Iterator[str]:
    """A schema name nobody created (dropped afterwards if a test created it)."""
    require_pg()
    schema = f"gk_secret_{uuid.uuid4().hex[:10]}"
    try:
        yield schema
    finally:
        drop_pg_schema(schema)


# -- refusals of a bad URL: exit 2, one line naming the source, *** for the password ---------
BAD_PG_QUERIES = {
    "bad schema": "schema=bad-name",
    "busy_timeout": "schema={schema}&busy_timeout=abc",
    "two schemas": "schema={schema}&schema=other",
    "reconnect_window": "schema={schema}&reconnect_window=-1",
}


@pytest.mark.postgres
@pytest.mark.parametrize("where", ["--ledger", "env"])
@pytest.mark.parametrize("case", sorted(BAD_PG_QUERIES))
def test_cli_bad_postgres_url_error_masks_the_password(
    tmp_path: Path, pg_secret_schema: str, case: str, where: str
) -> None:
    url = with_password(PG_DSN, query=BAD_PG_QUERIES[case].format(schema=pg_secret_schema))
    args, env = ["record", "A", D, "1", "r1", "succeeded"], {}
    if where == "--ledger":
        args += ["--ledger", url]
    else:
        env["GATEKEEPER_LEDGER_URL"] = url
    done = gatekeeper(*args, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("gatekeeper: InvalidInput: invalid ledger_url")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert_never_shown(done)
    source = "--ledger" if where == "--ledger" else "$GATEKEEPER_LEDGER_URL"
    assert f"given by {source} postgresql://postgres:***@" in done.stderr, done.stderr
    assert not schema_exists(pg_secret_schema) and files_in(tmp_path) == set()


BAD_URLS = {
    "typo'd scheme": f"postgresq://u:{PW}@h/db",
    "unparseable host": f"postgresql://u:{PW}@[::1/db",
    "no //": f"postgresql:u:{PW}@h/db",
    "libpq keywords": f"host=h user=u password={PW} dbname=db",
    "sqlite password option": f"sqlite:///ledger.db?password={PW}",
}


@pytest.mark.parametrize("json_output", [False, True], ids=["text", "json"])
@pytest.mark.parametrize("case", sorted(BAD_URLS))
def test_cli_malformed_url_error_never_shows_the_password(
    tmp_path: Path, case: str, json_output: bool
) -> None:
    flags = ["--json"] if json_output else []
    done = gatekeeper("history", "A", "--ledger", BAD_URLS[case], *flags, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "invalid ledger_url" in done.stderr and "***" in done.stderr, done.stderr
    assert_never_shown(done)
    if json_output:
        error = json.loads(done.stdout)
        assert error["error"] == "InvalidInput" and "***" in error["message"]
    assert files_in(tmp_path) == set()


def test_cli_luigi_cfg_url_error_masks_the_password(tmp_path: Path) -> None:
    (tmp_path / "luigi.cfg").write_text(
        f"[gatekeeper]\nledger_url = postgresql://u:{PW}@h/db?schema=bad-name\n"
    )
    done = gatekeeper("record", "A", D, "1", "r1", "succeeded", "--json", cwd=tmp_path)
    assert done.returncode == 2
    assert "given by [gatekeeper] ledger_url postgresql://u:***@h/db" in done.stderr
    assert_never_shown(done)
    assert files_in(tmp_path) == {"luigi.cfg"}


def test_cli_luigi_cfg_interpolation_error_never_quotes_the_password(tmp_path: Path) -> None:
    """configparser quotes what follows a stray ``%`` (here: part of the password)."""
    (tmp_path / "luigi.cfg").write_text(f"[gatekeeper]\nledger_url = postgresql://u:{PW}%zz@h/db\n")
    done = gatekeeper("history", "A", cwd=tmp_path)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert "gatekeeper.ledger_url='postgresql://u:***@h/db'" in done.stderr
    assert "write %% for a literal %" in done.stderr
    assert_never_shown(done)
    assert "zz@" not in done.stderr
    assert files_in(tmp_path) == {"luigi.cfg"}


def test_open_ledger_error_value_holds_the_redacted_url(tmp_path: Path) -> None:
    with pytest.raises(gk.InvalidInput) as caught:
        gk.open_ledger(f"postgresq://u:{PW}@h/db")
    assert caught.value.value == "postgresq://u:***@h/db"
    assert PW not in str(caught.value)


# -- a ledger that opens: describe, messages that name it, the report --------------------------
@pytest.mark.postgres
def test_ledger_describe_and_cli_messages_mask_the_password(
    tmp_path: Path, pg_secret_schema: str
) -> None:
    url = with_password(PG_DSN, query=f"schema={pg_secret_schema}")
    with gk.open_ledger(url) as ledger:
        assert ledger.describe() == (
            f"postgresql {urlsplit(PG_DSN).hostname}:{urlsplit(PG_DSN).port or 5432}"
            f"{urlsplit(PG_DSN).path} schema {pg_secret_schema}"
        )
    runs = [
        gatekeeper("jobs", "--ledger", url),  # "no jobs in the ledger <describe>"
        gatekeeper(
            "history", "Nope", "--ledger", url, "--allow-unknown"
        ),  # "no such job ... (<describe>)"
        gatekeeper("record", "A", D, "1", "r1", "failed", "--ledger", url, "--json"),
        gatekeeper("history", "A", "--ledger", url, "--json"),
    ]
    assert [r.returncode for r in runs] == [0, 1, 0, 0], [r.stderr for r in runs]
    assert "schema " + pg_secret_schema in runs[0].stdout + runs[1].stdout
    report = tmp_path / "report.html"
    done = gatekeeper(
        "report", "A", "--start", D, "--stop", "2026-10-03", "--now", "2026-10-05T00:00:00+00:00",
        "--timezone", "UTC", "--output", str(report), "--ledger", url,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    for run in (*runs, done):
        assert_never_shown(run, report.read_text())


@pytest.mark.postgres
def test_ledger_unopenable_url_error_masks_what_libpq_quotes(pg_secret_schema: str) -> None:
    """libpq quotes a password it cannot decode; neither the message nor the driver error it
    was raised from (which a traceback prints) shows it."""
    url = with_password(
        PG_DSN, password=f"p%zz{PW}", query=f"schema={pg_secret_schema}&reconnect_window=0"
    )
    with pytest.raises(gk.LedgerError) as caught:
        gk.open_ledger(url)
    assert "percent-encoded" in str(caught.value)
    assert PW not in "".join(traceback.format_exception(caught.value))
    done = gatekeeper("history", "A", "--ledger", url)
    assert done.returncode == 4 and "LedgerError" in done.stderr, done.stderr
    assert_never_shown(done)
    assert not schema_exists(pg_secret_schema)
