"""Record once, replay offline: the real OpenAI realtime client (livekit-plugins-openai) in a
real AgentSession, recorded against the scripted provider (the paid API's stand-in), then
replayed from the loopback server with no key and the provider out of reach."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("livekit.plugins.openai", reason="needs livekit-plugins-openai (dev extra)")

from replay_agents import (
    CALL,
    FrontDeskWithCancel,
    converse,
    provider,
    run,
    session_factory,
    transcript,
)

from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.adapters.livekit.realtime import (
    CassetteError,
    OpenAIRealtimeReplay,
)


def _record(
    tmp: Path,
    monkeypatch: pytest.MonkeyPatch,
    *,
    shared: bool,
    users: Any = CALL,
    drop_after_responses: int | None = None,
    close_mid_response: tuple[int, int, str] | None = None,
) -> Any:
    """Record ``users`` live against the scripted provider; the captures and the connection count."""

    async def go() -> tuple[Any, int]:
        scripted = provider()
        scripted.drop_after_responses = drop_after_responses
        scripted.close_mid_response = close_mid_response
        url = await scripted.start()
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        monkeypatch.setenv("OPENAI_API_KEY", "sk-recording")
        try:
            adapter = OpenAIRealtimeReplay(
                LiveKitAdapter(session_factory(billing_model=not shared)),
                cassette_dir=tmp,
                record=True,
            )
            captured = await converse(adapter, transcript(*users))
        finally:
            await scripted.aclose()
        return captured, scripted.connections

    return run(go())


def _replay(tmp: Path, users: Any = CALL, *, speed: float = 0.0, **options: Any) -> Any:
    adapter = OpenAIRealtimeReplay(
        LiveKitAdapter(session_factory(**options), speed=speed), cassette_dir=tmp
    )
    return run(converse(adapter, transcript(*users)))


@pytest.mark.parametrize("shared", [True, False], ids=["shared-model", "separate-models"])
def test_a_recording_replays_offline_with_identical_captures(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: bool
) -> None:
    recorded, connections = _record(tmp_path, monkeypatch, shared=shared)
    assert connections == (1 if shared else 2)  # a handoff to an agent with its own model
    # What was recorded is a real conversation: greeting, tools, handoff, the new agent's tool.
    assert recorded[0] == [("Welcome to the front desk!", "greeting", "FrontDesk")]
    assert recorded[2]["tools"] == [
        ("book_table", {"party_size": 2, "time": "7pm"}, "booked for 2 at 7pm", False)
    ]
    assert recorded[3]["agent"] == "Billing"
    assert recorded[4]["reply"] == "Done: your balance is 42 euros."

    cassette = json.loads((tmp_path / "desk.openai-realtime.json").read_text())
    assert cassette["recorded_with"]["livekit-plugins-openai"]
    assert len(cassette["runs"][0]["connections"]) == connections

    monkeypatch.delenv("OPENAI_API_KEY")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")  # nothing listens there
    options = {"billing_model": not shared}
    assert _replay(tmp_path, **options) == recorded
    assert _replay(tmp_path, **options) == recorded
    assert _replay(tmp_path, speed=1.0, **options) == recorded


def test_a_tool_the_recording_never_saw_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path, monkeypatch, shared=True)
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(CassetteError) as info:
        _replay(tmp_path, agent=FrontDeskWithCancel)
    message = str(info.value)
    assert "while the session started" in message
    assert "tool(s) the recording never saw: cancel_booking" in message
    assert "AGENT_EVAL_REALTIME_RECORD=1" in message


def test_a_changed_request_is_an_error_naming_the_first_divergence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path, monkeypatch, shared=True)
    monkeypatch.delenv("OPENAI_API_KEY")
    changed = (CALL[0], "Please book a table for four", *CALL[2:])
    with pytest.raises(CassetteError) as info:
        _replay(tmp_path, changed)
    message = str(info.value)
    assert "turn 2" in message
    assert "item.content[0].text" in message
    assert "'Please book a table for four'" in message
    assert "'Please book a table'" in message


def test_more_turns_than_recorded_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path, monkeypatch, shared=True, users=CALL[:2])
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(CassetteError) as info:
        _replay(tmp_path, CALL[:3])
    message = str(info.value)
    assert "turn 3" in message
    assert "the recording ends after" in message
    assert "'I need billing'" in message


def test_fewer_turns_than_recorded_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(tmp_path, monkeypatch, shared=True, users=CALL[:3])
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(CassetteError) as info:
        _replay(tmp_path, CALL[:2])
    assert "the recording has more turns than this run made" in str(info.value)


def test_an_agent_on_another_model_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livekit.agents import Agent, AgentSession

    from pytest_agent_eval.adapters.livekit import ScriptedLLM
    from pytest_agent_eval.errors import AdapterError

    _record(tmp_path, monkeypatch, shared=True, users=CALL[:1])
    monkeypatch.delenv("OPENAI_API_KEY")

    def make() -> Any:
        return AgentSession(llm=ScriptedLLM([])), Agent(instructions="x")

    adapter = OpenAIRealtimeReplay(LiveKitAdapter(make), cassette_dir=tmp_path)
    with pytest.raises(AdapterError) as info:
        run(converse(adapter, transcript(*CALL[:1])))
    assert "found no OpenAI realtime session" in str(info.value)
    assert "ScriptedLLM" in str(info.value)


def test_a_recorded_reconnection_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The provider drops the connection after the reply to the first turn; the plugin
    # reconnects, fills the new connection again and the conversation goes on.
    recorded, connections = _record(
        tmp_path, monkeypatch, shared=True, users=CALL[:2], drop_after_responses=2
    )
    assert connections == 2
    assert recorded[2]["tools"][0][0] == "book_table"  # the turn after the reconnection
    cassette = json.loads((tmp_path / "desk.openai-realtime.json").read_text())
    (connection,) = cassette["runs"][0]["connections"]  # one session: its events, then the note
    notes = [e for e in connection["events"] if e["dir"] == "note"]
    assert [n["event"]["type"] for n in notes] == ["session_reconnected"]

    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(CassetteError) as info:
        _replay(tmp_path, CALL[:2])
    message = str(info.value)
    assert "connection #1: the session reconnected after client event #" in message
    assert "the replay of a reconnection is not covered" in message
    assert "AGENT_EVAL_REALTIME_RECORD=1" in message


@pytest.mark.parametrize(("response", "turn"), [(2, 1), (4, 2)], ids=["reply", "reply-to-the-tool"])
def test_a_provider_closing_the_socket_mid_turn_is_an_error_naming_its_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, response: int, turn: int
) -> None:
    """The provider fails mid-response and closes with 1011: the plugin reconnects and drops
    the reply it was generating. Before, the turn's reply was what had arrived ('' or a
    stump), a verdict for the wrong reason, or an error blaming an interruption."""
    from pytest_agent_eval.errors import AdapterError

    with pytest.raises(AdapterError) as info:
        _record(
            tmp_path,
            monkeypatch,
            shared=True,
            users=CALL[:2],
            close_mid_response=(response, 1011, "keepalive ping timeout"),
        )
    message = str(info.value)
    assert message.startswith(f"turn {turn}: the provider closed RealtimeModel's websocket")
    assert "close code 1011 (an internal error on the provider's side)" in message
    assert "reason 'keepalive ping timeout'" in message
    assert "interrupt" not in message


def test_a_recording_that_failed_keeps_the_cassette_that_worked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recording again, the provider fails mid-turn: that run is an ERROR, and the cassette
    recorded before stays byte for byte (it was replaced by the failed run's events)."""
    from pytest_agent_eval.errors import AdapterError

    recorded, _ = _record(tmp_path, monkeypatch, shared=True, users=CALL[:2])
    cassette = tmp_path / "desk.openai-realtime.json"
    before = cassette.read_bytes()
    with pytest.raises(AdapterError, match="close code 1011"):
        _record(
            tmp_path,
            monkeypatch,
            shared=True,
            users=CALL[:2],
            close_mid_response=(4, 1011, "server error"),
        )
    assert cassette.read_bytes() == before
    monkeypatch.delenv("OPENAI_API_KEY")
    assert _replay(tmp_path, CALL[:2]) == recorded


