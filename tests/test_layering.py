"""Lower layers never import higher ones: checked on the source, so a new import fails here."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "gatekeeper"

#: module (or package folder) -> gatekeeper modules it must never import, directly or lazily.
FORBIDDEN = {
    "ledger": ("gate", "tasks", "gated", "range", "fill", "cli", "lease", "config",
               "coverage", "recovery", "recovery_ledger", "targets", "lineage", "delta",
               "delta_table", "collectors"),
    # the collectors observe other systems into the ledger; they never drive Luigi
    "collectors": ("tasks", "gated", "range", "fill", "gate", "cli", "lineage",
                   "delta"),
    "delta_table.py": ("ledger", "gate", "tasks", "gated", "cli", "config", "delta"),
    "validation.py": ("ledger", "gate", "tasks", "gated", "cli", "clock", "readiness"),
    "clock.py": ("ledger", "gate", "tasks", "cli"),
    "readiness.py": ("ledger", "gate", "tasks", "cli"),
    "records.py": ("ledger", "gate", "tasks", "cli", "validation"),
    "periods.py": ("ledger", "gate", "tasks", "cli", "validation", "records"),
    "gate.py": ("tasks", "gated", "range", "cli"),
    "lineage.py": ("tasks", "gated", "range", "fill", "cli"),
    # the inline machinery is the range's: it never drives the CLI or the ranges above it
    "fill": ("range", "range_session", "cli", "gated", "delta", "collectors", "report"),
}


def imported_modules(path: Path) -> set[str]:
    """First component after ``gatekeeper.`` of every import in the file."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "gatekeeper" and len(parts) > 1:
                found.add(parts[1])
    return found


@pytest.mark.parametrize(("layer", "forbidden"), sorted(FORBIDDEN.items()))
def test_layering_lower_layers_never_import_higher_ones(layer: str,
                                                        forbidden: tuple[str, ...]) -> None:
    target = PACKAGE / layer
    files = sorted(target.glob("*.py")) if target.is_dir() else [target]
    assert files, f"{layer} not found"
    for path in files:
        wrong = imported_modules(path) & set(forbidden)
        assert not wrong, f"{path.relative_to(PACKAGE.parent)} imports {sorted(wrong)}"


def test_layering_check_sees_an_import() -> None:
    """The checker itself: it finds the imports this repository is known to have."""
    assert "validation" in imported_modules(PACKAGE / "ledger" / "attempts.py")
    assert "readiness" in imported_modules(PACKAGE / "gate.py")


#: The only modules outside gatekeeper/fill/ that may import it: the range adapter.
FILL_USERS = {"range.py", "range_session.py"}


def test_layering_only_the_range_reaches_into_the_fill_machinery() -> None:
    """Everything that runs or reports periods outside Luigi's own worker lives in
    gatekeeper/fill/; the rest of gatekeeper does not reach into it (docs/inline.md)."""
    users = {str(path.relative_to(PACKAGE)) for path in PACKAGE.rglob("*.py")
             if "fill" in imported_modules(path) and path.parent.name != "fill"}
    assert users == FILL_USERS
