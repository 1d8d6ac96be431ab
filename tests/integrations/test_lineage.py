"""OpenLineage run events: the real `luigi` command, openlineage-python's real HTTP transport and
a local receiver (tests/helpers/lineage_receiver.py); every event checked against the
OpenLineage spec
(tests/helpers/lineage_schema.py)."""

from __future__ import annotations

import copy
import datetime as dt
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.core.validation import check_lineage_namespace, check_wait_seconds, parse_flag
from gatekeeper.core.version import package_version
from gatekeeper.integrations import lineage
from tests.helpers.ledgers import snapshot
from tests.helpers.lineage_receiver import Receiver, closed_port_url
from tests.helpers.lineage_schema import JOB_FACETS, RUN_FACETS, event_problems
from tests.helpers.luigi_support import (
    configure,
    failures_of,
    luigi_command,
    luigi_env,
    run_command,
    write_config,
)
from tests.helpers.luigi_tasks import Trivial

WARNING = "gatekeeper: OpenLineage:"
PARIS_DAY = ("2026-10-25T00:00:00+02:00", "2026-10-26T00:00:00+01:00")  # 25 hours (DST ends)


def lineage_config(folder: Path, ledger_url: str, **options: str) -> Path:
    """write_config's luigi.cfg plus ``[gatekeeper]`` options."""
    path = write_config(folder, ledger_url)
    lines = "".join(f"{key} = {value}\n" for key, value in options.items())
    path.write_text(path.read_text().replace("[gatekeeper]\n", f"[gatekeeper]\n{lines}", 1))
    return path


def run_luigi(
    cfg: Path, *args: str, url: str | None, enabled: str | None = "true", workers: int = 1
) -> tuple[subprocess.CompletedProcess[str], float]:
    """The `luigi` command with OpenLineage's own configuration (``OPENLINEAGE_URL``) and
    ``GATEKEEPER_OPENLINEAGE``; returns the process and its wall time in seconds."""
    env = {
        k: v
        for k, v in luigi_env(cfg).items()
        if not k.startswith(("OPENLINEAGE", "GATEKEEPER_OPENLINEAGE"))
    }
    env["HOME"] = str(cfg.parent)  # no ~/.openlineage/openlineage.yml from the host
    if url is not None:
        env["OPENLINEAGE_URL"] = url
    if enabled is not None:
        env["GATEKEEPER_OPENLINEAGE"] = enabled
    began = time.monotonic()
    done = run_command(
        luigi_command(*args, "--local-scheduler", "--workers", str(workers)),
        cwd=cfg.parent,
        env=env,
    )
    return done, time.monotonic() - began


