"""Speed invariance as a property: the corpus's captured turns are identical at max speed and
in real time, on real AgentSessions with the Silero VAD and TTS-made WAVs.

Each scenario runs at ``speed=0`` and ``speed=1``; the captured turns (reply text, what was
heard per speech segment, tool calls with arguments, outputs, errors and outcomes, each agent
utterance with its cause and turn, handoffs, the active agent, the greeting) must be equal to
each other and to what the scenario should produce. They are read from the typed fields that
checks and reports use; ``metadata["livekit"]`` must say the same.

Each scenario's test runs its max-speed conversations itself. The real-time ones run together:
the first test to need one runs every collected scenario's, `REAL_TIME_AT_ONCE` at a time in
one event loop, and each test checks its own (``real_time_batch``).
"""

from __future__ import annotations

from collections.abc import Awaitable
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from corpus_agents import GREETING, PHRASES, SCENARIOS, Scenario
from livekit_support import converse_greeted, run, transcript

from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.adapters.livekit._replay import replays_caught_up, replays_served
from pytest_agent_eval.models import AgentReply, AgentSpeech, Greeting, Turn
from real_time_batch import Case, batch_result, gather_bounded

TAIL_S = 0.7
"""Silence after each fixture: above Silero's 0.55 s, short enough to keep real time cheap."""

REAL_TIME_AT_ONCE = 4
"""Real-time conversations at once in the batch."""


def _said(speech: AgentSpeech) -> dict[str, Any]:
    return {
        "text": speech.text,
        "cause": speech.cause,
        "agent": speech.agent,
        "turn_index": speech.turn_index,
    }


def captured(greeting: Greeting, replies: list[AgentReply]) -> list[dict[str, Any]]:
    """What a verdict can depend on, turn by turn (timings left out)."""
    out = []
    for index, reply in enumerate(replies):
        meta = reply.metadata["livekit"]
        speech = [_said(s) for s in reply.agent_speech]
        handoffs = [{"from": h.from_agent, "to": h.to_agent} for h in reply.handoffs or []]
        # The documented metadata keys say what the typed fields say.
        assert meta["agent_speech"] == speech
        assert meta["handoffs"] == handoffs
        assert meta["agent"] == reply.active_agent
        if index == 0:
            assert meta["greeting"] == [_said(s) for s in greeting.speech]
        out.append(
            {
                "reply": reply.reply,
                "heard": reply.heard,
                "heard_segments": reply.heard_segments,
                "calls": [(c.name, c.args, c.output, c.is_error, c.error) for c in reply.calls],
                "outcomes": [c.outcome for c in reply.calls],
                "agent_speech": speech,
                "agent": reply.active_agent,
                "handoffs": handoffs,
                "greeting": [_said(s) for s in greeting.speech] if index == 0 else None,
                "pending": [c["name"] for c in meta["pending_tool_calls"]],
                "late": [
                    (c["name"], c["turn_index"], c["output"]) for c in meta["late_tool_results"]
                ],
                "tokens": (
                    (reply.usage.input_tokens, reply.usage.output_tokens) if reply.usage else None
                ),
            }
        )
    return out


def without_tokens(turns: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in t.items() if k != "tokens"} for t in turns]


def turn(
    reply: str,
    *,
    heard: str | None = None,
    heard_segments: list[str] | None = None,
    calls: list[tuple[Any, ...]] | None = None,
    agent: str,
    agent_speech: list[dict[str, Any]] | None = None,
    handoffs: list[dict[str, str]] | None = None,
    greeting: list[dict[str, Any]] | None = None,
    pending: list[str] | None = None,
    late: list[tuple[Any, ...]] | None = None,
) -> dict[str, Any]:
    calls = calls or []
    pending = pending or []
    outcomes = [
        "error" if is_error else ("pending" if name in pending else "ok")
        for name, _args, _output, is_error, _error in calls
    ]
    return {
        "reply": reply,
        "heard": heard,
        "heard_segments": heard_segments if heard_segments is not None else [heard] * bool(heard),
        "calls": calls,
        "outcomes": outcomes,
        "agent_speech": agent_speech or [],
        "agent": agent,
        "handoffs": handoffs or [],
        "greeting": greeting,
        "pending": pending,
        "late": late or [],
    }


