"""The pipeline's clock: virtual time that jumps only when nothing is runnable, stands still for
executor work and between turns, is read by ``time.time``/``time.monotonic`` of its own
threads only, and refuses the network unless allowed."""

from __future__ import annotations

import asyncio
import socket
import threading
import time

import pytest

from pytest_agent_eval.adapters.pipecat._clock import (
    NetworkRefusedError,
    PipelineClock,
    PipelineThread,
)
from pytest_agent_eval.voice._timeshim import is_time_shim, real_monotonic


def on_pipeline(coro_fn, *, rate: float | None = None, allow_network: bool = False):  # type: ignore[no-untyped-def]
    """Run ``coro_fn(clock)`` on a fresh pipeline thread; return its result and the clock."""
    clock = PipelineClock(rate=rate)
    thread = PipelineThread(clock, name="test pipeline", allow_network=allow_network)

    async def main():  # type: ignore[no-untyped-def]
        return await thread.run(coro_fn(clock))

    try:
        return asyncio.run(main()), clock
    finally:
        assert thread.stop()


def test_the_time_functions_are_the_dispatchers() -> None:
    """Installed by the plugin when it loaded (pipecat is installed here)."""
    assert is_time_shim(time.time) and is_time_shim(time.monotonic)
    assert is_time_shim(time.time_ns) and is_time_shim(time.monotonic_ns)


def test_sleeps_take_their_length_in_pipeline_time_and_none_of_the_wall() -> None:
    seen: dict[str, float] = {}

    async def work(clock: PipelineClock) -> None:
        loop = asyncio.get_running_loop()
        start_loop, start_mono, start_wall = loop.time(), time.monotonic(), time.time()
        await asyncio.sleep(300)  # five minutes: the test would hang on a real clock
        await asyncio.wait_for(asyncio.sleep(100), timeout=200)
        seen["loop"] = loop.time() - start_loop
        seen["monotonic"] = time.monotonic() - start_mono
        seen["time"] = time.time() - start_wall
        seen["elapsed"] = clock.elapsed()

    on_pipeline(work)
    # Differences of large clock readings: (start + 400) - start is 400 up to float rounding.
    assert seen == pytest.approx(
        {"loop": 400.0, "monotonic": 400.0, "time": 400.0, "elapsed": 400.0}, abs=1e-6
    )
    # Other threads read the real clock all along.
    assert real_monotonic() - time.monotonic() < 1.0


def test_a_timeout_fires_in_pipeline_time() -> None:
    async def work(clock: PipelineClock) -> float:
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.Event().wait(), timeout=30)
        return clock.elapsed()

    elapsed, _ = on_pipeline(work)
    assert elapsed == 30.0


def test_executor_work_takes_no_pipeline_time() -> None:
    async def work(clock: PipelineClock) -> tuple[float, float]:
        loop = asyncio.get_running_loop()
        before = clock.elapsed()
        in_thread = await loop.run_in_executor(None, lambda: (time.sleep(0.2), time.monotonic())[1])
        # The executor's threads read the pipeline's clock too.
        return clock.elapsed() - before, in_thread - clock.monotonic()

    (spent, thread_vs_clock), _ = on_pipeline(work)
    assert spent == 0.0
    assert thread_vs_clock == 0.0


def test_a_sleep_and_executor_work_at_once_keep_their_order() -> None:
    """The clock stands still while a job runs, so a timer due meanwhile fires after it."""

    async def work(clock: PipelineClock) -> list[str]:
        loop = asyncio.get_running_loop()
        order: list[str] = []

        async def timer() -> None:
            await asyncio.sleep(0.01)
            order.append("timer")

        async def job() -> None:
            await loop.run_in_executor(None, time.sleep, 0.1)
            order.append("job")

        await asyncio.gather(timer(), job())
        return order

    order, _ = on_pipeline(work)
    assert order == ["job", "timer"]


def test_a_held_clock_does_not_jump_until_released() -> None:
    clock = PipelineClock(rate=None)
    thread = PipelineThread(clock, name="held pipeline")

    async def sleeper() -> float:
        await asyncio.sleep(10)
        return clock.elapsed()

    async def main() -> float:
        clock.hold()
        task = asyncio.ensure_future(thread.run(sleeper()))
        done, _ = await asyncio.wait({task}, timeout=0.3)
        assert not done, "time moved while the clock was held"
        assert clock.elapsed() == 0.0
        thread.call(clock.release)
        return await task

    try:
        assert asyncio.run(main()) == 10.0
    finally:
        assert thread.stop()


