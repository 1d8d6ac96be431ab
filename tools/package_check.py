"""The package as a user gets it: run by ``nox -s package`` in a virtualenv holding the built
wheel (not an editable install), from a folder outside the checkout.

    python tools/package_check.py CHECKOUT

Checks, failing with a line that names what is wrong:

- ``gatekeeper`` is imported from the virtualenv, not the checkout, and
  ``importlib.metadata`` reports pyproject.toml's version under the distribution's name
  (``gatekeeper --version`` too);
- README.md's main command (from its ``luigi`` on: the sales backfill, ``status``,
  ``report``) runs in an empty folder holding only the checkout's luigi.cfg, prints
  ``filled 31/31`` and writes a report with its stylesheet and script;
- ``gatekeeper serve`` on that ledger answers ``/`` with its page (stylesheet and script) and
  ``/metrics`` with the ``gatekeeper_periods`` family, then stops.
"""

from __future__ import annotations

import importlib.metadata
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

DISTRIBUTION = "luigi-gatekeeper"
BIN = Path(sys.executable).parent


def fail(what: str) -> None:
    raise SystemExit(f"package check: {what}")


def main_command(readme: str) -> str:
    """README.md's first command, from its ``luigi`` on (the install is this session's)."""
    block = re.search(r"```bash\n(.*?)```", readme, re.S)
    if block is None or "luigi " not in block.group(1):
        fail("README.md has no bash block with the main command")
    line = block.group(1).strip().splitlines()[0]
    return line[line.index("luigi ") :]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def fetch(url: str, deadline: float) -> str:
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:  # noqa: S310 - localhost
                return str(answer.read().decode())
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def check_installed(checkout: Path) -> None:
    import gatekeeper

    where = Path(gatekeeper.__file__).resolve()
    if where.parent == checkout / "gatekeeper" or "site-packages" not in where.parts:
        fail(f"gatekeeper is imported from {where}, not from the installed wheel")
    if (Path(sys.prefix).resolve() / "lib") not in where.parents:
        fail(f"gatekeeper is imported from {where}, outside this virtualenv ({sys.prefix})")
    declared = re.search(r'^version = "([^"]+)"', (checkout / "pyproject.toml").read_text(), re.M)
    version = importlib.metadata.version(DISTRIBUTION)
    if declared is None or version != declared.group(1) or gatekeeper.__version__ != version:
        fail(f"{DISTRIBUTION} reports version {version}; pyproject.toml declares {declared}")
    shown = subprocess.run(
        [BIN / "gatekeeper", "--version"], capture_output=True, text=True, check=True
    ).stdout
    if shown.strip() != f"gatekeeper {version}":
        fail(f"gatekeeper --version printed {shown!r}")
    print(f"package check: {DISTRIBUTION} {version} installed at {where.parent}")


def check_main_job(checkout: Path, folder: Path) -> None:
    shutil.copy(checkout / "luigi.cfg", folder / "luigi.cfg")
    command = main_command((checkout / "README.md").read_text())
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    env.pop("PYTHONPATH", None)
    done = subprocess.run(
        ["bash", "-c", command], cwd=folder, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        fail(f"the README's main command exited {done.returncode}: {done.stderr[-2000:]}")
    if "filled 31/31" not in done.stdout:
        fail(f"the README's main command did not print filled 31/31: {done.stdout[-2000:]}")
    page = (folder / "coverage.html").read_text()
    for part in ("<style>", "<script>", 'data-state="succeeded"'):
        if part not in page:
            fail(f"coverage.html lacks {part!r}: the report's assets are not in the wheel")
    print("package check: the README's main command ran outside the checkout; report written")


def check_serve(folder: Path) -> None:
    port = free_port()
    ledger = f"sqlite:///{folder / 'gatekeeper.db'}"
    served = subprocess.Popen(
        [BIN / "gatekeeper", "serve", "--ledger", ledger, "--port", str(port)],
        cwd=folder,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        page = fetch(f"http://127.0.0.1:{port}/", deadline)
        metrics = fetch(f"http://127.0.0.1:{port}/metrics", deadline)
    finally:
        served.terminate()
        served.wait(30)
    for part in ("<style>", "<script>", "DailySalesLoad"):
        if part not in page:
            fail(f"serve's page lacks {part!r}: its assets are not in the wheel")
    if "gatekeeper_periods" not in metrics:
        fail("serve's /metrics lacks gatekeeper_periods")
    print("package check: gatekeeper serve answered / and /metrics")


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        fail("usage: python tools/package_check.py CHECKOUT")
    checkout = Path(argv[0]).resolve()
    check_installed(checkout)
    with tempfile.TemporaryDirectory(prefix="gk-package-check-") as tmp:
        folder = Path(tmp)
        check_main_job(checkout, folder)
        check_serve(folder)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
