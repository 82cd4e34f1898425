"""The turn-taking counterfactual of failure attribution (issue 35, docs/attribution.md): the
same agent hearing the same audio, with the end of each caller's turn committed exactly at the
end of its fixture instead of where the agent's VAD and turn detection put it.

`committed_turns_twin` gives a copy of a `LiveKitAdapter` whose sessions are built by the
user's own factory, then set to manual turn detection (``turn_detection="manual"``) before they
start. The adapter streams a manual session's fixture whole (every phrase, no end of turn
between them) and then commits the turn (``session.commit_user_turn()``): the agent answers
everything the caller said, once. Its STT, LLM, tools and TTS stay its own. Where the turn
detection cannot be replaced, the twin's session start fails with one line saying why (an
`AdapterError`), which attribution writes as its evidence before falling back to the text
rerun.
"""

from __future__ import annotations

from typing import Any, TypeVar

from livekit.agents import Agent, AgentSession, llm

from ....errors import AdapterError
from ._twin import BuildsSessions, given, session_twin

__all__ = ["committed_turns_twin"]

_Adapter = TypeVar("_Adapter", bound=BuildsSessions)


def committed_turns_twin(adapter: _Adapter) -> _Adapter:
    """A copy of ``adapter`` whose every session takes its turns manually, each committed at
    the end of its fixture; the copy's session start raises `AdapterError` where that cannot
    be made (a realtime model taking the turns itself, an agent with turn detection of its
    own)."""
    return session_twin(adapter, _go_manual)


def _go_manual(session: AgentSession[Any], agent: object) -> None:
    if isinstance(session.llm, llm.RealtimeModel):
        raise AdapterError(
            "the agent runs on a realtime model, which takes the caller's turns itself, so "
            "its turn detection cannot be replaced by a commit at the fixture's end"
        )
    if isinstance(agent, Agent) and given(agent.turn_detection):
        raise AdapterError(
            f"the agent ({type(agent).__name__}) brings turn detection of its own, which the "
            "session's manual turn detection cannot replace"
        )
    # Not started yet: the activity the session starts reads the session's mode.
    session.update_options(turn_detection="manual")
