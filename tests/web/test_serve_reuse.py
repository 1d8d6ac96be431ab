"""``gatekeeper serve`` reuses one judgement of the window for a second after it is ready,
whatever it cost (issue 49, item 2): a scraper polling ``/metrics`` and viewers asking at once
share it. The application runs on a real uvicorn server in a thread of this process, judged at
a faked clock that takes 1.5 s to answer, so every judgement costs more than the reuse
interval; the clock counts the judgements."""

from __future__ import annotations

import datetime as dt
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

import gatekeeper as gk
from tests.helpers.serve import in_thread, read, scenario, today

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytestmark = pytest.mark.slow

SLOW = 1.5  # seconds each judgement's clock takes: more than the reuse interval (1 s)


class SlowClock:
    """Today at noon, answered after ``SLOW`` seconds; counts the calls (one per judgement)."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()

    def __call__(self) -> dt.datetime:
        with self.lock:
            self.calls += 1
        time.sleep(SLOW)
        noon = dt.datetime.combine(today(), dt.time(12))
        return noon.replace(tzinfo=dt.timezone.utc)


def test_a_slow_judgement_is_reused_by_the_next_poll_and_by_viewers_asking_at_once(
    sqlite_url: str,
) -> None:
    with gk.open_ledger(sqlite_url) as ledger:
        scenario(ledger)
    clock = SlowClock()
    with in_thread(sqlite_url, clock) as base:
        first = read(f"{base}/metrics")
        assert clock.calls == 1
        assert read(f"{base}/metrics") == first  # the next poll, at once: the same judgement
        assert clock.calls == 1
        time.sleep(1.2)  # past the reuse interval: judged again
        read(f"{base}/metrics")
        assert clock.calls == 2
        time.sleep(1.2)
        with ThreadPoolExecutor(3) as pool:  # three viewers at once: one judgement
            pages = list(pool.map(read, [f"{base}/api/jobs", f"{base}/metrics", f"{base}/"]))
        assert clock.calls == 3, clock.calls
        assert all(pages)
