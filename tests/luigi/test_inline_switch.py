"""The inline switch (docs/inline.md, "The switch"): ``[gatekeeper] inline = false`` makes a
range schedule every period as its own Luigi task through Luigi's public API only; a range's
explicit ``--inline`` wins over it; a bad value is refused naming where it came from."""

from __future__ import annotations

import datetime as dt
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

import gatekeeper as gk
from gatekeeper.luigi import config
from gatekeeper.luigi.fill import filler
from tests.helpers.luigi_support import configure, run_luigi, write_config

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

UTC = dt.timezone.utc
NOW = str(int(dt.datetime(2026, 12, 1, tzinfo=UTC).timestamp()))
DATES = ["2026-10-01", "2026-10-02", "2026-10-03"]


@pytest.fixture
def no_inline_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.delenv("GATEKEEPER_INLINE", raising=False)
    yield


# -- precedence: the range's explicit --inline, then [gatekeeper] inline, then true ----------
PRECEDENCE = [
    # (luigi.cfg, $GATEKEEPER_INLINE, the range's --inline) -> inline?
    (None, None, None, True),
    ("false", None, None, False),
    ("true", None, None, True),
    ("false", "true", None, True),
    ("true", "false", None, False),
    ("false", None, True, True),
    ("true", "false", True, True),
    (None, None, False, False),
    ("true", "true", False, False),
]


@pytest.mark.parametrize(("cfg", "env", "param", "expected"), PRECEDENCE)
def test_inline_switch_precedence(
    monkeypatch: pytest.MonkeyPatch,
    no_inline_env: None,
    cfg: str | None,
    env: str | None,
    param: bool | None,
    expected: bool,
) -> None:
    if env is not None:
        monkeypatch.setenv("GATEKEEPER_INLINE", env)
    for _ in configure({} if cfg is None else {"inline": cfg}):
        chosen = filler.choose(param)
        assert chosen.inline is expected
        assert chosen is (filler.INLINE if expected else filler.SCHEDULED)


def test_inline_switch_reaches_the_range_session_and_its_chunks(
    ledger_cfg: gk.Ledger, no_inline_env: None
) -> None:
    from tests.helpers.luigi_tasks import Trivial

    window = {"start": dt.date(2026, 10, 1), "stop": dt.date(2026, 10, 4), "now": int(NOW)}
    for _ in configure({"inline": "false"}):
        rng = gk.RangeBusinessDaily(of=Trivial, **window)
        assert rng.inline is None and rng.session.filler is filler.SCHEDULED
        assert [chunk.inline for chunk in rng.chunk_tasks()] == [False]
        explicit = gk.RangeBusinessDaily(of=Trivial, inline=True, **window)
        assert explicit.session.filler is filler.INLINE
        assert [chunk.inline for chunk in explicit.chunk_tasks()] == [True]


@pytest.mark.parametrize("source", ["cfg", "env"])
def test_inline_switch_bad_value_names_its_source(
    monkeypatch: pytest.MonkeyPatch, no_inline_env: None, source: str
) -> None:
    options = {"inline": "maybe"} if source == "cfg" else {}
    if source == "env":
        monkeypatch.setenv("GATEKEEPER_INLINE", "maybe")
    for _ in configure(options):
        with pytest.raises(gk.InvalidInput) as caught:
            config.inline()
    assert caught.value.field == ("gatekeeper.inline" if source == "cfg" else "GATEKEEPER_INLINE")


# -- a real luigi run with inline = false in luigi.cfg ----------------------------------------
def fill(tmp_path: Path, *extra: str) -> tuple[str, list[dict[str, object]]]:
    """The range under the real ``luigi`` command: what its task processes import is checked
    (a child forked from the test process holds the modules the tests imported)."""
    cfg = write_config(tmp_path, f"sqlite:///{tmp_path / 'ledger.db'}")
    cfg.write_text(cfg.read_text().replace("[gatekeeper]\n", "[gatekeeper]\ninline = false\n"))
    done = run_luigi(
        cfg,
        "--module",
        "tests.helpers.switch_tasks",
        "RangeBusinessDaily",
        "--of",
        "Probed",
        "--of-params",
        json.dumps({"control": str(tmp_path)}),
        "--start",
        DATES[0],
        "--stop",
        "2026-10-04",
        "--now",
        NOW,
        "--no-progress",
        *extra,
        cwd=tmp_path,
        process=True,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-4000:]
    probes = [json.loads(line) for line in (tmp_path / "probe.jsonl").read_text().splitlines()]
    return output, probes


@pytest.mark.process
@pytest.mark.oldest
def test_inline_false_in_luigi_cfg_schedules_each_period_as_a_luigi_task(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("GATEKEEPER_INLINE", raising=False)
    output, probes = fill(tmp_path)
    summary = output.split("===== Luigi Execution Summary =====")[1]
    assert re.search(r"\* \d+ ran successfully:\n(?:.*\n)*?\s+- 3 Probed\(", summary), summary
    for date in DATES:  # Luigi's own worker ran each period, as a task of its own
        assert re.search(rf"running +Probed\(business_date={date}", output), date
        assert re.search(rf"done +Probed\(business_date={date}", output), date
    assert [p["date"] for p in probes] == DATES
    # no private Luigi hook: the worker's history is Luigi's own list, and the inline
    # machinery (summary channel, inline runs, luigid wire, local-table reports) never loaded
    assert {p["history"] for p in probes} == {"list"}
    assert all(p["loaded"] == [] for p in probes), probes


@pytest.mark.process
def test_explicit_inline_true_wins_over_luigi_cfg(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same run with ``--inline true``: the periods run inside their chunk, and the probe
    sees what the inline machinery installs (so the test above would see it too)."""
    monkeypatch.delenv("GATEKEEPER_INLINE", raising=False)
    output, probes = fill(tmp_path, "--inline", "true")
    assert not re.search(r"running +Probed\(", output)
    assert [p["date"] for p in probes] == DATES
    assert {p["history"] for p in probes} == {"ForkedHistory"}
    assert all("inline" in p["loaded"] and "channel" in p["loaded"] for p in probes)
