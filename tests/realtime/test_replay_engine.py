"""The replay server's brain on recorded exchanges written out by hand: server turn detection
keyed by audio position (never bytes), ids mapped from the recording to the live client, the
first divergence in words, and the plugin assumptions (drift) the record and replay rest on."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest

from pytest_agent_eval.adapters.livekit.realtime._cassette import Connection, Entry
from pytest_agent_eval.adapters.livekit.realtime._replay import (
    ConnectionReplay,
    first_difference,
)


def _append(ms: int, byte: int = 0) -> dict[str, object]:
    pcm = bytes([byte]) * (ms * 48)  # 24 kHz PCM16: 48 bytes a millisecond
    return {"type": "input_audio_buffer.append", "audio": base64.b64encode(pcm).decode()}


def _server_vad_connection() -> Connection:
    """A server-VAD turn as recorded: speech from 300 ms to 1800 ms, then the server's turn."""

    def client(event: dict[str, object], ms: float) -> Entry:
        return Entry("client", event, ms)

    def server(event: dict[str, object], ms: float) -> Entry:
        return Entry("server", event, ms)

    return Connection(
        model="gpt-realtime",
        entries=[
            server({"type": "session.created"}, 0),
            client({"type": "session.update", "event_id": "e1", "session": {"tools": []}}, 0),
            server({"type": "input_audio_buffer.speech_started", "audio_start_ms": 300}, 400),
            server({"type": "input_audio_buffer.speech_stopped", "audio_end_ms": 1800}, 2400),
            server({"type": "input_audio_buffer.committed", "item_id": "srv_item"}, 2400),
            server({"type": "response.created", "response": {"id": "resp_1"}}, 2400),
            server({"type": "response.done", "response": {"id": "resp_1"}}, 2400),
            client(
                {
                    "type": "conversation.item.create",
                    "previous_item_id": "srv_item",
                    "item": {"id": "rec_fn_out", "type": "function_call_output", "output": "ok"},
                },
                2600,
            ),
            server({"type": "conversation.item.added", "item": {"id": "rec_fn_out"}}, 2600),
        ],
    )


def _types(events: list[dict[str, object]]) -> list[object]:
    return [e["type"] for e in events]


def test_server_turn_detection_fires_at_the_recorded_audio_position_whatever_the_bytes() -> None:
    replay = ConnectionReplay(_server_vad_connection(), label="connection #1")
    assert _types(replay.opened()) == ["session.created"]
    assert (
        replay.receive({"type": "session.update", "event_id": "live1", "session": {"tools": []}})
        == []
    )
    # Other bytes than any recording (the resampler's output differs run to run): only the
    # position counts.
    # The server decides 300 ms (prefix padding) after the speech it names began, but never
    # later than the recording received the event (400 ms in).
    assert replay.receive(_append(250, byte=7)) == []
    assert replay.receive(_append(100, byte=3)) == []
    assert _types(replay.receive(_append(50, byte=3))) == ["input_audio_buffer.speech_started"]
    # And 500 ms (the silence window) after the end of speech it names: 2300 ms.
    assert replay.receive(_append(1850)) == []
    assert _types(replay.receive(_append(50))) == [
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "response.created",
        "response.done",
    ]
    # The client's own ids are mapped: the server's echo carries the live one.
    answer = replay.receive(
        {
            "type": "conversation.item.create",
            "previous_item_id": "srv_item",
            "item": {"id": "live_fn_out", "type": "function_call_output", "output": "ok"},
        }
    )
    assert answer == [{"type": "conversation.item.added", "item": {"id": "live_fn_out"}}]
    assert replay.divergence is None
    assert replay.leftover() is None


def test_at_max_speed_all_audio_at_once_fires_every_group_in_recorded_order() -> None:
    replay = ConnectionReplay(_server_vad_connection(), label="connection #1")
    replay.opened()
    replay.receive({"type": "session.update", "event_id": "x", "session": {"tools": []}})
    assert _types(replay.receive(_append(3000))) == [
        "input_audio_buffer.speech_started",
        "input_audio_buffer.speech_stopped",
        "input_audio_buffer.committed",
        "response.created",
        "response.done",
    ]


