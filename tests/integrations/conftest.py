"""The integrations' tests need their extras (``pip install -e '.[test]'``): a module whose
library is not installed is not collected (the oldest-Luigi run installs the test runner
alone). The newest-Luigi run installs them all, so there nothing is left out."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from tests.helpers.databricks_fake import TOKEN, FakeJobs, serve

#: test module -> the library it imports at module level (none today; tests/delta/ has its own)
NEEDS: dict[str, str] = {}

collect_ignore = [name for name, lib in NEEDS.items() if importlib.util.find_spec(lib) is None]


@pytest.fixture
def fake() -> Iterator[tuple[FakeJobs, Any, str]]:
    """(the fake Databricks workspace, a real WorkspaceClient pointed at it, its URL)."""
    from databricks.sdk import WorkspaceClient

    jobs = FakeJobs(page_size=2)
    with serve(jobs) as url:
        yield jobs, WorkspaceClient(host=url, token=TOKEN), url
