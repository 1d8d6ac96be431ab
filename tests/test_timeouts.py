"""A test that hangs fails (pytest-timeout) instead of holding CI to its own limit."""

from __future__ import annotations

import pytest


# -- a hang is a failure -------------------------------------------------------------------------
def test_every_test_has_a_timeout(request: pytest.FixtureRequest) -> None:
    """pytest-timeout is installed and on by default (setup.cfg), so a livelock fails with a
    stack trace instead of running until CI's own limit."""
    assert request.config.pluginmanager.hasplugin("timeout")
    assert float(request.config.getini("timeout")) == 120
