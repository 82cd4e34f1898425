"""Speed invariance for realtime agents: captured turns identical at max speed and in real time.

Each scenario is a real AgentSession on a `ScriptedRealtimeModel` (its own Silero VAD taking
the turns on the "server", or the session's), fed TTS-made WAVs by `LiveKitAdapter` at
``speed=0`` and ``speed=1``. The captures (reply, what was heard per phrase, tool calls with
arguments and outputs, agent speech with its cause, handoffs, the active agent, the greeting)
must equal each other and what the scenario should produce; they are compared with the LiveKit
corpus's own helpers.

Each scenario's test runs its max-speed conversation itself. The real-time ones run together:
the first test to need one runs every collected scenario's, `REAL_TIME_AT_ONCE` at a time in
one event loop, and each test checks its own (``real_time_batch``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from livekit_support import converse_greeted, run, transcript
from realtime_agents import BILLING_INTRO, GREETING, PHRASES, Scenario
from test_livekit_corpus import captured, said, turn, without_tokens

from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.models import AgentReply, Greeting, Turn
from real_time_batch import Case, real_time_result

TAIL_S = 0.7
"""Silence after each fixture: above Silero's 0.55 s, short enough to keep real time cheap."""

REAL_TIME_AT_ONCE = 4
"""Real-time conversations at once in the batch (each uses a few % of a core)."""

GREETED = [said(GREETING, "greeting", "FrontDesk", None)]
TO_BILLING = [{"from": "FrontDesk", "to": "BillingAgent"}]
TRANSFER = ("transfer_to_billing", {}, "", False, None)


def weather(greeting: Any = None) -> dict[str, Any]:
    return turn(
        "It is sunny in Paris.",
        heard=PHRASES["weather"],
        calls=[("get_weather", {"city": "Paris"}, "It is sunny in Paris", False, None)],
        agent="FrontDesk",
        greeting=greeting,
    )


def handoff(greeting: Any = None, *, index: int = 0) -> dict[str, Any]:
    return turn(
        f"Transferring you to billing. {BILLING_INTRO}",
        heard=PHRASES["billing"],
        calls=[TRANSFER],
        agent="BillingAgent",
        agent_speech=[said(BILLING_INTRO, "on_enter", "BillingAgent", index)],
        handoffs=TO_BILLING,
        greeting=greeting,
    )


BALANCE = turn(
    "Your balance is 42 euros.",
    heard=PHRASES["balance"],
    calls=[("get_balance", {}, "42 euros", False, None)],
    agent="BillingAgent",
)
TWO_PHRASES = turn(
    "It is sunny in Paris. Done: a table for 4.",
    heard="What is the weather in Paris? Book a table for four people.",
    heard_segments=["What is the weather in Paris?", "Book a table for four people."],
    calls=[
        ("get_weather", {"city": "Paris"}, "It is sunny in Paris", False, None),
        ("book_table", {"party_size": 4}, "a table for 4", False, None),
    ],
    agent="FrontDesk",
    greeting=GREETED,
)

