"""Development sessions: ``nox`` runs them all (what CI runs), ``nox -s lint`` one of them.

- ``tests``: the whole suite on the newest Luigi, with every integration and the docs build.
- ``tests_oldest``: the tests marked ``luigi`` that run in process (not ``slow``, not
  ``process`` but for the few marked ``oldest``) on the oldest supported Luigi (3.2.0), with
  the test runner alone (no integrations): the Luigi adapter is what depends on Luigi's
  version.
- ``fidelity``: the Luigi adapter's fidelity tests (``luigi and not slow``) on one Luigi minor
  the package claims (``LUIGI_MINORS``, 3.2 through the newest), e.g.
  ``nox -s "fidelity(luigi='3.5')"``; ``nox -s fidelity`` runs every minor. Not in CI, which
  runs the oldest (``tests_oldest``) and the newest (``tests``).
- ``fidelity_scheduled``: the same tests (``luigi and not slow``) on the installed Luigi with
  ``GATEKEEPER_INLINE=false``: every range schedules each period as its own Luigi task
  (docs/inline.md, "The switch"). Not in CI.
- ``package``: builds the sdist and the wheel (``python -m build``), checks their metadata
  (``twine check --strict``), installs the wheel with every runtime extra (not editable) and
  runs ``tools/package_check.py``: the README's main job from a folder outside the checkout,
  the report's and serve's assets, the version. In CI.
- ``lint``: ruff check and ruff format --check.
- ``typecheck``: mypy (setup.cfg; strict on gatekeeper/core and gatekeeper/ledger).
- ``docs``: mkdocs build --strict.

Set ``GATEKEEPER_TEST_PG_DSN`` for the PostgreSQL cases (else they skip, unless
``GATEKEEPER_REQUIRE_PG`` is set); ``nox -s tests -- -k range`` passes arguments to pytest.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import nox

nox.options.sessions = ["lint", "typecheck", "docs", "package", "tests", "tests_oldest"]
# CI (README.md's test command) runs lint, typecheck, package, tests and tests_oldest: tests
# builds the docs too (tests/docs), so the docs session is for writing them (`nox -s docs`).
nox.options.reuse_existing_virtualenvs = True
# uv makes the sessions' virtualenvs and installs into them (about a minute less per CI run than
# pip: parallel downloads, a shared cache); virtualenv and pip where uv is not installed
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.error_on_missing_interpreters = True

#: the oldest Luigi gatekeeper supports (pyproject.toml: luigi>=3.2,<4)
OLDEST_LUIGI = "3.2.0"
#: the newest release of every Luigi minor pyproject.toml claims (luigi>=3.2,<4): ``fidelity``
LUIGI_MINORS = {
    "3.2": "3.2.1",
    "3.3": "3.3.0",
    "3.4": "3.4.0",
    "3.5": "3.5.2",
    "3.6": "3.6.0",
    "3.7": "3.7.3",
    "3.8": "3.8.1",
}
#: the tool versions the tree is checked with: pyproject.toml's ``dev`` extra is their one place
#: (the one-time reformat was made with its ruff)
DEV = Path("pyproject.toml").read_text()


def _pin(tool: str) -> str:
    found = re.search(rf'^dev = \[.*"({tool}==[^"]+)"', DEV, re.M)
    assert found is not None, f"pyproject.toml's dev extra pins no {tool}"
    return found.group(1)


RUFF, MYPY = _pin("ruff"), _pin("mypy")


#: pytest-xdist workers for the tests that can share the machine (CI has 2 cores): the suite
#: waits more than it computes, and 4 workers took the part under xdist from 8 min 23 s to
#: 5 min 53 s (docs/development.md, with the two failures at that load, since fixed)
WORKERS = "4"


def compile_bytecode(session: nox.Session) -> None:
    """Compile the checkout's bytecode once: an editable install ships no ``.pyc`` and this
    machine (and CI) export ``PYTHONDONTWRITEBYTECODE=1``, so every ``gatekeeper`` or ``luigi``
    process a test starts would compile about 110 modules from source (0.3 s each time);
    Python reads ``.pyc`` files that exist even under that variable."""
    session.run("python", "-m", "compileall", "-q", "gatekeeper", "tests", "example_pipelines")


def pytest(session: nox.Session, marks: str, *, parallel: bool, may_be_empty: bool = False) -> None:
    """pytest over the tests ``marks`` selects; ``parallel`` under pytest-xdist."""
    # worksteal: a worker that runs out of tests takes some of the other's, so a few long
    # fleet tests at the end of one worker's share do not leave the other core idle
    args = ["-n", WORKERS, "--dist", "worksteal"] if parallel else ["-p", "no:xdist"]
    session.run(
        "python",
        "-m",
        "pytest",
        "-m",
        marks,
        *args,
        *(session.posargs or ["-q", "--durations=15"]),
        success_codes=[0, 5] if may_be_empty else [0],
    )


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite on the newest Luigi 3.x (the docs site is built with --strict by
    tests/docs): under pytest-xdist, then the few tests that need the machine to themselves
    (``serial``, each saying why) alone."""
    session.install("-e", ".[test,postgres,docs]")
    compile_bytecode(session)
    pytest(session, "not serial", parallel=True)
    pytest(session, "serial", parallel=False)