def said(text: str, cause: str, agent: str, turn_index: int | None) -> dict[str, Any]:
    return {"text": text, "cause": cause, "agent": agent, "turn_index": turn_index}


HELLO = "Hello! How can I help you?"
REFUNDED = "I see a duplicate charge and I have refunded it."
BILLING_INTRO = "Hi, this is billing. How can I help?"
TO_BILLING = [{"from": "Receptionist", "to": "BillingAgent"}]

EXPECTED: dict[str, list[dict[str, Any]]] = {
    "single_agent": [
        turn(HELLO, heard=PHRASES["hello"], agent="Receptionist", greeting=[]),
        turn(REFUNDED, agent="Receptionist"),
    ],
    "greeting_on_entry": [
        turn(
            HELLO,
            heard=PHRASES["hello"],
            agent="GreeterAgent",
            greeting=[said(GREETING, "greeting", "GreeterAgent", None)],
        ),
    ],
    "handoff_mid_recording": [
        # The first sentence hands off; the second is answered by the agent it went to.
        turn(
            f"{BILLING_INTRO} {REFUNDED}",
            heard=PHRASES["bill_then_charge"],
            heard_segments=["I have a question about my bill.", "Why was I charged twice?"],
            calls=[("transfer_to_billing", {}, "", False, None)],
            agent="BillingAgent",
            agent_speech=[said(BILLING_INTRO, "on_enter", "BillingAgent", 0)],
            handoffs=TO_BILLING,
            greeting=[],
        ),
    ],
    "handoff_mid_recording_long_pause": [
        # The same with a pause written in the text ([pause 1.5s]): the words are heard without
        # the marker, one sentence per segment, the second after the handoff.
        turn(
            f"{BILLING_INTRO} {REFUNDED}",
            heard="I have a question about my bill. Why was I charged twice?",
            heard_segments=["I have a question about my bill.", "Why was I charged twice?"],
            calls=[("transfer_to_billing", {}, "", False, None)],
            agent="BillingAgent",
            agent_speech=[said(BILLING_INTRO, "on_enter", "BillingAgent", 0)],
            handoffs=TO_BILLING,
            greeting=[],
        ),
    ],
    "handoff_end_of_audio_turn": [
        turn(
            BILLING_INTRO,
            heard=PHRASES["to_billing"],
            calls=[("transfer_to_billing", {}, "", False, None)],
            agent="BillingAgent",
            agent_speech=[said(BILLING_INTRO, "on_enter", "BillingAgent", 0)],
            handoffs=TO_BILLING,
            greeting=[],
        ),
        turn(REFUNDED, agent="BillingAgent"),
    ],
    "handoff_between_turns": [
        turn(
            BILLING_INTRO,
            calls=[("transfer_to_billing", {}, "", False, None)],
            agent="BillingAgent",
            agent_speech=[said(BILLING_INTRO, "on_enter", "BillingAgent", 0)],
            handoffs=TO_BILLING,
            greeting=[],
        ),
        turn(REFUNDED, heard=PHRASES["charged"], agent="BillingAgent"),
    ],
    "handed_off_agent_says_its_intro": [
        turn(
            "Support here. What seems to be the problem?",
            calls=[("transfer_to_support", {}, "", False, None)],
            agent="SupportAgent",
            agent_speech=[
                said("Support here. What seems to be the problem?", "on_enter", "SupportAgent", 0)
            ],
            handoffs=[{"from": "Receptionist", "to": "SupportAgent"}],
            greeting=[],
        ),
        turn(HELLO, heard=PHRASES["hello"], agent="SupportAgent"),
    ],
    "tools_that_await": [
        turn(
            "Your order ships tomorrow.",
            heard=PHRASES["order"],
            calls=[("lookup_order", {}, "ships tomorrow", False, None)],
            agent="OrderAgent",
            greeting=[],
        ),
        turn(
            "The warehouse has two pallets in stock.",
            heard=PHRASES["warehouse"],
            calls=[("check_warehouse", {}, "two pallets in stock", False, None)],
            agent="OrderAgent",
        ),
    ],
    "system_message_in_on_user_turn_completed": [
        # The system message the agent adds to the turn is context, not an instructed reply:
        # the rule for what the caller said answers, not the greeting.
        turn(
            "Your order ships tomorrow.",
            heard=PHRASES["order"],
            calls=[("lookup_order", {}, "ships tomorrow", False, None)],
            agent="BriefedOrderAgent",
            greeting=[],
        ),
    ],
    "stt_node_post_processing": [
        # The session takes the words in after the agent's stt_node has worked on them: the
        # turn waits for that, so the answer is this turn's at every speed.
        turn(
            "Your order ships tomorrow.",
            heard=PHRASES["order"],
            calls=[("lookup_order", {}, "ships tomorrow", False, None)],
            agent="SpellCheckedOrderAgent",
            greeting=[],
        ),
        turn(HELLO, heard=PHRASES["hello"], agent="SpellCheckedOrderAgent"),
    ],
    "long_pause_inside_a_fixture": [
        # Two user turns in one fixture: the turn ends after the second is answered.
        turn(
            f"Your order ships tomorrow. {HELLO}",
            heard="Where is my order? Hello there!",
            heard_segments=["Where is my order?", "Hello there!"],
            calls=[("lookup_order", {}, "ships tomorrow", False, None)],
            agent="OrderAgent",
            greeting=[],
        ),
    ],
    "uninterruptible_agent": [
        turn(
            "Would you like a drink with that? Your order 42 for one pizza is placed.",
            heard=PHRASES["pizza"],
            calls=[("place_order", {"item": "pizza"}, "order 42 for one pizza", False, None)],
            agent="UninterruptibleKitchen",
            agent_speech=[
                said("Would you like a drink with that?", "tool", "UninterruptibleKitchen", 0)
            ],
            greeting=[],
        ),
        turn(HELLO, heard=PHRASES["hello"], agent="UninterruptibleKitchen"),
    ],
    "say_inside_a_tool": [
        turn(
            "One moment while I check. Your order ships tomorrow.",
            heard=PHRASES["order"],
            calls=[("lookup_order", {}, "ships tomorrow", False, None)],
            agent="ChattyOrderAgent",
            agent_speech=[said("One moment while I check.", "tool", "ChattyOrderAgent", 0)],
            greeting=[],
        ),
        turn(HELLO, heard=PHRASES["hello"], agent="ChattyOrderAgent"),
    ],
    "agent_task_over_two_turns": [
        # verify_identity is made in turn 1 and waits for the task: pending until turn 3.
        turn(
            "What is your full name?",
            heard=PHRASES["refill"],
            calls=[("verify_identity", {}, None, False, None)],
            agent="CollectIdentity",
            agent_speech=[said("What is your full name?", "on_enter", "CollectIdentity", 0)],
            handoffs=[{"from": "Pharmacist", "to": "CollectIdentity"}],
            greeting=[],
            pending=["verify_identity"],
        ),
        turn(
            "Thanks. What is your date of birth?",
            heard=PHRASES["name"],
            calls=[
                ("record_name", {"name": "Maria Lopez"}, "name Maria Lopez recorded", False, None)
            ],
            agent="CollectIdentity",
        ),
        turn(
            "Thank you. Your identity is verified Maria Lopez, born May fifth. "
            "Your refill is on its way.",
            heard=PHRASES["born"],
            calls=[("record_birth_date", {"date": "May fifth"}, "", False, None)],
            agent="Pharmacist",
            handoffs=[{"from": "CollectIdentity", "to": "Pharmacist"}],
            late=[("verify_identity", 0, "verified Maria Lopez, born May fifth")],
        ),
    ],
    "tool_that_raises": [
        turn(
            "Sorry, I cannot see the desserts right now.",
            heard=PHRASES["dessert"],
            calls=[
                (
                    "dessert_menu",
                    {},
                    "An internal error occurred",
                    True,
                    "RuntimeError: the dessert menu service is down",
                )
            ],
            agent="Kitchen",
            greeting=[],
        ),
    ],
    "agent_speaks_twice_in_a_turn": [
        turn(
            "Would you like a drink with that? Your order 42 for one pizza is placed.",
            heard=PHRASES["pizza"],
            calls=[("place_order", {"item": "pizza"}, "order 42 for one pizza", False, None)],
            agent="Kitchen",
            agent_speech=[said("Would you like a drink with that?", "tool", "Kitchen", 0)],
            greeting=[],
        ),
        turn(HELLO, heard=PHRASES["hello"], agent="Kitchen"),
    ],
}


