"""CPU by component (`_components`): a real event loop and thread pool, code of known CPU cost
(busy until its own thread's CPU clock has advanced), and where the meter puts it."""

from __future__ import annotations

import asyncio
import concurrent.futures.thread
import time

from pytest_agent_eval._capacity._components import ComponentMeter, classify_type


def _burn(seconds: float) -> None:
    end = time.thread_time() + seconds
    while time.thread_time() < end:
        pass


async def _tool() -> None:  # this test module is the "agent": the user's own code
    _burn(0.2)


def test_busy_agent_code_on_the_loop_and_in_a_thread_pool_is_the_agents() -> None:
    handle_run = asyncio.events.Handle._run
    work_run = concurrent.futures.thread._WorkItem.run

    async def scenario() -> dict[str, float]:
        meter = ComponentMeter()
        meter.start()
        try:
            await asyncio.create_task(_tool())  # a task's step
            await asyncio.to_thread(_burn, 0.15)  # a thread-pool work item
            for _ in range(200):  # short steps of nobody's in particular
                await asyncio.sleep(0)
        finally:
            found = meter.stop()
        return found

    found = asyncio.run(scenario())
    # 0.35 CPU s burnt by this module's code, on the loop and in the pool: all of it counted
    # (the total is exact), nearly all of it the agent's (the split between components rests
    # on stack samples, an estimate: the suite under load saw 0.340 of it there), and the
    # most of anything.
    assert sum(found.values()) >= 0.35, found
    assert found["agent"] >= 0.3, found
    assert max(found, key=found.__getitem__) == "agent"
    # The hooks are gone once it stops.
    assert asyncio.events.Handle._run is handle_run
    assert concurrent.futures.thread._WorkItem.run is work_run


def test_types_are_classified_by_their_module() -> None:
    assert classify_type(ComponentMeter) == "ours"
    assert classify_type(dict) is None  # the standard library works for its caller

    class Tools:  # defined here, in the user's own code
        pass

    assert classify_type(Tools) == "agent"
