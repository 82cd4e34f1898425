"""Where a fixture's speech is, as the VAD that takes the agent's turns will find it: the caller
scans the turn's audio with that VAD's settings (the helper says which), so the helper can tell
when the agent has heard the whole fixture, and a realtime agent can be told it phrase by
phrase.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from livekit.plugins import silero

from ....errors import AdapterError, AudioFixtureError
from ....models import AudioCondition, describe_conditions
from ....voice._heard import segment_words
from ....voice._segments import SpeechSegment
from ....voice._unheard import no_speech_error
from ...base import ConversationInfo, TurnInput
from .._audio import FixtureAudio
from .._segments import scan_segments

__all__ = ["TurnAudio", "fixture_speech", "realtime_speech", "refuse_unheard_conditions"]

TurnAudio = Callable[..., FixtureAudio]
"""`LiveKitRoomAdapter.turn_audio`: what a turn says, as frames (after its conditions)."""

_SCAN_TAIL_S = 1.0
"""Silence after a fixture when the caller finds its speech with the agent's VAD settings (the
microphone sends silence after it too): past any VAD's min_silence_duration."""

_scan_vads: dict[tuple[tuple[str, Any], ...], Any] = {}
"""Silero VADs built with agents' settings, to find a fixture's speech as the agent's VAD
does (one model per settings for the process)."""


async def fixture_speech(
    turn_audio: TurnAudio, turn: TurnInput, settings: dict[str, Any]
) -> dict[str, Any]:
    """Where the fixture's speech starts and where the agent's VAD (``settings``, from the
    helper) ends its last segment, for the helper's "heard the whole fixture"."""
    assert turn.audio is not None
    path = Path(turn.audio)
    audio = await asyncio.to_thread(
        turn_audio, path, turn.conditions, turn.seed, tail_s=_scan_tail(settings)
    )
    segments = await scan_segments(_scan_vad(settings), audio)
    if not segments:
        raise no_speech_error("the agent's VAD", path, audio.duration_s, turn.conditions)
    first, last = segments[0], segments[-1]
    return {
        "first_start_s": first.detected_s - first.speech_s,
        "last_end_s": last.detected_s,
        "segments": len(segments),
    }


async def realtime_speech(
    turn_audio: TurnAudio, turn: TurnInput, realtime: dict[str, Any]
) -> tuple[dict[str, Any], tuple[SpeechSegment, ...], list[str] | None]:
    """For a realtime agent: where the VAD that takes its turns (the model's own, or the
    session's; Silero's defaults standing in for a provider's server) cuts the fixture
    into phrases, and, for a scripted model hearing through provenance, what each phrase
    says (proven here, from the fixture's provenance: the worker has no fixture file)."""
    assert turn.audio is not None
    path = Path(turn.audio)
    settings = realtime.get("vad") or {}
    audio = await asyncio.to_thread(
        turn_audio, path, turn.conditions, turn.seed, tail_s=_scan_tail(settings)
    )
    segments = await scan_segments(_scan_vad(settings), audio)
    if not segments:
        raise no_speech_error(
            "the VAD that takes the realtime agent's turns",
            path,
            audio.duration_s,
            turn.conditions,
        )
    transcripts: list[str] | None = None
    if realtime.get("hearing") == "provenance":
        transcripts = await _proven_phrases(turn, path, segments)
    first, last = segments[0], segments[-1]
    fixture = {
        "first_start_s": first.detected_s - first.speech_s,
        "last_end_s": last.detected_s,
        "segments": len(segments),
    }
    return fixture, segments, transcripts


async def _proven_phrases(
    turn: TurnInput, path: Path, segments: Sequence[SpeechSegment]
) -> list[str]:
    """What each phrase (speech segment) of the fixture says, as its provenance proves:
    the words that ended within it (`segment_words`), what the worker's
    `ScriptedRealtimeModel` hears through `FixtureTextSTT`."""
    if turn.conditions:
        raise AdapterError(f"audio fixture {path}: {_conditions_unheard(turn.conditions)}")
    from ....voice._status import prove_fixture_text

    try:
        words = await asyncio.to_thread(prove_fixture_text, path, turn.turn.user)
    except AudioFixtureError as exc:
        raise AudioFixtureError(
            f"{exc}. The agent's ScriptedRealtimeModel in the worker hears through the "
            f"fixture's provenance, which this fixture does not prove: {_HEAR_IT}"
        ) from None
    return segment_words(words, segments)


_HEAR_IT = (
    "give the worker's ScriptedRealtimeModel hearing=WhisperSTT(), which hears the audio itself"
)


def refuse_unheard_conditions(info: ConversationInfo, realtime: dict[str, Any] | None) -> None:
    """A realtime agent hearing through the fixtures' provenance (``realtime``: the helper's
    account of its model) would hear a turn under audio conditions perfectly, whatever they
    did to the audio: refuse the run before any turn, as in process."""
    if realtime is None or realtime.get("hearing") != "provenance":
        return
    for index, conditions in enumerate(info.turn_conditions):
        if conditions and info.transcript.turns[index].audio is not None:
            raise AdapterError(
                f"transcript {info.transcript.id!r}, turn {index + 1}: "
                + _conditions_unheard(conditions)
            )


def _conditions_unheard(conditions: Sequence[AudioCondition]) -> str:
    return (
        "the agent's ScriptedRealtimeModel hears through the fixture's provenance, which says "
        "what the clean fixture says, not what is left of it under the turn's audio conditions "
        f"({describe_conditions(conditions)}); {_HEAR_IT}"
    )


def _scan_tail(settings: dict[str, Any]) -> float:
    """Silence after the fixture for the scan: past the VAD's min_silence_duration (the
    caller's microphone sends silence for as long as the agent takes)."""
    try:
        silence = float(settings.get("min_silence_duration") or 0.0)
    except (TypeError, ValueError):
        silence = 0.0
    return max(_SCAN_TAIL_S, silence + 0.45)


def _scan_vad(settings: dict[str, Any]) -> Any:
    """A Silero VAD with the agent's settings (one per settings for the process)."""
    key = tuple(sorted(settings.items()))
    vad = _scan_vads.get(key)
    if vad is None:
        vad = _scan_vads[key] = silero.VAD.load(**settings)
    return vad