def scenario_script(scenario: Scenario, audio: dict[str, Path]) -> Any:
    turns = [
        Turn(user=PHRASES[key], audio=audio[key]) if spoken else Turn(user=key)
        for key, spoken in scenario.turns
    ]
    return transcript(*turns, id=scenario.id)


def test_every_scenario_has_expectations() -> None:
    assert sorted(EXPECTED) == sorted(s.id for s in SCENARIOS)


Conversation = tuple[Greeting, list[AgentReply]]
Counted = tuple[Greeting, list[AgentReply], int, int]
"""A conversation, with the VAD replays served and caught up while it ran (in real time,
while its batch ran)."""


async def converse_way(
    scenario: Scenario, audio: dict[str, Path], speed: float, replay: bool
) -> Conversation:
    adapter = LiveKitAdapter(
        scenario.factory(), speed=speed, tail_silence_s=TAIL_S, vad_replay=replay
    )
    return await converse_greeted(adapter, scenario_script(scenario, audio))


async def counting_replays(conversation: Awaitable[Conversation]) -> Counted:
    served, caught_up = replays_served(), replays_caught_up()
    greeting, replies = await conversation
    return greeting, replies, replays_served() - served, replays_caught_up() - caught_up


async def in_real_time(cases: list[Case], audio: dict[str, Path]) -> list[Counted | BaseException]:
    """Every case's conversation in real time, `REAL_TIME_AT_ONCE` at a time. The replay
    counters are the process's, so they count over the whole batch: none served for the batch
    is none for each case, and one served fails every case of the batch."""
    conversations = [partial(converse_way, case["scenario"], audio, 1.0, True) for case in cases]
    served, caught_up = replays_served(), replays_caught_up()
    outcomes = await gather_bounded(conversations, REAL_TIME_AT_ONCE)
    counts = (replays_served() - served, replays_caught_up() - caught_up)
    return [o if isinstance(o, BaseException) else (*o, *counts) for o in outcomes]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_captured_turns_are_the_same_at_max_speed_and_in_real_time(
    scenario: Scenario, corpus_audio: dict[str, Path], request: pytest.FixtureRequest
) -> None:
    """At max speed with the session's VAD decisions replayed (the default), at max speed
    with them computed, and in real time: the same turns."""
    ways = {"replayed": (0.0, True), "computed": (0.0, False), "real time": (1.0, True)}
    by_way = {}
    for way, (speed, replay) in ways.items():
        if way == "real time":
            greeting, replies, served, caught_up = batch_result(
                request, lambda cases: in_real_time(cases, corpus_audio)
            )
        else:
            greeting, replies, served, caught_up = run(
                counting_replays(converse_way(scenario, corpus_audio, speed, replay))
            )
        # The replay served this scenario's fixtures to the end (none handed over to the
        # stream midway), and only at max speed.
        assert (served > 0) is (way == "replayed"), way
        assert caught_up == 0, way
        for index, reply in enumerate(replies, start=1):
            if reply.reply:
                assert reply.latency_s is not None and reply.latency_s >= 0, (way, index)
            for speech in reply.agent_speech:  # measured, never negative
                assert speech.latency_s is None or speech.latency_s >= 0, (way, index)
        by_way[way] = captured(greeting, replies)
    assert without_tokens(by_way["replayed"]) == EXPECTED[scenario.id]
    # Tokens too: every LLM request of a turn is charged to it, at every speed.
    assert all(t["tokens"] is not None for t in by_way["replayed"])
    for way in ("computed", "real time"):
        differences = [
            (index, key, replayed[key], other.get(key))
            for index, (replayed, other) in enumerate(
                zip(by_way["replayed"], by_way[way], strict=True), start=1
            )
            for key in replayed
            if replayed[key] != other.get(key)
        ]
        assert not differences, f"turn, field, replayed at max speed, {way}:\n" + "\n".join(
            map(repr, differences)
        )
