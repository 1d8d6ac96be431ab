"""Every module of the package imports on its own, in a fresh interpreter: no import cycle
hides behind the order in which the package's own ``__init__`` happens to load things (as
``import gatekeeper.web.app`` once failed: web -> cli -> cli/serve_cmds -> a half-loaded
web.views)."""

from __future__ import annotations

import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "gatekeeper"

#: the optional extras' packages: a module may need one (the extra names it when missing)
OPTIONAL = ("starlette", "uvicorn", "prometheus_client", "deltalake", "databricks", "psycopg")


def modules() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


def _import(module: str) -> tuple[str, int, str]:
    code = (
        "import importlib, sys\n"
        "try:\n"
        f"    importlib.import_module({module!r})\n"
        "except ModuleNotFoundError as exc:\n"
        f"    if (exc.name or '').split('.')[0] in {OPTIONAL!r}:\n"
        "        sys.exit(3)\n"
        "    raise\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    return module, done.returncode, done.stderr


def test_every_module_imports_in_a_fresh_interpreter() -> None:
    names = modules()
    assert "gatekeeper.web.app" in names and "gatekeeper.core.schedule" in names
    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(_import, names))
    failed = {m: err.strip().splitlines()[-1] for m, rc, err in results if rc not in (0, 3)}
    assert not failed, failed
    imported = {m for m, rc, _ in results if rc == 0}
    assert {"gatekeeper", "gatekeeper.cli", "gatekeeper.report.windows"} <= imported
