"""A read-only command never creates, migrates or writes a ledger: a PostgreSQL schema that is
not there (a ``?schema=salesdem0`` typo) is refused by every command that only reads, with
nothing created; only a command that writes creates it. On both backends: an older schema is
refused and left as it is, and a read-only ledger refuses a transaction."""

from __future__ import annotations

import contextlib
import datetime as dt
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.cli.test_read_only_sqlite import COMMANDS
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import PG_DSN, pg_url, snapshot

D = "2026-10-23"
T = dt.datetime(2026, 10, 23, 7, tzinfo=dt.timezone.utc)


def schemas_named(name: str) -> int:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM information_schema.schemata WHERE schema_name = %s", (name,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def tables_in(name: str) -> int:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = %s", (name,)
        ).fetchone()
    assert row is not None
    return int(row[0])


def read_only(command: str, url: str, out: Path) -> tuple[int, str]:
    args = [a.replace("{out}", str(out)) for a in COMMANDS[command][0]]
    done = gatekeeper(command, *args, "--ledger", url, cwd=out)
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 0 or done.stderr.count("\n") == 1, done.stderr
    return done.returncode, done.stderr


@pytest.mark.postgres
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_read_only_command_refuses_an_absent_postgres_schema_creating_nothing(
    tmp_path: Path, pg_schema: str, command: str
) -> None:
    code, err = read_only(command, pg_url(pg_schema), tmp_path)
    assert code == 2, err
    assert f"invalid ledger_url.schema='{pg_schema}'" in err
    assert "does not exist" in err and "nothing was created" in err
    assert "given by --ledger)" in err and "postgresql://" not in err  # no URL, no password
    assert schemas_named(pg_schema) == 0
    assert list(tmp_path.iterdir()) == []  # the report wrote nothing either


@pytest.mark.postgres
def test_read_only_command_refuses_a_postgres_schema_without_a_ledger(
    tmp_path: Path, pg_schema: str
) -> None:
    import psycopg

    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{pg_schema}"')
    for command in ("status", "jobs", "history"):
        code, err = read_only(command, pg_url(pg_schema), tmp_path)
        assert code == 2, err
        assert f"ledger_url.schema='{pg_schema}'" in err and "holds no gatekeeper ledger" in err
    assert tables_in(pg_schema) == 0


@pytest.mark.postgres
def test_read_only_command_names_the_closest_postgres_ledger(
    tmp_path: Path, pg_schema: str
) -> None:
    record = ("record", "A", D, "1", "r1", "succeeded", "--ledger", pg_url(pg_schema))
    assert gatekeeper(*record, cwd=tmp_path).returncode == 0  # a writer creates the ledger
    assert schemas_named(pg_schema) == 1
    typo = pg_schema[:-1] + ("0" if pg_schema[-1] != "0" else "1")
    code, err = read_only("jobs", pg_url(typo), tmp_path)
    assert code == 2 and f"(closest: {pg_schema}" in err, err
    assert schemas_named(typo) == 0
    done = gatekeeper("history", "A", "--ledger", pg_url(pg_schema), cwd=tmp_path)
    assert done.returncode == 0 and "r1" in done.stdout, done.stderr


def make_older(ledger: gk.Ledger) -> None:
    """Take the ledger back to schema version 5 (before the complete runs)."""
    with ledger.transaction():
        ledger.execute("DROP TABLE gk_complete_runs")
        ledger.execute("UPDATE gk_schema SET version = 5")


def test_read_only_command_refuses_an_older_schema_migrating_nothing(
    tmp_path: Path, ledger_url: str
) -> None:
    with gk.open_ledger(ledger_url) as ledger:
        ledger.record("A", D, 1, "r1", "succeeded", T)
        make_older(ledger)
    for command in ("status", "history"):
        code, err = read_only(command, ledger_url, tmp_path)
        assert code == 4, err
        assert "schema version 5" in err and "migrates nothing" in err
    assert raw_version(ledger_url) == 5
    record = ("record", "A", D, "2", "r2", "succeeded", "--ledger", ledger_url)
    assert gatekeeper(*record, cwd=tmp_path).returncode == 0  # a writer migrates it
    done = gatekeeper("history", "A", "--ledger", ledger_url, cwd=tmp_path)
    assert done.returncode == 0 and "r1" in done.stdout and "r2" in done.stdout, done.stderr
    assert raw_version(ledger_url) > 5


def raw_version(url: str) -> int:
    """The ledger's schema version, read on a driver connection (gatekeeper would migrate)."""
    if url.startswith("sqlite:///"):
        import sqlite3

        with contextlib.closing(sqlite3.connect(url[len("sqlite:///") :])) as conn:
            return int(conn.execute("SELECT version FROM gk_schema").fetchone()[0])
    import psycopg

    schema = url.rpartition("schema=")[2]
    with psycopg.connect(PG_DSN, autocommit=True) as conn:
        row = conn.execute(f'SELECT version FROM "{schema}".gk_schema').fetchone()
    assert row is not None
    return int(row[0])


def test_open_ledger_read_only_refuses_a_transaction_writing_nothing(ledger_url: str) -> None:
    with gk.open_ledger(ledger_url) as writer:
        writer.record("A", D, 1, "r1", "succeeded", T)
        before = snapshot(writer)
    with gk.open_ledger(ledger_url, create=False) as reader:
        with pytest.raises(gk.LedgerError, match="opened read-only"):
            reader.record("A", D, 2, "r2", "succeeded", T)
        with pytest.raises(gk.LedgerError, match="opened read-only"), reader.transaction():
            reader.execute("DELETE FROM gk_attempts")
        assert [a.run_id for a in reader.history("A")] == ["r1"]
        assert snapshot(reader) == before
