"""The moving parts of ``bench/soak.py``: its luigid, its fleet of ``luigi`` processes, the
nemesis that hurts them, and the JSON-lines log every action and exit goes to.

Not a benchmark itself; ``soak.py`` imports it from this folder.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

HOST = "127.0.0.1"


class JsonLog:
    """One JSON object a line: ``t`` (seconds since the soak began), ``event`` and its fields."""

    def __init__(self, path: Path):
        self.began = time.monotonic()
        self.out: TextIO = path.open("a")
        self.records: list[dict[str, Any]] = []

    def __call__(self, event: str, **fields: Any) -> dict[str, Any]:
        record = {"t": round(time.monotonic() - self.began, 3), "event": event, **fields}
        self.out.write(json.dumps(record, default=str) + "\n")
        self.out.flush()
        self.records.append(record)
        return record

    def close(self) -> None:
        self.out.close()


class Luigid:
    """A ``luigid`` on a fixed loopback port in ``folder``: started, killed -9, started again."""

    def __init__(self, folder: Path, port: int, env: dict[str, str]):
        self.folder, self.port, self.env = folder, port, env
        self.process: subprocess.Popen[bytes] | None = None
        (folder / "luigid-logs").mkdir(exist_ok=True)

    def start(self, timeout: float = 30) -> None:
        """Start luigid and wait until its API answers (SystemExit if it does not in time)."""
        script = Path(sys.executable).parent / "luigid"
        args = ["--address", HOST, "--port", str(self.port)]
        args += ["--state-path", str(self.folder / "luigid.pickle")]
        args += ["--logdir", str(self.folder / "luigid-logs")]
        with (self.folder / "luigid.out").open("ab") as out:
            self.process = subprocess.Popen(
                [str(script), *args],
                cwd=self.folder,
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + timeout
        while self.process.poll() is None:
            try:
                query = urllib.parse.urlencode({"data": "{}"})
                url = f"http://{HOST}:{self.port}/api/task_list?{query}"
                with urllib.request.urlopen(url, timeout=2):
                    return
            except (OSError, urllib.error.URLError):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.1)
        self.kill()
        raise SystemExit(f"luigid did not answer on port {self.port} (see luigid.out)")

    def kill(self) -> None:
        """SIGKILL luigid's process group and reap it."""
        if self.process is not None and self.process.poll() is None:
            kill_group(self.process.pid)
            self.process.wait(timeout=30)


