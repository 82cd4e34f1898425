"""A loop set as the current one before the session's loop (or a sync helper's) runs is the
current one again after it, not dropped to the garbage collector (issue 32's -W error report:
"unclosed event loop" at the end of a strict session)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from pytest_agent_eval._async import SessionLoop, run_sync


async def _answer() -> int:
    return 42


@pytest.fixture
def found() -> Iterator[asyncio.AbstractEventLoop]:
    """A loop set as current, as ``asyncio.get_event_loop()`` does outside a running loop."""
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)
    yield loop
    asyncio.set_event_loop(None)
    loop.close()


def test_the_session_loop_gives_the_current_loop_back(found: asyncio.AbstractEventLoop) -> None:
    session = SessionLoop()
    assert session.run(_answer()) == 42
    session.close()
    assert asyncio.get_event_loop_policy().get_event_loop() is found and not found.is_closed()


def test_a_sync_helper_gives_the_current_loop_back(found: asyncio.AbstractEventLoop) -> None:
    assert run_sync(_answer()) == 42
    assert asyncio.get_event_loop_policy().get_event_loop() is found and not found.is_closed()
