"""gatekeeper/luigi/compat/ against the installed Luigi (tests/test_layering.py: no private
Luigi use elsewhere).

Each compat function runs here against real Luigi objects (a real worker, a real luigid), so a
Luigi release that renames or removes an internal fails these tests with a message naming it.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
from pathlib import Path
from typing import Any

import luigi
import luigi.execution_summary
import luigi.rpc
import luigi.scheduler
import luigi.worker
import pytest
from luigi.cmdline_parser import CmdlineParser
from luigi.task_register import Register

from gatekeeper.luigi import compat as luigi_compat
from gatekeeper.luigi import config
from gatekeeper.luigi.compat import (
    REPORTER_SCHEDULER,
    LuigiInternalMissing,
    instance_cache_token,
    under_remote_scheduler,
    worker_scheduler,
)
from gatekeeper.luigi.fill import channel
from tests.helpers.luigi_support import build, configure
from tests.helpers.luigid_support import Luigid

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

PACKAGE = Path(__file__).resolve().parents[2] / "gatekeeper"
LUIGI_SOURCE = Path(luigi.__file__).resolve().parent

#: What each probe task saw while a worker ran it, keyed by the probe's name.
SEEN: dict[str, Any] = {}


class CompatProbe(luigi.Task):
    """Records, while a worker runs it, what luigi_compat says about its scheduler."""

    name = luigi.Parameter()

    def run(self) -> None:
        SEEN[self.name] = (worker_scheduler(self), under_remote_scheduler(self))

    def complete(self) -> bool:
        return self.name in SEEN


def run_probe(name: str, **build_args: Any) -> tuple[Any, bool]:
    SEEN.pop(name, None)
    Register.clear_instance_cache()
    assert luigi.build([CompatProbe(name=name)], log_level="WARNING", **build_args)
    assert name in SEEN, f"the worker did not run {name}"
    return SEEN.pop(name)


def test_worker_scheduler_is_the_local_scheduler_under_local_scheduler() -> None:
    scheduler, remote = run_probe("local", local_scheduler=True)
    assert isinstance(scheduler, luigi.scheduler.Scheduler), (
        f"{REPORTER_SCHEDULER} is {scheduler!r} under --local-scheduler"
    )
    assert remote is False


@pytest.mark.process
@pytest.mark.oldest
def test_worker_scheduler_is_luigids_client_under_luigid(luigid: Luigid) -> None:
    scheduler, remote = run_probe("central", scheduler_host="127.0.0.1", scheduler_port=luigid.port)
    assert isinstance(scheduler, luigi.rpc.RemoteScheduler), (
        f"{REPORTER_SCHEDULER} is {scheduler!r} under luigid"
    )
    assert remote is True


def test_worker_scheduler_is_none_outside_a_worker() -> None:
    task = CompatProbe(name="idle")
    assert worker_scheduler(task) is None
    assert under_remote_scheduler(task) is False


def test_worker_scheduler_internal_exists_on_a_real_reporter() -> None:
    """The named internal itself, on Luigi's own TaskStatusReporter."""
    scheduler = luigi.scheduler.Scheduler()
    reporter = luigi.worker.TaskStatusReporter(scheduler, "task-id", "worker-id", None)
    assert getattr(reporter, "_scheduler", None) is scheduler, (
        f"{REPORTER_SCHEDULER} is gone from Luigi {luigi.__version__}: "
        "update gatekeeper/luigi/compat/worker.py worker_scheduler"
    )
    forwarded = luigi.worker.TaskProcess.forward_reporter_attributes
    assert forwarded.get("update_status_message") == "set_status_message", (
        f"Luigi {luigi.__version__} no longer binds task.set_status_message to "
        "TaskStatusReporter.update_status_message: update luigi_compat.worker_scheduler"
    )