def test_a_divergence_names_the_event_and_field_and_the_client_can_wind_down() -> None:
    replay = ConnectionReplay(_server_vad_connection(), label="connection #1")
    replay.opened()
    replay.receive({"type": "session.update", "event_id": "x", "session": {"tools": []}})
    replay.receive(_append(3000))
    answer = replay.receive(
        {
            "type": "conversation.item.create",
            "previous_item_id": "srv_item",
            "item": {"id": "live", "type": "function_call_output", "output": "failed"},
        }
    )
    assert replay.divergence == (
        "connection #1, client event #2 (conversation.item.create): item.output: the agent "
        "sent 'failed', the recording has 'ok'"
    )
    # The diverged item is still acknowledged, so the session does not wait 5 s for it.
    assert _types(answer) == ["conversation.item.added"]
    refused = replay.receive({"type": "response.create", "event_id": "resp_live"})
    assert refused[0]["type"] == "error"
    assert refused[0]["error"]["event_id"] == "resp_live"  # type: ignore[index]


def test_a_request_past_the_end_of_the_recording_is_a_divergence() -> None:
    replay = ConnectionReplay(_server_vad_connection(), label="connection #1")
    replay.opened()
    replay.receive({"type": "session.update", "event_id": "x", "session": {"tools": []}})
    replay.receive(_append(3000))
    replay.receive(
        {
            "type": "conversation.item.create",
            "previous_item_id": "srv_item",
            "item": {"id": "l", "type": "function_call_output", "output": "ok"},
        }
    )
    replay.receive({"type": "response.create", "event_id": "r"})
    assert replay.divergence is not None
    assert "the agent sent response.create, but the recording ends after 2 client events" in (
        replay.divergence
    )


@pytest.mark.parametrize(
    ("live", "recorded", "expected"),
    [
        (
            {"session": {"tools": [{"name": "a"}, {"name": "b"}]}},
            {"session": {"tools": [{"name": "a"}]}},
            "session.tools: tool(s) the recording never saw: b",
        ),
        (
            {"session": {"tools": [{"name": "a"}]}},
            {"session": {"tools": [{"name": "a"}, {"name": "gone"}]}},
            "session.tools: recorded tool(s) the agent no longer has: gone",
        ),
        (
            {"session": {"instructions": "Be brief."}},
            {"session": {"instructions": "Be kind."}},
            "session.instructions: the agent sent 'Be brief.', the recording has 'Be kind.'",
        ),
        # Ids and audio differ between faithful runs: never compared. (A truncation's
        # playout position is compared within a window: the tests below.)
        (
            {"event_id": "a", "item_id": "x", "audio": "AAAA"},
            {"event_id": "b", "item_id": "y", "audio": "BBBB"},
            None,
        ),
    ],
)
def test_first_difference(live: object, recorded: object, expected: str | None) -> None:
    assert first_difference(live, recorded) == expected


def test_the_plugin_assumptions_hold() -> None:
    pytest.importorskip("livekit.plugins.openai")
    from pytest_agent_eval._compat import livekit_openai

    assert livekit_openai.drift_problems() == []
    versions = livekit_openai.installed_versions()
    assert versions["livekit-plugins-openai"] and versions["livekit-agents"]