def kill_group(pid: int, sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def signal_pid(pid: int, sig: int) -> bool:
    """Send ``sig`` to ``pid``; False when it no longer exists."""
    try:
        os.kill(pid, sig)
        return True
    except ProcessLookupError:
        return False


def processes() -> list[tuple[int, str, int, int]]:
    """(pid, state, parent pid, process group) of every live process (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        state, ppid, pgrp = stat[stat.rindex(")") + 2 :].split()[:3]
        found.append((int(entry.name), state, int(ppid), int(pgrp)))
    return found


def children_of(parents: set[int]) -> list[int]:
    """The live processes whose parent is one of ``parents``."""
    return [pid for pid, state, ppid, _ in processes() if ppid in parents and state != "Z"]


def kill_members(groups: set[int], marker: bytes) -> None:
    """SIGCONT then SIGKILL each process of ``groups`` whose command line holds ``marker``:
    a group whose leader died long ago may have handed its number to someone else's."""
    for pid, _, _, pgrp in processes():
        try:
            ours = pgrp in groups and marker in Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if ours:
            signal_pid(pid, signal.SIGCONT)
            signal_pid(pid, signal.SIGKILL)


@dataclass
class Slot:
    """One of the fleet's ``luigi`` processes, restarted whenever it exits."""

    number: int
    command: list[str]
    scope: str
    process: subprocess.Popen[bytes] | None = None
    groups: list[int] = field(default_factory=list)


class Fleet:
    """``luigi`` processes, one per slot; ``reap()`` logs each exit and starts it again."""

    def __init__(self, slots: list[Slot], env: dict[str, str], folder: Path, log: JsonLog):
        self.slots, self.env, self.folder, self.log = slots, env, folder, log

    def start(self, slot: Slot) -> None:
        out = (self.folder / f"luigi-{slot.number}.log").open("ab")
        slot.process = subprocess.Popen(
            slot.command,
            cwd=self.folder,
            env=self.env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        out.close()
        slot.groups.append(slot.process.pid)
        self.log("start", process=slot.number, pid=slot.process.pid, scope=slot.scope)

    def reap(self, gaps: Callable[[str], int | None], restart: bool) -> None:
        """Log every slot whose process exited (its code, the due gaps left then); restart it."""
        for slot in self.slots:
            if slot.process is None or slot.process.poll() is None:
                continue
            code = slot.process.returncode
            left = gaps(slot.scope)
            self.log(
                "exit",
                process=slot.number,
                pid=slot.process.pid,
                code=code,
                due_gaps=left,
                scope=slot.scope,
            )
            slot.process = None
            if restart:
                self.start(slot)

    def pids(self) -> set[int]:
        return {s.process.pid for s in self.slots if s.process and s.process.poll() is None}

    def stop(self, gaps: Callable[[str], int | None] | None = None) -> None:
        """SIGKILL every process of the groups the fleet started (orphaned task processes too);
        with ``gaps``, log each process ended so as an exit (``cause``: the soak ended)."""
        kill_members({g for slot in self.slots for g in slot.groups}, b"soak_pipeline")
        for slot in self.slots:
            if slot.process is not None:
                code = slot.process.wait(timeout=30)
                if gaps is not None:
                    self.log(
                        "exit",
                        process=slot.number,
                        pid=slot.process.pid,
                        code=code,
                        due_gaps=gaps(slot.scope),
                        scope=slot.scope,
                        cause="soak ended",
                    )
                slot.process = None


class Nemesis:
    """Acts every 2-6 s at random, one of ``kinds``: kill, stop, db, luigid. When it acts and
    with which fault follows from the seed alone (``schedule``); what it hits, from ``rng``."""

    def __init__(
        self,
        kinds: list[str],
        rng: random.Random,
        fleet: Fleet,
        luigid: Luigid,
        db_restart: str | None,
        log: JsonLog,
    ):
        self.kinds, self.rng, self.fleet, self.luigid = kinds, rng, fleet, luigid
        self.db_restart, self.log = db_restart, log
        # when it acts and with which fault: a stream of its own, so a seed names the same
        # schedule whatever targets are drawn from ``rng`` in between (a test relies on it)
        self.schedule = random.Random(rng.getrandbits(64))
        self.next_at = time.monotonic() + self.schedule.uniform(2, 6)
        self.stopped: dict[int, float] = {}  # pid -> when to SIGCONT it

    def tick(self) -> None:
        """Resume what is due; act when the time has come."""
        now = time.monotonic()
        for pid, when in list(self.stopped.items()):
            if when <= now:
                del self.stopped[pid]
                self.log("resume", pid=pid, alive=signal_pid(pid, signal.SIGCONT))
        if now >= self.next_at:
            getattr(self, f"_{self.schedule.choice(self.kinds)}")()
            self.next_at = time.monotonic() + self.schedule.uniform(2, 6)

    def resume_all(self) -> None:
        for pid in list(self.stopped):
            del self.stopped[pid]
            self.log("resume", pid=pid, alive=signal_pid(pid, signal.SIGCONT))

    def _target(self) -> tuple[str, int] | None:
        """A ``luigi`` process or a forked task process, not one already stopped."""
        luigi = [p for p in self.fleet.pids() if p not in self.stopped]
        tasks = [p for p in children_of(self.fleet.pids()) if p not in self.stopped]
        pools = [(kind, pool) for kind, pool in (("luigi", luigi), ("task", tasks)) if pool]
        if not pools:
            return None
        kind, pool = self.rng.choice(pools)
        return kind, self.rng.choice(sorted(pool))

    def _kill(self) -> None:
        target = self._target()
        if target is None:
            self.log("fault", kind="kill", target=None)
            return
        self.log(
            "fault",
            kind="kill",
            target=target[0],
            pid=target[1],
            delivered=signal_pid(target[1], signal.SIGKILL),
        )

    def _stop(self) -> None:
        target = self._target()
        if target is None:
            self.log("fault", kind="stop", target=None)
            return
        seconds = round(self.rng.uniform(5, 20), 1)
        if signal_pid(target[1], signal.SIGSTOP):
            self.stopped[target[1]] = time.monotonic() + seconds
        self.log("fault", kind="stop", target=target[0], pid=target[1], seconds=seconds)

    def _db(self) -> None:
        """Run ``--db-restart-cmd``, its output to ``db-restart.log`` (a file, not a pipe: a
        server it starts keeps what it inherited open)."""
        began = time.monotonic()
        with (self.fleet.folder / "db-restart.log").open("ab") as out:
            command = subprocess.Popen(
                self.db_restart or "false",
                shell=True,
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                code: int | None = command.wait(timeout=300)
            except subprocess.TimeoutExpired:
                kill_group(command.pid)
                code = None
        seconds = round(time.monotonic() - began, 2)
        self.log("fault", kind="db", command=self.db_restart, code=code, seconds=seconds)

    def _luigid(self) -> None:
        old = self.luigid.process.pid if self.luigid.process else None
        self.luigid.kill()
        time.sleep(self.rng.uniform(0, 2))
        self.luigid.start()
        self.log("fault", kind="luigid", old_pid=old, pid=self.luigid.process.pid)  # type: ignore[union-attr]
