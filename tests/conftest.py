"""Shared fixtures: a real ledger on each backend, Luigi configured for it, a luigid.

Helpers (snapshot, succeed, the fake clock T0, ...) live in tests/helpers/, not here.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

import gatekeeper as gk
from tests.helpers.ledgers import drop_pg_schema, fresh_pg_schema, require_pg
from tests.helpers.luigi_support import config_state, restore_config
from tests.helpers.luigid_support import Luigid

# No test bounds wall time (docs/development.md): Hypothesis's 200 ms deadline per example and
# its too-slow health check would, and both failed property tests on a loaded machine (a CPU
# hog beside the suite; mutmut's stats run at a load average of 7)
settings.register_profile("gatekeeper", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("gatekeeper")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark ``postgres`` the PostgreSQL case of every test on the two-backend fixtures (tests
    that reach PostgreSQL another way carry the mark themselves): ``-m "not postgres"`` runs
    without a server."""
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params.values() if callspec is not None else ()
        if "pg_ledger_url" in getattr(item, "fixturenames", ()) or "postgresql" in params:
            item.add_marker(pytest.mark.postgres)


#: programs a library may start on its own (ctypes.util.find_library runs ldconfig)
_INCIDENTAL = frozenset({"ldconfig", "uname"})


@pytest.fixture(autouse=True)
def _luigi_tests_in_process_say_so(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """A ``luigi`` test that starts a program (the ``luigi`` command, luigid, ``python -c``) is
    marked ``process`` (or ``slow``): the oldest-Luigi session runs the adapter's tests in
    process (noxfile.py ``OLDEST_TESTS``) and leaves those out, so an unmarked one fails here
    naming the program rather than slipping in or out of that session unseen."""
    node = request.node
    if node.get_closest_marker("luigi") is None or any(
        node.get_closest_marker(name) is not None for name in ("process", "slow")
    ):
        yield
        return
    started: list[str] = []
    real_init = subprocess.Popen.__init__

    def recording_init(self: subprocess.Popen[Any], args: Any, *rest: Any, **kw: Any) -> None:
        program = args if isinstance(args, str) else args[0]
        if os.path.basename(str(program)) not in _INCIDENTAL:
            started.append(str(program))
        real_init(self, args, *rest, **kw)

    monkeypatch.setattr(subprocess.Popen, "__init__", recording_init)
    yield
    if started:
        pytest.fail(
            f"{node.nodeid} starts {sorted(set(started))} but is not marked process "
            "(or slow): mark it @pytest.mark.process",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _luigi_config_kept(request: pytest.FixtureRequest) -> Iterator[None]:
    """Every test leaves Luigi's process-wide configuration as it found it: one that changes it
    outside the ``luigi_config`` fixture (or ``configure``) fails, and the next test starts
    from the configuration as it was."""
    before = config_state()
    yield
    if config_state() != before:
        restore_config(before)
        pytest.fail(
            f"{request.node.nodeid} changed Luigi's process-wide configuration without "
            "restoring it: set options with the luigi_config fixture",
            pytrace=False,
        )


@pytest.fixture
def luigi_config() -> Iterator[Any]:
    """Set options in Luigi's process-wide configuration: ``luigi_config(section, key,
    value)``; the configuration as it was is restored after the test."""
    import luigi

    before = config_state()
    cfg = luigi.configuration.get_config()

    def set_option(section: str, key: str, value: str) -> None:
        if not cfg.has_section(section):
            cfg.add_section(section)
        cfg.set(section, key, value)

    yield set_option
    restore_config(before)


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request: pytest.FixtureRequest, tmp_path: Any) -> Iterator[str]:
    """A URL of a fresh, empty ledger: a SQLite file in tmp_path or a new PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'ledger.db'}"
        return
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[gk.Ledger]:
    with gk.open_ledger(ledger_url) as opened:
        yield opened


@pytest.fixture
def pg_schema() -> Iterator[str]:
    """A fresh PostgreSQL schema name, dropped afterwards (skips without PostgreSQL)."""
    require_pg()
    schema = f"gk_test_{uuid.uuid4().hex[:12]}"
    try:
        yield schema
    finally:
        drop_pg_schema(schema)


@pytest.fixture
def ledger_cfg(ledger_url: str) -> Iterator[gk.Ledger]:
    """Luigi configured for the test ledger (UTC, no lateness, 30 s leases); yields it."""
    from tests.helpers.luigi_support import configure

    for _ in configure(
        {"ledger_url": ledger_url, "lease_seconds": "30", "lateness": "0s", "timezone": "UTC"}
    ):
        with gk.open_ledger(ledger_url) as opened:
            yield opened


@pytest.fixture
def sqlite_url(tmp_path: Any) -> str:
    return f"sqlite:///{tmp_path / 'ledger.db'}"


@pytest.fixture
def pg_ledger_url() -> Iterator[str]:
    """A fresh PostgreSQL schema for a test that needs PostgreSQL itself, dropped afterwards."""
    with fresh_pg_schema() as url:
        yield url


@pytest.fixture
def luigid(tmp_path: Path) -> Iterator[Luigid]:
    """A luigid on a free loopback port, stopped (and killed if need be) afterwards."""
    server = Luigid(tmp_path / "luigid")
    try:
        for attempt in range(3):  # the free port may be taken before luigid binds it
            try:
                server.start()
                break
            except RuntimeError:
                server.stop()
                if attempt == 2:
                    raise
                server = Luigid(tmp_path / f"luigid-{attempt + 1}")
        yield server
    finally:
        server.stop()
