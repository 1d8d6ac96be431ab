"""gatekeeper/luigi/fill/wire.py over compat's DirectRpc: a chunk's reports to a real luigid on
one keep-alive connection, and Luigi's own client wherever that would not be exactly what
Luigi sends."""

from __future__ import annotations

import json
import socket
from typing import Any

import luigi.rpc
import luigi.scheduler
import pytest

from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi.compat import DirectRpc, LuigiInternalMissing, direct_target
from gatekeeper.luigi.fill.wire import SchedulerWire
from tests.helpers.luigid_support import HOST, Luigid

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi


def report(period: str, status: str = "DONE") -> dict[str, Any]:
    return {
        "task_id": f"Wired_{period}",
        "worker": "wire-test",
        "family": "Wired",
        "module": "tests.wired",
        "params": {"business_date": period},
        "resources": {},
        "status": status,
        "runnable": False,
        "expl": json.dumps(f"filled {period}"),
    }


def listed(server: Luigid, status: str = "DONE") -> list[str]:
    found = server.rpc("task_list", status=status, search="Wired")
    return sorted(task["params"]["business_date"] for task in found.values())


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


@pytest.mark.process
@pytest.mark.oldest
def test_reports_reach_luigid_over_one_connection(luigid: Luigid) -> None:  # noqa: F811
    wire = SchedulerWire(luigi.rpc.RemoteScheduler(f"http://{HOST}:{luigid.port}/"))
    assert wire.direct is not None and wire.direct.target == (HOST, luigid.port, "")
    for day in ("2026-01-01", "2026-01-02", "2026-01-03"):
        assert wire.call("add_task", report(day)) is None  # add_task answers null
    connection = wire.direct.connection
    wire.call(
        "set_task_status_message", {"task_id": "Wired_2026-01-03", "status_message": "working"}
    )
    assert wire.direct.connection is connection is not None  # kept alive, not reopened
    wire.close()
    assert listed(luigid) == ["2026-01-01", "2026-01-02", "2026-01-03"]
    assert luigid.rpc("get_task_status_message", task_id="Wired_2026-01-03") == {
        "taskId": "Wired_2026-01-03",
        "statusMessage": "working",
    }
    # the explanation arrives as Luigi's client would send it (a JSON string)
    assert luigid.rpc("fetch_error", task_id="Wired_2026-01-02")["error"] == ('"filled 2026-01-02"')


@pytest.mark.process
@pytest.mark.oldest
def test_a_call_the_wire_cannot_deliver_goes_through_luigis_client(luigid: Luigid) -> None:  # noqa: F811
    wire = SchedulerWire(luigi.rpc.RemoteScheduler(f"http://{HOST}:{luigid.port}"))
    wire.direct = DirectRpc((HOST, closed_port(), ""))  # nothing listens: connection refused
    wire.call("add_task", report("2026-02-01", "FAILED"))
    assert wire.direct.connection is None
    assert listed(luigid, "FAILED") == ["2026-02-01"]


@pytest.mark.process
@pytest.mark.oldest
def test_luigid_answering_an_error_falls_back(luigid: Luigid) -> None:  # noqa: F811
    wire = SchedulerWire(luigi.rpc.RemoteScheduler(f"http://{HOST}:{luigid.port}"))
    wire.direct = DirectRpc((HOST, luigid.port, "/no/such/prefix"))  # luigid answers 404
    wire.call("add_task", report("2026-03-01"))
    assert listed(luigid) == ["2026-03-01"]


@pytest.mark.parametrize(
    "url, expected",
    [
        ("http://127.0.0.1:8082", ("127.0.0.1", 8082, "")),
        ("http://luigid.internal", ("luigid.internal", 80, "")),
        ("http://127.0.0.1:8082/luigi/", ("127.0.0.1", 8082, "/luigi")),
        ("https://127.0.0.1:8082", None),  # TLS: certificates as requests checks them
        ("http+unix://%2Ftmp%2Fluigid.sock", None),
        ("http://user:secret@127.0.0.1:8082", None),  # credentials: requests sends them
        ("http://127.0.0.1:notaport", None),
        ("", None),
        (None, None),
    ],
)
def test_direct_only_where_it_is_what_luigi_sends(url: str | None, expected: Any) -> None:
    assert direct_target(url) == expected


def test_a_configured_proxy_keeps_reports_on_luigis_client(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("http_proxy", "http://proxy.example:3128")
    monkeypatch.setenv("no_proxy", "localhost")
    assert direct_target("http://luigid.internal:8082") is None
    assert direct_target("http://localhost:8082") == ("localhost", 8082, "")


def test_remote_scheduler_url_is_read_from_luigis_client() -> None:
    assert (
        luigi_compat.remote_scheduler_url(luigi.rpc.RemoteScheduler("http://127.0.0.1:8082/"))
        == "http://127.0.0.1:8082"
    )
    assert luigi_compat.remote_scheduler_url(luigi.scheduler.Scheduler()) is None
    client = luigi.rpc.RemoteScheduler("http://127.0.0.1:8082")
    del client._url
    with pytest.raises(LuigiInternalMissing, match="RemoteScheduler._url"):
        luigi_compat.remote_scheduler_url(client)
