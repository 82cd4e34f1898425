"""The plumbing of failure attribution's counterfactual twins on LiveKit (issue 35,
docs/attribution.md): a copy of a `LiveKitAdapter` whose sessions are built by the user's own
factory, then altered before they start. An alteration that cannot be made raises
`AdapterError`; the twin's session start then fails with that one line, which attribution
writes as its evidence before falling back to the text rerun.
"""

from __future__ import annotations

import copy
import inspect
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from livekit.agents import AgentSession

__all__ = ["BuildsSessions", "given", "session_twin"]


class BuildsSessions(Protocol):
    """An adapter that builds each session with a factory (`LiveKitAdapter`)."""

    session_factory: Callable[..., Any]


_Adapter = TypeVar("_Adapter", bound=BuildsSessions)


def session_twin(adapter: _Adapter, alter: Callable[[AgentSession[Any], object], None]) -> _Adapter:
    """A copy of ``adapter`` whose factory has ``alter(session, agent)`` change every session
    the user's factory builds, before it starts."""
    twin = copy.copy(adapter)
    made_by = adapter.session_factory

    async def factory(*args: Any) -> Any:
        made = made_by(*args)
        if inspect.isawaitable(made):
            made = await made
        if isinstance(made, tuple) and len(made) == 2 and isinstance(made[0], AgentSession):
            alter(made[0], made[1])
        return made  # anything else: the adapter's own check says what is wrong

    twin.session_factory = factory
    return twin


def given(value: object) -> bool:
    """False for LiveKit's ``NOT_GIVEN``: an agent's option it left to its session."""
    from livekit.agents.types import NotGiven

    return not isinstance(value, NotGiven)
