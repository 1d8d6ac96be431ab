"""The package's version: pyproject.toml is its one place; this reads it from the installed
package's metadata."""

from __future__ import annotations

from importlib import metadata


def package_version() -> str:
    """The installed gatekeeper's version (``0+unknown`` when it is not installed)."""
    try:
        return metadata.version("gatekeeper")
    except metadata.PackageNotFoundError:
        return "0+unknown"
