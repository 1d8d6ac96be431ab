"""Development sessions: ``nox`` runs them all (what CI runs), ``nox -s lint`` one of them.

- ``tests``: the whole suite on the newest Luigi, with every integration.
- ``tests_oldest``: the tests marked ``luigi`` on the oldest supported Luigi (3.2.0), with the
  test runner alone (no integrations): the Luigi adapter is what depends on Luigi's version.
- ``lint``: ruff check and ruff format --check.
- ``typecheck``: mypy (setup.cfg; strict on gatekeeper/core and gatekeeper/ledger).
- ``docs``: mkdocs build --strict.

Set ``GATEKEEPER_TEST_PG_DSN`` for the PostgreSQL cases (else they skip, unless
``GATEKEEPER_REQUIRE_PG`` is set); ``nox -s tests -- -k range`` passes arguments to pytest.
"""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "typecheck", "docs", "tests", "tests_oldest"]
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True

#: the oldest Luigi gatekeeper supports (pyproject.toml: luigi>=3.2,<4)
OLDEST_LUIGI = "3.2.0"
#: the tool versions the tree is checked with (the one-time reformat was made with this ruff)
RUFF = "ruff==0.17.6"
MYPY = "mypy==2.4.1"


@nox.session
def tests(session: nox.Session) -> None:
    """The whole suite on the newest Luigi 3.x."""
    session.install("-e", ".[test,postgres]")
    session.run("python", "-m", "pytest", *(session.posargs or ["-q"]))


@nox.session
def tests_oldest(session: nox.Session) -> None:
    """The Luigi adapter's tests (marker ``luigi``) on the oldest supported Luigi."""
    session.install("-e", ".[test-core,postgres]", f"luigi=={OLDEST_LUIGI}")
    session.run("python", "-m", "pytest", "-m", "luigi and not slow", *(session.posargs or ["-q"]))


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
