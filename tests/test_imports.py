"""Every module of the package imports on its own, in a fresh interpreter state: no import
cycle hides behind the order in which the package's own ``__init__`` happens to load things
(as ``import gatekeeper.web.app`` once failed: web -> cli -> cli/serve_cmds -> a half-loaded
web.views).

One interpreter imports the third-party libraries (they cannot take part in a cycle of
gatekeeper's), then forks one child per module; each child starts with no gatekeeper module
loaded and imports only its own. Importing any module runs the package's ``__init__`` first,
whole, so a module that ``import gatekeeper`` itself loads imports alone exactly as
``gatekeeper`` does: the first child imports ``gatekeeper`` and names those, and only the
others get a child of their own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "gatekeeper"

#: the optional extras' packages: a module may need one (the extra names it when missing)
OPTIONAL = ("starlette", "uvicorn", "prometheus_client", "deltalake", "databricks", "psycopg")

CHILDREN = r"""
import importlib, json, os, sys, traceback
for lib in ("luigi", "luigi.tools.range", "luigi.worker", "luigi.rpc", "sqlite3", "holidays"):
    try:
        importlib.import_module(lib)
    except ImportError:
        pass
assert not [m for m in sys.modules if m.split(".")[0] == "gatekeeper"], "gatekeeper preloaded"
optional, results = tuple(sys.argv[2].split(",")), {}
wanted = sys.argv[1].split(",")
loaded = set()
for module in ["gatekeeper", *wanted]:
    if module in loaded:
        results[module] = (0, "loaded by import gatekeeper")
        continue
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        code, text = 0, ""
        try:
            importlib.import_module(module)
            if module == "gatekeeper":
                text = json.dumps(sorted(m for m in sys.modules if m.startswith("gatekeeper.")))
        except ModuleNotFoundError as exc:
            code, text = (3, "") if (exc.name or "").split(".")[0] in optional else (1, "")
            text = text or traceback.format_exc()
        except BaseException:
            code, text = 1, traceback.format_exc()
        data = text.encode()
        while data:
            data = data[os.write(write, data):]
        os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        text = pipe.read().decode()
    _, status = os.waitpid(pid, 0)
    results[module] = (os.waitstatus_to_exitcode(status), text)
    if module == "gatekeeper" and results[module][0] == 0:
        loaded = set(json.loads(text))
        results[module] = (0, "")
print(json.dumps(results))
"""


def modules() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__main__":
            continue
        found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


@pytest.mark.slow
@pytest.mark.timeout(600)  # a forked child per module: about 20 s, minutes on a loaded machine
def test_every_module_imports_in_a_fresh_interpreter() -> None:
    names = modules()
    assert "gatekeeper.web.app" in names and "gatekeeper.core.schedule" in names
    done = subprocess.run(
        [sys.executable, "-c", CHILDREN, ",".join(names), ",".join(OPTIONAL)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.splitlines()[-1])
    assert set(results) == set(names)
    alone = [m for m, (_, text) in results.items() if text != "loaded by import gatekeeper"]
    assert "gatekeeper.web.app" in alone and "gatekeeper.cli" in alone
    failed = {
        m: text.strip().splitlines()[-1] for m, (rc, text) in results.items() if rc not in (0, 3)
    }
    assert not failed, failed
    imported = {m for m, (rc, _) in results.items() if rc == 0}
    assert {"gatekeeper", "gatekeeper.cli", "gatekeeper.report.windows"} <= imported
