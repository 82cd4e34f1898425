"""A turn's record in the agent's process, as the helper sends it: `TurnRecorder` (the recorder
`LiveKitAdapter` uses) where text turns come from RoomIO's chat input, and the fields of a
``capture`` event.
"""

from __future__ import annotations

import asyncio
import dataclasses
import time
from typing import TYPE_CHECKING, Any

from .._compat import LiveKitInternalsError, activity_current_speech, session_activity
from .._turn import TurnRecorder
from .._turn_capture import TurnCapture
from .._turn_meta import capture_metadata

if TYPE_CHECKING:
    from livekit.agents import AgentSession

__all__ = ["RoomRecorder", "SpeakingTimes", "capture_fields", "crash_fields"]


class RoomRecorder(TurnRecorder):
    """`TurnRecorder` in the agent's process, where text turns come from RoomIO's chat input.

    In process, the adapter marks the reply to a text turn itself (``sending_text`` around
    ``session.run``); here the text arrives on the chat topic, so the first speech the session
    creates after the caller announced a text turn is that reply.
    """

    def __init__(self, session: AgentSession[Any]) -> None:
        super().__init__(session)
        self.text_pending = False
        self.speech_created = asyncio.Event()
        """Set when a speech is created (a text turn's reply has started)."""

    def _on_speech(self, ev: Any) -> None:
        if self.text_pending:
            self.text_pending = False
            self.sending_text = True
        try:
            super()._on_speech(ev)
        finally:
            self.sending_text = False
            self.speech_created.set()


class SpeakingTimes:
    """When each speech started to be heard: the agent's state turned ``speaking`` with it
    current (RoomIO syncs the reply text to the audio, so this is its first text too)."""

    def __init__(self, session: AgentSession[Any]) -> None:
        self._session = session
        self._first: dict[str, float] = {}

    def on_state(self, new_state: str) -> None:
        if new_state != "speaking":
            return
        try:
            activity = session_activity(self._session)
            speech = activity_current_speech(activity) if activity is not None else None
        except LiveKitInternalsError:
            return
        if speech is not None:
            self._first.setdefault(speech.id, time.perf_counter())

    def text_of(self, speech_id: str) -> str:
        return ""

    def first_text_time(self, speech_id: str) -> float | None:
        return self._first.get(speech_id)


def capture_fields(
    turn: int | None,
    capture: TurnCapture,
    recorder: TurnRecorder,
    *,
    heard: str | None,
    usage: list[int] | None,
) -> dict[str, Any]:
    return {
        "turn": turn,
        "reply": capture.reply,
        "tool_calls": [c.to_dict() for c in capture.tool_calls],
        "agent_speech": [dataclasses.asdict(s) for s in capture.agent_speech],
        "handoffs": [{"from": h.from_agent, "to": h.to_agent} for h in capture.handoffs],
        "agent": capture.agent,
        "metadata": capture_metadata(capture),
        "heard": heard,
        "heard_segments": [t.strip() for t in recorder.finals] if heard is not None else [],
        "usage": usage,
        "errors": list(recorder.errors),
        "unrecoverable": recorder.unrecoverable,
        "crash": crash_fields(recorder),
    }


def crash_fields(recorder: TurnRecorder) -> dict[str, Any] | None:
    """How the agent crashed in the turn (`TurnRecorder.take_crash`), for the caller to
    report as in process; None when it did not."""
    crash = recorder.take_crash()
    if crash is None:
        return None
    return {"message": str(crash), "kind": crash.kind, "detail": crash.detail, "where": crash.where}
