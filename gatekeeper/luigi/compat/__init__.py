"""Every use of Luigi's internals, in one package; nothing else in gatekeeper touches them.

Each accessor says which Luigi internal it reads, why no public API serves, and since which
Luigi release the internal exists, and registers a probe (``internals.PROBES``) that
tests/luigi/test_luigi_compat.py runs against the installed Luigi: a release that renames or
removes an internal fails there with a message naming it (LuigiInternalMissing), instead of
gatekeeper silently falling back. tests/test_layering.py fails if any other module imports
``luigi.worker``, ``luigi.rpc``, ``luigi.interface``, ``luigi.cmdline_parser`` or
``luigi.execution_summary``, or names a private (``_x``) Luigi attribute.

- ``worker``: the worker running or scheduling a task (its reporter, the active worker, no
  stack frames), the task process order (``forwarded_attributes``), worker configuration;
- ``summary``: the execution summary's bookkeeping (``WorkerHistory``, ``WorkResponses``);
- ``scheduler``: luigid's client and wire protocol (``DirectRpc``), a local scheduler's table;
- ``cmdline``: the luigi command line, the run's ``core`` settings, the instance cache.

Supported Luigi: the range pyproject.toml declares; CI tests its oldest and newest release,
``nox -s "fidelity(luigi='3.5')"`` any other (docs/development.md).
"""

from gatekeeper.luigi.compat.cmdline import (
    COMMAND_LINE_ARGS,
    GLOBAL_DEST,
    GatekeeperInstanceCacheProbe,
    command_core,
    command_line_options,
    command_line_parser,
    empty_on_command_line,
    environment_probe,
    instance_cache_token,
)
from gatekeeper.luigi.compat.internals import (
    PROBES,
    LuigiInternalMissing,
    missing_internals,
)
from gatekeeper.luigi.compat.scheduler import (
    LOCAL_STATE,
    REMOTE_URL,
    DirectRpc,
    direct_target,
    forget_done_task,
    remote_scheduler,
    remote_scheduler_url,
    scheduler_has_task,
)
from gatekeeper.luigi.compat.summary import (
    WORKER_HISTORY,
    WORKER_ID,
    WORKER_RESPONSES,
    WORKER_SCHEDULED,
    WORKER_SCHEDULER,
    SummaryEntry,
    WorkerBookkeeping,
    WorkerHistory,
    WorkResponses,
    add_to_summary,
    install_bookkeeping,
    ran_entries,
    worker_bookkeeping,
)
from gatekeeper.luigi.compat.worker import (
    FORWARDED_ATTRIBUTES,
    REPORTER_SCHEDULER,
    REPORTER_WORKER_ID,
    WORKER_RUNNING,
    forwarded_attributes,
    is_local,
    is_remote,
    new_build,
    running_worker,
    scheduler_retry_count,
    scheduling_worker,
    under_remote_scheduler,
    worker_id,
    worker_scheduler,
    worker_timeout,
)

__all__ = [
    "COMMAND_LINE_ARGS",
    "FORWARDED_ATTRIBUTES",
    "GLOBAL_DEST",
    "LOCAL_STATE",
    "PROBES",
    "REMOTE_URL",
    "REPORTER_SCHEDULER",
    "REPORTER_WORKER_ID",
    "WORKER_HISTORY",
    "WORKER_ID",
    "WORKER_RESPONSES",
    "WORKER_RUNNING",
    "WORKER_SCHEDULED",
    "WORKER_SCHEDULER",
    "DirectRpc",
    "GatekeeperInstanceCacheProbe",
    "LuigiInternalMissing",
    "SummaryEntry",
    "WorkResponses",
    "WorkerBookkeeping",
    "WorkerHistory",
    "add_to_summary",
    "command_core",
    "command_line_options",
    "command_line_parser",
    "direct_target",
    "empty_on_command_line",
    "environment_probe",
    "forget_done_task",
    "forwarded_attributes",
    "install_bookkeeping",
    "instance_cache_token",
    "is_local",
    "is_remote",
    "missing_internals",
    "new_build",
    "ran_entries",
    "remote_scheduler",
    "remote_scheduler_url",
    "running_worker",
    "scheduler_has_task",
    "scheduler_retry_count",
    "scheduling_worker",
    "under_remote_scheduler",
    "worker_bookkeeping",
    "worker_id",
    "worker_scheduler",
    "worker_timeout",
]
