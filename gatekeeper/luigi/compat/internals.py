"""The registry of Luigi internals gatekeeper relies on, and the error when one is gone.

Every accessor in this package names the internal it reads (``luigi.worker.Worker._id``) and
registers a probe here (``@probe(NAME)``): a check, with no worker running, that the installed
Luigi still has it. ``missing_internals()`` runs them all; tests/luigi/test_luigi_compat.py
runs each one, so a Luigi release that renames or removes an internal fails with a message
naming it, instead of gatekeeper falling back silently.
"""

from __future__ import annotations

from collections.abc import Callable

import luigi


class LuigiInternalMissing(RuntimeError):
    """The installed Luigi no longer has an internal gatekeeper relies on."""

    def __init__(self, internal: str) -> None:
        super().__init__(
            f"this Luigi ({luigi.__version__}) has no {internal}, which gatekeeper relies on "
            "(gatekeeper/luigi/compat/); use a Luigi release in the range pyproject.toml "
            "declares"
        )
        self.internal = internal


#: internal name -> a check that raises LuigiInternalMissing when this Luigi lacks it
PROBES: dict[str, Callable[[], None]] = {}


def probe(name: str) -> Callable[[Callable[[], object]], Callable[[], None]]:
    """Register the decorated function as the probe of ``name``: it returns something true
    when the installed Luigi has the internal (it may raise AttributeError when not)."""

    def register(check: Callable[[], object]) -> Callable[[], None]:
        def run() -> None:
            try:
                found = check()
            except (AttributeError, TypeError):
                found = False
            if not found:
                raise LuigiInternalMissing(name)

        PROBES[name] = run
        return run

    return register


def require(owner: object, attribute: str, name: str) -> object:
    """``owner.<attribute>``; LuigiInternalMissing naming ``name`` when it is gone."""
    try:
        return getattr(owner, attribute)
    except AttributeError:
        raise LuigiInternalMissing(name) from None


def missing_internals() -> list[str]:
    """The registered internals the installed Luigi lacks (none on a supported Luigi)."""
    missing = []
    for name, check in PROBES.items():
        try:
            check()
        except LuigiInternalMissing:
            missing.append(name)
    return missing
