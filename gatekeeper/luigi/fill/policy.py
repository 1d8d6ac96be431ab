"""Which periods a chunk may run inline: only where Luigi could not tell the difference.

A period runs inside its chunk only when every Luigi setting of its class is honoured there
exactly (``docs/inline.md``); any other period is scheduled, as Luigi schedules a task, and the
range says so once per class at INFO. Inline running honours ``priority`` (sent with every
report), the retry policy (a period runs inline only on its first try in a fill; its failure is
counted by the scheduler under its own ``retry_count``/``disable_window``, and every later try
is the scheduler's), events and the exit code. It cannot honour:

- ``resources``: only the scheduler grants them, across every task sharing them;
- a worker timeout (``worker_timeout``, or ``[worker] timeout``): only Luigi's worker enforces
  it, by terminating the task's process;

and a class that batches a parameter (``batch_method``) is refused by the range: one batched
run would cover several periods under one attempt, which the ledger cannot record per period.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

import luigi

from gatekeeper.core.errors import InvalidInput
from gatekeeper.luigi import compat as luigi_compat

logger = logging.getLogger("luigi-interface.gatekeeper")
_said: set[tuple[str, str]] = set()
_said_lock = threading.Lock()
_config: dict[str, tuple[object, int]] = {}  # name -> (instance cache token, value)


def _config_value(name: str, read: Any) -> int:
    """``read()`` once per generation of Luigi's instance cache (cached under ``name``):
    building one of Luigi's config objects costs milliseconds, a period microseconds."""
    token = luigi_compat.instance_cache_token()
    found = _config.get(name)
    if found is None or found[0] is not token:
        found = _config[name] = (token, int(read() or 0))
    return int(found[1])


def worker_timeout() -> int:
    """``[worker] timeout``: the worker timeout of a task that sets none."""
    return _config_value("timeout", luigi_compat.worker_timeout)


def scheduler_retry_count() -> int:
    """``[scheduler] retry_count``: failures a task may have before it is disabled."""
    return _config_value("retry_count", luigi_compat.scheduler_retry_count)


def scheduled_reason(task: luigi.Task) -> str | None:
    """Why ``task`` must be scheduled rather than run inline, or None when it may run inline."""
    resources = task.process_resources()
    if resources:
        return f"it declares resources {dict(resources)}, which only the scheduler grants"
    timeout = task.worker_timeout
    if timeout is None:
        timeout = worker_timeout()
    if timeout:
        return f"it has a worker timeout of {timeout} s, which only Luigi's worker enforces"
    return None


def may_run_inline(task: luigi.Task) -> bool:
    """True when ``task``'s settings allow running it inline; otherwise False, and the first
    time for its class and reason in this process, an INFO line saying why."""
    reason = scheduled_reason(task)
    if reason is None:
        return True
    said = (task.task_family, reason)
    with _said_lock:
        first = said not in _said
        _said.add(said)
    if first:
        logger.info(
            "gatekeeper: %s periods are scheduled, not run inline: %s", task.task_family, reason
        )
    return False


def refuse_batching(of: type[luigi.Task]) -> None:
    """Refuse a class that batches a parameter; raises InvalidInput naming ``of``."""
    batched = list(of.batch_param_names())
    if batched:
        raise InvalidInput(
            "of",
            of.get_task_family(),
            f"batches {', '.join(batched)} (batch_method): a batched run covers several "
            "periods under one attempt, which the ledger cannot record per period; remove "
            "batch_method from the class to fill it with a gatekeeper range",
        )


def retry_policy(task: luigi.Task) -> dict[str, Any]:
    """The retry policy Luigi's worker sends the scheduler with ``task`` (its
    ``retry_count``, ``disable_hard_timeout`` and ``disable_window``; None: the scheduler's)."""
    return {
        "retry_count": task.retry_count,
        "disable_hard_timeout": task.disable_hard_timeout,
        "disable_window": task.disable_window,
    }
