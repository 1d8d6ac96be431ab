"""Durable by default: every connection a SQLite ledger opens commits with ``synchronous=FULL``
(2); ``?synchronous=normal`` (1) is the operator's explicit choice, anything else is refused
with nothing created. Read through SQLite's own ``PRAGMA synchronous`` on the real ledger's
connections."""

from __future__ import annotations

from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.luigi.lease import heartbeat_ledger
from gatekeeper.luigi.tasks import shared_ledger
from tests.helpers.cli import gatekeeper
from tests.helpers.ledgers import T0

FULL, NORMAL = 2, 1


def synchronous(ledger: gk.Ledger) -> int:
    return int(ledger.connection.execute("PRAGMA synchronous").fetchone()[0])


def test_sqlite_ledger_connections_commit_with_synchronous_full(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with gk.open_ledger(url) as ledger:
        assert synchronous(ledger) == FULL
        ledger.record("A", "2026-10-23", 1, "r1", "running", T0)
        ledger.sql.close()  # a dropped connection is reopened on next use: FULL again
        ledger.record("A", "2026-10-23", 1, "r1", "succeeded", T0)
        assert synchronous(ledger) == FULL
    heartbeat, task = heartbeat_ledger(url), shared_ledger(url)
    try:
        assert synchronous(heartbeat) == FULL  # the lease heartbeat's own connection
        assert synchronous(task) == FULL  # the one a task's attempts are recorded on
    finally:
        heartbeat.close()
        task.close()
    with gk.open_ledger(url, create=False) as reader:  # read-only: nothing to commit, same
        assert synchronous(reader) == FULL


@pytest.mark.parametrize(
    ("option", "expected"),
    [("normal", NORMAL), ("NORMAL", NORMAL), ("full", FULL), ("Full", FULL)],
)
def test_sqlite_ledger_synchronous_option_is_the_operators_choice(
    tmp_path: Path, option: str, expected: int
) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}?synchronous={option}"
    with gk.open_ledger(url) as ledger:
        assert synchronous(ledger) == expected
        ledger.record("A", "2026-10-23", 1, "r1", "succeeded", T0)
    heartbeat = heartbeat_ledger(url)
    try:
        assert synchronous(heartbeat) == expected
    finally:
        heartbeat.close()


@pytest.mark.parametrize("value", ["off", "extra", "2", "", "full,normal"])
def test_sqlite_ledger_synchronous_other_values_are_refused_creating_nothing(
    tmp_path: Path, value: str
) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}?synchronous={value}"
    with pytest.raises(gk.InvalidInput) as caught:
        gk.open_ledger(url)
    assert caught.value.field == "ledger_url.synchronous" and caught.value.value == value
    assert list(tmp_path.iterdir()) == []


def test_sqlite_ledger_synchronous_bad_value_from_the_cli_is_one_line(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'ledger.db'}?synchronous=off"
    done = gatekeeper("record", "A", "2026-10-23", "1", "r1", "succeeded", "--ledger", url)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "ledger_url.synchronous='off'" in done.stderr and "--ledger" in done.stderr
    assert list(tmp_path.iterdir()) == []
