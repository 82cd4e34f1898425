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
    ProviderPacedModel,
    Scenario,
    front_desk_model,
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
        # The server takes the turns next to the session's VAD: a model paced as a provider's
        # (it answers once the session's VAD ended the turn too), or LiveKit's own race can
        # drop the reply to the tool (see realtime_agents.ProviderPacedModel).
        model = front_desk_model("server_and_session_vad")
        session: AgentSession[Any] = AgentSession(llm=model, vad=VAD, **kwargs)
        assert isinstance(model, ProviderPacedModel)
        model.agent_session = session
        return session, FrontDesk()

    script = transcript(Turn(user=PHRASES["weather"], audio=realtime_audio["weather"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        (reply,) = run(converse(LiveKitAdapter(make_session, tail_silence_s=TAIL_S), script))
    assert reply.metadata["livekit"]["realtime"]["turn_detection"] == "server"
    assert reply.reply == "It is sunny in Paris."


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
