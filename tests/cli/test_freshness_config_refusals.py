"""One check of ``[gatekeeper.freshness]`` for every reader, stopping only what it must: a
key naming no job of the ledger (a typo, or a job not yet run) is refused by ``check`` with no
JOB and by ``serve`` (exit 2, the closest names, nothing written), the gates an alert relies
on; ``check JOB``, ``status`` and ``report`` warn of it in one line on stderr and judge the
rest. With ``--allow-unknown`` every reader goes on, and ``serve`` counts the key in
``gatekeeper_config_unknown_jobs`` and names it in ``/api/jobs``."""

from __future__ import annotations

import datetime as dt
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.cli import main
from gatekeeper.luigi.freshness import SECTION, check_config
from tests.helpers.ledgers import snapshot
from tests.helpers.serve import in_thread, read

UTC = dt.timezone.utc
NOW = dt.datetime(2026, 10, 3, 7, tzinfo=UTC)
T = dt.datetime(2026, 10, 2, 1, tzinfo=UTC)


@pytest.fixture
def typo(sqlite_url: str, luigi_config: Any) -> Iterator[gk.Ledger]:
    """A SQLite ledger (the rule reads names only: ``check_config`` is tested on both
    backends below) with ``Load`` (2026-10-01 and 02 succeeded); ``[gatekeeper.freshness]``
    in Luigi's live config says ``Load = 6h`` and, mistyped, ``Lod = 6h``."""
    ledger = gk.open_ledger(sqlite_url)
    for key in ("2026-10-01", "2026-10-02"):
        ledger.record("Load", key, 1, f"l-{key}", "succeeded", T, now=T)
    luigi_config(SECTION, "Load", "6h")
    luigi_config(SECTION, "Lod", "6h")
    try:
        yield ledger
    finally:
        ledger.close()


def commands(out: Path) -> dict[str, list[str]]:
    now = ["--now", NOW.isoformat()]
    return {
        "check": ["check", *now],
        "check JOB": ["check", "Load", *now],
        "status": ["status", "Load", *now],
        "report": ["report", "Load", "-o", str(out), *now],
        "serve": ["serve", "--port", "0"],
    }


@pytest.mark.parametrize("command", ["check", "serve"])
def test_check_and_serve_refuse_an_unknown_freshness_key_with_the_closest_name(
    typo: gk.Ledger, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    if command == "serve":
        pytest.importorskip("starlette")
    out = tmp_path / "r.html"
    before = snapshot(typo)
    capsys.readouterr()
    code = main(["--ledger", typo.url, *commands(out)[command]])
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.count("\n") == 1, err  # one line
    assert f"[{SECTION}]: no such job 'Lod' (did you mean 'Load'?)" in err, err
    assert "--allow-unknown accepts a job not yet run" in err
    assert snapshot(typo) == before
    assert not out.exists()


@pytest.mark.parametrize("command", ["check JOB", "status", "report"])
def test_readers_of_named_jobs_warn_of_an_unknown_freshness_key_and_judge_the_rest(
    typo: gk.Ledger, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    out = tmp_path / "r.html"
    before = snapshot(typo)
    capsys.readouterr()
    code = main(["--ledger", typo.url, *commands(out)[command]])
    err = capsys.readouterr().err
    assert code == 0, err
    assert err == (
        f"gatekeeper: warning: [{SECTION}]: no such job 'Lod' (did you mean 'Load'?) in the "
        f"ledger ({typo.describe()}): its deadline judges nothing\n"
    )
    assert snapshot(typo) == before
    assert out.exists() == (command == "report")


@pytest.mark.parametrize("command", ["check", "check JOB", "status", "report"])
def test_allow_unknown_accepts_the_key_and_judges_the_rest(
    typo: gk.Ledger, capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    out = tmp_path / "r.html"
    capsys.readouterr()
    code = main(["--ledger", typo.url, "--json", *commands(out)[command], "--allow-unknown"])
    found_out, err = capsys.readouterr()
    found = json.loads(found_out)
    assert code == 0, found
    assert err == ""
    if command.startswith("check"):
        assert [j["job"] for j in found["jobs"]] == ["Load"] and found["met"]
    elif command == "status":
        assert (found["freshness"]["within"], found["freshness"]["met"]) == ("6h", True)
    else:
        assert out.exists()


def test_check_config_is_one_rule_for_exact_names_and_families(
    ledger: gk.Ledger, luigi_config: Any
) -> None:
    ledger.record("RegionLoad(region=eu)", "2026-10-01", 1, "r-1", "succeeded", T, now=T)
    luigi_config(SECTION, "RegionLoad", "2h")  # a family names its jobs
    assert check_config(ledger) == ()
    luigi_config(SECTION, "RegionLoda", "2h")
    with pytest.raises(gk.InvalidInput, match="did you mean 'RegionLoad"):
        check_config(ledger)
    assert check_config(ledger, allow_unknown=True) == ("RegionLoda",)


def test_serve_with_allow_unknown_exposes_the_unknown_keys(typo: gk.Ledger) -> None:
    pytest.importorskip("starlette")
    from prometheus_client.parser import text_string_to_metric_families

    with in_thread(typo.url, lambda: NOW) as base:
        jobs = json.loads(read(base + "/api/jobs"))
        scrape = read(base + "/metrics")
    assert jobs["config_unknown_jobs"] == ["Lod"]
    values = {s.name: s.value for f in text_string_to_metric_families(scrape) for s in f.samples}
    assert values["gatekeeper_config_unknown_jobs"] == 1
    assert values["gatekeeper_freshness_breached"] == 0  # Load's deadline is judged
