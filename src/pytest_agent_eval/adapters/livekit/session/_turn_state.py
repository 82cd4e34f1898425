"""What a turn of the in-process conversation carries from its start to its reply.

`OpenedTurn` is what the turn's start left (its clock, its share of tokens and recognitions);
`SentTurn` is what sending it observed (when the user's speech ended, what was heard). The one
`LiveKitConversation.finish` turns both, and the turn's `TurnCapture`, into its `AgentReply`,
however the turn ran (ordinary, cut by a barge-in, or the interrupting turn).
"""

from __future__ import annotations

from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from livekit.agents import AgentSession

from .._probe import llm_usage
from ..offline._stt import WhisperSTT

__all__ = ["OpenedTurn", "SentTurn"]


@dataclass(slots=True)
class OpenedTurn:
    """What a turn's start left for `LiveKitConversation.finish`."""

    index: int
    started: float
    """``time.perf_counter()`` when the turn began."""
    tokens_before: tuple[int, int]
    recognitions_from: int
    """How many recognitions the session's `WhisperSTT` had made before the turn."""
    tokens_after: tuple[int, int] | None = None
    recognitions_until: int | None = None
    stopped: bool = False
    audio_in: Path | None = None
    """Set by `stop_counting`: where the turn's share of tokens and recognitions ended, and
    the audio it streamed."""

    def stop_counting(self, session: AgentSession[Any], audio_in: Path | None) -> None:
        """The turn's tokens and recognitions end here, and ``audio_in`` is what it streamed (a
        barge-in starts the next turn while this one is still being finished)."""
        self.tokens_after = llm_usage(session)
        stt_ = session.stt
        self.recognitions_until = len(stt_.recognitions) if isinstance(stt_, WhisperSTT) else 0
        self.stopped = True
        self.audio_in = audio_in


@dataclass(slots=True)
class SentTurn:
    """What sending a turn observed."""

    anchors: list[float]
    """When the speech the reply answers ended (``time.perf_counter()``), or the text was sent."""
    heard: str | None
    """What the STT (or a realtime model) heard; None for a text turn."""
    extra: dict[str, Any] = field(default_factory=dict)
    """The turn's own ``metadata["livekit"]`` keys (input kind, segments, conditions, ...)."""
    pending: Awaitable[Any] | None = None
    """A text turn's ``session.run`` result not collected yet (a barge-in cuts the reply)."""
