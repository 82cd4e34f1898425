"""The keys a LiveKit turn's ``metadata["livekit"]`` has shown since before the typed fields,
built in one place for the in-process and the room adapter (the contract test holds them to
the same keys)."""

from __future__ import annotations

from typing import Any

from ...models import AgentSpeech
from ._turn_capture import TurnCapture

__all__ = ["capture_metadata", "speech_dict"]


def speech_dict(speech: AgentSpeech) -> dict[str, Any]:
    """An utterance as ``metadata["livekit"]`` has shown it since before `AgentSpeech`:
    ``{"text", "cause", "agent", "turn_index"}`` (timings are on the typed record)."""
    return {
        "text": speech.text,
        "cause": speech.cause,
        "agent": speech.agent,
        "turn_index": speech.turn_index,
    }


def capture_metadata(capture: TurnCapture) -> dict[str, Any]:
    """The keys ``metadata["livekit"]`` has shown for a turn since before the typed fields
    (the in-process and the room adapter write the same ones): agent, handoffs, agent_speech, pending and late
    tool calls, events."""
    return {
        "agent": capture.agent,
        "handoffs": [{"from": h.from_agent, "to": h.to_agent} for h in capture.handoffs],
        "agent_speech": [speech_dict(s) for s in capture.agent_speech],
        "pending_tool_calls": capture.pending_tool_calls,
        "late_tool_results": capture.late_tool_results,
        "events": capture.events,
    }