def test_worker_scheduler_raises_naming_the_internal_when_it_is_gone() -> None:
    """What a Luigi release without the internal produces: an error naming it, no fallback."""
    reporter = luigi.worker.TaskStatusReporter(luigi.scheduler.Scheduler(), "t", "w", None)
    del reporter._scheduler  # as a release that renamed it would leave the reporter
    task = CompatProbe(name="renamed")
    task.set_status_message = reporter.update_status_message
    with pytest.raises(LuigiInternalMissing, match=re.escape(REPORTER_SCHEDULER)) as raised:
        worker_scheduler(task)
    assert luigi.__version__ in str(raised.value)


def test_instance_cache_token_changes_exactly_when_luigi_clears_its_cache() -> None:
    first = instance_cache_token()
    assert instance_cache_token() is first, (
        "Luigi's instance cache no longer returns the "
        "same instance for the same parameters: update luigi_compat.instance_cache_token"
    )
    Register.clear_instance_cache()
    second = instance_cache_token()
    assert second is not first
    assert instance_cache_token() is second


def test_instance_cache_token_is_new_every_call_while_the_cache_is_disabled() -> None:
    Register.disable_instance_cache()
    try:
        assert instance_cache_token() is not instance_cache_token()
    finally:
        Register.clear_instance_cache()  # re-enables it (a new, empty cache)


def test_instance_cache_token_probe_matches_what_luigi_computes() -> None:
    """The probe's fast overrides return exactly what Luigi's own methods would."""
    probe = luigi_compat.GatekeeperInstanceCacheProbe
    assert probe.get_params() == luigi.Config.get_params.__func__(probe)  # type: ignore[attr-defined]
    assert probe.get_param_values([], (), {}) == luigi.Config.get_param_values.__func__(
        probe, [], (), {}
    )  # type: ignore[attr-defined]


def test_settings_rereads_luigi_cfg_after_the_instance_cache_is_cleared() -> None:
    before = config.settings()
    assert config.settings() is before
    with contextlib.contextmanager(configure)({"timezone": "Europe/Paris"}):  # clears the cache
        assert str(config.settings().timezone) == "Europe/Paris"
    assert str(config.settings().timezone) == str(before.timezone)


# --- the internals inline periods rely on (gatekeeper/luigi/fill/inline.py) -----------------
CAUGHT: dict[str, Any] = {}


class InlineCompatProbe(luigi.Task):
    """Records what luigi_compat finds while a real Luigi worker runs it."""

    name = luigi.Parameter()

    def complete(self) -> bool:
        return self.name in CAUGHT

    def run(self) -> None:
        CAUGHT[self.name] = {
            "scheduler": luigi_compat.worker_scheduler(self),
            "worker_id": luigi_compat.worker_id(self),
            "worker": luigi_compat.running_worker(self),
        }


def test_internals_exist_in_this_luigi() -> None:
    reporter = luigi.worker.TaskStatusReporter("scheduler", "task", "worker-7", None)
    assert (reporter._scheduler, reporter._worker_id) == ("scheduler", "worker-7")
    worker = luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler())
    assert worker._add_task_history == [] and worker._running_tasks == {}
    assert luigi_compat.forwarded_attributes() == {
        "update_tracking_url": "set_tracking_url",
        "update_status_message": "set_status_message",
        "update_progress_percentage": "set_progress_percentage",
        "decrease_running_resources": "decrease_running_resources",
        "scheduler_messages": "scheduler_messages",
    }


def test_running_task_finds_its_worker_scheduler_and_id() -> None:
    CAUGHT.clear()
    assert build(InlineCompatProbe(name="one")).scheduling_succeeded
    caught = CAUGHT["one"]
    assert isinstance(caught["scheduler"], luigi.scheduler.Scheduler)
    assert isinstance(caught["worker"], luigi.worker.Worker)
    assert caught["worker_id"] == caught["worker"]._id


def test_forked_task_has_no_worker_for_the_summary(tmp_path: Path) -> None:
    """Under --workers 2 the task runs in a forked child: the summary is the parent's."""
    CAUGHT.clear()
    seen = tmp_path / "seen"

    class Forked(luigi.Task):
        def complete(self) -> bool:
            return seen.exists()

        def run(self) -> None:
            found = luigi_compat.running_worker(self)
            seen.write_text(f"{found is None} {luigi_compat.worker_id(self) is not None}")

    assert build(Forked(), workers=2).scheduling_succeeded
    assert seen.read_text() == "True True"


