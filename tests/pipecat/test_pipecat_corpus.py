"""Speed invariance as a property: the corpus's captured turns are identical at max speed and
in real time, on real Pipecat pipelines with the Silero VAD (and the smart-turn v3 analyzer)
their wheel ships, and WAVs made by the offline TTS.

Each scenario runs at ``speed=0`` (the virtual clock) and ``speed=1`` (the wall clock); what a
verdict can depend on (the reply, what was heard per segment, the function calls with their
arguments, results and errors, the Flows node and its transitions, the greeting, whether and
where the bot was interrupted) must be equal at both speeds and to what the scenario should
produce. Timings differ by the compute real time spends; they must be measured, never negative.

Each scenario's test runs its max-speed conversation itself. The real-time ones run together:
the first test to need one runs every collected scenario's, `REAL_TIME_AT_ONCE` at a time
from one event loop (each pipeline on its own thread, as always), and each test checks its
own (``real_time_batch``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from corpus_bots import CHECKING, GREETING, SCENARIOS, Scenario
from pipecat_support import PHRASES, converse, run, transcript

from pytest_agent_eval.adapters.pipecat import PipecatAdapter
from pytest_agent_eval.models import AgentReply, Greeting, Turn
from real_time_batch import Case, real_time_result

REAL_TIME_AT_ONCE = 3
"""Real-time pipelines at once in the batch. Each uses about a fifth of a core (Silero, the
smart-turn analyzer); measured at 10 at once every pipeline's start timed out."""

TELL = (
    "Once upon a time there was a small robot who lived by the sea. Every morning it walked "
    "along the beach and counted the waves. One day it found a bottle with a letter inside."
)


def captured(greeting: Greeting, replies: list[AgentReply]) -> list[dict[str, Any]]:
    """What a verdict can depend on, turn by turn (timings left out)."""
    out = []
    for index, reply in enumerate(replies):
        meta = reply.metadata["pipecat"]
        barge = reply.barge_in
        out.append(
            {
                "reply": reply.reply,
                "heard": reply.heard,
                "heard_segments": reply.heard_segments,
                "calls": [(c.name, c.args, c.output, c.is_error, c.error) for c in reply.calls],
                "outcomes": [c.outcome for c in reply.calls],
                "agent": reply.active_agent,
                "handoffs": [(h.from_agent, h.to_agent) for h in reply.handoffs or []],
                "agent_speech": [
                    (s.cause, s.text, s.agent, s.turn_index) for s in reply.agent_speech
                ],
                "greeting": greeting.text if index == 0 else None,
                "user_turns": meta["user_turns"],
                "interruptions": meta["interruptions"],
                "barge_in": (
                    None
                    if barge is None
                    else (barge.precondition, barge.stopped, barge.interrupted_text)
                ),
            }
        )
    return out


def turn(
    reply: str,
    *,
    heard: str | None = None,
    segments: list[str] | None = None,
    calls: list[tuple[Any, ...]] | None = None,
    agent: str | None = None,
    handoffs: list[tuple[str, str]] | None = None,
    agent_speech: list[tuple[Any, ...]] | None = None,
    greeting: str | None = None,
    user_turns: int = 1,
    interruptions: int = 0,
    barge_in: tuple[Any, ...] | None = None,
) -> dict[str, Any]:
    calls = calls or []
    return {
        "reply": reply,
        "heard": heard,
        "heard_segments": segments if segments is not None else ([heard] if heard else []),
        "calls": calls,
        "outcomes": ["error" if c[3] else "ok" for c in calls],
        "agent": agent,
        "handoffs": handoffs or [],
        "agent_speech": agent_speech or [],
        "greeting": greeting,
        "user_turns": user_turns,
        "interruptions": interruptions,
        "barge_in": barge_in,
    }


HELLO = "Hello! How can I help you?"
FAILED = "The function `dessert_menu` failed and returned no result."

