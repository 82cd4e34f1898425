"""Evaluate LiveKit agents: a real AgentSession per run, fed text turns and WAV fixtures.

Needs the ``livekit`` extra (``pip install 'pytest-agent-eval[livekit]'``). Offline helpers
come with it: `ScriptedLLM` (regex rules instead of a model), `ScriptedRealtimeModel` (the
same rules as a realtime, speech-to-speech model), `FixtureTextSTT` (hears each
fixture's own text), `WhisperSTT` (real recognition with a local Whisper model) and
`SynthesizerTTS` (the synthesizer's offline voice as a LiveKit TTS).

`LiveKitRoomAdapter` tests a deployed agent (a worker) through a real LiveKit room instead;
the agent's entrypoint adds `publish_eval_events(session)` so its tool calls can be checked.
"""

from __future__ import annotations

import atexit

from ...errors import require_extra

require_extra("livekit.agents", extra="livekit", feature="LiveKitAdapter")

from ._compat import settle_rtc_client_at_exit  # noqa: E402
from ._options import eval_session_kwargs  # noqa: E402
from .offline._scripted import Rule, ScriptContext, ScriptedLLM, parse_number  # noqa: E402
from .offline._stt import FixtureTextSTT, SegmentSTT, WhisperSTT  # noqa: E402
from .offline._tts import SynthesizerTTS  # noqa: E402
from .realtime import ScriptedRealtimeModel  # noqa: E402
from .room._adapter import LiveKitRoomAdapter, LiveKitRoomConversation  # noqa: E402
from .room._events import (  # noqa: E402
    EVAL_EVENTS_TOPIC,
    EVAL_LISTENER_ATTRIBUTE,
    publish_eval_events,
)
from .session._adapter import LiveKitAdapter, SessionFactory, SessionInfo  # noqa: E402
from .session._conversation import LiveKitConversation  # noqa: E402

# Before livekit-rtc creates its client (on first use), so this runs after livekit's own handler.
atexit.register(settle_rtc_client_at_exit)

__all__ = [
    "EVAL_EVENTS_TOPIC",
    "EVAL_LISTENER_ATTRIBUTE",
    "FixtureTextSTT",
    "LiveKitAdapter",
    "LiveKitConversation",
    "LiveKitRoomAdapter",
    "LiveKitRoomConversation",
    "Rule",
    "ScriptContext",
    "ScriptedLLM",
    "ScriptedRealtimeModel",
    "SegmentSTT",
    "SessionFactory",
    "SessionInfo",
    "SynthesizerTTS",
    "WhisperSTT",
    "eval_session_kwargs",
    "parse_number",
    "publish_eval_events",
]
