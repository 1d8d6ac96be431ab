"""A lineage backend that hangs or fails costs a whole invocation one wait at most (issue #23,
item 3): the real ``luigi`` command with ``--workers 2`` (a task process per period), the real
openlineage-python client, and local backends that never answer or answer 500; and the
delivery's parts (shared verdict, budget, bounded queue) on their own, in-process, against the
same backends."""

from __future__ import annotations

import datetime as dt
import logging
import multiprocessing
import re
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

import gatekeeper as gk
from gatekeeper.integrations import lineage
from gatekeeper.integrations.lineage.delivery import Delivery
from gatekeeper.integrations.lineage.invocation import Dropped, Invocation
from tests.helpers.lineage_receiver import Receiver, Silent
from tests.integrations.test_lineage import WARNING, lineage_config, run_luigi

TIMEOUT = 1.0  # openlineage_timeout of the luigi runs
DATES = 40  # periods of the fill, each in a task process of its own
START, STOP = "2026-01-01", "2026-02-10"
FILL = (
    "--module",
    "tests.helpers.luigi_tasks",
    "RangeBusinessDaily",
    "--of",
    "TimedTrivial",
    "--start",
    START,
    "--stop",
    STOP,
    "--task-limit",
    str(DATES),
)
CLOSING = re.compile(
    rf"gatekeeper: OpenLineage events of this invocation: {2 * DATES} of {2 * DATES} dropped "
    r"\(backend down: (\d+), unanswered: (\d+)\), 0 delivered"
)


def fill(folder: Path, url: str) -> str:
    """The fill into a fresh ledger in ``folder``, lineage sent to ``url``; checks that every
    period succeeded and returns the stderr."""
    folder.mkdir()
    ledger_url = f"sqlite:///{folder / 'ledger.db'}"
    cfg = lineage_config(folder, ledger_url, openlineage_timeout=str(TIMEOUT))
    done, _ = run_luigi(cfg, *FILL, url=url, workers=2)
    assert done.returncode == 0, done.stderr[-3000:]
    with gk.open_ledger(ledger_url) as ledger:
        first = dt.date.fromisoformat(START)
        keys = [str(first + dt.timedelta(days=n)) for n in range(DATES)]
        states = [ledger.latest("TimedTrivial", key) for key in keys]
    assert all(a is not None and a.state is gk.RunState.SUCCEEDED for a in states), states
    return done.stderr


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["hanging", "answers-500"])
def test_lineage_backend_down_costs_a_forked_fill_one_timeout(backend: str, tmp_path: Path) -> None:
    """Every period in a task process of its own (the issue: each process learned again that
    the backend was down, and waited the timeout). The first send to go wrong judges the
    backend down for the whole invocation: only the events in flight or queued by then (at
    most two task processes at once, each with its START and COMPLETE) are counted against a
    process's own wait; every later process drops its events without sending or waiting.
    Nothing fails, one warning, one closing count."""
    with Silent() as silent, Receiver(status=500) as failing:
        url = silent.url if backend == "hanging" else failing.url
        stderr = fill(tmp_path / "with", url)
        contacted = silent.accepted if backend == "hanging" else failing.requests
    assert contacted >= 1  # the backend was tried, and found wanting
    assert stderr.count(WARNING) == 1, stderr[-3000:]
    assert f"within {TIMEOUT:g}s (openlineage_timeout)" in stderr
    (closing,) = CLOSING.findall(stderr)
    down, unanswered = int(closing[0]), int(closing[1])
    assert 1 <= unanswered <= 4, closing  # the processes in flight when the verdict came
    assert down + unanswered == 2 * DATES, closing  # START and COMPLETE of every period


def event() -> Any:
    """A real openlineage-python RunEvent."""
    from openlineage.client.event_v2 import Job, Run, RunEvent, RunState

    return RunEvent(
        eventType=RunState.START,
        eventTime="2026-10-23T05:00:00+00:00",
        run=Run(runId=str(uuid.uuid4())),
        job=Job(namespace="gatekeeper", name="Trivial"),
        producer=lineage.PRODUCER,
    )


