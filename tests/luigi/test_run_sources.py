"""``run()`` is a recorded attempt however a task class gets it (issue: mixins ran unrecorded).

Each class below gets its ``run`` another way; each is built by real Luigi on a real ledger and
must leave exactly one succeeded attempt, with ``self.run_id`` set while it ran.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections.abc import Callable, Iterator
from typing import Any

import luigi
import pytest

import gatekeeper as gk
from tests.helpers.luigi_support import build, failures_of

pytestmark = pytest.mark.luigi  # the Luigi adapter: run on every supported Luigi

D = dt.date(2026, 10, 23)
SEEN: dict[str, str | None] = {}


def remember(task: Any) -> None:
    SEEN[type(task).__name__] = task.run_id


class RunMixin:
    def run(self) -> None:
        remember(self)


class FromMixin(RunMixin, gk.BusinessDateTask):
    pass


class PlainBase(luigi.Task):
    """An intermediate base that is a plain Luigi task, not a gatekeeper one."""

    def run(self) -> None:
        remember(self)


class FromIntermediateBase(PlainBase, gk.BusinessDateTask):
    pass


def logged(fn: Callable[[Any], None]) -> Callable[[Any], None]:
    @functools.wraps(fn)
    def wrapper(self: Any) -> None:
        fn(self)

    return wrapper


class FromDecorator(gk.BusinessDateTask):
    @logged
    def run(self) -> None:
        remember(self)


def free_function(self: Any) -> None:
    remember(self)


class FromAssignment(gk.BusinessDateTask):
    run = free_function


class GatekeeperBase(gk.BusinessDateTask):
    def run(self) -> None:
        remember(self)


class FromGatekeeperBase(GatekeeperBase):
    """Inherits an already recorded run: recorded once, not twice."""


class OverridesAndCallsSuper(GatekeeperBase):
    def run(self) -> None:
        super().run()
        SEEN["OverridesAndCallsSuper.after"] = self.run_id


SOURCES = [
    FromMixin,
    FromIntermediateBase,
    FromDecorator,
    FromAssignment,
    FromGatekeeperBase,
    OverridesAndCallsSuper,
]


@pytest.mark.parametrize("cls", SOURCES, ids=lambda c: c.__name__)
def test_run_recorded_whatever_its_source(ledger_cfg: gk.Ledger, cls: type) -> None:
    SEEN.clear()
    assert build(cls(business_date=D)).scheduling_succeeded
    (only,) = ledger_cfg.attempts(cls.__name__, D)
    assert only.state is gk.RunState.SUCCEEDED
    assert SEEN[cls.__name__] == only.run_id  # run() ran inside the recorded attempt
    assert build(cls(business_date=D)).scheduling_succeeded  # complete: not run again
    assert len(ledger_cfg.attempts(cls.__name__, D)) == 1


def test_run_super_call_is_one_attempt(ledger_cfg: gk.Ledger) -> None:
    SEEN.clear()
    assert build(OverridesAndCallsSuper(business_date=D)).scheduling_succeeded
    (only,) = ledger_cfg.attempts("OverridesAndCallsSuper", D)
    assert SEEN["OverridesAndCallsSuper"] == SEEN["OverridesAndCallsSuper.after"] == only.run_id


def test_run_generator_refused_at_class_definition_even_from_a_mixin() -> None:
    class YieldingMixin:
        def run(self) -> Iterator[Any]:
            yield from ()

    with pytest.raises(TypeError, match="dynamic dependencies"):

        class Yields(YieldingMixin, gk.BusinessDateTask):  # noqa: F841 - refused on creation
            pass

    with pytest.raises(TypeError, match="dynamic dependencies"):

        class YieldsInBody(gk.BusinessDateTask):  # noqa: F841
            def run(self) -> Iterator[Any]:
                yield from ()


def hidden_generator(fn: Callable[[Any], Iterator[Any]]) -> Callable[[Any], Any]:
    """A decorator that hides that the method is a generator function."""

    def wrapper(self: Any) -> Any:
        return fn(self)

    return wrapper


class HiddenYield(gk.BusinessDateTask):
    @hidden_generator
    def run(self) -> Iterator[Any]:
        yield gk.BusinessDateTask  # never reached: refused when it runs


def test_run_generator_behind_a_decorator_fails_the_attempt(ledger_cfg: gk.Ledger) -> None:
    messages = failures_of(HiddenYield(business_date=D))
    assert any("dynamic dependencies" in m for m in messages), messages
    (only,) = ledger_cfg.attempts("HiddenYield", D)
    assert only.state is gk.RunState.FAILED
    assert only.error is not None and "dynamic dependencies" in only.error
