"""The far end's turn of an outbound call heard as audio (``far_end: {as: audio}``) on an
in-process LiveKit session: its clip (a greeting, a beep, a ring, hold music;
`voice._far_end_audio`) streamed into the session's microphone like a caller's fixture, but
ended by the far end's rule rather than by an end of speech (a beep has none): the clip plays
out on the turn's clock, the line then carries silence until ``SETTLE_S`` after it, and the
turn ends once the agent is done with whatever it began (or began nothing: silence is its
answer, which the call's checks judge)."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from ....errors import AdapterError
from ....models import Transcript
from ....voice._far_end_audio import SETTLE_S, far_end_pcm
from ...base import TurnInput
from .._audio import audio_turn_extra, fixture_audio_of
from .._turn import Stage, TurnRecorder
from ._streamer import AudioStreamer
from ._turn_state import SentTurn

__all__ = ["FarEndFraming", "far_end_turn", "refuse_realtime"]


class FarEndFraming(Protocol):
    """What a far-end turn reads of its `LiveKitAdapter`: how it frames audio."""

    sample_rate: int
    frame_ms: int
    tail_silence_s: float


async def far_end_turn(
    streamer: AudioStreamer,
    recorder: TurnRecorder,
    framing: FarEndFraming,
    transcript: Transcript,
    turn: TurnInput,
    stage: Stage,
) -> SentTurn:
    """Stream far-end ``turn`` of ``transcript`` into the session and return once it is over.

    Raises:
        AudioFixtureError: A spoken line's fixture is missing or not audio.
    """
    first = turn.far_end[0]
    what = f"the far end's audio ({first.part or first.sound})"
    stage.set(f"{what} to be made")
    pcm, words = await asyncio.to_thread(
        far_end_pcm, transcript, turn.far_end, framing.sample_rate, turn.conditions, turn.seed
    )
    audio = fixture_audio_of(pcm, frame_ms=framing.frame_ms, tail_s=framing.tail_silence_s)
    await streamer.follow_recognition()
    segments = list(await streamer.segments_of(audio, pcm.path, stage))
    streamer.prime_far_end(words, segments)
    anchors: list[float] = []
    stage.set(f"{what} to play out, then {SETTLE_S} s of the line")
    await streamer.push_far_end(audio, tuple(segments), anchors, SETTLE_S, words=bool(words))
    await recorder.settle(stage.set)
    extra: dict[str, Any] = audio_turn_extra(turn, audio, len(segments))
    extra["far_end"] = [p.part or p.sound for p in turn.far_end]
    heard = recorder.heard if segments else None
    return SentTurn(anchors, heard, extra)


def refuse_realtime(realtime: Any) -> None:
    """A realtime model hears the far end's audio in phrases it cuts itself: not built yet.

    Raises:
        AdapterError: ``realtime`` is set.
    """
    if realtime is not None:
        raise AdapterError(
            "a far end heard as audio is not streamed into an agent on a realtime model yet; "
            "drop 'as: audio' to play the far end as text"
        )