def client_of(url: str, **retry: Any) -> Any:
    """openlineage-python's client with its HTTP transport to ``url``."""
    from openlineage.client import OpenLineageClient
    from openlineage.client.transport.http import HttpConfig, HttpTransport

    config = HttpConfig(url=url, timeout=30, retry=retry) if retry else HttpConfig(url=url)
    return OpenLineageClient(transport=HttpTransport(config))


def never_built() -> Any:
    raise AssertionError("an event was built although the backend is judged down")


def warnings_of(caplog: pytest.LogCaptureFixture) -> list[str]:
    """gatekeeper's warnings (not urllib3's retries of an earlier test's lingering sends)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "luigi-interface.gatekeeper" and r.levelno == logging.WARNING
    ]


def _judge_in_child(shared: Invocation) -> None:
    shared.opened(1.0)
    shared.offered()
    shared.dropped(Dropped.STALLED)
    first = shared.judge_down()
    shared.closed()
    raise SystemExit(0 if first else 3)


def test_lineage_invocation_verdict_and_counts_reach_the_parent_from_forked_children() -> None:
    """Three forked children judge the backend down at once: exactly one of them may warn,
    the parent sees the verdict and every child's counts, and no child left open."""
    shared = Invocation()
    fork = multiprocessing.get_context("fork")
    children = [fork.Process(target=_judge_in_child, args=(shared,)) for _ in range(3)]
    for child in children:
        child.start()
    for child in children:
        child.join(10)
    assert sorted(c.exitcode for c in children) == [0, 3, 3]
    assert shared.is_down() and not shared.first_warning()
    assert (shared.open_processes(), shared.wait_seconds()) == (0, 1.0)
    counts = shared.counts()
    assert counts.offered == 3 and counts.dropped[Dropped.STALLED] == 3
    assert counts.summary() == (
        "gatekeeper: OpenLineage events of this invocation: 3 of 3 dropped (unanswered: 3), "
        "0 delivered"
    )
    assert Invocation().counts().summary() is None  # another invocation: nothing to report


def test_lineage_delivery_waits_for_a_hanging_backend_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The process that finds the backend hanging waits the timeout once; another process
    of the invocation then neither builds its events nor waits."""
    caplog.set_level(logging.WARNING, logger="luigi-interface.gatekeeper")
    shared = Invocation()
    with Silent() as silent:
        first = Delivery(0.3, shared, emit=client_of(silent.url).emit)
        first.offer(event)
        first.offer(event)
        sent_by = time.monotonic() + 60  # a loaded machine may start the thread late
        while first.sending_since is None and time.monotonic() < sent_by:
            time.sleep(0.005)  # the first event in flight: the backend is the one hanging
        assert first.sending_since is not None, "the delivery thread never sent"
        first.close()
        assert first.ended is Dropped.STALLED and first.waits >= 1  # it waited, then gave up
        assert shared.is_down()
        second = Delivery(0.3, shared, emit=client_of(silent.url).emit)
        second.offer(never_built)
        second.close()
        assert (second.waits, second.ended) == (0, None)  # judged down: nothing to wait for
    counts = shared.counts()
    assert (counts.offered, counts.delivered, shared.open_processes()) == (3, 0, 0)
    assert counts.dropped[Dropped.STALLED] == 2 and counts.dropped[Dropped.DOWN] == 1
    warned = warnings_of(caplog)
    assert len(warned) == 1 and "did not answer within 0.3s" in warned[0]


def test_lineage_delivery_slow_backend_costs_the_budget_not_the_verdict(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A backend that answers, each event in 0.1 s: the wait at exit ends with the budget
    (0.5 s), what is left is counted, and the backend is not judged down."""
    caplog.set_level(logging.WARNING, logger="luigi-interface.gatekeeper")
    shared = Invocation()
    with Receiver(delay=0.1) as slow:
        out = Delivery(0.5, shared, emit=client_of(slow.url).emit)
        for _ in range(10):
            out.offer(event)
        out.close()
        assert out.ended is Dropped.BUDGET and out.waits >= 1  # the wait ran out, not the verdict
    assert not shared.is_down()
    counts = shared.counts()
    assert counts.delivered >= 1 and counts.dropped[Dropped.BUDGET] >= 1
    assert counts.delivered + counts.dropped[Dropped.BUDGET] == 10
    warned = warnings_of(caplog)
    assert len(warned) == 1 and "could not deliver its events within 0.5s" in warned[0]


