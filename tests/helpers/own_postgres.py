"""A PostgreSQL cluster of the test's own, on a free port, that a test may stop and restart.

Built with Debian's ``initdb``/``pg_ctl`` (package ``postgresql``), run as the ``postgres``
user when the tests run as root (initdb refuses root). The shared server on 5432 is never
touched.
"""

from __future__ import annotations

import os
import pwd
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from tests.helpers.luigid_support import free_port


def tool(name: str) -> str | None:
    """The path of a PostgreSQL server tool, or None."""
    found = shutil.which(name)
    if found:
        return found
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    for folder in versions:
        if (folder / name).exists():
            return str(folder / name)
    return None


def missing() -> str | None:
    """Why no cluster of our own can be made here, or None."""
    if tool("initdb") is None or tool("pg_ctl") is None:
        return "needs initdb and pg_ctl (Debian package postgresql)"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            return "running as root needs a postgres user for initdb (Debian package postgresql)"
    return None


class OwnPostgres:
    """``start()``, ``stop()``, ``restart_command()``; ``url`` is a gatekeeper ledger URL."""

    def __init__(self) -> None:
        self.port = free_port()
        self.folder = Path(tempfile.mkdtemp(prefix="gk-own-pg-", dir="/tmp"))
        self.data = self.folder / "data"
        self.as_postgres = os.geteuid() == 0
        if self.as_postgres:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        self._run(
            tool("initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres", "--no-sync"
        )

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def _command(self, *args: str | None) -> list[str]:
        command = [str(a) for a in args]
        if self.as_postgres:
            command = ["runuser", "-u", "postgres", "--", *command]
        return command

    def _run(self, *args: str | None) -> None:
        subprocess.run(self._command(*args), check=True, capture_output=True, timeout=120)

    def _pg_ctl(self, action: str) -> list[str]:
        """``pg_ctl start`` or ``restart`` of this cluster, on its port, waiting until it is up."""
        options = f"-p {self.port} -k {self.folder} -c listen_addresses=127.0.0.1 -c fsync=off"
        log = str(self.folder / "log")
        return self._command(
            tool("pg_ctl"),
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            log,
            "-m",
            "fast",
            "-w",
            action,
        )

    def start(self) -> None:
        subprocess.run(self._pg_ctl("start"), check=True, capture_output=True, timeout=120)

    def restart_command(self) -> str:
        """A shell command restarting this cluster (fast shutdown, then start): what
        ``bench/soak.py --db-restart-cmd`` runs."""
        return shlex.join(self._pg_ctl("restart"))

    def stop(self) -> None:
        """Fast shutdown: every session is terminated, as in a restart."""
        self._run(tool("pg_ctl"), "-D", str(self.data), "-m", "fast", "-w", "stop")

    def remove(self) -> None:
        try:
            self.stop()
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.folder, ignore_errors=True)
