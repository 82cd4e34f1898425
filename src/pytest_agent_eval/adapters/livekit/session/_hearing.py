"""What hears a LiveKit session's audio turns, checked before the first turn: a fixture-text
STT must be able to prove each fixture's text and must not run a turn under audio conditions;
a scripted realtime model must have a way to hear at all.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from livekit.agents import AgentSession

from ....errors import AdapterError, AudioFixtureError
from ....models import AudioCondition, Transcript
from ....voice._far_end_audio import prove_far_end_lines
from ....voice._fixture_pcm import resolve_audio
from ....voice._heard import fixture_text_refusal as _fixture_text_refusal
from ....voice._heard import keys_before_refusal
from ...base import ConversationInfo
from ..offline._stt import FixtureTextSTT
from ._hearing_twin import refuses_conditions
from ._realtime import realtime_model_of

__all__ = [
    "check_realtime_hearing",
    "fixture_text_refusal",
    "hearing_stt",
    "prove_fixture_texts",
    "refuse_fixture_text_under_conditions",
]


def hearing_stt(session: AgentSession[Any]) -> Any:
    """The STT that hears the caller: the session's, else a scripted realtime model's own
    (``hearing``); None when neither is ours to know."""
    if session.stt is not None:
        return session.stt
    from ..realtime._scripted import ScriptedRealtimeModel

    model = realtime_model_of(session)
    return model.hearing if isinstance(model, ScriptedRealtimeModel) else None


def refuse_fixture_text_under_conditions(
    session: AgentSession[Any], info: ConversationInfo
) -> None:
    """`FixtureTextSTT` answers with the fixture's words without listening: under audio
    conditions it would hear perfectly whatever the noise, and pass for the wrong reason. The
    same holds for a scripted realtime model hearing with one."""
    stt_ = hearing_stt(session)
    if not isinstance(stt_, FixtureTextSTT):
        return
    for index, conditions in enumerate(info.turn_conditions):
        if conditions and refuses_conditions(stt_):  # not attribution's perfect hearing
            raise AdapterError(fixture_text_refusal(info.transcript, index, conditions))
    keyed = keys_before_refusal(info.transcript, stt=type(stt_).__name__, instead="WhisperSTT()")
    if keyed is not None:
        raise AdapterError(keyed)


async def prove_fixture_texts(session: AgentSession[Any], transcript: Transcript) -> None:
    """With `FixtureTextSTT`, every audio turn's fixture, and every spoken line of a far end
    heard as audio (`prove_far_end_lines`), must prove its text before the run starts: a
    fixture it cannot answer for (a recording, a WAV made from other words) is an error of the
    run, found before any turn, never a turn in which the agent heard nothing.

    Raises:
        AudioFixtureError: Naming the transcript, the turn, the fixture and the fix.
    """
    stt_ = hearing_stt(session)
    if not isinstance(stt_, FixtureTextSTT):
        return
    for index, turn in enumerate(transcript.turns):
        if turn.audio is None:
            continue
        path = resolve_audio(turn.audio, transcript)
        try:
            await asyncio.to_thread(stt_.proof, path, turn.user)
        except AudioFixtureError as exc:
            raise AudioFixtureError(
                f"transcript {transcript.id!r}, turn {index + 1}: {exc}"
            ) from None
    await asyncio.to_thread(prove_far_end_lines, transcript)


def check_realtime_hearing(model: Any, transcript: Transcript) -> None:
    """A scripted realtime model given no way to hear cannot run audio turns: say so before the
    first turn, naming it and the fix."""
    from ..realtime._scripted import ScriptedRealtimeModel

    if isinstance(model, ScriptedRealtimeModel) and model.hearing is None:
        first = next(i for i, t in enumerate(transcript.turns) if t.audio is not None)
        raise AdapterError(
            f"transcript {transcript.id!r}, turn {first + 1} is an audio turn, but the agent's "
            "ScriptedRealtimeModel was given hearing=None, so it cannot hear it; give it "
            "hearing=FixtureTextSTT() (hears a synthesized fixture's text, from its "
            "provenance) or hearing=WhisperSTT() (real recognition)"
        )


def fixture_text_refusal(
    transcript: Transcript, index: int, conditions: Sequence[AudioCondition]
) -> str:
    """Why `FixtureTextSTT` cannot run a turn with audio conditions, and what to use instead."""
    return _fixture_text_refusal(
        transcript,
        index,
        conditions,
        stt="FixtureTextSTT",
        listener="agent",
        owner="session",
        instead="WhisperSTT()",
    )
