"""What a LiveKit session's state says while a turn runs: what its agent is still busy with
and the awaitables that finish when that may have changed (`SessionProbe`, waited on with
`_first_of`), why a realtime model's reply was lost, and the tokens its LLMs reported.
`TurnRecorder` (`_turn`) settles a turn on it; the adapters count a turn's tokens with
`llm_usage`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable
from typing import Any

from livekit.agents import AgentSession, llm

from ..._compat.livekit_openai import provider_close
from ...models import Usage
from ._compat import (
    activity_agent,
    activity_current_speech,
    activity_has_queued_speech,
    activity_on_enter_task,
    activity_recognition,
    activity_running_speech_tasks,
    activity_scheduling_paused,
    agent_switch_lock,
    agent_switch_task,
    session_activity,
    session_target_agent,
    task_hands_back,
)
from ._lock_free import LockFree

__all__ = ["SessionProbe", "agent_name", "llm_usage", "usage_delta"]


def agent_name(agent: Any) -> str:
    """How reports name an agent: its class name."""
    return type(agent).__name__


class SessionProbe:
    """Says what a session's agent is still busy with, and what to wait on until that changes."""

    def __init__(self, session: AgentSession[Any]) -> None:
        self._session = session

    @property
    def activity(self) -> Any:
        """The session's current ``AgentActivity`` (None before start or after close)."""
        return session_activity(self._session)

    @property
    def recognition(self) -> Any:
        """The current activity's audio recognition (one per start/resume of an agent).

        A new one means new VAD streams: frames from then on are cut afresh.
        """
        activity = self.activity
        return activity_recognition(activity) if activity is not None else None

    def busy(
        self, running_tools: Callable[[], list[str]]
    ) -> tuple[str, list[Awaitable[Any]]] | None:
        """What the agent still does, and awaitables that finish when that may have changed.

        None when nothing is pending: no handoff under way, the current agent started and its
        ``on_enter`` finished, no speech or tool task running, no speech queued, the user not
        speaking. (The caller still has ``session.wait_for_idle`` check end-of-turn
        detection.)
        """
        session = self._session
        agent = session_target_agent(session)
        switch = agent_switch_task(session)
        if switch is not None:
            return f"the handoff to {agent_name(agent)} to finish", [switch]
        lock = agent_switch_lock(session)
        if lock.locked():
            return f"the agent switch to {agent_name(agent)} to finish", [LockFree(lock)]
        activity = self.activity
        if activity is None:
            return "the session to run an agent", []
        current = activity_agent(activity)
        name = agent_name(current)
        if task_hands_back(current):
            # An AgentTask that completed hands control back to the agent that awaited it.
            return f"the completed task {name} to hand back to the agent that started it", []
        if activity_scheduling_paused(activity):
            return f"{name}'s activity to start", []
        on_enter = activity_on_enter_task(activity)
        if on_enter is not None:
            return f"{name}.on_enter() to finish", [on_enter]
        tasks = activity_running_speech_tasks(activity)
        if tasks:
            tools = running_tools()
            speech = activity_current_speech(activity)
            if tools:
                what = f"the tool {', '.join(tools)} of {name} to return"
            elif speech is not None and session.agent_state == "speaking":
                what = f"{name}'s speech to finish playing ({speech.id})"
            elif speech is not None:
                what = f"{name}'s reply to be generated (the LLM; {speech.id})"
            else:
                what = f"{name}'s reply to finish"
            return what, list(tasks)
        if activity_has_queued_speech(activity) or activity_current_speech(activity) is not None:
            return f"{name}'s queued speech to play", []
        if session.user_state == "speaking":
            return "the user's speech to end (the session's VAD)", []
        return None


def _connection_lost(model: llm.RealtimeModel, error: Exception) -> str | None:
    """The turn's error when the realtime model's provider connection went while a response
    was under way: the provider's own close (code and reason) when it sent one, never an
    interruption. None when no response was under way (the plugin reconnects, nothing lost).
    """
    close = provider_close(model)
    name = type(model).__name__
    if close is not None and not close.generating:
        return None
    if close is not None and close.code is not None:
        meaning = " (an internal error on the provider's side)" if close.code == 1011 else ""
        what = f"the provider closed {name}'s websocket with close code {close.code}{meaning}, " + (
            f"reason {close.reason!r}," if close.reason else "no reason given,"
        )
    else:
        what = f"{name} lost its connection to the provider ({type(error).__name__}: {error})"
    return (
        f"{what} while it was generating a response: LiveKit's plugin reconnects and drops "
        "that response, so the turn cannot be evaluated. The provider failed, not the agent: "
        "run it again; if it keeps happening, check the provider's status"
    )


def _auto_tool_reply(activity: Any) -> bool:
    """True when the activity's realtime model generates its reply to tool results by itself."""
    model = getattr(activity, "llm", None) if activity is not None else None
    if not isinstance(model, llm.RealtimeModel):
        return False
    return bool(model.capabilities.auto_tool_reply_generation)


async def _first_of(awaitables: Iterable[Awaitable[Any]]) -> None:
    """Return when the first of ``awaitables`` finishes: LiveKit's own tasks are only watched;
    coroutines (our helpers) become tasks here and are cancelled on the way out."""
    own: list[asyncio.Future[Any]] = []
    theirs: list[asyncio.Future[Any]] = []
    for awaitable in awaitables:
        if isinstance(awaitable, asyncio.Future):
            theirs.append(awaitable)
        else:
            own.append(asyncio.ensure_future(awaitable))
    try:
        await asyncio.wait([*own, *theirs], return_when=asyncio.FIRST_COMPLETED)
    finally:
        for future in own:
            if not future.done():
                future.cancel()


def llm_usage(session: AgentSession[Any]) -> tuple[int, int]:
    """Input and output tokens the session's LLMs reported so far."""
    tokens_in = tokens_out = 0
    for usage in session.usage.model_usage:
        if getattr(usage, "type", None) == "llm_usage":
            tokens_in += int(getattr(usage, "input_tokens", 0))
            tokens_out += int(getattr(usage, "output_tokens", 0))
    return tokens_in, tokens_out


def usage_delta(before: tuple[int, int], after: tuple[int, int]) -> Usage | None:
    """The tokens spent between two `llm_usage` readings; None when nothing was reported."""
    tokens_in, tokens_out = after[0] - before[0], after[1] - before[1]
    if tokens_in == 0 and tokens_out == 0:
        return None
    return Usage(input_tokens=tokens_in, output_tokens=tokens_out)