def test_outside_a_worker_nothing_is_found() -> None:
    task = InlineCompatProbe(name="idle")
    assert luigi_compat.worker_scheduler(task) is None
    assert luigi_compat.worker_id(task) is None
    assert luigi_compat.running_worker(task) is None


@pytest.mark.parametrize(
    "status, ran, section",
    [
        ("DONE", True, "ran successfully"),
        ("DONE", False, "complete ones were encountered"),
        ("FAILED", True, "failed"),
    ],
)
def test_add_to_summary_counts_the_task(status: str, ran: bool, section: str) -> None:
    worker = luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler())
    luigi_compat.add_to_summary(worker, InlineCompatProbe(name="period"), status, ran=ran)
    text = luigi.execution_summary.summary(worker)
    assert f"* 1 {section}:\n    - 1 InlineCompatProbe(name=period)" in text, text


def test_a_missing_internal_is_named() -> None:
    reporter = luigi.worker.TaskStatusReporter("scheduler", "task", "worker-7", None)
    del reporter._worker_id
    task = InlineCompatProbe(name="bare")
    task.set_status_message = reporter.update_status_message
    with pytest.raises(LuigiInternalMissing, match="TaskStatusReporter._worker_id"):
        luigi_compat.worker_id(task)
    worker = luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler())
    del worker._add_task_history
    with pytest.raises(LuigiInternalMissing, match="Worker._add_task_history"):
        luigi_compat.add_to_summary(worker, task, "DONE", ran=True)


class ForkingProbe(luigi.Task):
    """Opens the summary channel where the worker schedules it; its run(), in the task process
    Luigi forks under --workers 2, counts a period there as a chunk does."""

    name = luigi.Parameter()
    marker = luigi.Parameter()

    def requires(self) -> list[Any]:
        channel.open_summary_channel()
        return []

    def complete(self) -> bool:
        return Path(self.marker).exists()

    def run(self) -> None:
        key = luigi_compat.worker_id(self)
        fd = channel.summary_channel(key)
        Path(self.marker).write_text(f"{luigi_compat.running_worker(self) is None} {fd is None}")
        if fd is not None:
            channel.send_to_summary(fd, InlineCompatProbe(name=f"{self.name}-ok"), "DONE", ran=True)
            channel.send_to_summary(
                fd, InlineCompatProbe(name=f"{self.name}-bad"), "FAILED", ran=True
            )