def by_job(events: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    grouped: dict[str, list[dict[str, Any]]] = {}
    for event in events:
        grouped.setdefault(event["job"]["name"], []).append(event)
    return grouped


def assert_valid(events: list[dict[str, Any]]) -> None:
    assert events
    for event in events:
        assert event_problems(event) == [], event
        assert set(event["run"]["facets"]) <= set(RUN_FACETS)  # each checked by its own schema
        assert set(event["job"]["facets"]) <= set(JOB_FACETS)


SALES = ("--module", "example_pipelines.sales", "DailySalesLoad", "--business-date", "2026-10-25")


@pytest.mark.slow
def test_lineage_success_start_complete_with_period_publication_and_evidence(
    sqlite_url: str, tmp_path: Path
) -> None:
    cfg = lineage_config(
        tmp_path, sqlite_url, timezone="Europe/Paris", openlineage_namespace="retail"
    )
    with Receiver() as receiver:
        done, _ = run_luigi(cfg, *SALES, url=receiver.url, workers=2)  # forked task processes
        assert done.returncode == 0, done.stderr
        events = receiver.received()
    assert_valid(events)
    assert WARNING not in done.stderr
    jobs = by_job(events)
    assert sorted(jobs) == ["DailySalesLoad", "DimCustomer", "DimProduct"]
    with gk.open_ledger(sqlite_url) as ledger:
        publication = ledger.publication("DailySalesLoad", "2026-10-25")
        runs = {job: ledger.latest(job, "2026-10-25") for job in jobs}
    assert publication is not None
    for job, (start, complete) in jobs.items():
        attempt = runs[job]
        assert attempt is not None
        assert [start["eventType"], complete["eventType"]] == ["START", "COMPLETE"]
        for event in (start, complete):
            assert event["job"]["namespace"] == "retail"
            assert event["run"]["runId"] == str(uuid.UUID(attempt.run_id))
            facets = event["run"]["facets"]
            assert (
                facets["nominalTime"]["nominalStartTime"],
                facets["nominalTime"]["nominalEndTime"],
            ) == PARIS_DAY
            facet = facets["gatekeeper"]
            assert facet["period"] == {
                "kind": "daily",
                "key": "2026-10-25",
                "timezone": "Europe/Paris",
                "start": PARIS_DAY[0],
                "end": PARIS_DAY[1],
            }
            assert facet["attempt"]["number"] == 1
            assert facet["attempt"]["ledgerRunId"] == attempt.run_id
            assert facet["_producer"] == lineage.PRODUCER
            assert facet["_schemaURL"] == lineage.FACET_SCHEMA_URL
        assert start["run"]["facets"]["gatekeeper"]["attempt"]["state"] == "running"
        assert complete["run"]["facets"]["gatekeeper"]["attempt"]["state"] == "succeeded"
    gated = jobs["DailySalesLoad"][1]["run"]["facets"]
    assert gated["gatekeeper"]["publication"]["revision"] == 1
    assert gated["gatekeeper"]["publication"]["fingerprint"] == publication.fingerprint
    assert (
        gated["gatekeeper"]["evidence"]
        == publication.evidence
        == {"DimCustomer": runs["DimCustomer"].run_id, "DimProduct": runs["DimProduct"].run_id}
    )
    upstream = {jobs[job][1]["run"]["runId"] for job in ("DimCustomer", "DimProduct")}
    assert {u["run"]["runId"] for u in gated["gatekeeper"]["upstream"]} == upstream
    assert {
        (d["job"]["namespace"], d["run"]["runId"]) for d in gated["jobDependencies"]["upstream"]
    } == {("retail", u) for u in upstream}
    assert "publication" not in jobs["DimCustomer"][1]["run"]["facets"]["gatekeeper"]
    assert "parent" not in gated  # upstream runs did not spawn this run (module docstring)


@pytest.mark.slow
def test_lineage_range_fill_emits_each_period_once(sqlite_url: str, tmp_path: Path) -> None:
    """Periods a chunk runs inline are attempts like scheduled ones: one START and one
    COMPLETE per job and date, each with its own date's interval."""
    cfg = lineage_config(tmp_path, sqlite_url)
    with Receiver() as receiver:
        done, _ = run_luigi(
            cfg,
            "--module",
            "example_pipelines.sales",
            "RangeBusinessDaily",
            "--of",
            "DailySalesLoad",
            "--start",
            "2026-10-01",
            "--stop",
            "2026-10-03",
            url=receiver.url,
        )
        assert done.returncode == 0, done.stderr
        events = receiver.received()
    assert_valid(events)
    runs: dict[tuple[str, str], list[str]] = {}
    for event in events:
        key = (event["job"]["name"], event["run"]["facets"]["nominalTime"]["nominalStartTime"])
        runs.setdefault(key, []).append(event["eventType"])
    assert runs == {
        (job, f"2026-10-0{day}T00:00:00+00:00"): ["START", "COMPLETE"]
        for job in ("DimCustomer", "DimProduct", "DailySalesLoad")
        for day in (1, 2)
    }


@pytest.mark.slow
def test_lineage_failing_task_emits_fail_with_its_error(sqlite_url: str, tmp_path: Path) -> None:
    cfg = lineage_config(tmp_path, sqlite_url)
    (tmp_path / "fail").touch()
    with Receiver() as receiver:
        done, _ = run_luigi(
            cfg,
            "--module",
            "tests.helpers.luigi_tasks",
            "Controlled",
            "--business-date",
            "2026-10-23",
            "--control",
            str(tmp_path),
            url=receiver.url,
        )
        events = receiver.received()
    assert done.returncode == 30, done.stderr
    assert_valid(events)
    assert [e["eventType"] for e in events] == ["START", "FAIL"]
    failed = events[1]["run"]["facets"]
    assert failed["errorMessage"]["message"] == ("RuntimeError: injected failure for 2026-10-23")
    assert failed["errorMessage"]["programmingLanguage"] == "python"
    assert failed["gatekeeper"]["attempt"]["state"] == "failed"
    assert failed["nominalTime"] == {
        **failed["nominalTime"],
        "nominalStartTime": "2026-10-23T00:00:00+00:00",
        "nominalEndTime": "2026-10-24T00:00:00+00:00",
    }


@pytest.mark.slow
def test_lineage_takeover_emits_abort_for_the_abandoned_attempt(
    ledger_url: str, tmp_path: Path
) -> None:
    """On both backends: the abandonment is found by its instant, read back from the ledger."""
    cfg = lineage_config(tmp_path, ledger_url)
    with gk.open_ledger(ledger_url) as ledger:  # a dead worker's attempt, its lease long gone
        ledger.begin_attempt(
            "Trivial",
            "2026-10-23",
            "collected-run-7",
            lease_seconds=60,
            now=dt.datetime(2026, 10, 23, 5, tzinfo=dt.timezone.utc),
        )
    with Receiver() as receiver:
        done, _ = run_luigi(
            cfg,
            "--module",
            "tests.helpers.luigi_tasks",
            "Trivial",
            "--business-date",
            "2026-10-23",
            url=receiver.url,
        )
        events = receiver.received()
    assert done.returncode == 0, done.stderr
    assert_valid(events)
    with gk.open_ledger(ledger_url) as ledger:
        old, new = ledger.attempts("Trivial", "2026-10-23")
    assert (old.state, new.state) == (gk.RunState.ABANDONED, gk.RunState.SUCCEEDED)
    derived = str(
        uuid.uuid5(uuid.uuid5(uuid.NAMESPACE_URL, "urn:gatekeeper:run-id"), "collected-run-7")
    )
    assert [(e["eventType"], e["run"]["runId"]) for e in events] == [
        ("ABORT", derived),
        ("START", str(uuid.UUID(new.run_id))),
        ("COMPLETE", str(uuid.UUID(new.run_id))),
    ]
    facet = events[0]["run"]["facets"]["gatekeeper"]
    assert facet["attempt"] == {
        "number": 1,
        "ledgerRunId": "collected-run-7",
        "state": "abandoned",
        "startedAt": old.started_at.isoformat(),
    }
    assert facet["error"] == old.error and facet["error"].startswith("lease expired at")
    assert facet["takenOverBy"] == {
        "attempt": 2,
        "ledgerRunId": new.run_id,
        "run": {"runId": str(uuid.UUID(new.run_id))},
    }
    assert dt.datetime.fromisoformat(events[0]["eventTime"]) == old.updated_at


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["down", "slow"])
def test_lineage_backend_down_or_slow_leaves_tasks_green_warning_once(
    backend: str, sqlite_url: str, tmp_path: Path
) -> None:
    """Six events: sent synchronously they would hold the run for 6 x 4 s (slow) or 6 x the
    transport's retries (down), and a slow backend would get them all. Here the process waits
    once, at most openlineage_timeout: the first send goes unanswered, the verdict drops all
    six (none delivered, none failed one by one), and the closing line says so once."""
    cfg = lineage_config(tmp_path, sqlite_url, openlineage_timeout="0.5")
    with Receiver(delay=4.0) as slow:
        url = slow.url if backend == "slow" else closed_port_url()
        done, _ = run_luigi(cfg, *SALES, url=url)
    assert done.returncode == 0, done.stderr
    assert done.stderr.count(WARNING) == 1, done.stderr
    assert "did not answer within 0.5s (openlineage_timeout)" in done.stderr
    closing = (
        "gatekeeper: OpenLineage events of this invocation: 6 of 6 dropped (unanswered: 6), "
        "0 delivered"
    )
    assert done.stderr.count(closing) == 1, done.stderr
    with gk.open_ledger(sqlite_url) as ledger:
        assert ledger.publication("DailySalesLoad", "2026-10-25") is not None
        for job in ("DimCustomer", "DimProduct", "DailySalesLoad"):
            latest = ledger.latest(job, "2026-10-25")
            assert latest is not None and latest.state is gk.RunState.SUCCEEDED