SCENARIOS = [
    # The model's server VAD takes the turns; agents share the one model.
    Scenario("tools_server", "server", False, ("weather", "book")),
    Scenario("handoff_shared_model_server", "server", False, ("billing", "balance")),
    Scenario("handoff_separate_models_server", "server", True, ("billing", "bye")),
    # The session's VAD takes them (turn_detection="vad" on a model that hands them over).
    Scenario("handoff_separate_models_session_vad", "session", True, ("billing", "balance")),
    Scenario("tools_session_vad", "session", False, ("weather",)),
    # Two phrases in one fixture, a caller's pause between them.
    Scenario("two_phrases_server", "server", False, ("weather_pause_book",)),
    Scenario("two_phrases_session_vad", "session", False, ("weather_pause_book",)),
    # The session asks for VAD turns; the model cannot hand them over (as Gemini Live).
    Scenario("server_vad_that_cannot_be_disabled", "fixed_server", False, ("weather", "billing")),
    # The server takes the turns; the session's VAD (vad=, no turn_detection) follows the user.
    Scenario(
        "handoff_server_and_session_vad", "server_and_session_vad", False, ("billing", "balance")
    ),
    # A model that answers tool results itself (auto_tool_reply_generation, as Gemini Live):
    # no generate_reply after the tools; the reply is a speech of the model's own.
    Scenario("tools_auto_tool_reply_server", "server", False, ("weather", "book"), True),
    Scenario("tools_auto_tool_reply_session_vad", "session", False, ("weather",), True),
    Scenario(
        "handoff_separate_models_auto_tool_reply", "server", True, ("billing", "balance"), True
    ),
]

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "tools_server": [
        weather(GREETED),
        turn(
            "Done: a table for 4.",
            heard=PHRASES["book"],
            calls=[("book_table", {"party_size": 4}, "a table for 4", False, None)],
            agent="FrontDesk",
        ),
    ],
    "handoff_shared_model_server": [handoff(GREETED), BALANCE],
    "handoff_separate_models_server": [
        handoff(GREETED),
        # Billing's own model answers (its rules say goodbye from billing).
        turn("Goodbye from billing!", heard=PHRASES["bye"], agent="BillingAgent"),
    ],
    "handoff_separate_models_session_vad": [handoff(GREETED), BALANCE],
    "tools_session_vad": [weather(GREETED)],
    "two_phrases_server": [TWO_PHRASES],
    "two_phrases_session_vad": [TWO_PHRASES],
    "server_vad_that_cannot_be_disabled": [weather(GREETED), handoff(index=1)],
    "handoff_server_and_session_vad": [handoff(GREETED), BALANCE],
    "tools_auto_tool_reply_server": [
        weather(GREETED),
        turn(
            "Done: a table for 4.",
            heard=PHRASES["book"],
            calls=[("book_table", {"party_size": 4}, "a table for 4", False, None)],
            agent="FrontDesk",
        ),
    ],
    "tools_auto_tool_reply_session_vad": [weather(GREETED)],
    "handoff_separate_models_auto_tool_reply": [handoff(GREETED), BALANCE],
}


def test_every_scenario_has_expectations() -> None:
    assert sorted(EXPECTED) == sorted(s.id for s in SCENARIOS)


def scenario_script(scenario: Scenario, audio: dict[str, Path]) -> Any:
    turns = [Turn(user=PHRASES[key], audio=audio[key]) for key in scenario.keys]
    return transcript(*turns, id=scenario.id)


async def converse_at(
    speed: float, scenario: Scenario, audio: dict[str, Path]
) -> tuple[Greeting, list[AgentReply]]:
    adapter = LiveKitAdapter(scenario.factory(), speed=speed, tail_silence_s=TAIL_S)
    return await converse_greeted(adapter, scenario_script(scenario, audio))


@pytest.mark.filterwarnings("ignore:the agent's realtime model:UserWarning")
@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_captured_turns_are_the_same_at_max_speed_and_in_real_time(
    scenario: Scenario, realtime_audio: dict[str, Path], request: pytest.FixtureRequest
) -> None:
    async def in_real_time(case: Case) -> tuple[Greeting, list[AgentReply]]:
        return await converse_at(1.0, case["scenario"], realtime_audio)

    by_speed = {}
    for speed in (0.0, 1.0):
        if speed == 0.0:
            greeting, replies = run(converse_at(speed, scenario, realtime_audio))
        else:
            greeting, replies = real_time_result(request, in_real_time, at_once=REAL_TIME_AT_ONCE)
        for index, reply in enumerate(replies, start=1):
            meta = reply.metadata["livekit"]
            # Which turn detection was tested is reported, and it is the agent's own.
            expected_detection = "session" if scenario.mode == "session" else "server"
            assert meta["realtime"]["turn_detection"] == expected_detection, (speed, index)
            assert meta["realtime"]["transcripts"] == reply.heard_segments, (speed, index)
            assert reply.latency_s is not None and reply.latency_s >= 0, (speed, index)
        by_speed[speed] = without_tokens(captured(greeting, replies))
    assert by_speed[0.0] == EXPECTED[scenario.id]
    differences = [
        (index, key, fast[key], real.get(key))
        for index, (fast, real) in enumerate(zip(by_speed[0.0], by_speed[1.0], strict=True), 1)
        for key in fast
        if fast[key] != real.get(key)
    ]
    assert not differences, "turn, field, max speed, real time:\n" + "\n".join(
        map(repr, differences)
    )
