"""Luigi's log, one line per refusal: what gatekeeper refuses on purpose (a bad parameter, a
conflict, a period another run holds) is logged as the one line that names it, not a
30-50-line traceback.

Luigi logs a task whose ``complete()`` or ``requires()`` raised, or that could not be built,
or whose ``run()`` failed, with the whole traceback; ``OneLineRefusals`` shortens those records
to the exception's own line, unless DEBUG was asked for. A ``run()`` refused because another
run holds the period's lease (LeaseHeld, raised before any user code ran) becomes Luigi's
headline and ``held_line``: the job, the period, the holder's run and attempt, its lease's
expiry and the way out (``gatekeeper abandon JOB PERIOD --reason ...``). Only the text
changes: the record still passes, and Luigi's exit code, events, e-mails and the scheduler's
explanation are its own.
"""

from __future__ import annotations

import logging
import os
import shlex
import sys

import luigi.configuration

from gatekeeper.core.errors import LeaseHeld
from gatekeeper.core.records import RunState

#: The message Luigi's worker logs, on "luigi-interface", for a task whose ``complete()`` or
#: ``requires()`` raised (``Worker._log_complete_error``/``_log_dependency_error``: the
#: headline, ``:\n``, then the formatted traceback); and the one ``luigi.retcodes`` logs with
#: the exception for a task that could not be built. Unchanged since Luigi 2.x.
SCHEDULING_ERROR_HEADLINE = "Will not run "
UNCAUGHT_HEADLINE = "Uncaught exception in luigi"


class OneLineRefusals(logging.Filter):
    """On Luigi's "luigi-interface" logger: a refusal of what was asked (``refusals``, e.g.
    gatekeeper's InvalidInput naming the parameter and value) that Luigi would log with a
    30-50-line traceback is logged as one line instead, unless DEBUG was asked for
    (``--log-level DEBUG``; ``_debug_asked``). Only the text changes: the record still
    passes, and Luigi's exit code, events, e-mails and the scheduler's explanation are its
    own."""

    def __init__(self, refusals: tuple[type[BaseException], ...]) -> None:
        super().__init__()
        self.refusals = refusals
        self.names = {f"{c.__module__}.{c.__qualname__}": c.__name__ for c in refusals}

    def filter(self, record: logging.LogRecord) -> bool:
        if _debug_asked():
            return True
        message = record.msg if isinstance(record.msg, str) else ""
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, LeaseHeld):  # run() refused before the user's code: no trace helps
            record.msg, record.args = f"{record.getMessage()}: {held_line(exc)}", ()
            record.exc_info, record.exc_text = None, None
        elif message == UNCAUGHT_HEADLINE and isinstance(exc, self.refusals):
            record.msg, record.args = f"{type(exc).__name__}: {exc}", ()
            record.exc_info, record.exc_text = None, None
        elif message.startswith(SCHEDULING_ERROR_HEADLINE) and ":\n" in message:
            headline, _, trace = message.partition(":\n")
            name, sep, text = trace.rstrip().rpartition("\n")[2].partition(": ")
            if sep and name in self.names:
                record.msg, record.args = f"{headline}: {self.names[name]}: {text}", ()
        return True


def held_line(held: LeaseHeld) -> str:
    """One line for a period another run holds: ``LeaseHeld: JOB PERIOD is held by run R
    (attempt N) until T; wait for it to finish or its lease to expire, or, if its worker is
    dead: gatekeeper abandon JOB PERIOD --reason "..."`` (the job and period quoted for a
    shell where they need it); for a holder that ended while this run waited for it (under
    luigid), the state it ended in."""
    holder = held.holder
    job, period = holder.job, holder.period_key
    if holder.state is not RunState.RUNNING:  # it ended while this run waited for it
        return (
            f"LeaseHeld: {job} {period} was held by run {holder.run_id} (attempt "
            f"{holder.attempt}), which ended {holder.state.value} while this run waited for it; "
            "this run does not retry it"
        )
    until = holder.lease_expires_at
    if until is None:
        lease, wait = "running without a lease", "record its outcome"
    else:
        lease = f"until {until.isoformat()}"
        wait = "wait for it to finish or its lease to expire"
    return (
        f"LeaseHeld: {job} {period} is held by run {holder.run_id} (attempt {holder.attempt}) "
        f"{lease}; {wait}, or, if its worker is dead: gatekeeper abandon {shlex.quote(job)} "
        f'{shlex.quote(period)} --reason "..."'
    )


def refuse_at_import(exc: BaseException) -> None:
    """Under the ``luigi`` command, end it for a refusal found while it imports the user's
    module (a class on a calendar whose ``[gatekeeper.calendars]`` line is bad): one line on
    stderr naming the key and the word, exit 2, as the ``gatekeeper`` command refuses bad
    input (Luigi imports ``--module`` before its own error handling, so it would print a
    traceback and exit 1). Elsewhere, or with DEBUG asked for, returns: the caller raises."""
    if not under_luigi_command() or _debug_asked():
        return
    print(f"luigi: {type(exc).__name__}: {exc}", file=sys.stderr, flush=True)
    raise SystemExit(2) from None


def under_luigi_command() -> bool:
    """This process is the ``luigi`` command (its console script, or ``python -m luigi``)."""
    program = sys.argv[0] if sys.argv else ""
    return os.path.basename(program) == "luigi" or program.endswith(
        os.path.join("luigi", "__main__.py")
    )


def _debug_asked() -> bool:
    """DEBUG asked for: ``--log-level DEBUG`` on the command line or ``[core] log_level =
    DEBUG`` in luigi.cfg. Luigi's own default level (DEBUG when neither says) does not count;
    the command line is read here because a task that cannot be built fails before Luigi
    applies it (``luigi.retcodes`` then sets logging up from luigi.cfg alone)."""
    argv = sys.argv[1:]
    pairs = zip(argv, [*argv[1:], ""], strict=False)  # argv may be empty (one item more)
    if any(a == "--log-level=DEBUG" or (a, b) == ("--log-level", "DEBUG") for a, b in pairs):
        return True
    return str(luigi.configuration.get_config().get("core", "log_level", "")).upper() == "DEBUG"


def log_refusals_in_one_line(refusals: tuple[type[BaseException], ...]) -> None:
    """Install ``OneLineRefusals`` on "luigi-interface" once per process."""
    interface = logging.getLogger("luigi-interface")
    if not any(isinstance(f, OneLineRefusals) for f in interface.filters):
        interface.addFilter(OneLineRefusals(refusals))
