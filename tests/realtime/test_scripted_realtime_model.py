"""ScriptedRealtimeModel in real AgentSessions: what the session asks of it, what it hears
(the fixture's provenance, or Whisper), and the turn detection the adapter tests."""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from livekit.agents import AgentSession
from livekit_support import converse, converse_greeted, run, transcript
from realtime_agents import (
    GREETING,
    PHRASES,
    VAD,
    FrontDesk,
    Mode,
    Scenario,
    front_desk_model,
    session_kwargs,
)

from pytest_agent_eval.adapters.livekit import (
    LiveKitAdapter,
    ScriptedRealtimeModel,
    WhisperSTT,
    eval_session_kwargs,
)
from pytest_agent_eval.adapters.livekit.session import _realtime
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import Turn

TAIL_S = 0.7


def _calls(model: ScriptedRealtimeModel) -> list[str]:
    return [c.name for c in model.sessions[0].calls]


def test_text_and_audio_turns_mix_and_tools_are_answered_after_their_result(
    realtime_audio: dict[str, Path],
) -> None:
    models: list[ScriptedRealtimeModel] = []

    def make_session() -> tuple[AgentSession[Any], Any]:
        model = front_desk_model("server")
        models.append(model)
        return AgentSession(llm=model), FrontDesk()

    script = transcript(
        Turn(user="Book a table for two people."),
        Turn(user=PHRASES["weather"], audio=realtime_audio["weather"]),
    )
    greeting, (typed, spoken) = run(
        converse_greeted(LiveKitAdapter(make_session, tail_silence_s=TAIL_S), script)
    )
    assert greeting.text == GREETING
    assert typed.reply == "Done: a table for 2." and typed.heard is None
    assert spoken.heard == PHRASES["weather"] and spoken.reply == "It is sunny in Paris."
    calls = _calls(models[0])
    # After each tool the session sends the result, interrupts (nothing is generating then)
    # and asks for the reply: the interrupt must not cost the tool's reply.
    pairs = [
        i for i in range(len(calls) - 1) if calls[i : i + 2] == ["update_chat_ctx", "interrupt"]
    ]
    assert len(pairs) == 2, calls  # one per tool
    assert all("generate_reply" in calls[i:] for i in pairs)
    # Server-side turn detection: the session never commits; the model heard one phrase.
    assert "commit_audio" not in calls
    assert models[0].sessions[0].heard == [PHRASES["weather"]]


def test_a_model_that_answers_tool_results_itself_is_never_asked_for_the_reply(
    realtime_audio: dict[str, Path],
) -> None:
    """auto_tool_reply (LiveKit's auto_tool_reply_generation, Gemini Live's behaviour): the
    session hands the tool results over and waits; the reply is the model's own response."""
    models: list[ScriptedRealtimeModel] = []

    def make_session() -> tuple[AgentSession[Any], Any]:
        model = front_desk_model("server", auto_tool_reply=True)
        models.append(model)
        return AgentSession(llm=model), FrontDesk()

    assert front_desk_model("server", auto_tool_reply=True).capabilities.auto_tool_reply_generation
    assert not front_desk_model("server").capabilities.auto_tool_reply_generation
    script = transcript(
        Turn(user="Book a table for two people."),
        Turn(user=PHRASES["weather"], audio=realtime_audio["weather"]),
    )
    greeting, (typed, spoken) = run(
        converse_greeted(LiveKitAdapter(make_session, tail_silence_s=TAIL_S), script)
    )
    assert greeting.text == GREETING
    assert typed.reply == "Done: a table for 2."
    assert [c.name for c in typed.calls] == ["book_table"]
    assert spoken.reply == "It is sunny in Paris."
    assert [c.name for c in spoken.calls] == ["get_weather"]
    calls = _calls(models[0])
    # Only the greeting and the typed turn ask for a reply: after each tool's results the
    # session sends them and waits (with auto_tool_reply=False it interrupts and asks).
    assert calls.count("generate_reply") == 2, calls
    asked = ["update_chat_ctx", "interrupt", "generate_reply"]
    assert not any(calls[i : i + 3] == asked for i in range(len(calls))), calls