#: the extras a user installs (the test, docs and dev ones are the checkout's)
RUNTIME_EXTRAS = "postgres,web,calendars,openlineage,databricks,delta"


@nox.session
def package(session: nox.Session) -> None:
    """The package as a user gets it: the built wheel, not the checkout (tools/package_check.py)."""
    # uv makes build's isolated environment (--installer uv): 21 s against 48 s with pip, on
    # this machine under load
    session.install("build>=1.2", "twine>=5", "uv>=0.5")
    dist = Path(session.create_tmp()) / "dist"
    shutil.rmtree(dist, ignore_errors=True)
    session.run("python", "-m", "build", "--installer", "uv", "--outdir", str(dist), ".")
    built = sorted(str(p) for p in dist.iterdir())
    session.run("twine", "check", "--strict", *built)
    (wheel,) = (p for p in built if p.endswith(".whl"))
    session.install(f"{wheel}[{RUNTIME_EXTRAS}]")
    session.install("--force-reinstall", "--no-deps", wheel)  # this build, in a reused venv
    session.run("python", "tools/package_check.py", str(Path.cwd()))


#: what ``tests_oldest`` runs: the Luigi adapter's tests (``luigi``) that run in process, and of
#: those that start a process (``process``: the ``luigi`` command, luigid) a handful (``oldest``:
#: exit codes, luigi.cfg, luigid's wire); not the ``slow`` ones (fleets, outages, faults)
OLDEST_TESTS = "(luigi and not slow and (not process or oldest))"


@nox.session
def tests_oldest(session: nox.Session) -> None:
    """The Luigi adapter's in-process tests (``OLDEST_TESTS``) on the oldest supported Luigi (the
    command, fleet, outage and fault runs are the newest Luigi's, but for a handful): under
    pytest-xdist, then the timing-sensitive ones alone."""
    # Luigi 3.2.0's luigid imports pkg_resources without declaring setuptools (a virtualenv
    # no longer seeds it): the last setuptools that ships pkg_resources
    session.install("-e", ".[test-core,postgres]", f"luigi=={OLDEST_LUIGI}", "setuptools<81")
    compile_bytecode(session)
    pytest(session, f"{OLDEST_TESTS} and not serial", parallel=True)
    pytest(session, f"{OLDEST_TESTS} and serial", parallel=False, may_be_empty=True)


@nox.session
@nox.parametrize("luigi", list(LUIGI_MINORS))
def fidelity(session: nox.Session, luigi: str) -> None:
    """The Luigi adapter's fidelity tests (marker ``luigi``, not ``slow``) on the newest release
    of the Luigi minor ``luigi``, as ``tests_oldest`` runs them on the oldest."""
    # older luigids import pkg_resources without declaring setuptools (as in tests_oldest)
    session.install("-e", ".[test-core,postgres]", f"luigi=={LUIGI_MINORS[luigi]}", "setuptools<81")
    compile_bytecode(session)
    pytest(session, "luigi and not serial and not slow", parallel=True)
    pytest(session, "luigi and serial and not slow", parallel=False, may_be_empty=True)


@nox.session
def fidelity_scheduled(session: nox.Session) -> None:
    """The Luigi adapter's fidelity tests (``luigi``, not ``slow``) with inline filling off
    (``GATEKEEPER_INLINE=false``): the fills the switch gives must keep every promise the inline
    ones do. Tests of the inline machinery itself ask for it with ``inline=True``."""
    session.install("-e", ".[test-core,postgres]")
    compile_bytecode(session)
    session.env["GATEKEEPER_INLINE"] = "false"
    pytest(session, "luigi and not serial and not slow", parallel=True)
    pytest(session, "luigi and serial and not slow", parallel=False, may_be_empty=True)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff: the rules (pyproject.toml) and the format."""
    session.install(RUFF)
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def typecheck(session: nox.Session) -> None:
    """mypy over gatekeeper/ (setup.cfg: strict on the core and the ledger)."""
    session.install("-e", ".[postgres]", MYPY)
    session.run("mypy")


@nox.session
def docs(session: nox.Session) -> None:
    """The docs site, built with --strict (a broken link or reference fails)."""
    session.install("-e", ".[docs]")
    session.run("mkdocs", "build", "--strict", "--site-dir", session.create_tmp() + "/site")
