"""Every command refuses the same way: ``abandon`` suggests the closest job as the others do
(exit 2, nothing written); a negative duration given as a flag's value is that flag's value,
refused for being negative (not an argparse usage dump); a period key of another kind than
the job's is refused naming the job's kind; a read-only command gives up on a database it
cannot reach at once (``connect_timeout`` 5, no reconnect window) with a one-line message,
while a task's ledger keeps its reconnect window. In-process ``gatekeeper`` on real
ledgers."""

from __future__ import annotations

import socket
from collections.abc import Iterator

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from gatekeeper.cli.output import READ_ONLY_WAITS, Parser, open_cli_ledger
from tests.helpers.ledgers import T0, snapshot

D = "2026-10-23"
HOUR = "2026-10-23T05:00:00+00:00"


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def sales(sqlite_url: str) -> Iterator[gk.Ledger]:
    """``Load`` (daily, running on D), ``Clicks`` (hourly) and the consumer ``Sales``."""
    with gk.open_ledger(sqlite_url) as ledger:
        ledger.begin_attempt("Load", D, "run-1", lease_seconds=3600)
        ledger.record("Clicks", HOUR, 1, "c-1", "succeeded", T0)
        ledger.record("Up", D, 1, "u-1", "succeeded", T0)
        ledger.publish("Sales", D, ["Up"], "fp-1")
        yield ledger


def test_abandon_suggests_the_closest_job_and_writes_nothing(
    sales: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    url = sales.url
    before = snapshot(sales)
    code, out, err = run(capsys, "--ledger", url, "abandon", "Lood", D, "--reason", "x")
    assert code == 2, out + err
    assert "InvalidInput: no such job 'Lood' (did you mean 'Load'?) in the ledger" in err
    assert "--allow-unknown" not in err  # abandon has no such option
    assert snapshot(sales) == before


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("status", "Load", "--lateness", "-2h"), "invalid lateness='-2h': negative"),
        (("report", "Load", "-o", "r.html", "--lateness", "-2h"), "invalid lateness='-2h'"),
        (("serve", "--window", "-2h"), "invalid window='-2h': negative; expected a positive"),
        (("status", "Load", "--start", "-1"), "invalid start='-1'"),
    ],
)
def test_a_negative_flag_value_is_the_flags_value_refused_plainly(
    sales: gk.Ledger, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], said: str
) -> None:
    code, out, err = run(capsys, "--ledger", sales.url, *args)
    assert code == 2, out + err
    assert said in err and err.count("\n") == 1, err
    assert "usage:" not in err


@pytest.mark.parametrize(
    ("given", "joined"),
    [
        (["status", "J", "--lateness", "-2h"], ["status", "J", "--lateness=-2h"]),
        (["serve", "--window", "-.5d"], ["serve", "--window=-.5d"]),
        (["status", "J", "--lateness", "2h"], ["status", "J", "--lateness", "2h"]),
        (["status", "--json", "-2h"], ["status", "--json", "-2h"]),  # --json takes no value
        (["status", "--", "--lateness", "-2h"], ["status", "--", "--lateness", "-2h"]),
        (["status", "J", "--lateness"], ["status", "J", "--lateness"]),
    ],
)
def test_parser_joins_only_a_value_taking_option_and_its_negative_value(
    given: list[str], joined: list[str]
) -> None:
    from gatekeeper.cli import build_parser

    build_parser()  # registers the options of every command
    assert Parser.joined(given) == joined


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("evidence", "Sales", HOUR), "Sales is a daily job: expected a daily period"),
        (("history", "Load", HOUR), "Load is a daily job: expected a daily period such as "),
        (("ready", HOUR, "Up"), "Up is a daily job"),
        (("stale", "Sales", "--since", "2026-10"), "got a monthly one"),
        (("history", "Clicks", D), "Clicks is an hourly job: expected an hourly period such as"),
        (("abandon", "Load", HOUR, "--reason", "x"), "Load is a daily job"),
    ],
)
def test_a_key_of_another_kind_is_refused_naming_the_jobs_kind(
    sales: gk.Ledger, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], said: str
) -> None:
    before = snapshot(sales)
    code, out, err = run(capsys, "--ledger", sales.url, *args)
    assert code == 2, out + err
    assert said in err, err
    assert snapshot(sales) == before
    (attempt,) = sales.attempts("Load", D)
    assert attempt.state is gk.RunState.RUNNING  # abandon refused: still running


def test_a_key_of_the_jobs_kind_is_still_answered(
    sales: gk.Ledger, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "--ledger", sales.url, "history", "Clicks", HOUR)
    assert code == 0 and "c-1" in out
    code, out, _ = run(capsys, "--ledger", sales.url, "evidence", "Sales", "2026-10-24")
    assert code == 1 and "Sales 2026-10-24: not published" in out


def closed_port() -> int:
    """A local TCP port nothing listens on (bound, then closed)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("command", [("status", "X"), ("history", "X"), ("jobs",)])
def test_read_only_command_gives_up_on_an_unreachable_database_in_one_line(
    capsys: pytest.CaptureFixture[str], command: tuple[str, ...]
) -> None:
    pytest.importorskip("psycopg")
    url = f"postgresql://postgres@127.0.0.1:{closed_port()}/test"
    code, out, err = run(capsys, "--ledger", url, *command)
    assert code == 4, out + err
    assert err.startswith("gatekeeper: LedgerError: cannot open ledger postgresql 127.0.0.1:")
    assert err.count("\n") == 1 and "\\n" not in err and "\\t" not in err, err
    assert "reconnect_window" not in err  # given up at once: no outage ridden out


@pytest.mark.postgres
def test_read_only_ledgers_wait_5s_to_connect_and_tasks_keep_their_reconnect_window(
    pg_ledger_url: str,
) -> None:
    pytest.importorskip("psycopg")
    with gk.open_ledger(pg_ledger_url) as task:  # what a task opens
        assert "connect_timeout=10" in task.sql.dialect.conninfo  # type: ignore[attr-defined]
        assert task.sql.reconnect_window == 30
    assert READ_ONLY_WAITS == {"connect_timeout": 5.0, "reconnect_window": 0.0}
    with open_cli_ledger(pg_ledger_url, create=False) as read_only:
        assert "connect_timeout=5" in read_only.sql.dialect.conninfo  # type: ignore[attr-defined]
        assert read_only.sql.reconnect_window == 0
        assert read_only.db_now().tzinfo is not None  # it connected and reads
    own = f"{pg_ledger_url}&connect_timeout=20&reconnect_window=7"  # the URL's own win
    with open_cli_ledger(own, create=False) as read_only:
        assert "connect_timeout=20" in read_only.sql.dialect.conninfo  # type: ignore[attr-defined]
        assert "connect_timeout=5" not in read_only.sql.dialect.conninfo  # type: ignore[attr-defined]
        assert read_only.sql.reconnect_window == 7
