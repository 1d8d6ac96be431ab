"""How many examples the costliest property tests draw.

The suite draws a third of each one's full count (at least 10): enough to keep the property
checked on every run, within the suite's time. ``GATEKEEPER_THOROUGH=1`` draws the full count:
``tools/mutation.sh`` sets it (a mutant must meet every example the suite was scored with), and
so should a change to the rule a property pins (docs/development.md).
"""

from __future__ import annotations

import os

THOROUGH = os.environ.get("GATEKEEPER_THOROUGH") == "1"


def examples(full: int) -> int:
    """``full`` under GATEKEEPER_THOROUGH=1, else a third of it (at least 10)."""
    return full if THOROUGH else max(10, full // 3)