FLOWS_TWO_NODES = [
    turn(
        "For how many people?",
        heard=PHRASES["book"],
        calls=[("start_booking", {}, {"status": "booking"}, False, None)],
        agent="party_size",
        handoffs=[("greeting", "party_size")],
        greeting="Welcome! Would you like to book a table?",
    ),
    turn(
        "Your table for 2 is booked.",
        heard=PHRASES["two"],
        calls=[("record_party", {"size": 2}, {"party": 2}, False, None)],
        agent="booked",
        handoffs=[("party_size", "booked")],
    ),
]
"""The two-node Flows bot's turns, on either Flows package."""

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "single_bot": [
        turn(HELLO, heard=PHRASES["hello"], greeting=""),
        # A text turn: nothing heard, and the function's failure in its own words.
        turn(
            "Sorry, I cannot see the desserts right now.",
            calls=[
                ("dessert_menu", {}, FAILED, True, "RuntimeError: the dessert menu service is down")
            ],
            user_turns=0,
        ),
    ],
    "greeting_on_start": [turn(HELLO, heard=PHRASES["hello"], greeting=GREETING)],
    "functions_that_await": [
        turn(
            "It is sunny in Paris.",
            heard=PHRASES["weather"],
            calls=[("get_weather", {"city": "Paris"}, {"conditions": "sunny"}, False, None)],
            greeting="",
        ),
        turn(
            "Tomorrow will be rainy.",
            heard=PHRASES["forecast"],
            calls=[("get_forecast", {}, {"sky": "rainy"}, False, None)],
        ),
    ],
    "function_that_raises": [
        turn(
            "Sorry, I cannot see the desserts right now.",
            heard=PHRASES["dessert"],
            calls=[
                ("dessert_menu", {}, FAILED, True, "RuntimeError: the dessert menu service is down")
            ],
            greeting="",
        )
    ],
    "flows_two_nodes": FLOWS_TWO_NODES,
    # The same bot on the separate pipecat_flows distribution: the same records.
    "flows_two_nodes_pipecat_flows": FLOWS_TWO_NODES,
    "smart_turn_v3": [
        turn("Your order ships tomorrow.", heard=PHRASES["order"], greeting=""),
        turn(HELLO, heard=PHRASES["hello"]),
    ],
    "two_sentences_2s_pause": [
        # Two user turns, each answered: the pause is longer than the stop strategy's wait.
        turn(
            "Go on. I have refunded the duplicate charge.",
            heard="I have a question about my bill. Why was I charged twice?",
            segments=["I have a question about my bill.", "Why was I charged twice?"],
            greeting="",
            user_turns=2,
        )
    ],
    "function_that_speaks": [
        turn(HELLO, heard=PHRASES["hello"], greeting=""),
        # A line the function says while it runs is in the reply, and recorded as speech the
        # bot started on its own, from the tool (as LiveKit records a tool's say()).
        turn(
            f"{CHECKING} We have 3 tables free tonight.",
            calls=[("check_tables", {}, {"free": 3}, False, None)],
            agent_speech=[("tool", CHECKING, None, 1)],
            user_turns=0,
        ),
    ],
    "barge_in": [
        # The story is cut 1.5 s into its audio: the reply holds the words spoken by then.
        turn("Once upon a time there was a small", heard=PHRASES["story"], greeting=""),
        turn(
            "Okay, I will stop.",
            heard=PHRASES["stop"],
            interruptions=1,
            barge_in=(None, True, "Once upon a time there was a small"),
        ),
    ],
}


def scenario_script(scenario: Scenario, audio: dict[str, Path]) -> Any:
    turns = [
        Turn(user=PHRASES[key], audio=audio[key], **scenario.extra.get(index, {}))
        if spoken
        else Turn(user=key)
        for index, (key, spoken) in enumerate(scenario.turns)
    ]
    return transcript(*turns, id=scenario.id)


def test_every_scenario_has_expectations() -> None:
    assert sorted(EXPECTED) == sorted(s.id for s in SCENARIOS)
    assert TELL.startswith(EXPECTED["barge_in"][0]["reply"])


async def converse_at(
    speed: float, scenario: Scenario, audio: dict[str, Path]
) -> tuple[Greeting, list[AgentReply]]:
    return await converse(
        PipecatAdapter(scenario.bot, speed=speed), scenario_script(scenario, audio)
    )


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_captured_turns_are_the_same_at_max_speed_and_in_real_time(
    scenario: Scenario, phrases: dict[str, Path], request: pytest.FixtureRequest
) -> None:
    async def in_real_time(case: Case) -> tuple[Greeting, list[AgentReply]]:
        return await converse_at(1.0, case["scenario"], phrases)

    by_speed = {}
    for speed in (0.0, 1.0):
        if speed == 0.0:
            greeting, replies = run(converse_at(speed, scenario, phrases))
        else:
            greeting, replies = real_time_result(request, in_real_time, at_once=REAL_TIME_AT_ONCE)
        for index, reply in enumerate(replies, start=1):
            assert reply.reply, (speed, index)
            for latency in (reply.latency_s, reply.first_audio_latency_s):
                assert latency is not None and latency >= 0, (speed, index, latency)
            assert reply.usage is not None and reply.usage.requests, (speed, index)
        by_speed[speed] = captured(greeting, replies)
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
