"""Evaluate LiveKit agents: a real AgentSession per run, fed text turns and WAV fixtures.

Needs the ``livekit`` extra (``pip install 'pytest-agent-eval[livekit]'``). Offline helpers
come with it: `ScriptedLLM` (regex rules instead of a model), `FixtureTextSTT` (hears each
fixture's own text) and `WhisperSTT` (real recognition with a local Whisper model).
"""

from __future__ import annotations

from ...errors import require_extra

require_extra("livekit.agents", extra="livekit", feature="LiveKitAdapter")

from ._adapter import (  # noqa: E402
    LiveKitAdapter,
    LiveKitConversation,
    SessionFactory,
    SessionInfo,
)
from ._options import eval_session_kwargs  # noqa: E402
from ._scripted import Rule, ScriptContext, ScriptedLLM, parse_number  # noqa: E402
from ._stt import FixtureTextSTT, SegmentSTT, WhisperSTT  # noqa: E402

__all__ = [
    "FixtureTextSTT",
    "LiveKitAdapter",
    "LiveKitConversation",
    "Rule",
    "ScriptContext",
    "ScriptedLLM",
    "SegmentSTT",
    "SessionFactory",
    "SessionInfo",
    "WhisperSTT",
    "eval_session_kwargs",
    "parse_number",
]
