"""At max speed the session's Silero stream is served the decisions Silero made over the same
fixture when the adapter scanned it, instead of computing them again every run.

Real AgentSessions with Silero's own VAD class, TTS-made fixtures, and Silero's real ONNX
session wrapped to count its inferences (each one is one VAD window computed). The replay
rests on a claim tested here too: Silero gives the same events for the same frames from a
clean stream. That turns come out the same with and without the replay, on every agent shape,
is checked by the corpus (tests/livekit/test_livekit_corpus.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import gc
from typing import Any

import pytest
from livekit import rtc
from livekit.agents import Agent, AgentSession
from livekit.agents import vad as lk_vad
from livekit.plugins import silero
from livekit_support import (
    NAME_TEXT,
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
    ScriptedLLM,
    eval_session_kwargs,
)
from pytest_agent_eval.adapters.livekit._audio import FixtureAudio
from pytest_agent_eval.adapters.livekit._compat import vad_options
from pytest_agent_eval.adapters.livekit._replay import (
    VADReplay,
    VADTrace,
    record_events,
    replays_caught_up,
    replays_served,
)
from pytest_agent_eval.adapters.livekit._segments import scan_fixture
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import AgentReply, Turn


class CountingOnnx:
    """Silero's ONNX session, counting the windows it computes."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.runs = 0

    def run(self, *args: Any, **kwargs: Any) -> Any:
        self.runs += 1
        return self.inner.run(*args, **kwargs)


def counted_silero() -> tuple[silero.VAD, CountingOnnx]:
    vad = silero.VAD.load()
    onnx = CountingOnnx(vad._onnx_session)
    vad._onnx_session = onnx
    return vad, onnx


def _turns(replies: list[AgentReply]) -> list[tuple[Any, ...]]:
    return [
        (r.heard, r.reply, [c.name for c in r.tool_calls], r.metadata["livekit"]["speech_segments"])
        for r in replies
    ]


def _windows(vad: silero.VAD, audio: FixtureAudio) -> int:
    """VAD windows in the fixture's scan (cached: computes nothing)."""
    scan = run(scan_fixture(vad, audio))
    assert scan.trace is not None
    kinds = [e.type for e in scan.trace.events]
    return kinds.count(lk_vad.VADEventType.INFERENCE_DONE)


async def _converse(
    adapter: LiveKitAdapter, script: Any, onnx: CountingOnnx, run_index: int = 0
) -> tuple[list[AgentReply], int]:
    """`converse`, also returning the windows Silero had computed when the last turn ended
    (closing, the session feeds its VAD silence of its own, which the VAD may start on)."""
    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=run_index)
    )
    try:
        replies = [
            await conversation.respond(turn_input(script, i)) for i in range(len(script.turns))
        ]
        return replies, onnx.runs
    finally:
        await conversation.aclose()
        streamer = conversation._streamer
        replay = streamer._replay if streamer is not None else None
        if replay is not None:  # closing gives the stream its own methods back
            assert not {"push_frame", "flush"} & set(vars(replay.stream))


def test_each_fixture_costs_one_silero_pass_per_process_however_many_runs(
    fixtures: Fixtures,
) -> None:
    vad, onnx = counted_silero()
    adapter = booking_adapter(vad)
    script = book_then_name(fixtures)
    served = replays_served()
    first, after_first = run(_converse(adapter, script, onnx))
    audio = [adapter.fixture_audio(fixtures.book), adapter.fixture_audio(fixtures.name)]
    scanned = sum(_windows(vad, a) for a in audio)
    # The scans computed every window; the session's stream none, even the first time.
    assert after_first == scanned
    start = onnx.runs
    again, after_again = run(_converse(adapter, script, onnx, run_index=1))
    assert after_again == start
    assert replays_served() - served == 4  # two fixtures, two runs
    start = onnx.runs
    computed, after_computed = run(
        _converse(booking_adapter(vad, vad_replay=False), script, onnx, 2)
    )
    # (The counter does see a session's stream compute: all but the silence after the last
    # phrase, which max speed does not stream.)
    assert after_computed - start > scanned // 2
    assert _turns(first) == _turns(again) == _turns(computed)
    assert _turns(first)[1][:2] == (NAME_TEXT, "The booking is under Alice.")


def test_in_real_time_the_session_computes_its_own_decisions(fixtures: Fixtures) -> None:
    """Latency measured in real time includes the VAD's own time."""
    vad, onnx = counted_silero()
    script = transcript(Turn(user=NAME_TEXT, audio=fixtures.name))
    served = replays_served()
    (reply,) = run(converse(booking_adapter(vad, speed=1.0), script))
    assert replays_served() == served
    assert onnx.runs > _windows(vad, booking_adapter(vad).fixture_audio(fixtures.name))
    assert reply.heard == NAME_TEXT


def _events(events: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (
            e.type,
            e.samples_index,
            e.timestamp,
            e.speech_duration,
            e.silence_duration,
            e.probability,
            e.speaking,
            [bytes(f.data) for f in e.frames],
        )
        for e in events
    ]