@pytest.mark.slow
@pytest.mark.parametrize(("configured", "env"), [(None, None), ("true", "false")])
def test_lineage_disabled_emits_nothing(
    configured: str | None, env: str | None, sqlite_url: str, tmp_path: Path
) -> None:
    """Off by default, and $GATEKEEPER_OPENLINEAGE overrides luigi.cfg."""
    options = {} if configured is None else {"openlineage": configured}
    cfg = lineage_config(tmp_path, sqlite_url, **options)
    with Receiver() as receiver:
        done, _ = run_luigi(
            cfg,
            "--module",
            "tests.helpers.luigi_tasks",
            "Trivial",
            "--business-date",
            "2026-10-23",
            url=receiver.url,
            enabled=env,
        )
        assert done.returncode == 0, done.stderr
        assert receiver.received() == []
    with gk.open_ledger(sqlite_url) as ledger:
        latest = ledger.latest("Trivial", "2026-10-23")
        assert latest is not None and latest.state is gk.RunState.SUCCEEDED


@pytest.mark.parametrize(
    ("options", "env", "message"),
    [
        ({}, "maybe", "invalid GATEKEEPER_OPENLINEAGE='maybe': expected true or false"),
        (
            {"openlineage": "yes please"},
            None,
            "invalid gatekeeper.openlineage='yes please': expected true or false",
        ),
        (
            {"openlineage": "true", "openlineage_namespace": "my team"},
            None,
            "invalid gatekeeper.openlineage_namespace='my team': expected 1 to 1024 characters",
        ),
        (
            {"openlineage": "true", "openlineage_timeout": "0"},
            None,
            "invalid gatekeeper.openlineage_timeout=0.0: expected seconds > 0",
        ),
    ],
)
def test_lineage_bad_option_refused_before_anything_is_written(
    options: dict[str, str],
    env: str | None,
    message: str,
    sqlite_url: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GATEKEEPER_OPENLINEAGE", raising=False)
    if env is not None:
        monkeypatch.setenv("GATEKEEPER_OPENLINEAGE", env)
    with gk.open_ledger(sqlite_url) as ledger:
        before = snapshot(ledger)
    for _ in configure({"ledger_url": sqlite_url, **options}):
        failures = failures_of(Trivial(business_date=dt.date(2026, 10, 23)))
    assert len(failures) == 1 and failures[0].startswith("InvalidInput: "), failures
    assert message in failures[0]
    with gk.open_ledger(sqlite_url) as ledger:
        assert snapshot(ledger) == before


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("true", True),
        ("TRUE", True),
        ("1", True),
        ("yes", True),
        ("on", True),
        (True, True),
        ("false", False),
        ("False", False),
        ("0", False),
        ("no", False),
        ("off", False),
        (False, False),
    ],
)
def test_validation_parse_flag_accepts(text: Any, value: bool) -> None:
    assert parse_flag(text, "gatekeeper.openlineage") is value