def test_forked_task_counts_its_periods_in_the_parents_summary(tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    result = build(ForkingProbe(name="fork", marker=str(marker)), workers=2)
    assert marker.read_text() == "True False"  # forked: no worker here, but a channel
    text = result.summary_text
    assert "ran successfully:\n    - 1 ForkingProbe(name=fork" in text, text
    assert "- 1 InlineCompatProbe(name=fork-ok)" in text.split("* 1 failed")[0], text
    assert "failed:\n    - 1 InlineCompatProbe(name=fork-bad)" in text, text


def test_summary_channel_is_opened_only_in_the_workers_process() -> None:
    assert luigi_compat.scheduling_worker() is None  # no worker on this stack
    channel.open_summary_channel()  # outside a worker: nothing to open
    assert channel.summary_channel("no-such-worker") is None
    assert channel.summary_channel(None) is None


def test_forked_history_keeps_entries_and_reads_whole_lines(tmp_path: Path) -> None:
    path = tmp_path / "channel"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    try:
        first = InlineCompatProbe(name="first")
        history = channel.ForkedHistory([(first, "DONE", False)], fd, None)
        channel.send_to_summary(fd, InlineCompatProbe(name="second"), "DONE", ran=False)
        os.write(fd, b'{"half": ')  # a line still being written is left alone
        assert [(t.name, s) for t, s, _ in history] == [("first", "DONE"), ("second", "DONE")]
        assert [(t.name, s) for t, s, _ in history] == [("first", "DONE"), ("second", "DONE")]
    finally:
        os.close(fd)


def test_forked_history_relays_a_childs_scheduler_calls_before_the_next_entry(
    tmp_path: Path,
) -> None:
    """A forked task process of a local-scheduler worker relays its reports through the
    channel; the parent makes them on its scheduler when it next appends (as it does before
    telling the scheduler the chunk's own result)."""
    path = tmp_path / "channel"
    path.write_bytes(b"")
    fd = os.open(path, os.O_RDWR | os.O_APPEND)
    scheduler = luigi.scheduler.Scheduler()
    try:
        history = channel.ForkedHistory([], fd, scheduler)
        probe = InlineCompatProbe(name="relayed")
        for status in ("RUNNING", "FAILED"):  # as InlineRuns reports a failed period
            channel.relay_to_scheduler(
                fd,
                "add_task",
                {
                    "task_id": probe.task_id,
                    "worker": "w",
                    "status": status,
                    "runnable": False,
                    "family": probe.task_family,
                    "params": probe.to_str_params(),
                    "retry_policy_dict": {"retry_count": 1},
                },
            )
        assert scheduler.task_list("", "") == {}  # not until the parent reads the channel
        history.append((probe, "PENDING", True))
        listed = scheduler.task_list("", "")
        assert listed[probe.task_id]["status"] == "DISABLED"  # one failure of retry_count 1
        assert [(t.name, s) for t, s, _ in history] == [("relayed", "PENDING")]
    finally:
        os.close(fd)


@pytest.mark.parametrize(
    "internal",
    ["_id", "_add_task_history", "_scheduler", "_scheduled_tasks", "_get_work_response_history"],
)
def test_missing_worker_internals_for_the_summary_are_named(internal: str) -> None:
    with luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler()) as worker:
        delattr(worker, internal)
        with pytest.raises(LuigiInternalMissing, match=f"Worker.{internal}"):
            channel.open_summary_channel()


def test_the_active_worker_is_the_one_inside_its_with_block_in_this_thread() -> None:
    """No stack frames: the worker entered (``with worker:``, as luigi.build and the luigi
    command run it) in this thread and process, innermost first; none once it is left."""
    assert luigi_compat.scheduling_worker() is None
    with luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler()) as outer:
        assert luigi_compat.scheduling_worker() is outer
        with luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler()) as inner:
            assert luigi_compat.scheduling_worker() is inner
            seen: list[Any] = []
            thread = threading.Thread(target=lambda: seen.append(luigi_compat.scheduling_worker()))
            thread.start()
            thread.join()
            assert seen == [None]  # another thread runs no worker
        assert luigi_compat.scheduling_worker() is outer
    assert luigi_compat.scheduling_worker() is None


def test_the_active_worker_is_left_when_its_block_raises() -> None:
    with pytest.raises(RuntimeError, match="boom"):
        with luigi.worker.Worker(scheduler=luigi.scheduler.Scheduler()):
            raise RuntimeError("boom")
    assert luigi_compat.scheduling_worker() is None


def test_no_stack_frame_is_walked() -> None:
    """compat finds workers by their ``with`` block, never by reading the call stack."""
    package = PACKAGE / "luigi" / "compat"
    for path in package.glob("*.py"):
        text = path.read_text()
        assert "_getframe" not in text and "f_back" not in text and "inspect.stack" not in text


# --- every internal, probed on the installed Luigi ------------------------------------------
@pytest.mark.parametrize("internal", sorted(luigi_compat.PROBES))
def test_internal_exists_in_this_luigi(internal: str) -> None:
    """Each internal compat reads, probed on the installed Luigi: a release without it fails
    here with LuigiInternalMissing naming it and this Luigi's version."""
    luigi_compat.PROBES[internal]()


