"""The integrations' tests need their extras (``pip install -e '.[test]'``): a module whose
library is not installed is not collected (the oldest-Luigi run installs the test runner
alone). The newest-Luigi run installs them all, so there nothing is left out."""

from __future__ import annotations

import importlib.util

#: test module -> the library it imports at module level
NEEDS = {"test_delta.py": "deltalake"}

collect_ignore = [name for name, lib in NEEDS.items() if importlib.util.find_spec(lib) is None]
