"""OpenLineage events and warnings carry no ledger password and no collector credential; an
error with control characters travels as given, JSON-escaped (the real ``luigi`` command,
openlineage-python's HTTP transport, a local receiver, a PostgreSQL ledger whose URL has a
password)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli_secrets import PW, with_password
from tests.helpers.ledgers import PG_DSN, drop_pg_schema, require_pg
from tests.helpers.lineage_receiver import Receiver
from tests.integrations.test_lineage import WARNING, assert_valid, lineage_config, run_luigi

HOSTILE = "\x1b]0;pwned\x07disk\rfull abc\u202egnp.exe"
TASK = ("--module", "tests.helpers.luigi_tasks", "Controlled", "--business-date", "2026-10-23")


@pytest.fixture
def pg_url_with_password() -> Iterator[str]:
    require_pg()
    schema = f"gk_lineage_{uuid.uuid4().hex[:10]}"
    try:
        yield with_password(PG_DSN, query=f"schema={schema}")
    finally:
        drop_pg_schema(schema)


@pytest.mark.postgres
def test_lineage_events_carry_no_ledger_password_and_the_error_as_given(
    pg_url_with_password: str, tmp_path: Path
) -> None:
    cfg = lineage_config(tmp_path, pg_url_with_password)
    (tmp_path / "fail").write_bytes(HOSTILE.encode("utf-8"))
    with Receiver() as receiver:
        done, _ = run_luigi(cfg, *TASK, "--control", str(tmp_path), url=receiver.url)
        events = receiver.received()
    assert done.returncode == 30, done.stderr
    assert_valid(events)
    assert [e["eventType"] for e in events] == ["START", "FAIL"]
    assert PW not in json.dumps(events) and PW not in done.stdout + done.stderr
    message = events[1]["run"]["facets"]["errorMessage"]["message"]
    assert message == f"RuntimeError: {HOSTILE}"


def test_lineage_transport_warning_masks_the_collector_password(
    sqlite_url: str, tmp_path: Path
) -> None:
    """openlineage-python quotes the URL it could not use (here: a port that is not a
    number); gatekeeper's one warning shows it with ``***`` for the password."""
    cfg = lineage_config(tmp_path, sqlite_url, openlineage_timeout="5")
    done, _ = run_luigi(cfg, *TASK, url=f"http://lineage:{PW}@127.0.0.1:notaport")
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(WARNING) == 1, done.stderr
    warning = next(line for line in done.stderr.splitlines() if WARNING in line)
    assert "http://lineage:***@127.0.0.1:notaport" in warning, warning
    assert PW not in done.stdout + done.stderr