def test_the_session_vad_commits_the_audio_and_asks_for_the_reply(
    realtime_audio: dict[str, Path],
) -> None:
    models: list[ScriptedRealtimeModel] = []

    def make_session() -> tuple[AgentSession[Any], Any]:
        model = front_desk_model("session")
        models.append(model)
        return AgentSession(llm=model, vad=VAD, **eval_session_kwargs()), FrontDesk()

    script = transcript(Turn(user=PHRASES["weather"], audio=realtime_audio["weather"]))
    _realtime._warned.clear()  # once per model class and process: this test wants it
    with pytest.warns(UserWarning, match="test the session's VAD taking turns"):
        (reply,) = run(converse(LiveKitAdapter(make_session, tail_silence_s=TAIL_S), script))
    assert reply.metadata["livekit"]["realtime"]["turn_detection"] == "session"
    calls = _calls(models[0])
    commit = calls.index("commit_audio")
    assert "generate_reply" in calls[commit:]
    assert not models[0].sessions[0].server_turn_detection


def test_turn_detection_none_keeps_the_server_turn_taking_without_a_warning(
    realtime_audio: dict[str, Path],
) -> None:
    kwargs = eval_session_kwargs(turn_detection=None)
    assert "turn_detection" not in kwargs["turn_handling"]
    assert eval_session_kwargs()["turn_handling"]["turn_detection"] == "vad"

    def make_session() -> tuple[AgentSession[Any], Any]:
        model = front_desk_model("server_and_session_vad")
        return AgentSession(llm=model, vad=VAD, **kwargs), FrontDesk()

    script = transcript(Turn(user=PHRASES["weather"], audio=realtime_audio["weather"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        (reply,) = run(converse(LiveKitAdapter(make_session, tail_silence_s=TAIL_S), script))
    assert reply.metadata["livekit"]["realtime"]["turn_detection"] == "server"
    assert reply.reply == "It is sunny in Paris."


@pytest.mark.parametrize(
    ("mode", "auto_tool_reply"),
    [("server_and_session_vad", False), ("fixed_server", True)],
    ids=["server_vad_and_session_vad", "fixed_server_vad_auto_tool_reply"],
)
@pytest.mark.parametrize("speed", [0.0, 1.0], ids=["max_speed", "real_time"])
def test_the_server_answers_a_turn_once_the_sessions_vad_ended_it_too(
    realtime_audio: dict[str, Path], mode: Mode, auto_tool_reply: bool, speed: float
) -> None:
    """A provider's reply arrives after its server's silence window and the network, so a
    session's own VAD has ended the turn by then; the scripted model answers as late. Here the
    session's VAD waits longer for silence than the model's (0.9 s against Silero's default
    0.55 s), so a model that answered as soon as its own VAD ended the turn would reply while
    the session still hears the user (the adapter's error: "first reply text came ... before
    the end of the user's speech")."""
    from livekit.plugins import silero

    slower = silero.VAD.load(min_silence_duration=0.9)
    seen: list[str] = []

    def make_session() -> tuple[AgentSession[Any], Any]:
        model = front_desk_model(mode, auto_tool_reply=auto_tool_reply)
        session: AgentSession[Any] = AgentSession(
            llm=model, **{**session_kwargs(mode), "vad": slower}
        )
        session.on("speech_created", lambda ev: seen.append(session.user_state))
        return session, FrontDesk()

    script = transcript(Turn(user=PHRASES["weather"], audio=realtime_audio["weather"]))
    adapter = LiveKitAdapter(make_session, speed=speed, tail_silence_s=1.2)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        (reply,) = run(converse(adapter, script))
    assert reply.reply == "It is sunny in Paris."
    assert [c.name for c in reply.calls] == ["get_weather"]
    # Every speech (the greeting, the reply) began once the session's VAD had let go.
    assert seen and "speaking" not in seen, seen


def test_a_session_vad_that_never_ends_the_turn_holds_the_answer_and_the_timeout_says_why(
    realtime_audio: dict[str, Path],
) -> None:
    """The session's VAD waits for more silence (2 s) than follows the phrase (0.7 s): it
    never ends the turn, so the server (paced on it) never answers; the timeout names that."""
    from livekit.plugins import silero

    from pytest_agent_eval.errors import AgentTimeoutError

    deaf = silero.VAD.load(min_silence_duration=2.0)

    def make_session() -> tuple[AgentSession[Any], Any]:
        return AgentSession(llm=front_desk_model("server_and_session_vad"), vad=deaf), FrontDesk()

    script = transcript(Turn(user=PHRASES["weather"], audio=realtime_audio["weather"]))
    adapter = LiveKitAdapter(make_session, tail_silence_s=TAIL_S, timeout_s=8)
    with pytest.raises(AgentTimeoutError) as info:
        run(converse(adapter, script))
    message = str(info.value)
    assert "the agent's reply to phrase 1 of 1" in message
    assert "user state 'speaking'" in message
    assert "give that VAD a min_silence_duration under the silence after the phrase" in message


def test_a_scripted_session_finds_the_agent_session_it_serves() -> None:
    """How the model paces itself on the session's VAD: the activity that made its session
    listens to it (livekit-agents' internals, read in _compat; this fails the day they move)."""
    from pytest_agent_eval.adapters.livekit._compat import realtime_session_owner

    async def check() -> None:
        model = front_desk_model("server")
        assert realtime_session_owner(model.session()) is None  # no session listens to it
        session: AgentSession[Any] = AgentSession(llm=model)
        await session.start(FrontDesk())
        try:
            assert realtime_session_owner(model.sessions[-1]) is session
        finally:
            await session.aclose()
        await model.aclose()

    run(check())


def test_a_server_vad_that_cannot_be_disabled_stays_on(realtime_audio: dict[str, Path]) -> None:
    async def check() -> None:
        model = front_desk_model("fixed_server")
        assert not model.capabilities.can_disable_turn_detection
        assert model.session(turn_detection_disabled=True).server_turn_detection
        await model.aclose()

    run(check())


def test_whisper_hearing_hears_the_audio(realtime_audio: dict[str, Path]) -> None:
    WhisperSTT().load()

    def make_session() -> tuple[AgentSession[Any], Any]:
        model = ScriptedRealtimeModel(front_desk_model("server").script.rules, hearing=WhisperSTT())
        return AgentSession(llm=model), FrontDesk()

    script = transcript(Turn(user=PHRASES["weather"], audio=realtime_audio["weather"]))
    (reply,) = run(converse(LiveKitAdapter(make_session, tail_silence_s=TAIL_S), script))
    assert "paris" in (reply.heard or "").lower()
    assert [c.name for c in reply.calls] == ["get_weather"]


def test_a_model_without_hearing_fails_before_the_first_turn_naming_the_fix(
    realtime_audio: dict[str, Path],
) -> None:
    from pytest_agent_eval.errors import AdapterError

    def make_session() -> tuple[AgentSession[Any], Any]:
        return AgentSession(llm=ScriptedRealtimeModel([], hearing=None)), FrontDesk()

    script = transcript(
        Turn(user="hello"), Turn(user=PHRASES["weather"], audio=realtime_audio["weather"])
    )
    with pytest.raises(AdapterError, match=r"turn 2 is an audio turn.*hearing=WhisperSTT\(\)"):
        run(converse(LiveKitAdapter(make_session), script))


@pytest.mark.parametrize("scenario", [Scenario("barge", "server", False, ())], ids=["server"])
def test_a_bad_option_is_refused(scenario: Scenario) -> None:
    with pytest.raises(ValueError, match="'server' or 'client'"):
        ScriptedRealtimeModel([], turn_detection="semantic")  # type: ignore[arg-type]


def test_a_rule_calling_a_tool_the_agent_does_not_offer_errors_naming_it() -> None:
    """Issue 32: the front desk has no get_balance (billing has); a rule calling it there is a
    mistake in the script (no real model is offered it), so the run errors naming the rule,
    the tool and what was offered, instead of making a call LiveKit would refuse."""

    def make_session() -> tuple[AgentSession[Any], Any]:
        return AgentSession(llm=front_desk_model("server")), FrontDesk()

    with pytest.raises(AdapterError) as info:
        run(converse(LiveKitAdapter(make_session), transcript(Turn(user=PHRASES["balance"]))))
    message = str(info.value)
    assert "the rule 'balance' calls the tool 'get_balance'" in message
    assert "(offered: book_table, get_weather, transfer_to_billing)" in message
    # Named as the model the user wrote, said as ours, not inside LiveKit's error's repr.
    assert message.startswith("turn 1: ScriptedRealtimeModel: the rule 'balance'"), message
    assert "realtime_model_error" not in message
