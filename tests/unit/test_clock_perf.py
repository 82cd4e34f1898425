"""``PipelineClock(perf=True)``: ``time.perf_counter`` on the clock's threads follows the
virtual clock (the LiveKit adapter times latencies with it), never giving one value twice; on
every other thread, and on a clock without ``perf``, it stays real."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from pytest_agent_eval.voice._clock import PipelineClock, PipelineThread
from pytest_agent_eval.voice._timeshim import (
    install_time_shim,
    is_time_shim,
    real_perf_counter,
    real_time,
)

JUMP_S = 1000.0
"""A sleep the virtual clock jumps over: the test would hang for it on a real clock."""


def _perf_across_a_jump(*, perf: bool) -> tuple[float, float, float]:
    """perf_counter's advance across a virtual sleep of `JUMP_S` on the clock's thread, the
    loop's, and perf_counter's advance on this thread meanwhile."""
    install_time_shim()
    clock = PipelineClock(rate=None, perf=perf)
    thread = PipelineThread(clock, name="test perf clock")

    async def work() -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        perf0, loop0 = time.perf_counter(), loop.time()
        await asyncio.sleep(JUMP_S)
        return time.perf_counter() - perf0, loop.time() - loop0

    async def main() -> tuple[float, float]:
        return await thread.run(work())

    here = time.perf_counter()
    try:
        on_clock, on_loop = asyncio.run(main())
    finally:
        assert thread.stop()
    return on_clock, on_loop, time.perf_counter() - here


def test_perf_counter_follows_a_perf_clock_on_its_thread_only() -> None:
    assert is_time_shim(time.perf_counter) and is_time_shim(time.perf_counter_ns)
    on_clock, on_loop, here = _perf_across_a_jump(perf=True)
    assert on_loop == pytest.approx(JUMP_S, abs=1e-6)
    assert on_clock == pytest.approx(JUMP_S, abs=1e-6)
    assert here < JUMP_S  # this thread read the real one: the jump took none of its time


def test_perf_counter_stays_real_on_a_clock_without_perf() -> None:
    on_clock, on_loop, _ = _perf_across_a_jump(perf=False)
    assert on_loop == pytest.approx(JUMP_S, abs=1e-6)
    assert on_clock < JUMP_S


def test_two_reads_never_give_the_same_value() -> None:
    """Code that divides by a duration it timed (LiveKit's tokens per second over an LLM
    stream that took no virtual time) never divides by zero."""
    clock = PipelineClock(rate=None, perf=True)
    reads = [clock.perf_counter() for _ in range(1000)]
    assert all(b > a for a, b in itertools.pairwise(reads))
    assert reads[-1] - reads[0] < 1e-5  # the next float each time: no time to speak of


def test_an_executor_worker_keeps_the_real_perf_counter_and_the_virtual_time() -> None:
    """A worker computes (Whisper times its decode with perf_counter): its perf_counter stays
    real, while its time.time follows the clock as the loop's does."""
    install_time_shim()
    clock = PipelineClock(rate=None, perf=True)
    thread = PipelineThread(clock, name="test perf worker")

    def in_worker() -> tuple[float, float]:
        return time.perf_counter() - real_perf_counter(), time.time() - real_time()

    async def work() -> tuple[float, float]:
        await asyncio.sleep(JUMP_S)
        return await asyncio.get_running_loop().run_in_executor(None, in_worker)

    async def main() -> tuple[float, float]:
        return await thread.run(work())

    try:
        perf_ahead, time_ahead = asyncio.run(main())
    finally:
        assert thread.stop()
    assert abs(perf_ahead) < JUMP_S / 2
    assert time_ahead > JUMP_S / 2


def test_time_never_stands_still_on_a_perf_clock() -> None:
    """LiveKit orders its chat history by time.time(): two items stamped at one virtual
    instant keep the order they were made in."""
    clock = PipelineClock(rate=None, perf=True)
    stamps = [clock.wall() for _ in range(100)]
    assert all(b > a for a, b in itertools.pairwise(stamps))
    plain = PipelineClock(rate=None)
    assert plain.wall() == plain.wall()  # Pipecat's clock is unchanged