def test_a_refused_recording_closes_the_session_it_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The run is refused once the agent's session has started (its model is on Azure's
    legacy API): that session, its websocket and the model's HTTP session are closed there,
    not left running (it went on reconnecting, and aiohttp said "Unclosed client session")."""
    import gc
    import logging
    import warnings

    from livekit.agents import AgentSession
    from livekit.plugins.openai import realtime
    from replay_agents import FrontDesk

    from pytest_agent_eval.errors import AdapterError

    closed: list[Any] = []

    def make() -> Any:
        model = realtime.RealtimeModel.with_azure(
            azure_deployment="gpt-realtime", api_version="2024-10-01-preview"
        )
        session: AgentSession[Any] = AgentSession(llm=model)
        session.on("close", closed.append)
        return session, FrontDesk()

    async def go() -> None:
        scripted = provider()
        url = await scripted.start()
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", url.removesuffix("/v1"))
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-recording")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-recording")
        try:
            adapter = OpenAIRealtimeReplay(LiveKitAdapter(make), cassette_dir=tmp_path, record=True)
            with pytest.raises(AdapterError, match="legacy realtime API"):
                await converse(adapter, transcript(*CALL[:1]))
            assert len(closed) == 1  # closed by the refusal, before the provider goes away
        finally:
            await scripted.aclose()

    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.ERROR):
        warnings.simplefilter("always", ResourceWarning)
        run(go())
        gc.collect()
    unclosed = [r.getMessage() for r in caplog.records if "Unclosed client" in r.getMessage()]
    unclosed += [str(w.message) for w in caught if "Unclosed client" in str(w.message)]
    assert not unclosed, unclosed
    assert not list(tmp_path.iterdir())  # nothing recorded


def test_a_reconnection_during_a_replay_is_an_error_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from livekit.agents import AgentSession
    from livekit.plugins.openai import realtime
    from replay_agents import FrontDesk

    _record(tmp_path, monkeypatch, shared=True, users=CALL[:2])
    monkeypatch.delenv("OPENAI_API_KEY")

    def make() -> Any:
        # A connection recycled as soon as it opens: the session reconnects before its first
        # turn, whatever the machine's speed (with 20 ms, a quick run ended before the timer).
        return AgentSession(llm=realtime.RealtimeModel(max_session_duration=0)), FrontDesk()

    adapter = OpenAIRealtimeReplay(LiveKitAdapter(make, speed=1.0), cassette_dir=tmp_path)
    with pytest.raises(CassetteError) as info:
        run(converse(adapter, transcript(*CALL[:2])))
    message = str(info.value)
    assert "the run's realtime session reconnected (connection #2 for 1 session(s))" in message
    assert "the replay of a reconnection is not covered" in message


def _azure_factory(**options: Any) -> Any:
    from livekit.agents import AgentSession
    from livekit.plugins.openai import realtime
    from replay_agents import FrontDesk

    def make() -> Any:  # as an Azure user writes it: endpoint and key from the environment
        model = realtime.RealtimeModel.with_azure(azure_deployment="gpt-realtime", **options)
        return AgentSession(llm=model), FrontDesk()

    return make


def test_an_azure_model_records_and_replays_offline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def record() -> tuple[Any, list[dict[str, Any]]]:
        scripted = provider()
        url = await scripted.start()
        monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", url.removesuffix("/v1"))
        monkeypatch.setenv("AZURE_OPENAI_API_KEY", "azure-recording")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-recording")  # what a recording run asks for
        monkeypatch.delenv("OPENAI_API_VERSION", raising=False)
        try:
            adapter = OpenAIRealtimeReplay(
                LiveKitAdapter(_azure_factory()), cassette_dir=tmp_path, record=True
            )
            return await converse(adapter, transcript(*CALL[:2])), scripted.received
        finally:
            await scripted.aclose()

    recorded, received = run(record())
    assert recorded[2]["tools"][0][0] == "book_table"
    # Azure's current realtime API speaks OpenAI's protocol (the nested session of the GA API).
    update = next(e for e in received if e["type"] == "session.update")
    assert "audio" in update["session"]

    for name in ("AZURE_OPENAI_ENDPOINT", "AZURE_OPENAI_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name)
    for speed in (0.0, 1.0):
        adapter = OpenAIRealtimeReplay(
            LiveKitAdapter(_azure_factory(), speed=speed), cassette_dir=tmp_path
        )
        assert run(converse(adapter, transcript(*CALL[:2]))) == recorded, speed
    import os

    assert "AZURE_OPENAI_ENDPOINT" not in os.environ  # the placeholders are gone after the run


def test_an_azure_model_on_the_legacy_api_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_agent_eval.errors import AdapterError

    _record(tmp_path, monkeypatch, shared=True, users=CALL[:1])
    monkeypatch.delenv("OPENAI_API_KEY")
    adapter = OpenAIRealtimeReplay(
        LiveKitAdapter(_azure_factory(api_version="2024-10-01-preview")), cassette_dir=tmp_path
    )
    with pytest.raises(AdapterError) as info:
        run(converse(adapter, transcript(*CALL[:1])))
    message = str(info.value)
    assert "legacy realtime API (api_version='2024-10-01-preview')" in message
    assert "not covered" in message


def test_no_unclosed_client_session_is_left_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The plugin's model opens an aiohttp session of its own outside a LiveKit job; the run
    that made the model closes it (aiohttp otherwise prints "Unclosed client session")."""
    import gc
    import logging
    import warnings

    _record(tmp_path, monkeypatch, shared=False, users=CALL[:3])
    gc.collect()
    monkeypatch.delenv("OPENAI_API_KEY")
    caplog.clear()
    with warnings.catch_warnings(record=True) as caught, caplog.at_level(logging.ERROR):
        warnings.simplefilter("always", ResourceWarning)
        for speed in (0.0, 1.0):
            _replay(tmp_path, CALL[:3], speed=speed, billing_model=True)
        gc.collect()
    unclosed = [r.getMessage() for r in caplog.records if "Unclosed client" in r.getMessage()]
    unclosed += [str(w.message) for w in caught if "Unclosed client" in str(w.message)]
    assert not unclosed, unclosed
