"""GatedDeltaTask's tests need the ``delta`` extra (``pip install -e '.[test]'``): without
``deltalake`` this folder is not collected (the oldest-Luigi run installs the test runner
alone). The newest-Luigi run installs it, so there nothing is left out."""

from __future__ import annotations

import importlib.util

collect_ignore = ["test_delta.py"] if importlib.util.find_spec("deltalake") is None else []
