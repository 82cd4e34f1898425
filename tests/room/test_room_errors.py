"""Each way a room run can fail to start or to get an answer says what happened and what to do."""

from __future__ import annotations

import asyncio
import re
import socket

import pytest
from room_lab import RoomLab

from pytest_agent_eval.adapters.base import ConversationInfo
from pytest_agent_eval.adapters.livekit import LiveKitRoomAdapter
from pytest_agent_eval.errors import AdapterError, AgentTimeoutError, ConfigError
from pytest_agent_eval.models import Transcript, Turn


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_server_unreachable() -> None:
    url = f"ws://127.0.0.1:{_closed_port()}"
    adapter = LiveKitRoomAdapter("booking-agent", url=url, api_key="k", api_secret="s" * 32)
    script = Transcript(id="t", turns=[Turn(user="hello")])
    with pytest.raises(AdapterError) as caught:
        asyncio.run(adapter.start_conversation(ConversationInfo(transcript=script, run_index=0)))
    message = str(caught.value)
    assert message.startswith("the start of the run: cannot reach the LiveKit server at " + url)
    assert "LIVEKIT_URL" in message


@pytest.mark.parametrize("speed", [0.0, 2.0])
def test_a_session_speed_other_than_real_time_is_refused_before_any_room(speed: float) -> None:
    # Issue 32: room mode runs in real time by nature; a run that ignored the session's speed
    # would be recorded at a speed nobody asked for. The server is unreachable: the refusal
    # comes first, so no room was made.
    url = f"ws://127.0.0.1:{_closed_port()}"
    adapter = LiveKitRoomAdapter("booking-agent", url=url, api_key="k", api_secret="s" * 32)
    script = Transcript(id="t", turns=[Turn(user="hello")])
    info = ConversationInfo(transcript=script, run_index=0, speed=speed)
    with pytest.raises(AdapterError) as caught:
        asyncio.run(adapter.start_conversation(info))
    assert str(caught.value) == (
        "LiveKitRoomAdapter streams in real time only (the audio goes through a LiveKit server "
        f"as a caller speaks it), but the session's speed is {speed:g} (--agent-eval-speed or "
        "[tool.agent_eval] speed); leave it unset or set it to 'realtime' for room mode"
    )


def test_missing_settings_name_the_environment_variables(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("LIVEKIT_URL", "LIVEKIT_API_KEY", "LIVEKIT_API_SECRET"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigError, match=r"needs url: pass url=\.\.\. or set LIVEKIT_URL"):
        LiveKitRoomAdapter("booking-agent")
    monkeypatch.setenv("LIVEKIT_URL", "ws://127.0.0.1:7880")
    with pytest.raises(ConfigError, match="LIVEKIT_API_KEY"):
        LiveKitRoomAdapter("booking-agent")
    with pytest.raises(ConfigError, match="not a LiveKit server URL"):
        LiveKitRoomAdapter("booking-agent", url="127.0.0.1:7880", api_key="k", api_secret="s")
    with pytest.raises(ConfigError, match="agent_name"):
        LiveKitRoomAdapter("", api_key="k", api_secret="s")


def test_bad_credentials(lab: RoomLab) -> None:
    with pytest.raises(AdapterError) as caught:
        lab.call("start_run", agent_name="booking-agent", api_secret="w" * 40)
    message = str(caught.value)
    assert "rejected the API key 'lab-key' and its secret (401" in message
    assert "LIVEKIT_API_SECRET" in message


def test_no_worker_for_the_agent_name_fails_before_the_join_timeout(
    lab: RoomLab, lab_worker: str
) -> None:
    # join_timeout_s is far away: a message about the dispatch says it did not wait for it.
    with pytest.raises(AdapterError) as caught:
        lab.call("start_run", agent_name="lab-agnet", join_timeout_s=120, dispatch_timeout_s=6)
    message = str(caught.value)
    assert message.startswith("the start of the run: no worker took the dispatch of agent ")
    assert "'lab-agnet' within dispatch_timeout_s=6 s" in message
    assert "agent_name 'lab-agnet'" in message and "load_threshold" in message
    # It names the worker file the project has and the name that file registers.
    assert "lab_worker.py registers 'lab-agent'" in message
    assert "Did you mean 'lab-agent'?" in message


def test_dispatch_accepted_but_the_agent_never_joined(lab: RoomLab, lab_worker: str) -> None:
    with pytest.raises(AdapterError) as caught:
        lab.call("start_run", agent_name=lab_worker, dispatch_metadata="absent", join_timeout_s=6)
    message = str(caught.value)
    assert "the dispatch was accepted (worker AW_" in message
    assert "but the agent never joined the room" in message and "ctx.connect()" in message
    assert "initialize_process_timeout" in message


def test_agent_joined_but_never_started_its_session(lab: RoomLab, lab_worker: str) -> None:
    with pytest.raises(AdapterError) as caught:
        lab.call("start_run", agent_name=lab_worker, dispatch_metadata="ghost", join_timeout_s=6)
    message = str(caught.value)
    assert "to start its session and listen (lk.agent.state)" in message
    assert "agent state None" in message


def test_agent_joined_but_never_spoke(lab: RoomLab, lab_worker: str) -> None:
    # A live, listening agent that says nothing failed the turn (a FAIL, as in process and
    # on Pipecat), naming what it last did; not an ERROR of the run.
    with pytest.raises(AgentTimeoutError) as caught:
        lab.call(
            "converse",
            agent_name=lab_worker,
            dispatch_metadata="mute",
            turns=[{"user": "Do you have vegan dishes?"}],
            timeout_s=6,
        )
    message = str(caught.value)
    assert message.startswith("turn 1: nothing within timeout_s=6 s; still waiting for the agent")
    assert "to reply after the end of the caller's input" in message
    # The agent's LLM step produced nothing: it may still show "thinking", or be back to
    # "listening"; either way nothing was said or transcribed as a reply.
    assert re.search(r"agent state '(listening|thinking)'", message), message
    assert "no reply text yet, no agent audio" in message


def test_only_a_wait_on_the_agent_makes_a_timeout_the_agents_fail() -> None:
    """A turn's deadline covers our own work too (loading and scanning the fixture, the
    caller's microphone, sending text): only a wait on the agent itself makes it a FAIL."""
    from pytest_agent_eval.adapters.livekit.room._conversation import _Stage

    for ours in (
        "the audio fixture evals/a.wav to load",
        "the speech segments of evals/a.wav (the agent's VAD settings)",
        "the caller's microphone to finish saying a.wav",
        "the text to be sent on 'lk.chat'",
        "the agent (agent-1) to answer the eval helper",
    ):
        assert not _Stage(ours).waits_on_agent, ours
    for agents in (
        "the agent (agent-1) to take the turn",
        "the agent (agent-1) to reply after the end of the caller's input",
        "the agent to finish its reply and listen again",
    ):
        assert _Stage(agents).waits_on_agent, agents