def _decisions(events: list[Any]) -> list[tuple[Any, ...]]:
    """What the session acts on: every start and end of speech with its audio, and where
    each window said speech or silence."""
    return [
        (e.type, e.timestamp, e.speaking, e.speech_duration, e.silence_duration)
        + (() if e.type == lk_vad.VADEventType.INFERENCE_DONE else (_events([e])[0][-1],))
        for e in events
    ]


@pytest.mark.parametrize("rate", [24000, 16000])
def test_silero_decides_the_same_over_the_same_frames(fixtures: Fixtures, rate: int) -> None:
    """The claim the replay rests on. Same frames, same decisions, with one VAD or another.
    The probabilities themselves are bit-exact only when the audio needs no resampling:
    LiveKit's resampler (24 kHz to Silero's 16 kHz) dithers, so each pass hears the audio a
    least significant bit apart and the probabilities move by up to about 0.02, never
    enough here to move a decision. A replay hands back one real pass, the same every run."""
    audio = LiveKitAdapter(booking.make_session, sample_rate=rate).fixture_audio(
        fixtures.two_phrases
    )

    async def scenario() -> list[list[Any]]:
        one, other = silero.VAD.load(), silero.VAD.load()
        return [await record_events(vad, audio) for vad in (one, one, one, other, other)]

    passes = run(scenario())
    ends = [e for e in passes[0] if e.type == lk_vad.VADEventType.END_OF_SPEECH]
    assert len(ends) == 2
    assert all(_decisions(p) == _decisions(passes[0]) for p in passes)
    if rate == 16000:
        assert all(_events(p) == _events(passes[0]) for p in passes)


async def _serve(
    audio: FixtureAudio, frames: list[rtc.AudioFrame], *, flush_before: int | None = None
) -> tuple[VADTrace, list[Any], list[tuple[int, int]]]:
    """Serve ``audio``'s trace to a fresh Silero stream given ``frames`` (with ``flush()``
    called before frame ``flush_before``, as LiveKit does when its STT ends a turn); return
    the trace, every event the stream's consumers got, and (frames given, events got by then)
    after each frame the replay served."""
    vad = silero.VAD.load()
    trace = VADTrace.of(vad_options(vad), audio, await record_events(vad, audio))
    stream = vad.stream()
    assert VADReplay.attachable(stream)
    replay = VADReplay(stream)
    stream.flush()
    assert replay.serve(trace)
    served: list[Any] = []

    async def collect() -> None:
        async for event in stream:
            served.append(event)

    collector = asyncio.create_task(collect())
    progress: list[tuple[int, int]] = []
    try:
        for given, frame in enumerate(frames, start=1):
            if given == flush_before:
                stream.flush()
            stream.push_frame(frame)
            if not replay.serving:
                continue
            expected = sum(due <= given for due in trace.due)
            for _ in range(1000):  # the collector takes what the push handed over
                if len(served) >= expected:
                    break
                await asyncio.sleep(0)
            progress.append((given, len(served)))
    finally:
        stream.end_input()
        await collector
        await stream.aclose()
    return trace, served, progress


def test_events_come_in_order_once_their_audio_is_in(fixtures: Fixtures) -> None:
    audio = LiveKitAdapter(booking.make_session).fixture_audio(fixtures.name)  # 24 kHz
    caught_up = replays_caught_up()
    trace, served, progress = run(_serve(audio, list(audio.frames)))
    assert _events(served) == _events(list(trace.events))
    assert len(progress) == len(audio.frames) and replays_caught_up() == caught_up
    for given, count in progress:
        # Each event came once the frames up to its window's end (and one more) were in,
        # and not later.
        assert count == sum(due <= given for due in trace.due)
        assert all(e.timestamp <= given * audio.frame_s + 1e-9 for e in served[:count])
    assert progress[0][1] == 0  # one 20 ms frame is not a 32 ms window


def _computed(audio: FixtureAudio, frames: list[rtc.AudioFrame]) -> list[Any]:
    return run(record_events(silero.VAD.load(), dataclasses.replace(audio, frames=tuple(frames))))


def test_audio_other_than_the_fixtures_hands_over_to_the_stream_seamlessly(
    fixtures: Fixtures,
) -> None:
    """Something in the session gives the VAD audio of its own in the middle of a fixture
    (here: silence instead of one frame of speech): from there the stream computes, and its
    consumers see exactly what a stream that computed all along would have said (at 16 kHz,
    where Silero is bit-exact, see above)."""
    audio = LiveKitAdapter(booking.make_session, sample_rate=16000).fixture_audio(fixtures.name)
    frames = list(audio.frames)
    odd = frames[20]
    frames[20] = rtc.AudioFrame(
        bytes(len(odd.data) * 2), odd.sample_rate, odd.num_channels, odd.samples_per_channel
    )
    caught_up = replays_caught_up()
    trace, served, progress = run(_serve(audio, frames))
    assert replays_caught_up() == caught_up + 1
    assert [given for given, _ in progress] == list(range(1, 21))  # served up to the odd one
    assert progress[-1][1] > 0
    assert _events(served) == _events(_computed(audio, frames)) != _events(list(trace.events))


