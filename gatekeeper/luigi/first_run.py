"""What a run says once, so a first run cannot mislead: the ledger it opened, and where from;
and, under the ``luigi`` command, that ``luigi`` will exit 0 on a failure when luigi.cfg's
``[retcode]`` section does not say otherwise (Luigi's own default).

Each line is logged once per process tree (a worker forked by ``luigi --workers N`` inherits
what its parent said), on gatekeeper's child of Luigi's "luigi-interface" logger.
"""

from __future__ import annotations

import logging
import threading

import luigi.configuration
import luigi.retcodes

from gatekeeper.ledger import Ledger
from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi import config

logger = logging.getLogger("luigi-interface.gatekeeper")

#: What a luigi.cfg needs for ``luigi`` to exit non-zero on a failure (the repository's
#: luigi.cfg and the deployment recipe set these).
RETCODES = (
    "already_running = 10, missing_data = 20, not_run = 25, task_failed = 30, "
    "scheduling_error = 35, unhandled_exception = 40"
)

_said: set[str] = set()  # what this process tree said already: "ledger URL", "retcode"
_lock = threading.Lock()


def _first(what: str) -> bool:
    """True the first time ``what`` is asked in this process tree."""
    with _lock:
        if what in _said:
            return False
        _said.add(what)
        return True


def ledger_source(url: str) -> str:
    """Where ``url`` came from, as the ledger line says it: ``from --gatekeeper-ledger-url``,
    ``from $GATEKEEPER_LEDGER_URL``, ``from [gatekeeper] ledger_url`` or ``the default: no
    [gatekeeper] ledger_url``; ``given by the task`` for a URL that is not the configured
    one."""
    if url != config.ledger_url():
        return "given by the task"
    found = config.origin("ledger_url")
    if found.source is config.Source.DEFAULT:
        return f"the default: no [{config.SECTION}] ledger_url"
    return f"from {found.describe()}"


def name_ledger(ledger: Ledger, url: str) -> None:
    """Log, once per URL, at INFO, the ledger a task opened: ``gatekeeper: ledger: sqlite file
    gatekeeper.db (the default: no [gatekeeper] ledger_url)``; the password is never shown
    (``describe()``). A ledger that knows no name yet (new, or a typo in its URL forking a
    fleet's history) is also a WARNING naming where its URL came from and where to correct
    it. Reads the configuration and the ledger (one query); writes nothing."""
    if not _first(f"ledger {url}"):
        return
    source = ledger_source(url)
    logger.info("gatekeeper: ledger: %s (%s)", ledger.describe(), source)
    if not ledger.has_names():
        logger.warning(
            "gatekeeper: %s is a new, empty ledger (%s): this run starts its history; if "
            "another ledger was meant, %s",
            ledger.describe(),
            source,
            _where_to_look(url),
        )


def _where_to_look(url: str) -> str:
    """Where the URL of a new, empty ledger can be corrected, for its warning."""
    if url != config.ledger_url():
        return "check the ledger URL the task gives"
    found = config.origin("ledger_url")
    if found.source is config.Source.DEFAULT:
        return f"set [{config.SECTION}] ledger_url or ${config.env_var('ledger_url')}"
    return f"check {found.describe()}"


def warn_if_failures_exit_zero() -> None:
    """Under the ``luigi`` command, once: WARNING when Luigi's ``[retcode] task_failed`` is 0
    (no ``[retcode]`` section: Luigi's default), so that ``luigi`` exits 0 even when a period
    fails or stays unfilled, with the section that fixes it. Nothing in ``luigi.build`` (it
    returns its result, no exit code). Reads the configuration only."""
    if luigi_compat.command_line_parser() is None or luigi.retcodes.retcode().task_failed:
        return
    if not _first("retcode"):
        return
    has_section = luigi.configuration.get_config().has_section("retcode")
    why = "its task_failed is 0" if has_section else "luigi.cfg has no [retcode] section"
    logger.warning(
        "gatekeeper: `luigi` will exit 0 even when a period fails (%s); to exit non-zero, add "
        "to luigi.cfg a [retcode] section: %s (docs/configuration.md, Exit codes of luigi)",
        why,
        RETCODES,
    )
