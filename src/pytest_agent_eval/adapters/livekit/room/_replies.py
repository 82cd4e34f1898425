"""A room turn's `AgentReply`: the agent's record of the turn (from its helper) or, without the
helper, what the room alone shows, with what the caller measured (latencies, wall time, the
reply audio) and the turn's audio saved where asked.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from ....errors import AgentCrashError
from ....models import AgentReply, AgentSpeech, Greeting, Handoff, ToolCall, Usage
from ....voice._fixture_pcm import save_reply_audio
from ...base import ConversationInfo, TurnInput
from .._audio import FixtureAudio, save_streamed_frames
from .._turn_meta import speech_dict
from ._microphone import REAL_TIME
from ._needs_helper import AGENTS_HINT, HELPER_HINT
from ._observer import AUDIO_RATE, RoomObserver, RoomTurnLog, joined
from ._timeline import room_timeline

__all__ = ["TurnReplies", "crash_error", "raise_crash", "speech"]


class TurnReplies:
    """Makes the replies of one run (``room_name``), and saves their audio (the adapter's
    ``capture_audio``, ``audio_out_dir`` and ``audio_in_dir``)."""

    def __init__(
        self,
        info: ConversationInfo,
        room_name: str,
        *,
        capture_audio: bool,
        audio_out_dir: Path | None,
        audio_in_dir: Path | None,
    ) -> None:
        self.info = info
        self.room_name = room_name
        self.capture_audio = capture_audio
        self.audio_out_dir = audio_out_dir
        self.audio_in_dir = audio_in_dir

    def from_capture(
        self,
        observer: RoomObserver,
        turn: TurnInput,
        log: RoomTurnLog,
        capture: dict[str, Any],
        extra: dict[str, Any],
        started: float,
        audio_in: Path | None,
        *,
        greeting: Greeting | None,
        fixture_end_s: float | None,
    ) -> AgentReply:
        """The reply as the agent's recorder saw it, with what the caller measured."""
        meta = self._room_meta(observer, log, extra, started, helper=True)
        meta.update(capture.get("metadata") or {})
        if capture.get("realtime") is not None:
            meta["realtime"] = capture["realtime"]
        if turn.audio is not None:
            meta["speech_segments"] = capture.get("speech_segments")
            # Where the agent's VAD ended speech, and where the caller's scan of the fixture
            # says its speech ends (seconds into the fixture): how "heard it all" was decided.
            meta["speech_ends_s"] = capture.get("speech_ends_s")
            meta["fixture_speech_end_s"] = fixture_end_s
            # How far the caller's stream may be off the agent's events on the timeline.
            meta["timeline_alignment_s"] = log.agent_zero_error_s
        if capture.get("errors"):
            meta["errors"] = list(capture["errors"])
        if turn.index == 0 and greeting is not None:
            meta["greeting"] = [speech_dict(s) for s in greeting.speech]
            if greeting.tool_calls:
                meta["greeting_tool_calls"] = [c.to_dict() for c in greeting.tool_calls]
        latency, audio_latency = _latencies(observer, log)
        tokens = capture.get("usage") or [0, 0]
        usage = Usage(input_tokens=tokens[0], output_tokens=tokens[1]) if any(tokens) else None
        end = log.ended_at or time.perf_counter()
        return AgentReply(
            capture.get("reply") or "",
            [ToolCall.from_dict(c) for c in capture.get("tool_calls") or []],
            heard=capture.get("heard"),
            latency_s=latency,
            first_audio_latency_s=audio_latency,
            usage=usage,
            audio_out=self._save_audio(turn, observer.reply_audio(log.began_at, end)),
            metadata={"livekit": meta, "speed": REAL_TIME},
            agent_speech=[speech(s) for s in capture.get("agent_speech") or []],
            heard_segments=list(capture.get("heard_segments") or []),
            active_agent=capture.get("agent"),
            handoffs=[Handoff(h.get("from"), str(h["to"])) for h in capture.get("handoffs") or []],
            audio_in=audio_in,
            timeline=room_timeline(capture.get("timeline"), log),
        )

    def from_room(
        self,
        observer: RoomObserver,
        turn: TurnInput,
        log: RoomTurnLog,
        extra: dict[str, Any],
        started: float,
        *,
        greeting: Greeting | None,
    ) -> AgentReply:
        """A text turn's reply as the room alone shows it: no tools, agents or handoffs."""
        meta = self._room_meta(observer, log, extra, started, helper=False)
        if turn.index == 0 and greeting is not None:
            meta["greeting"] = [speech_dict(s) for s in greeting.speech]
        latency, audio_latency = _latencies(observer, log)
        end = log.ended_at or time.perf_counter()
        return AgentReply(
            joined(s.text for s in observer.replies_since(log.began_at)),
            [],
            latency_s=latency,
            first_audio_latency_s=audio_latency,
            audio_out=self._save_audio(turn, observer.reply_audio(log.began_at, end)),
            metadata={
                "livekit": meta,
                "speed": REAL_TIME,
                "tool_calls_unobserved_reason": HELPER_HINT,
                "agents_unobserved_reason": AGENTS_HINT,
            },
            tool_calls_unobserved=HELPER_HINT,
            # Only the helper sees agents; without it these stay unknown (None), never "none".
            active_agent=None,
            handoffs=None,
            # Only a text turn runs without the helper: nothing to draw.
            timeline=None,
        )

    def save_streamed_audio(self, turn: TurnInput, audio: FixtureAudio) -> Path | None:
        folder = self.info.save_audio_dir or self.audio_in_dir
        return save_streamed_frames(folder, self.info, turn.index, audio)

    def _room_meta(
        self,
        observer: RoomObserver,
        log: RoomTurnLog,
        extra: dict[str, Any],
        started: float,
        *,
        helper: bool,
    ) -> dict[str, Any]:
        end = log.ended_at or time.perf_counter()
        meta: dict[str, Any] = {
            **extra,
            "mode": "room",
            "room": self.room_name,
            "agent_identity": observer.agent_identity,
            "agent_states": list(log.states),
            "turn_wall_s": end - started,
            "tool_calls_observed": helper,
        }
        if self.capture_audio:
            meta["reply_audio_s"] = len(observer.reply_audio(log.began_at, end)) / 2 / AUDIO_RATE
        return meta

    def _save_audio(self, turn: TurnInput, pcm: bytes) -> Path | None:
        folder = self.audio_out_dir
        if folder is None or not pcm:
            return None
        from ....voice._fixtures import clip_from_pcm16

        return save_reply_audio(
            folder,
            transcript_id=self.info.transcript.id,
            run_index=self.info.run_index,
            turn_index=turn.index,
            clip=clip_from_pcm16(pcm, AUDIO_RATE),
        )


