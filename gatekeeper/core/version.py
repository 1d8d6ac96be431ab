"""The package's version: pyproject.toml is its one place; this reads it from the installed
package's metadata."""

from __future__ import annotations

from importlib import metadata

#: the distribution's name on the package index (``gatekeeper`` there is another project);
#: the import name stays ``gatekeeper``
DISTRIBUTION = "luigi-gatekeeper"


def package_version() -> str:
    """The installed gatekeeper's version (``0+unknown`` when it is not installed)."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "0+unknown"
