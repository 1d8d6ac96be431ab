"""Random interleavings of attempt observations against a tiny reference model."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

import gatekeeper as gk
from tests.helpers.examples import examples

JOBS = ("A", "B")
DATES = ("2026-10-22", "2026-10-23")
STATES = ("running", "succeeded", "failed", "abandoned")
T0 = dt.datetime(2026, 10, 22, 23, 50, tzinfo=dt.timezone.utc)


def model_transition(current: str | None, new: str) -> str | None:
    """The rule as a table: returns the new state, or None for a refused observation."""
    if current is None or current == "running":
        return new
    if new in (current, "running"):
        return current
    return None


class LedgerMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.ledger = gk.open_ledger(f"sqlite:///{Path(self.tmp.name) / 'm.db'}")
        self.model: dict[tuple[str, str, int], str] = {}

    def teardown(self) -> None:
        self.ledger.close()
        self.tmp.cleanup()

    @rule(
        job=st.sampled_from(JOBS),
        date=st.sampled_from(DATES),
        attempt=st.integers(1, 3),
        state=st.sampled_from(STATES),
    )
    def observe(self, job: str, date: str, attempt: int, state: str) -> None:
        key = (job, date, attempt)
        current = self.model.get(key)
        expected = model_transition(current, state)
        run_id = f"{job}/{date}/{attempt}"
        if expected is None:
            try:
                self.ledger.record(job, date, attempt, run_id, state, T0)
            except gk.StateConflict:
                return
            raise AssertionError(f"{key}: {current} -> {state} should conflict")
        changed = self.ledger.record(job, date, attempt, run_id, state, T0)
        assert changed == (expected != current)
        self.model[key] = expected

    @rule(job=st.sampled_from(JOBS), date=st.sampled_from(DATES), attempt=st.integers(1, 3))
    def reuse_run_id_elsewhere(self, job: str, date: str, attempt: int) -> None:
        other = (JOBS[1 - JOBS.index(job)], date, attempt)
        if other not in self.model:
            return
        try:
            self.ledger.record(job, date, attempt, "/".join(map(str, other)), "running", T0)
        except gk.StateConflict:
            return
        raise AssertionError("a run ID was accepted for two attempts")

    @invariant()
    def latest_and_readiness_agree(self) -> None:
        for date in DATES:
            expected_ready = True
            for job in JOBS:
                ours = [(n, s) for (j, d, n), s in self.model.items() if (j, d) == (job, date)]
                latest = self.ledger.latest(job, date)
                if not ours:
                    assert latest is None
                    expected_ready = False
                    continue
                n, state = max(ours)
                assert latest is not None and (latest.attempt, latest.state.value) == (n, state)
                expected_ready &= state == "succeeded"
            assert gk.check_ready(self.ledger, JOBS, date).ready is expected_ready


LedgerMachine.TestCase.settings = settings(
    max_examples=examples(60), stateful_step_count=25, deadline=None
)
test_ledger_state_machine = LedgerMachine.TestCase
