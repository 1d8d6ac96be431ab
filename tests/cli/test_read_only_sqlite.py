"""Read-only commands read a SQLite ledger on a read-only filesystem (a backup), and leave its
files byte-identical: a ``chmod 0555`` folder of ``0444`` files, a read-only bind mount (root),
an immutable folder and files (``chattr +i``, root). Each with the ledger checkpointed (every
transaction in the file) and with committed transactions still in its ``-wal`` file (a writer
that ended without closing). The real ``gatekeeper`` command, a real ledger file."""

from __future__ import annotations

import contextlib
import datetime as dt
import hashlib
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import gatekeeper as gk
from tests.helpers.cli import gatekeeper

D = "2026-10-23"
ROOT = os.geteuid() == 0
T = dt.datetime(2026, 10, 23, 7, tzinfo=dt.timezone.utc)
WINDOW = ("--start", D, "--stop", "2026-10-24", "--now", "2026-10-25T00:00:00+00:00")
WINDOW += ("--lateness", "0s", "--timezone", "UTC")

#: every read-only command, its arguments and what its output shows of the ledger
COMMANDS = {
    "history": (["Sales"], "s-1"),
    "jobs": ([], "Upstream"),
    "status": (["Sales", *WINDOW], "succeeded"),
    "evidence": (["Report", D], "s-1"),
    "stale": (["Report"], ""),
    "ready": ([D, "Sales", "Upstream"], "READY"),
    "report": (["Sales", *WINDOW, "-o", "{out}/coverage.html"], "wrote"),
    "plan-recovery": (["--stages", "Upstream,Sales", "--business-date", D], "Upstream"),
    "verify": ([], "ok: 10 invariants hold"),
}
FEW = ("history", "jobs", "status")

#: builds the ledger in its own process; "wal": it ends without closing (as a crash would), so
#: every committed transaction is still in the -wal file, beside its -shm
WRITER = """
import datetime as dt, os, sys
import gatekeeper as gk
t = dt.datetime(2026, 10, 23, 7, tzinfo=dt.timezone.utc)
ledger = gk.open_ledger(sys.argv[1])
ledger.record("Upstream", "2026-10-23", 1, "u-1", "succeeded", t, now=t)
ledger.record("Sales", "2026-10-23", 1, "s-1", "succeeded", t, now=t)
ledger.publish("Report", "2026-10-23", ["Sales"], "fp-1", now=t)
if sys.argv[2] == "wal":
    os._exit(0)
ledger.close()
"""


def build(folder: Path, state: str) -> Path:
    """A ledger in ``folder`` (``checkpointed``, ``wal`` or ``wal-no-shm``); its path."""
    folder.mkdir()
    path = folder / "ledger.db"
    written = state if state == "checkpointed" else "wal"
    subprocess.run(
        [sys.executable, "-c", WRITER, f"sqlite:///{path}", written], check=True, timeout=120
    )
    wal = Path(f"{path}-wal")
    if state == "checkpointed":
        assert not wal.exists()
    else:
        assert wal.stat().st_size > 0
    if state == "wal-no-shm":
        Path(f"{path}-shm").unlink()
    return path


def digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in folder.iterdir()}


@contextlib.contextmanager
def chmod_read_only(folder: Path) -> Iterator[Path]:
    for file in folder.iterdir():
        file.chmod(0o444)
    folder.chmod(0o555)
    try:
        yield folder
    finally:
        folder.chmod(0o755)