def _latencies(observer: RoomObserver, log: RoomTurnLog) -> tuple[float | None, float | None]:
    """From the end of the caller's input to the first reply text and audible audio that
    came after it (a fixture the agent takes in parts also has replies to earlier parts)."""
    anchor = log.anchor or log.began_at
    first_text = min(
        (
            s.first_chunk_at
            for s in observer.replies_since(log.began_at)
            if s.first_chunk_at and s.opened_at >= anchor
        ),
        default=None,
    )
    first_audio = observer.audible_since(anchor)
    return (
        first_text - anchor if first_text is not None else None,
        first_audio - anchor if first_audio is not None else None,
    )


def raise_crash(capture: dict[str, Any], label: str) -> None:
    """Raise the crash the agent's helper reported in ``capture`` (an exception LiveKit logged
    from the agent's code, an error the session could not recover from), as in process."""
    crashed = crash_error(capture.get("crash"), label)
    if crashed is not None:
        raise crashed


def crash_error(crash: Any, label: str) -> AgentCrashError | None:
    """The error reporting ``crash`` (the helper's account of it) for ``label``; None for
    none."""
    if not isinstance(crash, dict):
        return None
    return AgentCrashError(
        f"{label}: the agent crashed: {crash.get('message')}",
        kind=str(crash.get("kind") or "Exception"),
        detail=str(crash.get("detail") or ""),
        where=crash.get("where"),
    )


def speech(data: dict[str, Any]) -> AgentSpeech:
    """One of the agent's speeches, as the helper's record gives it."""
    return AgentSpeech(
        text=str(data.get("text") or ""),
        cause=str(data.get("cause") or "other"),
        agent=data.get("agent"),
        turn_index=data.get("turn_index"),
        started_at_s=data.get("started_at_s"),
        latency_s=data.get("latency_s"),
    )