def test_lineage_delivery_answers_500_judged_down_without_waiting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A backend answering 500 (the transport's retries turned off: it raises at once) is
    judged down by the failure itself; the wait ends there, well inside its budget."""
    caplog.set_level(logging.WARNING, logger="luigi-interface.gatekeeper")
    shared = Invocation()
    with Receiver(status=500) as failing:
        out = Delivery(5.0, shared, emit=client_of(failing.url, total=0).emit)
        out.offer(event)
        deadline = time.monotonic() + 5
        while not shared.is_down() and time.monotonic() < deadline:
            time.sleep(0.01)
        out.offer(never_built)
        out.close()
        assert (out.waits, out.ended) == (0, None)  # judged down by the failure: no wait
        assert failing.requests == 1
    counts = shared.counts()
    assert counts.dropped[Dropped.FAILED] == 1 and counts.dropped[Dropped.DOWN] == 1
    warned = warnings_of(caplog)
    assert len(warned) == 1 and "could not emit an event" in warned[0] and "500" in warned[0]


def test_lineage_delivery_full_queue_drops_and_counts_without_waiting(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A queue of 2: with one event stuck in flight, two more are queued and the third
    dropped; the backend is not judged down for it (it may be slow, not gone)."""
    caplog.set_level(logging.WARNING, logger="luigi-interface.gatekeeper")
    shared = Invocation()
    with Silent() as silent:
        out = Delivery(5.0, shared, emit=client_of(silent.url).emit, max_pending=2)
        out.offer(event)
        deadline = time.monotonic() + 5
        while out.sending_since is None and time.monotonic() < deadline:
            time.sleep(0.01)
        for _ in range(3):
            out.offer(event)
        assert len(out.pending) == 2 and not shared.is_down()
        counts = shared.counts()
        assert counts.offered == 4 and counts.dropped[Dropped.FULL] == 1
    warned = warnings_of(caplog)
    assert len(warned) == 1 and "more than 2 events pending" in warned[0]


def test_lineage_delivery_delivers_to_a_working_backend() -> None:
    """The same path, a backend that answers: everything delivered, nothing to report."""
    shared = Invocation()
    with Receiver() as receiver:
        out = Delivery(5.0, shared, emit=client_of(receiver.url).emit)
        for _ in range(3):
            out.offer(event)
        out.close()
        assert len(receiver.received()) == 3
    counts = shared.counts()
    assert (counts.offered, counts.delivered, counts.summary()) == (3, 3, None)
    assert not shared.is_down() and shared.open_processes() == 0


def test_a_fork_before_gatekeeper_read_its_options_does_not_read_them(tmp_path: Path) -> None:
    """The hook that readies lineage before Luigi forks its task processes acts only where
    gatekeeper's options were read already: a process that forks first (a forkserver, a
    user's pool) and configures Luigi in the child finds the child's configuration, not one
    the hook fixed at the fork."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent(
        """
        import os, luigi.configuration
        from gatekeeper.luigi import attempt_run, config
        pid = os.fork()
        if pid == 0:
            luigi.configuration.get_config().set("gatekeeper", "ledger_url", "sqlite:///child.db")
            os._exit(0 if config.ledger_url() == "sqlite:///child.db" else 3)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status))
        """
    )
    cfg = tmp_path / "luigi.cfg"
    cfg.write_text("[gatekeeper]\nopenlineage = true\n")
    env = {**__import__("os").environ, "LUIGI_CONFIG_PATH": str(cfg)}
    env.pop("GATEKEEPER_LEDGER_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env, timeout=60
    )
    assert done.stdout.split() == ["0"], done.stdout + done.stderr
