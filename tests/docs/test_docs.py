"""The docs site builds with --strict, and every shell command the README and docs/ show runs.

The convention (docs/development.md, "The docs are tested"): a shell command is shown in a
```bash block; the blocks of a page run in order, each as one bash script, in one scratch
directory per page holding the repository's luigi.cfg (a fresh SQLite ledger); each command
exits 0 or the code of its trailing ``# exit N``; every ``#   `` line under a command is output
that must match a line the block printed (``...`` stands for what varies). An HTML comment
``<!-- docs: KIND ... -->`` just before a block changes how it runs: ``skip WHY``, ``help WHY``,
``proved-by FILE::TEST``, ``free-port N``, ``run from "TEXT"``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import importlib.util
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
BIN = Path(sys.executable).parent
FENCE = re.compile(r"^```([A-Za-z]*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
DIRECTIVE = re.compile(r"<!--\s*docs:\s*([a-z-]+)\s*(.*?)\s*-->", re.S)
EXIT = re.compile(r"#\s*exit (\d+)\s*$")
LOOKS_LIKE_A_COMMAND = re.compile(r"^\s*(\$ |gatekeeper |luigi |luigid |python |pip |export )")
KINDS = {"run", "skip", "help", "proved-by", "free-port", "illustrative"}


@dataclasses.dataclass(frozen=True)
class Block:
    page: Path
    line: int
    lang: str
    text: str
    directives: tuple[tuple[str, str], ...]

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    def directive(self, kind: str) -> str | None:
        return next((arg for k, arg in self.directives if k == kind), None)


def blocks(page: Path) -> list[Block]:
    """Every fenced block of ``page``, with the ``docs:`` comments on the lines just above it."""
    text = page.read_text()
    found = []
    for match in FENCE.finditer(text):
        above = text[: match.start()].rstrip("\n").split("\n")
        comments = []
        while above and above[-1].lstrip().startswith("<!--"):
            comments.append(above.pop())
        directives = tuple(
            (m.group(1), m.group(2)) for m in DIRECTIVE.finditer("\n".join(comments))
        )
        found.append(
            Block(
                page,
                text.count("\n", 0, match.start()) + 1,
                match.group(1),
                match.group(2),
                directives,
            )
        )
    return found


def commands(block: Block) -> list[tuple[str, int, list[str]]]:
    """(command, expected exit code, expected output lines) of each command of a bash block.

    A console block is a recorded session: its ``$ `` lines run, an ``echo $?`` sets the exit
    code the previous command must give, and its output (that run's IDs and times) is not
    compared."""
    out: list[tuple[str, int, list[str]]] = []
    if block.lang == "console":
        lines = block.text.splitlines()
        for i, line in enumerate(lines):
            if line == "$ echo $?" and out:
                out[-1] = (out[-1][0], int(lines[i + 1]), [])
            elif line.startswith("$ "):
                out.append((line[2:], 0, []))
        return out
    pending = ""
    for line in block.text.splitlines():
        if line.startswith("#   "):
            out[-1][2].append(line[4:])
        elif line.startswith("#") or not line.strip():
            continue
        else:
            pending += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
            if not line.endswith("\\"):
                code = EXIT.search(pending)
                out.append((pending, int(code.group(1)) if code else 0, []))
                pending = ""
    return out


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in blocks(page)]


def test_docs_every_block_follows_the_convention() -> None:
    """Commands only in bash blocks; every directive known and, where it says why, says why."""
    problems = []
    for block in all_blocks():
        kinds = {kind for kind, _ in block.directives}
        if kinds - KINDS:
            problems.append(f"{block.where()}: unknown directive {sorted(kinds - KINDS)}")
        for kind in ("skip", "help", "illustrative"):
            if kind in kinds and len(block.directive(kind) or "") < 10:
                problems.append(f"{block.where()}: '{kind}' needs a reason")
        if block.lang in ("bash", "console"):
            if not commands(block):
                problems.append(f"{block.where()}: a bash block without a command")
        elif block.lang in ("", "text", "console", "sh", "shell") and "illustrative" not in kinds:
            if block.page.name == "README.md" and "test-command" in _above(block):
                continue  # CI's awk reads this block: its fence stays as it is
            if any(LOOKS_LIKE_A_COMMAND.match(line) for line in block.text.splitlines()):
                problems.append(f"{block.where()}: a command outside a bash block")
    assert not problems, "\n".join(problems)


def _above(block: Block) -> str:
    lines = block.page.read_text().split("\n")[: block.line - 1]
    return "\n".join(lines[-3:])


def test_docs_proved_by_tests_read_their_page() -> None:
    """A block another test runs names that test, and that test reads this block's page."""
    named = [block for block in all_blocks() if block.directive("proved-by")]
    assert named
    for block in named:
        filename, _, test_name = (block.directive("proved-by") or "").partition("::")
        matches = sorted((ROOT / "tests").rglob(filename))
        assert len(matches) == 1, f"{block.where()}: {filename} not found once under tests/"
        source = matches[0].read_text()
        assert f"def {test_name}(" in source, f"{block.where()}: no {test_name} in {filename}"
        page = block.page.relative_to(ROOT).as_posix()
        assert (
            f'"{page}"' in source
            or f"'{page}'" in source
            or "/".join(f'"{part}"' for part in page.split("/")) in source.replace(" / ", "/")
        ), f"{block.where()}: {filename} does not read {page}"


@pytest.mark.slow
def test_docs_help_blocks_name_real_options() -> None:
    """Benchmark commands: the script exists and its --help lists every option a line uses
    (each script's --help asked once)."""
    helps: dict[str, subprocess.CompletedProcess[str]] = {}
    for block in (b for b in all_blocks() if b.directive("help") is not None):
        for command, _, _ in commands(block):
            words = shlex.split(command.split(" #")[0])
            assert words[0] == "python", f"{block.where()}: {command}"
            if words[1] not in helps:
                helps[words[1]] = subprocess.run(
                    [sys.executable, words[1], "--help"],
                    cwd=ROOT,
                    text=True,
                    capture_output=True,
                    timeout=60,
                    env=_env(ROOT),
                )
            done = helps[words[1]]
            assert done.returncode == 0, f"{block.where()}: {command}\n{done.stderr}"
            for option in (w for w in words[2:] if w.startswith("--")):
                assert option in done.stdout, f"{block.where()}: {option} not in {words[1]}"


def test_docs_api_page_documents_every_public_name() -> None:
    import gatekeeper

    page = (ROOT / "docs" / "api.md").read_text()
    shown = set(re.findall(r"^::: gatekeeper\.(\w+)$", page, flags=re.M))
    assert shown == set(gatekeeper.__all__)


@pytest.mark.slow
def test_docs_site_builds_strict(tmp_path: Path) -> None:
    if importlib.util.find_spec("mkdocs") is None:
        if os.environ.get("CI"):
            pytest.fail("CI is set but mkdocs is missing (pip install -e '.[docs]')")
        pytest.skip("mkdocs is not installed (pip install -e '.[docs]')")
    done = subprocess.run(
        [str(BIN / "mkdocs"), "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**_env(ROOT), "NO_MKDOCS_2_WARNING": "1"},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    cli = (tmp_path / "site" / "cli-reference" / "index.html").read_text()
    assert "gatekeeper collect databricks" in cli and "--expected-stages" in cli
    config = (tmp_path / "site" / "configuration" / "index.html").read_text()
    assert "--gatekeeper-lease-seconds" in config and "openlineage_timeout" in config
    api = (tmp_path / "site" / "api" / "index.html").read_text()
    assert "BusinessDateTask" in api and "open_ledger" in api


def runnable_pages() -> list[Path]:
    return [page for page in PAGES if any(_runs(b) for b in blocks(page))]


def _runs(block: Block) -> bool:
    return block.lang in ("bash", "console") and not any(
        block.directive(kind) is not None for kind in ("skip", "help", "proved-by")
    )


SLOW_PAGES = {"delta.md", "openlineage.md", "ranges.md", "recovery_walkthrough.md"}


@pytest.mark.parametrize(
    "page",
    [
        pytest.param(
            page,
            id=page.relative_to(ROOT).as_posix(),
            marks=[pytest.mark.slow] if page.name in SLOW_PAGES else [],
        )
        for page in runnable_pages()
    ],
)
def test_docs_page_commands_run(page: Path, tmp_path: Path) -> None:
    """Each bash block of the page, in order, in one scratch directory: exit codes and output."""
    shutil.copy(ROOT / "luigi.cfg", tmp_path / "luigi.cfg")
    for block in blocks(page):
        if _runs(block):
            run_block(block, tmp_path)


def run_block(block: Block, cwd: Path) -> None:
    script_lines = ["set -u"]
    todo = commands(block)
    start = block.directive("run")
    port = block.directive("free-port")
    free = str(_free_port()) if port else ""
    for number, (command, code, _) in enumerate(todo, 1):
        if start:
            marker = start.removeprefix("from").strip().strip('"')
            command = command[command.index(marker) :]
        if port:
            command = command.replace(port, free)
        script_lines += [
            command,
            f'rc=$?; if [ $rc -ne {code} ]; then echo "docs: command {number} '
            f'exited $rc, expected {code}" >&2; exit 99; fi',
        ]
    shell = subprocess.Popen(
        ["bash", "-c", "\n".join(script_lines)],
        cwd=cwd,
        env=_env(cwd),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        output, _ = shell.communicate(timeout=240)
    finally:  # background servers a block started and did not stop
        with contextlib.suppress(ProcessLookupError):
            os.killpg(shell.pid, signal.SIGTERM)
    assert shell.returncode == 0, f"{block.where()}: {[c for c, _, _ in todo]}\n{output[-4000:]}"
    lines = output.splitlines()
    for _, _, expected in todo:
        for shown in expected:
            pattern = ".*".join(re.escape(part) for part in shown.rstrip().split("..."))
            assert any(re.search(pattern, line) for line in lines), (
                f"{block.where()}: not printed: {shown!r}\n{output[-4000:]}"
            )


def _env(cwd: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("GATEKEEPER_", "LUIGI_", "OPENLINEAGE", "DATABRICKS"))
    }
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    env["HOME"] = str(cwd)
    env["COLUMNS"] = "200"
    env["PYTHONUNBUFFERED"] = "1"  # a background server's lines reach the pipe before its kill
    return env


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