def test_probes_cover_every_named_accessor() -> None:
    """Worker, scheduler, RPC, command line, execution summary, instance cache and the task
    process order each have a probe."""
    names = set(luigi_compat.PROBES)
    for needed in (
        luigi_compat.REPORTER_SCHEDULER,
        luigi_compat.REPORTER_WORKER_ID,
        luigi_compat.FORWARDED_ATTRIBUTES,  # the task process order
        luigi_compat.WORKER_RUNNING,
        luigi_compat.WORKER_HISTORY,  # the execution summary
        luigi_compat.WORKER_RESPONSES,
        luigi_compat.REMOTE_URL,
        luigi_compat.LOCAL_STATE,
        luigi_compat.COMMAND_LINE_ARGS,
        luigi_compat.GLOBAL_DEST,
    ):
        assert needed in names
    assert any("RemoteScheduler._request" in name for name in names)  # luigid's RPC
    assert any("instance cache" in name for name in names)
    assert luigi_compat.missing_internals() == []


def test_a_probe_that_fails_names_its_internal_and_the_luigi_version() -> None:
    from gatekeeper.luigi.compat.internals import probe

    name = "luigi.worker.Worker._gone_in_a_future_release"
    check = probe(name)(lambda: luigi.worker.Worker._gone_in_a_future_release)
    try:
        with pytest.raises(LuigiInternalMissing) as raised:
            check()
        assert name in str(raised.value) and luigi.__version__ in str(raised.value)
        assert luigi_compat.missing_internals() == [name]
    finally:
        del luigi_compat.PROBES[name]


def test_settled_work_history_drops_other_workers_tasks_once_complete() -> None:
    """The summary's "run by another worker" leaves out a gatekeeper task that is complete by
    the time it is read; any other task stays."""
    done, other = InlineCompatProbe(name="done"), InlineCompatProbe(name="other")
    done.gatekeeper_summary = True  # type: ignore[attr-defined]
    done.complete = lambda: True  # type: ignore[method-assign]
    response = {
        "task_id": None,
        "running_tasks": [
            {"task_id": done.task_id, "worker": "w2"},
            {"task_id": other.task_id, "worker": "w2"},
        ],
    }
    history = channel.SettledWorkHistory([response], {done.task_id: done, other.task_id: other})
    assert [[r["task_id"] for r in item["running_tasks"]] for item in history] == [[other.task_id]]


# --- which [section] options the luigi command line gives ----------------------------------


def test_command_line_options_names_what_the_luigi_command_line_gives() -> None:
    args = ["--module", "tests.helpers.luigi_tasks", "Trivial", "--business-date", "2026-10-23"]
    names = ("ledger_url", "lease_seconds", "timezone")
    assert luigi_compat.command_line_parser() is None
    assert luigi_compat.command_line_options("gatekeeper", names) == frozenset()
    given = [*args, "--gatekeeper-lease-seconds", "45", "--gatekeeper-timezone", "Europe/Paris"]
    with CmdlineParser.global_instance(given) as parser:
        assert luigi_compat.command_line_parser() is parser
        found = luigi_compat.command_line_options("gatekeeper", names)
    assert found == {"lease_seconds", "timezone"}
    with CmdlineParser.global_instance(args):
        assert luigi_compat.command_line_options("gatekeeper", names) == frozenset()


def test_command_line_options_internals_exist_in_this_luigi() -> None:
    """The dest Luigi reads a ``--section-option`` value from is the one compat reads."""
    args = ["--module", "tests.helpers.luigi_tasks", "Trivial", "--business-date", "2026-10-23"]
    with CmdlineParser.global_instance([*args, "--gatekeeper-ledger-url", "sqlite:///x.db"]) as p:
        dest = luigi.Parameter._parser_global_dest("ledger_url", "gatekeeper")
        assert getattr(p.known_args, dest) == "sqlite:///x.db"


def test_command_line_options_missing_internal_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    args = ["--module", "tests.helpers.luigi_tasks", "Trivial", "--business-date", "2026-10-23"]
    with CmdlineParser.global_instance(args) as parser:
        monkeypatch.delattr(luigi.Parameter, "_parser_global_dest")
        with pytest.raises(LuigiInternalMissing, match="Parameter._parser_global_dest"):
            luigi_compat.command_line_options("gatekeeper", ["ledger_url"])
        monkeypatch.undo()
        del parser.known_args
        with pytest.raises(LuigiInternalMissing, match="CmdlineParser.known_args"):
            luigi_compat.command_line_options("gatekeeper", ["ledger_url"])
