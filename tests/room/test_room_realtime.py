"""Room mode for a worker whose agent runs on a realtime (speech-to-speech) model.

The worker runs the realtime corpus's agents (tests/realtime/realtime_agents.py): a front desk
on a `ScriptedRealtimeModel` that greets, calls tools and hands billing questions to a billing
agent. The model hears through the fixture's provenance: the test proves each phrase's text
from the fixture and hands it to the worker with the turn (the worker has no fixture file).
Each transcript runs with `LiveKitAdapter` in this process and with `LiveKitRoomAdapter`
against the worker running the same agent; the records must be the same, field by field, as
for pipeline agents (test_room_records.py), with the model's own VAD taking the turns and with
the session's.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
import soundfile
from lab_agents import make_session
from room_lab import RoomLab
from test_room_records import MEASURED, _run, _turn

from pytest_agent_eval._loader import load_transcript_file
from pytest_agent_eval._runner import run_transcript
from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.errors import AdapterError, AudioFixtureError
from pytest_agent_eval.models import TranscriptResult
from pytest_agent_eval.voice._fixtures import word_error_rate

TAIL_S = 1.0
"""The in-process adapter's silence after each fixture (its default ``tail_silence_s``); the
room's caller's microphone sends silence after the fixture."""


def _turns(*keys: str) -> str:
    from realtime_agents import PHRASES

    return "".join(f'  - user: "{PHRASES[key]}"\n    audio: {key}.wav\n' for key in keys)


TRANSCRIPTS = {
    # The model's server VAD takes the turns: a two-phrase fixture, a handoff (shared model),
    # a tool of the new agent.
    "rt-server": "greeting:\n  contains_any: [front desk]\nturns:\n"
    + _turns("weather_pause_book", "billing", "balance"),
    # The same agents, each with its own model.
    "rt-server-separate": "turns:\n" + _turns("billing", "bye"),
    # The session's VAD takes them (turn_detection="vad" on a model that hands them over).
    "rt-session": "turns:\n" + _turns("weather_pause_book", "billing"),
}
EXPECTATIONS = {
    "rt-server": [["get_weather", "book_table"], ["transfer_to_billing"], ["get_balance"]],
    "rt-server-separate": [["transfer_to_billing"], []],
    "rt-session": [["get_weather", "book_table"], ["transfer_to_billing"]],
}
"""The tools each turn calls (what the realtime corpus says of these agents)."""


@pytest.fixture(scope="module")
def realtime_wavs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The realtime corpus's fixtures (synthesized offline, with provenance)."""
    from realtime_agents import synthesize

    folder = tmp_path_factory.mktemp("realtime-room")
    synthesize(folder)
    return folder


def _transcript(folder: Path, behaviour: str) -> Path:
    source = folder / f"{behaviour}.yaml"
    ident = behaviour.replace("-", "_")
    source.write_text(f"id: {ident}\nruns: 1\n{TRANSCRIPTS[behaviour]}")
    return source


@pytest.mark.filterwarnings("ignore:the agent's realtime model:UserWarning")
@pytest.mark.parametrize("behaviour", sorted(TRANSCRIPTS))
def test_room_records_of_a_realtime_agent_are_the_in_process_records(
    lab: RoomLab, lab_worker: str, realtime_wavs: Path, behaviour: str
) -> None:
    source = _transcript(realtime_wavs, behaviour)
    adapter = LiveKitAdapter(lambda: make_session(behaviour), tail_silence_s=TAIL_S)
    in_process = asyncio.run(run_transcript(load_transcript_file(source), adapter))
    in_room = lab.call(
        "run_records", agent_name=lab_worker, dispatch_metadata=behaviour, path=str(source)
    )
    assert isinstance(in_process, TranscriptResult) and isinstance(in_room, TranscriptResult)
    (local,), (remote,) = in_process.runs, in_room.runs
    assert local.error is None and remote.error is None, (local.error, remote.error)
    # The in-process run is what the realtime corpus says of these agents.
    tools = [[c.name for c in t.tool_calls] for t in local.turns]
    assert tools == EXPECTATIONS[behaviour]
    assert _run(remote) == _run(local)
    assert len(remote.turns) == len(local.turns) == len(EXPECTATIONS[behaviour])
    for here, there in zip(local.turns, remote.turns, strict=True):
        label = f"turn {here.index + 1}"
        assert _turn(there) == _turn(here), label
        mine, theirs = here.metadata["livekit"], there.metadata["livekit"]
        assert set(mine) <= set(theirs), f"missing in room mode: {set(mine) - set(theirs)}"
        for key in set(mine) - MEASURED:
            assert theirs[key] == mine[key], f"{label}: metadata['livekit'][{key!r}]"
        # Which turn detection took the turns is reported, and it is the agent's own.
        detection = "session" if behaviour == "rt-session" else "server"
        assert theirs["realtime"]["turn_detection"] == detection, label
        assert theirs["realtime"]["transcripts"] == there.heard_segments, label
        # What the caller measured: from the end of the speech to the first reply.
        assert there.latency_s is not None and there.latency_s > 0, label
        # The caller's stream and the agent's events on one axis: the agent's VAD heard the
        # speech after the caller's microphone sent it, and ended it soon after it stopped.
        timeline = there.timeline
        assert timeline is not None and timeline.clock == "real", label
        (stream,) = timeline.of("stream")
        heard = timeline.of("vad_speech")
        off = theirs["timeline_alignment_s"]
        assert off is not None and 0 <= off < 0.5, label
        assert stream.t_end is not None and heard and heard[-1].t_end is not None, label
        assert stream.t_start - off <= heard[0].t_start, (label, timeline)
        assert heard[-1].t_end <= stream.t_end + 2.0, (label, timeline)
        print(
            f"{behaviour} {label}: room turn wall {theirs['turn_wall_s']:.2f} s "
            f"(in process {mine['turn_wall_s']:.3f} s), latency {there.latency_s:.2f} s, "
            f"first audio {there.first_audio_latency_s}"
        )
    assert in_process.passed and in_room.passed