@contextlib.contextmanager
def bind_read_only(folder: Path) -> Iterator[Path]:
    """``folder`` seen through a read-only bind mount (root only)."""
    if not ROOT:
        pytest.skip("a bind mount needs root")
    view = folder.parent / f"{folder.name}-ro"
    view.mkdir()
    mounted = subprocess.run(["mount", "--bind", str(folder), str(view)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"mount --bind is not permitted here: {mounted.stderr.decode().strip()}")
    try:
        remount = ["mount", "-o", "remount,ro,bind", str(view)]
        done = subprocess.run(remount, capture_output=True)
        if done.returncode != 0:
            pytest.skip(f"remount,ro,bind is not permitted here: {done.stderr.decode().strip()}")
        yield view
    finally:
        subprocess.run(["umount", str(view)], check=True)


@contextlib.contextmanager
def immutable(folder: Path) -> Iterator[Path]:
    """``folder`` write-protected and its files and itself immutable (``chattr +i``: root
    ignores permission bits, not this); skipped where chattr is missing or unsupported."""
    if shutil.which("chattr") is None:
        pytest.skip("chattr is not installed (Debian package e2fsprogs)")
    targets = [str(p) for p in folder.iterdir()] + [str(folder)]
    folder.chmod(0o555)
    done = subprocess.run(["chattr", "+i", *targets], capture_output=True)
    try:
        if done.returncode != 0:
            pytest.skip(f"chattr +i is not supported here: {done.stderr.decode().strip()}")
        yield folder
    finally:
        subprocess.run(["chattr", "-i", *targets], capture_output=True)
        folder.chmod(0o755)


PROTECTIONS = {"chmod": chmod_read_only, "bind": bind_read_only, "immutable": immutable}


def run_read_only(command: str, ledger: Path, out: Path) -> subprocess.CompletedProcess[str]:
    args, _ = COMMANDS[command]
    args = [a.replace("{out}", str(out)) for a in args]
    return gatekeeper(command, *args, "--ledger", f"sqlite:///{ledger}", cwd=out)


@pytest.mark.parametrize("state", ["checkpointed", "wal"])
@pytest.mark.parametrize("protection", sorted(PROTECTIONS))
def test_read_only_commands_read_a_ledger_on_a_read_only_filesystem(
    tmp_path: Path, protection: str, state: str
) -> None:
    folder, out = tmp_path / "ledger", tmp_path / "out"
    build(folder, state)
    out.mkdir()
    before = digests(folder)
    commands = sorted(COMMANDS) if protection == "bind" else FEW
    with PROTECTIONS[protection](folder) as view:
        for command in commands:
            done = run_read_only(command, view / "ledger.db", out)
            assert done.returncode == 0, (command, done.stdout, done.stderr)
            assert COMMANDS[command][1] in done.stdout, (command, done.stdout)
    after = digests(folder)
    if protection == "chmod" and ROOT:
        # root may write a 0555 folder and 0444 files: a reader's SQLite makes (or updates)
        # the -shm index and an empty -wal there; the ledger's content is untouched
        content = {name: digest for name, digest in before.items() if name != "ledger.db-shm"}
        assert {name: after[name] for name in content} == content
        assert set(after) - set(before) <= {"ledger.db-wal", "ledger.db-shm"}
    else:
        assert after == before


@pytest.mark.parametrize("protection", sorted(PROTECTIONS))
def test_read_only_commands_refuse_a_wal_they_cannot_read_and_change_nothing(
    tmp_path: Path, protection: str
) -> None:
    """Committed transactions in the -wal, its -shm gone and not creatable: reading the file
    alone (immutable) would miss them, so the command refuses (exit 4)."""
    if protection == "chmod" and ROOT:
        pytest.skip("root may write a 0555 folder: the -shm is made and the -wal read")
    folder, out = tmp_path / "ledger", tmp_path / "out"
    build(folder, "wal-no-shm")
    out.mkdir()
    before = digests(folder)
    with PROTECTIONS[protection](folder) as view:
        done = run_read_only("history", view / "ledger.db", out)
    assert done.returncode == 4, done.stdout + done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    assert "ledger.db-wal holds transactions" in done.stderr and "copy" in done.stderr
    assert digests(folder) == before


def test_read_only_command_on_a_writable_folder_reads_beside_a_live_writer(
    tmp_path: Path,
) -> None:
    """The ordinary case: mode=ro reads what a writer (still open) committed, and writes
    nothing to the ledger file."""
    url = f"sqlite:///{tmp_path / 'ledger.db'}"
    with gk.open_ledger(url) as writer:
        writer.record("Sales", D, 1, "s-1", "succeeded", T)
        before = (tmp_path / "ledger.db").read_bytes()
        done = gatekeeper("history", "Sales", "--ledger", url, cwd=tmp_path)
        assert done.returncode == 0 and "s-1" in done.stdout, done.stderr
        assert (tmp_path / "ledger.db").read_bytes() == before
        writer.record("Sales", D, 2, "s-2", "succeeded", T)
    done = gatekeeper("history", "Sales", "--ledger", url, cwd=tmp_path)
    assert "s-2" in done.stdout


def test_read_only_command_refuses_a_file_without_a_ledger_creating_nothing(
    tmp_path: Path,
) -> None:
    empty = tmp_path / "empty.db"
    empty.touch()
    for command in FEW:
        done = run_read_only(command, empty, tmp_path)
        assert done.returncode == 2, done.stdout + done.stderr
        assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
        assert "holds no gatekeeper ledger" in done.stderr and "nothing was created" in done.stderr
    assert empty.stat().st_size == 0 and {p.name for p in tmp_path.iterdir()} == {"empty.db"}