def test_idle_hooks_run_when_nothing_is_runnable() -> None:
    async def work(clock: PipelineClock) -> list[float]:
        calls: list[float] = []

        def hook() -> bool:
            calls.append(clock.elapsed())
            return False

        clock.add_idle_hook(hook)
        await asyncio.sleep(1.0)
        await asyncio.sleep(0.5)
        clock.remove_idle_hook(hook)
        return calls

    calls, _ = on_pipeline(work)
    # Idle before each jump (and at the times it jumped to), never in between.
    assert 0.0 in calls and 1.0 in calls
    assert all(c in (0.0, 1.0, 1.5) for c in calls)


def test_the_network_is_refused_by_default() -> None:
    async def work(clock: PipelineClock) -> None:
        loop = asyncio.get_running_loop()
        with pytest.raises(
            NetworkRefusedError, match="the connection to example.org:443 was refused"
        ):
            await asyncio.open_connection("example.org", 443)
        with pytest.raises(NetworkRefusedError):
            await loop.getaddrinfo("api.example.com", 80)
        sock = socket.socket()
        sock.setblocking(False)
        try:
            with pytest.raises(NetworkRefusedError):
                await loop.sock_connect(sock, ("127.0.0.1", 9))
        finally:
            sock.close()

    _, clock = on_pipeline(work)
    assert clock.network_attempts == ["example.org:443", "api.example.com:80", "127.0.0.1:9"]


def test_with_the_network_allowed_time_runs_as_the_wall_while_a_socket_is_open() -> None:
    """A local server answers after a real 0.2 s; a 5 s timeout on the reply must not fire at
    once (as it would if the clock jumped while the socket waits)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(1)
    port = server.getsockname()[1]

    def answer() -> None:
        conn, _ = server.accept()
        time.sleep(0.2)
        conn.sendall(b"hello")
        conn.close()

    serving = threading.Thread(target=answer, daemon=True)
    serving.start()

    async def work(clock: PipelineClock) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        try:
            return await asyncio.wait_for(reader.read(5), timeout=5)
        finally:
            writer.close()

    try:
        data, clock = on_pipeline(work, allow_network=True)
    finally:
        server.close()
        serving.join(5)
    assert data == b"hello"
    assert 0.0 < clock.elapsed() < 5.0


def test_a_real_time_clock_reads_the_wall() -> None:
    async def work(clock: PipelineClock) -> tuple[float, float]:
        start = time.monotonic()
        await asyncio.sleep(0.05)
        return time.monotonic() - start, clock.elapsed()

    (slept, elapsed), _ = on_pipeline(work, rate=1.0)
    assert slept >= 0.05 and elapsed >= slept


def test_a_pipeline_thread_leaves_no_thread_behind() -> None:
    before = set(threading.enumerate())

    async def work(clock: PipelineClock) -> None:
        await asyncio.get_running_loop().run_in_executor(None, time.sleep, 0)

    on_pipeline(work)
    assert set(threading.enumerate()) - before == set()


def test_a_bad_rate_is_refused() -> None:
    with pytest.raises(ValueError, match="rate must be > 0 or None"):
        PipelineClock(rate=0)


def test_a_thread_that_does_not_stop_makes_the_run_an_error() -> None:
    """A loop blocked by the agent's code still runs it after the run: an AdapterError (the
    item's ERROR), never swallowed; when the run itself failed, its failure is what is said."""
    from pytest_agent_eval.errors import AdapterError

    thread = PipelineThread(PipelineClock(rate=None), name="blocked pipeline")
    release = threading.Event()
    blocking = threading.Event()

    def block() -> None:
        blocking.set()
        release.wait()  # a blocking call on the loop, until the test releases it

    async def main(raise_inside: bool) -> None:
        async with thread.stopped_after(0.01):
            thread.call(block)
            await asyncio.to_thread(blocking.wait)
            if raise_inside:
                raise ValueError("the run's own failure")

    try:
        with pytest.raises(ValueError, match="the run's own failure"):
            asyncio.run(main(raise_inside=True))
        with pytest.raises(AdapterError) as caught:
            asyncio.run(main(raise_inside=False))
        assert "'blocked pipeline' did not finish within 0.01 s" in str(caught.value)
        assert "could not be evaluated cleanly" in str(caught.value)
    finally:
        release.set()
    assert thread.stop()