@pytest.mark.parametrize("text", ["", "maybe", "2", "truthy", None, 1])
def test_validation_parse_flag_refuses(text: Any) -> None:
    with pytest.raises(gk.InvalidInput) as refused:
        parse_flag(text, "gatekeeper.openlineage")
    assert refused.value.field == "gatekeeper.openlineage" and refused.value.value == text


@pytest.mark.parametrize("name", ["", " gatekeeper", "a b", "tab\there", "x" * 1025, "nul\x00", 7])
def test_validation_lineage_namespace_refuses(name: Any) -> None:
    with pytest.raises(gk.InvalidInput) as refused:
        check_lineage_namespace(name, "ns")
    assert refused.value.field == "ns"


@pytest.mark.parametrize("seconds", [0, -1, float("nan"), float("inf"), 301, True, "5"])
def test_validation_wait_seconds_refuses(seconds: Any) -> None:
    with pytest.raises(gk.InvalidInput):
        check_wait_seconds(seconds, "gatekeeper.openlineage_timeout")


def test_validation_accepts_namespaces_and_waits() -> None:
    assert check_lineage_namespace("retail-eu/prod.v2", "ns") == "retail-eu/prod.v2"
    assert check_wait_seconds(0.5, "t") == 0.5 and check_wait_seconds(300, "t") == 300.0


