"""A voice turn costs the session's own VAD pass, and each sound is recognized once.

Real AgentSessions with the Silero VAD (a subclass that counts the streams it opens) and
TTS-made fixtures. Counted, not timed: which VAD streams run over the audio, how often each
fixture is cut, how often Whisper really recognizes a segment. When the session's VAD does not
cut a fixture where its segmentation says (here: a VAD whose ``flush()`` keeps its state), the
turn fails at once saying so, rather than waiting for an end of speech that does not come.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest
from livekit import rtc
from livekit.agents import stt, utils
from livekit.agents.types import NOT_GIVEN, APIConnectOptions, NotGivenOr
from livekit.plugins import silero
from livekit_support import (
    BOOK_TEXT,
    NAME_TEXT,
    TWO_PHRASES_TEXT,
    Fixtures,
    book_then_name,
    booking,
    booking_adapter,
    converse,
    run,
    transcript,
    turn_input,
)

from pytest_agent_eval.adapters.base import ConversationInfo
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    WhisperSTT,
)
from pytest_agent_eval.adapters.livekit._segments import scan_segments, scans_run
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import Turn
from pytest_agent_eval.voice._fixtures import transcript_cache


class CountingVAD(silero.VAD):
    """Silero, counting the VAD streams opened on it (each one is a pass over what it is fed)."""

    opened = 0

    def stream(self) -> silero.vad.VADStream:
        self.opened += 1
        return super().stream()


class StickyVAD(CountingVAD):
    """Silero whose streams ignore ``flush()``: a VAD that keeps state across fixtures."""

    def stream(self) -> silero.vad.VADStream:
        stream = super().stream()
        stream.flush = lambda: None  # type: ignore[method-assign]
        return stream


class DelayedVAD(CountingVAD):
    """Silero whose streams hear 0.3 s of silence after each reset (a line that adds some)."""

    def stream(self) -> silero.vad.VADStream:
        stream = super().stream()
        reset = stream.flush

        def flush() -> None:
            reset()
            stream.push_frame(rtc.AudioFrame(b"\0\0" * 7200, 24000, 1, 7200))

        stream.flush = flush  # type: ignore[method-assign]
        return stream


class CloudLikeSTT(stt.STT):
    """Stands in for a paid non-streaming cloud STT: LiveKit wraps it in a StreamAdapter with
    the session's VAD. It answers every segment with the same words."""

    def __init__(self) -> None:
        super().__init__(capabilities=stt.STTCapabilities(streaming=False, interim_results=False))
        self.segments = 0

    async def _recognize_impl(
        self,
        buffer: utils.AudioBuffer,
        *,
        language: NotGivenOr[str] = NOT_GIVEN,
        conn_options: APIConnectOptions,
    ) -> stt.SpeechEvent:
        self.segments += 1
        return stt.SpeechEvent(
            type=stt.SpeechEventType.FINAL_TRANSCRIPT,
            alternatives=[stt.SpeechData(language="en", text="What name is the booking under?")],
        )


@pytest.mark.parametrize("speed", [0.0, 1.0])
def test_the_sessions_vad_is_the_only_pass_over_the_audio(fixtures: Fixtures, speed: float) -> None:
    """Before: three streams per conversation (the session's, the STT's StreamAdapter's and a
    twin). Now the session's, plus one scan per fixture the first time it is heard."""
    vad = CountingVAD.load()
    adapter = booking_adapter(vad, speed=speed)
    script = book_then_name(fixtures)
    first = run(converse(adapter, script))
    assert vad.opened == 1 + 2  # the session's stream, one scan per fixture
    opened = vad.opened
    again = run(converse(adapter, script, run_index=1))
    assert vad.opened - opened == 1  # the session's stream only
    assert [r.heard for r in again] == [r.heard for r in first] == [BOOK_TEXT, NAME_TEXT]
    assert again[1].reply == "The booking is under Alice."


def test_a_fixture_is_cut_once_per_vad_and_settings(fixtures: Fixtures) -> None:
    async def scenario() -> None:
        audio = LiveKitAdapter(booking.make_session).fixture_audio(fixtures.two_phrases)
        vad = CountingVAD.load()
        before = scans_run()
        cut = await scan_segments(vad, audio)
        assert len(cut) == 2
        assert await scan_segments(vad, audio) == cut
        assert await scan_segments(vad, audio, start=0) == cut
        assert scans_run() - before == 1
        # Other settings, other frames, another VAD object: scanned again.
        vad.update_options(min_silence_duration=0.3)
        await scan_segments(vad, audio)
        other = LiveKitAdapter(booking.make_session, frame_ms=10).fixture_audio(
            fixtures.two_phrases
        )
        await scan_segments(vad, other)
        await scan_segments(CountingVAD.load(), audio)
        assert scans_run() - before == 4
        # Runs that start together need the fixture at once: one scan answers them all.
        together = CountingVAD.load()
        cuts = await asyncio.gather(*(scan_segments(together, audio) for _ in range(3)))
        assert cuts == [cut] * 3
        assert scans_run() - before == 5 and together.opened == 1

    run(scenario())


