"""Audio turns for LiveKit agents on a realtime (speech-to-speech) model.

An agent whose ``AgentSession(llm=...)`` is a realtime model hears the caller itself: there is
no STT in its pipeline, and its turn detection may run on the provider's server. This package
holds what tests such an agent offline: a scriptable realtime model, and the record and replay
of a provider's realtime session.
"""

from __future__ import annotations

from ._scripted import RealtimeCall, ScriptedRealtimeModel, ScriptedRealtimeSession

# Record and replay of OpenAI realtime sessions (rt-replay).
from .openai import CassetteError, OpenAIRealtimeReplay

__all__: list[str] = [
    "CassetteError",
    "OpenAIRealtimeReplay",
    "RealtimeCall",
    "ScriptedRealtimeModel",
    "ScriptedRealtimeSession",
]