def test_a_scripted_realtime_model_that_cannot_hear_is_an_error_saying_how_to_fix(
    lab: RoomLab, lab_worker: str, realtime_wavs: Path
) -> None:
    with pytest.raises(AdapterError) as caught:
        lab.call(
            "converse",
            agent_name=lab_worker,
            dispatch_metadata="rt-deaf",
            turns=[
                {
                    "user": "What is the weather in Paris?",
                    "audio": str(realtime_wavs / "weather.wav"),
                }
            ],
        )
    message = str(caught.value)
    assert message.startswith("turn 1: audio fixture "), message
    assert "weather.wav" in message and "hearing=None" in message
    assert "hearing=WhisperSTT()" in message


def test_a_fixture_without_provenance_for_a_model_hearing_through_it_is_an_error(
    lab: RoomLab, lab_worker: str, realtime_wavs: Path, tmp_path: Path
) -> None:
    # The same speech, re-written without its provenance: a recording, as far as anyone knows.
    recording = tmp_path / "recorded.wav"
    data, rate = soundfile.read(realtime_wavs / "weather.wav", dtype="int16")
    soundfile.write(recording, data, rate, subtype="PCM_16")
    assert not (tmp_path / "recorded.wav.json").exists()
    with pytest.raises(AudioFixtureError) as caught:
        lab.call(
            "converse",
            agent_name=lab_worker,
            dispatch_metadata="rt-server",
            turns=[{"user": "What is the weather in Paris?", "audio": str(recording)}],
        )
    message = str(caught.value)
    assert message.startswith("turn 1: "), message
    assert "recorded.wav" in message and "provenance" in message
    assert "hearing=WhisperSTT()" in message


def test_a_realtime_model_hearing_with_whisper_in_the_worker_hears_the_room_audio(
    lab: RoomLab, lab_worker: str, realtime_wavs: Path
) -> None:
    from realtime_agents import PHRASES

    out = lab.call(
        "converse",
        agent_name=lab_worker,
        dispatch_metadata="rt-whisper",
        turns=[{"user": PHRASES["weather"], "audio": str(realtime_wavs / "weather.wav")}],
    )
    (reply,) = out["replies"]
    # Whisper in the worker recognized the caller's audio as WebRTC delivered it ...
    assert reply.heard is not None
    assert word_error_rate(PHRASES["weather"], reply.heard) <= 0.2, reply.heard
    assert reply.metadata["livekit"]["realtime"]["transcripts"] == reply.heard_segments
    # ... and the model answered what it heard, with the tool.
    assert [(c.name, c.args) for c in reply.calls] == [("get_weather", {"city": "Paris"})]
    assert reply.reply == "It is sunny in Paris.", reply.reply


def test_replaying_a_cassette_into_a_room_worker_is_refused_saying_why() -> None:
    pytest.importorskip("livekit.plugins.openai", reason="needs the realtime extra")
    from pytest_agent_eval.adapters.livekit import LiveKitRoomAdapter
    from pytest_agent_eval.adapters.livekit.realtime import OpenAIRealtimeReplay
    from pytest_agent_eval.errors import ConfigError

    room = LiveKitRoomAdapter("front-desk", url="ws://127.0.0.1:7880", api_key="k", api_secret="s")
    with pytest.raises(ConfigError) as caught:
        OpenAIRealtimeReplay(room)
    message = str(caught.value)
    assert "LiveKitRoomAdapter" in message and "worker's own process" in message
    assert "OpenAIRealtimeReplay(LiveKitAdapter(make_session))" in message


def test_a_barge_in_turn_is_refused_in_room_mode_before_any_room_is_made(tmp_path: Path) -> None:
    from pytest_agent_eval.adapters.livekit import LiveKitRoomAdapter

    source = tmp_path / "barge.yaml"
    source.write_text(
        "id: barge\nturns:\n  - user: Tell me a story.\n  - user: Wait, stop.\n"
        "    audio: stop.wav\n    interrupt: {after_ms: 800, stop_within_ms: 1500}\n"
    )
    # A server nobody listens on: the refusal comes before anything is asked of it.
    room = LiveKitRoomAdapter("front-desk", url="ws://127.0.0.1:9", api_key="k", api_secret="s")
    with pytest.raises(AdapterError) as caught:
        asyncio.run(room.prepare(load_transcript_file(source)))
    message = str(caught.value)
    assert message.startswith("transcript 'barge', turn 2 interrupts the agent"), message
    assert "LiveKitAdapter" in message


def test_a_model_cutting_a_fixture_otherwise_than_the_scan_is_an_error_never_a_guess(
    lab: RoomLab, lab_worker: str, realtime_wavs: Path
) -> None:
    # The worker's model cuts inside the phrases, so the transcripts proven per phrase no
    # longer match the audio they would be heard in: the turn errors, naming the fix.
    from realtime_agents import PHRASES

    with pytest.raises(AdapterError) as caught:
        lab.call(
            "converse",
            agent_name=lab_worker,
            dispatch_metadata="rt-choppy",
            turns=[
                {
                    "user": PHRASES["weather_pause_book"],
                    "audio": str(realtime_wavs / "weather_pause_book.wav"),
                }
            ],
        )
    message = str(caught.value)
    assert message.startswith("turn 1: "), message
    assert "WhisperSTT()" in message, message
    print(message)