def test_lineage_run_uuid_keeps_uuids_and_derives_the_rest() -> None:
    run = uuid.uuid4()
    assert lineage.run_uuid(run.hex) == str(run) == lineage.run_uuid(str(run))
    derived = lineage.run_uuid("databricks:123")
    assert derived == lineage.run_uuid("databricks:123") != lineage.run_uuid("databricks:124")
    assert uuid.UUID(derived).version == 5


VALID_EVENT: dict[str, Any] = {
    "eventType": "START",
    "eventTime": "2026-10-23T05:00:00.123456+00:00",
    "producer": f"urn:gatekeeper:{package_version()}",
    "schemaURL": "https://openlineage.io/spec/2-0-2/OpenLineage.json#/$defs/RunEvent",
    "job": {"namespace": "gatekeeper", "name": "Trivial", "facets": {}},
    "run": {
        "runId": "3ef2c5c3-b17b-4503-abc1-8fa8371907e2",
        "facets": {
            "nominalTime": {
                "_producer": "urn:x:1",
                "_schemaURL": "urn:x:2",
                "nominalStartTime": "2026-10-23T00:00:00+02:00",
            },
            "gatekeeper": {
                "_producer": "urn:x:1",
                "_schemaURL": "urn:x:2",
                "period": {
                    "kind": "daily",
                    "key": "2026-10-23",
                    "timezone": "UTC",
                    "start": "2026-10-23T00:00:00+00:00",
                    "end": "2026-10-24T00:00:00+00:00",
                },
                "attempt": {
                    "number": 1,
                    "ledgerRunId": "r",
                    "state": "running",
                    "startedAt": "2026-10-23T05:00:00+00:00",
                },
            },
        },
    },
    "inputs": [],
    "outputs": [],
}


@pytest.mark.parametrize(
    ("path", "value", "problem"),
    [
        (("run", "runId"), "run-1", "is not a uuid"),
        (("eventType",), "DONE", "not in"),
        (("eventTime",), "2026-10-23 05:00", "is not a date-time"),
        (
            ("run", "facets", "nominalTime", "nominalStartTime"),
            None,
            "'nominalStartTime' is required",
        ),
        (("run", "facets", "gatekeeper", "_producer"), None, "'_producer' is required"),
        (("run", "facets", "gatekeeper", "attempt", "number"), 0, "is below 1"),
        (("run", "facets", "gatekeeper", "period", "kind"), "fortnightly", "not in"),
        (("job", "name"), None, "'name' is required"),
    ],
)
def test_lineage_schema_check_refuses_broken_events(
    path: tuple[str, ...], value: Any, problem: str
) -> None:
    """The validator the events pass can fail: each break of the spec is reported."""
    assert event_problems(VALID_EVENT) == []
    broken = copy.deepcopy(VALID_EVENT)
    holder = broken
    for key in path[:-1]:
        holder = holder[key]
    if value is None:
        del holder[path[-1]]
    else:
        holder[path[-1]] = value
    problems = event_problems(broken)
    assert any(problem in p for p in problems), problems


def test_lineage_core_imports_without_openlineage(tmp_path: Path) -> None:
    """The extra is imported only when enabled; enabled without it, the error names the extra."""
    script = (
        "import sys; sys.modules['openlineage'] = None\n"
        "import gatekeeper, gatekeeper.luigi.tasks, gatekeeper.integrations.lineage as lineage\n"
        "from gatekeeper.luigi import integration_config\n"
        "assert lineage.configured(integration_config.lineage()) is False\n"
        "import os; os.environ['GATEKEEPER_OPENLINEAGE'] = 'true'\n"
        "try:\n    lineage.configured(integration_config.lineage())\n"
        "except gatekeeper.GatekeeperError as exc:\n"
        "    print(exc)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("GATEKEEPER_OPENLINEAGE")}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**env, "PYTHONPATH": str(Path(__file__).parents[2])},
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "pip install 'luigi-gatekeeper[openlineage]'" in done.stdout