def test_a_flush_by_livekit_goes_through_and_the_stream_computes_after_it(
    fixtures: Fixtures,
) -> None:
    """LiveKit resets the stream when its STT ends a turn: from there the stream computes
    from a clean state, as it would have; what came before was served."""
    audio = LiveKitAdapter(booking.make_session, sample_rate=16000).fixture_audio(fixtures.name)
    frames = list(audio.frames)
    trace, served, progress = run(_serve(audio, frames, flush_before=41))
    before = progress[-1][1]
    assert [given for given, _ in progress] == list(range(1, 41)) and before > 0
    assert _events(served[:before]) == _events(list(trace.events[:before]))
    after = _computed(audio, frames[40:])  # a clean stream over the rest
    assert _events(served[before:]) == _events(after)


def test_only_a_fresh_stream_of_silero_itself_is_replayed(fixtures: Fixtures) -> None:
    class QuietSilero(silero.VAD):
        """A subclass may change what its streams do with frames."""

    async def scenario() -> list[bool]:
        vad = silero.VAD.load()
        fresh, fed, patched = vad.stream(), vad.stream(), vad.stream()
        fed.push_frame(LiveKitAdapter(booking.make_session).fixture_audio(fixtures.name).frames[0])
        patched.flush = lambda: None  # type: ignore[method-assign]
        sub = QuietSilero(
            session=vad._onnx_session, opts=vad._opts
        ).stream()  # same model and settings
        try:
            return [VADReplay.attachable(s) for s in (fresh, fed, patched, sub)]
        finally:
            for stream in (fresh, fed, patched, sub):
                await stream.aclose()

    assert run(scenario()) == [True, False, False, False]


def test_runs_that_need_a_fixture_at_once_share_one_scan_and_its_error(
    fixtures: Fixtures,
) -> None:
    """Without a silence tail the fixture's speech runs to its end: every waiter gets the
    scan's error, and a scan whose waiters all left keeps its error to itself."""
    from pytest_agent_eval.adapters.livekit import _segments
    from pytest_agent_eval.adapters.livekit._segments import scans_run

    audio = LiveKitAdapter(booking.make_session, tail_silence_s=0.0).fixture_audio(fixtures.book)
    problems: list[str] = []

    async def scenario() -> list[Any]:
        asyncio.get_running_loop().set_exception_handler(
            lambda _, context: problems.append(context["message"])
        )
        vad = silero.VAD.load()
        before = scans_run()
        results = await asyncio.gather(
            *(scan_fixture(vad, audio) for _ in range(3)), return_exceptions=True
        )
        assert scans_run() - before == 1
        lone = silero.VAD.load()
        alone = asyncio.create_task(scan_fixture(lone, audio))
        await asyncio.sleep(0)  # it starts, and starts the shared scan
        (shared,) = _segments._pending[lone].values()
        alone.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await alone
        await asyncio.wait([shared])  # it runs on without its waiter, and fails
        assert scans_run() - before == 2 and not _segments._pending[lone]
        return results

    results = run(scenario())
    gc.collect()
    assert [type(r) for r in results] == [AdapterError] * 3
    assert "still hears speech at the end" in str(results[0])
    assert not problems


class OwnEars(booking.RestaurantAgent):
    """The example's agent, listening with a VAD of its own (not the session's)."""

    def __init__(self, vad: silero.VAD) -> None:
        Agent.__init__(self, instructions="Book tables and answer menu questions.", vad=vad)
        self.bookings: list[str] = []


def test_an_agent_with_its_own_vad_is_served_that_vads_decisions(fixtures: Fixtures) -> None:
    session_vad, session_onnx = counted_silero()
    own = silero.VAD.load(min_silence_duration=0.4)  # other settings than the session's
    own_onnx = CountingOnnx(own._onnx_session)
    own._onnx_session = own_onnx

    def adapter(replay: bool) -> LiveKitAdapter:
        def factory() -> tuple[AgentSession, Any]:
            session = AgentSession(
                stt=FixtureTextSTT(),
                vad=session_vad,
                llm=ScriptedLLM(booking.RULES),
                **eval_session_kwargs(),
            )
            return session, OwnEars(own)

        return LiveKitAdapter(factory, vad_replay=replay)

    script = book_then_name(fixtures)
    served = replays_served()
    first, _ = run(_converse(adapter(True), script, own_onnx))
    start = own_onnx.runs  # both fixtures scanned with the agent's VAD by now
    again, after_again = run(_converse(adapter(True), script, own_onnx, run_index=1))
    assert after_again == start  # heard again: no window computed at all
    assert session_onnx.runs == 0  # the session's VAD was never used
    assert replays_served() - served == 4
    computed, _ = run(_converse(adapter(False), script, own_onnx, run_index=2))
    assert _turns(first) == _turns(again) == _turns(computed)
    assert _turns(first)[1][:2] == (NAME_TEXT, "The booking is under Alice.")
