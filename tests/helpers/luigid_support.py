"""A real `luigid` central scheduler on a loopback port, and a client for its JSON API."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

HOST = "127.0.0.1"


def free_port() -> int:
    """A TCP port nobody listens on at the moment (the kernel's pick on loopback)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


def luigid_command(*args: str) -> list[str]:
    """The real `luigid` command installed beside this interpreter."""
    script = Path(sys.executable).parent / "luigid"
    if not script.exists():
        raise RuntimeError(f"the luigid command is not installed at {script}")
    return [str(script), *args]


class Luigid:
    """One `luigid` process: started by ``start()``, always stopped by ``stop()``."""

    def __init__(self, folder: Path, config: str = ""):
        self.folder = folder
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self.config = config  # luigi.cfg text for luigid itself ([scheduler], [resources])

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def log_path(self) -> Path:
        return self.folder / "luigid.out"

    def start(self, timeout: float = 30) -> None:
        """Start luigid and wait until its API answers; raises if it does not in time."""
        logs = self.folder / "logs"
        logs.mkdir(parents=True, exist_ok=True)  # luigid logs there, and needs it to exist
        env = {k: v for k, v in os.environ.items() if k != "LUIGI_CONFIG_PATH"}
        if self.config:
            (self.folder / "luigid.cfg").write_text(self.config)
            env["LUIGI_CONFIG_PATH"] = str(self.folder / "luigid.cfg")
        with open(self.log_path, "wb") as out:
            self.process = subprocess.Popen(
                luigid_command(
                    "--address",
                    HOST,
                    "--port",
                    str(self.port),
                    "--state-path",
                    str(self.folder / "luigid.pickle"),
                    "--logdir",
                    str(logs),
                ),
                cwd=self.folder,
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"luigid exited with {self.process.returncode}: {self.log()}")
            try:
                self.rpc("task_list", timeout=2)
                return
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"luigid did not answer within {timeout}s: {self.log()}"
                    ) from None
                time.sleep(0.1)

    def stop(self, timeout: float = 10) -> None:
        """Terminate luigid (its whole process group), killing it if it does not exit."""
        process = self.process
        if process is None or process.poll() is not None:
            return
        try:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=timeout)
        except ProcessLookupError:
            process.wait(timeout=timeout)

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-4000:] if self.log_path.exists() else ""

    def rpc(self, method: str, timeout: float = 10, **arguments: Any) -> Any:
        """Call one of the scheduler's RPC methods over HTTP; returns its ``response``."""
        query = urllib.parse.urlencode({"data": json.dumps(arguments)})
        with urllib.request.urlopen(f"{self.url}/api/{method}?{query}", timeout=timeout) as page:
            return json.loads(page.read())["response"]

    def status_of(self, task_id: str) -> tuple[str, int | None]:
        """The task's status message and progress percentage as luigid holds them."""
        message = self.rpc("get_task_status_message", task_id=task_id)["statusMessage"]
        percent = self.rpc("get_task_progress_percentage", task_id=task_id)["progressPercentage"]
        return message, percent


def stop_all(processes: list[subprocess.Popen[Any]], timeout: float = 10) -> None:
    """Kill the process groups of those ``processes`` still running, and reap them."""
    for process in processes:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pass


# With a central scheduler Luigi reports a root task another worker ran, or took over while
# this one waited, as "run by another worker", "not granted run permission" or "missing
# dependencies"; Luigi's default exit code for those is 0. Failures keep write_config's codes.
PEER_RETCODES = (
    "--retcode-already-running",
    "0",
    "--retcode-not-run",
    "0",
    "--retcode-missing-data",
    "0",
)