def _fails_at_once(vad: CountingVAD, fixtures: Fixtures, *, turn: int) -> str:
    """Turn ``turn`` (1-based) of book, two_phrases fails with the message returned."""
    adapter = booking_adapter(vad, timeout_s=600.0)
    turns = [
        Turn(user=BOOK_TEXT, audio=fixtures.book),
        Turn(user=TWO_PHRASES_TEXT, audio=fixtures.two_phrases),
    ]
    with pytest.raises(AdapterError) as info:
        run(converse(adapter, transcript(*turns[2 - turn :])))
    message = str(info.value)
    assert message.startswith(f"turn {turn}: the session's VAD ")
    assert "VADStream.flush()" in message
    assert "timeout_s" not in message  # found out, not waited out
    return message


def test_a_vad_that_keeps_state_across_fixtures_fails_the_turn_saying_so(
    fixtures: Fixtures,
) -> None:
    """Its stream goes on counting from the first fixture: the second cannot be placed."""
    message = _fails_at_once(StickyVAD.load(), fixtures, turn=2)
    assert "did not start over when reset before speech segment 1 of 2" in message
    assert "(VADStream.flush() kept its state)" in message


def test_a_vad_that_cuts_elsewhere_than_the_scan_fails_the_turn_saying_so(
    fixtures: Fixtures,
) -> None:
    """Its stream hears 0.3 s more silence after each reset than the scan does, so it ends
    the first phrase later than the fixture's segmentation says."""
    message = _fails_at_once(DelayedVAD.load(), fixtures, turn=1)
    assert "did not end speech segment 1 of 2" in message
    assert "where the fixture's speech segmentation ends it (2." in message
    assert "without an end of speech" in message


def test_a_non_streaming_stt_of_another_kind_is_followed_by_a_twin(fixtures: Fixtures) -> None:
    """LiveKit gives such an STT a VAD stream of its own, which the adapter cannot reset: a
    twin stream predicts both, as before, and the turns come out right."""
    vad = CountingVAD.load()
    made: list[CloudLikeSTT] = []

    def cloud() -> CloudLikeSTT:
        made.append(CloudLikeSTT())
        return made[-1]

    script = transcript(
        Turn(user=BOOK_TEXT, audio=fixtures.book),
        Turn(user=TWO_PHRASES_TEXT, audio=fixtures.two_phrases),
    )
    replies = run(converse(booking_adapter(vad, cloud), script))
    assert vad.opened == 3  # the session's, the StreamAdapter's and the twin
    assert made[0].segments == 1 + 2
    assert [r.metadata["livekit"]["speech_segments"] for r in replies] == [1, 2]
    assert replies[1].heard_segments == ["What name is the booking under?"] * 2


def test_whisper_recognizes_each_segment_once_over_the_runs(fixtures: Fixtures) -> None:
    transcript_cache().clear_memory()
    made: list[WhisperSTT] = []

    def whisper() -> WhisperSTT:
        made.append(WhisperSTT())
        return made[-1]

    adapter = booking_adapter(booking.VAD, whisper)
    script = book_then_name(fixtures)
    runs = [run(converse(adapter, script, run_index=i)) for i in range(3)]
    segments = sum(len(r.heard_segments) for r in runs[0])
    assert segments >= 2
    assert [s.stats.misses for s in made] == [segments, 0, 0]
    assert [s.stats.memory_hits for s in made] == [0, segments, segments]
    heard = [[r.heard_segments for r in replies] for replies in runs]
    assert heard[1] == heard[2] == heard[0]
    assert runs[2][1].reply == "The booking is under Alice."


def test_a_segment_stt_outside_the_adapter_is_a_plain_non_streaming_stt(
    fixtures: Fixtures,
) -> None:
    """In a worker (room mode) nobody drives it: LiveKit's StreamAdapter cuts the segments."""

    async def scenario() -> Sequence[str]:
        whisper = WhisperSTT()
        assert not whisper.capabilities.streaming
        audio = LiveKitAdapter(booking.make_session).fixture_audio(fixtures.name)
        frame = rtc.combine_audio_frames(list(audio.frames))
        event = await whisper.recognize(buffer=frame)
        return [a.text for a in event.alternatives]

    (text,) = run(scenario())
    assert "booking" in text.lower()
    assert not FixtureTextSTT().capabilities.streaming


def test_driven_stt_switches_back_when_the_conversation_closes(fixtures: Fixtures) -> None:
    made: list[FixtureTextSTT] = []

    def text_stt() -> FixtureTextSTT:
        made.append(FixtureTextSTT())
        return made[-1]

    async def scenario() -> tuple[bool, bool]:
        adapter = booking_adapter(booking.VAD, text_stt)
        script = transcript(Turn(user=NAME_TEXT, audio=fixtures.name))
        info = ConversationInfo(transcript=script, run_index=0)
        conversation = await adapter.start_conversation(info)
        try:
            await conversation.respond(turn_input(script, 0))
            during = made[0].capabilities.streaming
        finally:
            await conversation.aclose()
        return during, made[0].capabilities.streaming

    assert run(scenario()) == (True, False)
