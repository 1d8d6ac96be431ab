"""How a range's due periods are cut into chunks (``range_session.chunk_blocks``).

A contiguous fill's blocks grow (32, 32, 64, 64, ... up to 256 due periods) so a long fill is
few rounds of Luigi's worker; forward and reverse keep blocks of ``chunk_size``. A block's start
depends only on the periods before it, so a window that grows at its end keeps its chunks (the
workers of a central scheduler name them alike).
"""

from __future__ import annotations

import datetime as dt

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gatekeeper.core.planning import plan_range
from gatekeeper.luigi.fill.chunks import CHUNK
from gatekeeper.luigi.range_session import CONTIGUOUS_GROWTH, block_starts, chunk_blocks

START = dt.date(2016, 1, 1)


def _plan(days: int, strategy: str = "contiguous", complete: tuple[dt.date, ...] = ()):
    stop = START + dt.timedelta(days=days)
    now = dt.datetime.combine(stop, dt.time(), dt.timezone.utc)
    return plan_range(complete, start=START, stop=stop, now=now, strategy=strategy, task_limit=None)


def test_chunk_blocks_contiguous_grow_from_chunk_to_its_growth_limit() -> None:
    plan = _plan(3653)
    sizes = [len(keys) for _, keys in chunk_blocks(plan)]
    assert sizes[:8] == [CHUNK, CHUNK, 2 * CHUNK, 2 * CHUNK, 4 * CHUNK, 4 * CHUNK, 256, 256]
    assert max(sizes) == CHUNK * CONTIGUOUS_GROWTH == 256
    assert sum(sizes) == 3653 and len(sizes) == 19  # 115 chunks of 32 before
    blocks = chunk_blocks(plan)
    assert [keys[0] for _, keys in blocks] == [block for block, _ in blocks]  # named by start
    flat = [key for _, keys in blocks for key in keys]
    assert flat == sorted(flat) and len(set(flat)) == 3653


def test_chunk_blocks_a_short_contiguous_window_is_cut_as_before() -> None:
    assert [len(keys) for _, keys in chunk_blocks(_plan(60))] == [32, 28]


@pytest.mark.parametrize("strategy", ["forward", "reverse"])
def test_chunk_blocks_forward_and_reverse_do_not_grow(strategy: str) -> None:
    plan = _plan(3653, strategy)
    sizes = sorted({len(keys) for _, keys in chunk_blocks(plan)})
    assert sizes[-1] == CHUNK and len(block_starts(plan)) == -(-3653 // CHUNK)


@given(
    days=st.integers(min_value=1, max_value=2000),
    more=st.integers(min_value=0, max_value=600),
    done=st.sets(st.integers(min_value=0, max_value=2599), max_size=40),
)
def test_chunk_blocks_a_window_grown_at_its_end_keeps_its_blocks(
    days: int, more: int, done: set[int]
) -> None:
    """Each block of the shorter window is a block of the longer one, with the same name,
    holding the same scheduled periods (but the last, which may grow)."""
    complete = tuple(START + dt.timedelta(days=n) for n in done)
    short, long = _plan(days, complete=complete), _plan(days + more, complete=complete)
    if not short.scheduled:
        return
    longer = dict(chunk_blocks(long))
    blocks = chunk_blocks(short)
    for block, keys in blocks[:-1]:
        assert longer[block] == keys
    last, keys = blocks[-1]
    assert longer[last][: len(keys)] == keys