def test_drift_names_the_versions_and_what_changed(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("livekit.plugins.openai")
    from pytest_agent_eval._compat import livekit_openai

    monkeypatch.setattr(livekit_openai, "_OPTIONS_FIELDS", ("base_url", "renamed_field"))
    monkeypatch.setattr(livekit_openai, "CLIENT_HOOK", "openai_client_event_sent")
    versions = livekit_openai.installed_versions()
    where = f"livekit-plugins-openai {versions['livekit-plugins-openai']}, livekit-agents "
    assert livekit_openai.drift_problems() == [
        f"{where}{versions['livekit-agents']}: _RealtimeOptions lacks fields ['renamed_field']",
        f"{where}{versions['livekit-agents']}: RealtimeSession no longer emits "
        "'openai_client_event_sent'",
    ]


def test_runs_recorded_together_are_all_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs finishing at once each write the cassette; the last write holds both, even
    when the first one's write is the slower (without taking turns, it would drop run 2)."""
    pytest.importorskip("livekit.plugins.openai")
    import json
    import threading
    import time

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter
    from pytest_agent_eval.adapters.livekit.realtime import openai as replay
    from pytest_agent_eval.models import Transcript, Turn

    real_save = replay.save_cassette
    first_writing = threading.Event()

    def slow_first(path: Path, cassette: object) -> None:
        if len(cassette.runs) == 1:  # type: ignore[attr-defined]
            first_writing.set()
            time.sleep(0.3)  # a slow disk under the first write
        real_save(path, cassette)  # type: ignore[arg-type]

    monkeypatch.setattr(replay, "save_cassette", slow_first)
    adapter = replay.OpenAIRealtimeReplay(
        LiveKitAdapter(lambda: None), cassette_dir=tmp_path, record=True
    )
    script = Transcript(id="together", turns=[Turn(user="hi")])
    path = tmp_path / "together.openai-realtime.json"
    first = threading.Thread(
        target=adapter._keep_run, args=(script, 0, replay._Tape(record=True), path)
    )
    first.start()
    assert first_writing.wait(10)
    second = threading.Thread(
        target=adapter._keep_run, args=(script, 1, replay._Tape(record=True), path)
    )
    second.start()
    first.join(10)
    second.join(10)
    assert len(json.loads(path.read_text())["runs"]) == 2


def _truncation_connection() -> Connection:
    """A barge-in as recorded: the client cut the reply after 1900 ms of its audio."""
    return Connection(
        model="gpt-realtime",
        entries=[
            Entry("server", {"type": "session.created"}, 0),
            Entry(
                "client",
                {
                    "type": "conversation.item.truncate",
                    "event_id": "rec_e1",
                    "item_id": "srv_msg",
                    "content_index": 0,
                    "audio_end_ms": 1900,
                },
                4000,
            ),
            Entry(
                "server",
                {
                    "type": "conversation.item.truncated",
                    "item_id": "srv_msg",
                    "content_index": 0,
                    "audio_end_ms": 1900,
                },
                4000,
            ),
        ],
    )


def _truncate(audio_end_ms: int, content_index: int = 0) -> dict[str, object]:
    return {
        "type": "conversation.item.truncate",
        "event_id": "live_e1",
        "item_id": "srv_msg",
        "content_index": content_index,
        "audio_end_ms": audio_end_ms,
    }


@pytest.mark.parametrize("live_ms", [1900, 1760, 2150], ids=["same", "earlier", "later"])
def test_a_truncation_within_the_window_fits_and_is_answered_with_the_live_position(
    live_ms: int,
) -> None:
    replay = ConnectionReplay(_truncation_connection(), label="connection #1")
    replay.opened()
    (answer,) = replay.receive(_truncate(live_ms))
    assert replay.divergence is None
    assert answer == {
        "type": "conversation.item.truncated",
        "item_id": "srv_msg",
        "content_index": 0,
        "audio_end_ms": live_ms,  # what the live client cut, not the recording's 1900
    }


def test_a_truncation_far_from_the_recorded_one_is_a_divergence_naming_both_positions() -> None:
    replay = ConnectionReplay(_truncation_connection(), label="connection #1")
    replay.opened()
    assert replay.receive(_truncate(3200)) == []
    assert replay.divergence is not None
    assert "client event #1 (conversation.item.truncate)" in replay.divergence
    assert "at 3200 ms" in replay.divergence and "at 1900 ms" in replay.divergence


def test_a_truncation_of_other_content_is_a_divergence() -> None:
    replay = ConnectionReplay(_truncation_connection(), label="connection #1")
    replay.opened()
    replay.receive(_truncate(1900, content_index=1))
    assert replay.divergence is not None
    assert "content_index: the agent sent 1, the recording has 0" in replay.divergence


def test_a_damaged_cassette_is_named_whole_with_a_command_relative_to_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What the JSON parser said comes whole, with its position (it was cut to "Unterminated
    string starting at"), and the re-record command names the transcript as the user types it
    from where pytest runs, not as an absolute path."""
    from pytest_agent_eval.adapters.livekit.realtime._cassette import (
        CassetteError,
        cassette_path,
        load_cassette,
    )
    from pytest_agent_eval.models import Transcript, Turn

    script = Transcript(id="desk", turns=[Turn(user="hi")], path=tmp_path / "evals" / "desk.yaml")
    path = cassette_path(script, None)
    path.parent.mkdir(parents=True)
    path.write_text('{"kind": "pytest-agent-eval/openai-realtime-cass')
    monkeypatch.chdir(tmp_path)
    with pytest.raises(CassetteError) as info:
        load_cassette(script, path)
    assert str(info.value) == (
        "transcript 'desk': realtime cassette evals/cassettes/desk.openai-realtime.json: is not "
        "valid JSON (Unterminated string starting at line 1, column 10: the file is cut short "
        "or damaged); record it again (a live run, with a key): AGENT_EVAL_REALTIME_RECORD=1 "
        "OPENAI_API_KEY=... python -m pytest evals/desk.yaml -k desk"
    )
    monkeypatch.chdir(path.parent)  # elsewhere: a path that lies outside stays absolute
    with pytest.raises(CassetteError) as elsewhere:
        load_cassette(script, path)
    assert f"python -m pytest {tmp_path / 'evals' / 'desk.yaml'} -k desk" in str(elsewhere.value)
