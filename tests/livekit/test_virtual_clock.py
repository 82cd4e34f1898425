"""``LiveKitAdapter(clock="virtual")``: a max-speed run on a virtual clock makes real time's
decisions, on real AgentSessions with the Silero VAD and TTS-made WAVs.

Each transcript runs on the virtual clock and in real time (``speed=1.0`` on the wall's
clock); the captured turns (reply, what was heard per segment, tool calls, agent speech,
handoffs) and the verdicts must be the same. The transcripts include what the ordinary max
speed cannot reproduce: an endpointing delay longer than the VAD's silence (the session
waits on a timer, mixing ``time.time()`` with loop time) deciding whether a pause splits a
fixture into two user turns, and a barge-in (the reply plays for its length while the caller
speaks over it). Latencies on the virtual clock are the session's waits without this
process's compute: never more than real time's, and never less than the endpointing delay.
"""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import pytest
from corpus_agents import INSTRUCTIONS, PHRASES, RULES, SCENARIOS, VAD, Receptionist
from livekit.agents import Agent, AgentSession
from livekit_support import run, transcript, turn_input
from test_livekit_barge_in import INTERRUPTION, MENU, _session, _transcript
from test_livekit_corpus import EXPECTED, captured, scenario_script, without_tokens

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.base import ConversationInfo
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    ScriptedLLM,
    eval_session_kwargs,
)
from pytest_agent_eval.models import AgentReply, Expect, Greeting, TranscriptResult, Turn

TAIL_S = 0.7
"""Silence after each fixture: above Silero's 0.55 s."""

CLOCKS: dict[str, dict[str, Any]] = {
    "virtual": {"clock": "virtual", "speed": 0.0},
    "real time": {"speed": 1.0},
}
"""How each way runs: max speed on the virtual clock, and real time on the wall's."""


async def _converse(
    adapter: LiveKitAdapter, script: Any
) -> tuple[Greeting, list[AgentReply], float]:
    """The runner's protocol by hand; also the session's time the run took on a virtual clock
    (0.0 on the wall's)."""
    await adapter.prepare(script)
    conversation = await adapter.start_conversation(
        ConversationInfo(transcript=script, run_index=0)
    )
    try:
        greeting = conversation.greeting()
        replies = [
            await conversation.respond(turn_input(script, i)) for i in range(len(script.turns))
        ]
        clock = getattr(conversation, "clock", None)
        return greeting, replies, 0.0 if clock is None else clock.elapsed()
    finally:
        await conversation.aclose()


def _both(factory: Any, script: Any) -> dict[str, tuple[Greeting, list[AgentReply]]]:
    out = {}
    for way, options in CLOCKS.items():
        adapter = LiveKitAdapter(factory, tail_silence_s=TAIL_S, **options)
        greeting, replies, _ = run(_converse(adapter, script))
        assert all(
            r.metadata["livekit"].get("clock") == ("virtual" if way == "virtual" else None)
            for r in replies
        )
        out[way] = (greeting, replies)
    return out


def _latencies_agree(virtual: list[AgentReply], real: list[AgentReply], floor_s: float) -> None:
    """The session's waits are counted on the virtual clock (at least ``floor_s``, the
    endpointing), and nothing else: real time, which adds this process's compute, is never
    shorter (a frame of slack for where each way notes the end of the speech)."""
    for index, (v, r) in enumerate(zip(virtual, real, strict=True), start=1):
        assert (v.latency_s is None) == (r.latency_s is None), index
        if v.latency_s is not None and r.latency_s is not None:
            assert v.latency_s >= floor_s, (index, v.latency_s)
            assert v.latency_s <= r.latency_s + 0.03, (index, v.latency_s, r.latency_s)


# -- the corpus: a tool that awaits, handoffs, two user turns in one fixture -----------------

CORPUS = ["tools_that_await", "handoff_mid_recording", "long_pause_inside_a_fixture"]


@pytest.mark.parametrize("scenario_id", CORPUS)
def test_corpus_turns_are_those_of_real_time(
    scenario_id: str, corpus_audio: dict[str, Path]
) -> None:
    scenario = next(s for s in SCENARIOS if s.id == scenario_id)
    ways = _both(scenario.factory(), scenario_script(scenario, corpus_audio))
    virtual, real = (without_tokens(captured(*ways[w])) for w in CLOCKS)
    assert virtual == EXPECTED[scenario_id]
    assert virtual == real
    _latencies_agree(ways["virtual"][1], ways["real time"][1], floor_s=0.5)


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.id for s in SCENARIOS])
def test_every_corpus_scenario_captures_real_times_turns(
    scenario: Any, corpus_audio: dict[str, Path]
) -> None:
    """The whole corpus, on the virtual clock only: what it captures is what the corpus test
    checks real time captures (an AgentTask over two turns included: LiveKit orders its chat
    history by ``time.time()``, which must never stand still between two items)."""
    adapter = LiveKitAdapter(scenario.factory(), tail_silence_s=TAIL_S, clock="virtual")
    greeting, replies, _ = run(_converse(adapter, scenario_script(scenario, corpus_audio)))
    assert without_tokens(captured(greeting, replies)) == EXPECTED[scenario.id]


# -- the endpointing delay decides: one user turn, or two --------------------------------------


def _receptionist(min_delay_s: float) -> Any:
    def make() -> tuple[AgentSession[Any], Agent]:
        session: AgentSession[Any] = AgentSession(
            stt=FixtureTextSTT(),
            vad=VAD,
            llm=ScriptedLLM(RULES, instructions=INSTRUCTIONS),
            **eval_session_kwargs(min_endpointing_delay_s=min_delay_s),
        )
        return session, Receptionist()

    return make


def test_the_endpointing_delay_splits_or_merges_a_pause_as_in_real_time(
    corpus_audio: dict[str, Path],
) -> None:
    """A 1.5 s pause between two sentences, with endpointing delays (above Silero's 0.55 s)
    on either side of it: LiveKit's endpointing timer decides whether the first sentence is
    a user turn of its own (answered by a handoff, the second then answered by billing) or
    the two are one turn. Max speed on the ordinary loop cannot make this decision."""
    script = transcript(
        Turn(user=PHRASES["bill_pause_charge"], audio=corpus_audio["bill_pause_charge"])
    )
    by_delay = {}
    for min_delay_s in (0.8, 2.5):
        ways = _both(_receptionist(min_delay_s), script)
        virtual, real = (without_tokens(captured(*ways[w])) for w in CLOCKS)
        assert virtual == real, min_delay_s
        _latencies_agree(ways["virtual"][1], ways["real time"][1], floor_s=min_delay_s)
        by_delay[min_delay_s] = virtual
    (split,), (merged,) = by_delay[0.8], by_delay[2.5]
    # The decisions differ with the delay, so the comparison above compared decisions.
    assert split["reply"] != merged["reply"]
    assert split["reply"].endswith("I see a duplicate charge and I have refunded it.")


# -- a barge-in: the reply plays for its length while the caller speaks over it ----------------


@pytest.fixture(scope="module")
def barge_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = tmp_path_factory.mktemp("virtual_barge_in")
    script = load_transcript_text(
        _transcript(folder, "{after_ms: 1000, stop_within_ms: 1000}"), path=folder / "f.yaml"
    )
    ensure_fixtures([script], jobs=1).raise_for_failures()
    return folder


def _barge_in(folder: Path, **options: Any) -> TranscriptResult:
    script = load_transcript_text(
        _transcript(folder, "{at_word: 5, stop_within_ms: 4000}"), path=folder / "t.yaml"
    )
    adapter = LiveKitAdapter(_session(stt=FixtureTextSTT), timeout_s=60.0, **options)
    return run(run_transcript(script, adapter, settings=RunSettings(concurrency=1)))


def _record(result: TranscriptResult) -> list[dict[str, Any]]:
    out = []
    for turn in result.runs[0].turns:
        barge = turn.barge_in
        out.append(
            {
                "reply": turn.reply,
                "heard": turn.heard,
                "error": turn.error,
                "calls": [(c.name, c.args, c.output) for c in turn.tool_calls],
                "checks": [(e.name, e.passed) for e in turn.evaluations],
                "barge_in": None
                if barge is None
                else (barge.stopped, barge.resumed, barge.interrupted_text, barge.precondition),
            }
        )
    return out


def test_a_barge_in_stops_the_agent_as_in_real_time(barge_folder: Path) -> None:
    virtual = _barge_in(barge_folder, clock="virtual", speed=0.0)
    real = _barge_in(barge_folder, speed=1.0)
    assert virtual.passed and real.passed
    assert _record(virtual) == _record(real)
    first, second = virtual.runs[0].turns
    assert second.heard == INTERRUPTION and "risotto" in second.reply
    barge = second.barge_in
    assert barge is not None and barge.stopped and not barge.resumed
    assert first.reply == barge.interrupted_text and len(first.reply) < len(MENU)
    assert [t.metadata["livekit"]["clock"] for t in virtual.runs[0].turns] == ["virtual", "virtual"]


def test_a_barge_in_at_max_speed_goes_on_the_virtual_clock_unasked(barge_folder: Path) -> None:
    """Issue 38: with no clock chosen, a max-speed run with a barge-in turn runs on the
    virtual clock (it played the reply in the wall's real time), with real time's records."""
    unasked = _barge_in(barge_folder)  # speed 0, no clock given
    real = _barge_in(barge_folder, speed=1.0)
    assert unasked.passed and real.passed
    assert _record(unasked) == _record(real)
    assert [t.metadata["livekit"].get("clock") for t in unasked.runs[0].turns] == [
        "virtual",
        "virtual",
    ]
    assert [t.metadata["livekit"].get("clock") for t in real.runs[0].turns] == [None, None]


def test_a_session_not_tried_on_the_virtual_clock_keeps_real_time(barge_folder: Path) -> None:
    """Dynamic endpointing learns from ``time.time()`` stamps: not tried on the virtual
    clock, so a barge-in run the adapter would put there runs in real time, as before."""
    factory = _session(stt=FixtureTextSTT)

    def dynamic() -> tuple[AgentSession, Agent]:
        session, agent = factory()
        session.options.endpointing["mode"] = "dynamic"
        return session, agent

    script = load_transcript_text(
        _transcript(barge_folder, "{at_word: 5, stop_within_ms: 4000}"),
        path=barge_folder / "t.yaml",
    )
    adapter = LiveKitAdapter(dynamic, timeout_s=60.0)
    result = run(run_transcript(script, adapter, settings=RunSettings(concurrency=1)))
    assert result.passed
    assert [t.metadata["livekit"].get("clock") for t in result.runs[0].turns] == [None, None]


# -- a crash in a later call is still the conversation's -----------------------------------------


def test_a_crash_in_a_later_turn_is_a_crash_on_the_virtual_clock() -> None:
    """Each call runs in a task of its own on the clock's thread: what the session start set
    in the caller's context (the crash sink) must still route a crash two turns later."""
    from test_livekit_crash import HandsToBrokenBilling, _factory

    script = transcript(
        Turn(user="Hello there!"),
        Turn(user="Transfer me to billing", expect=Expect(reply_contains_any=["billing"])),
    )
    adapter = LiveKitAdapter(_factory(HandsToBrokenBilling), clock="virtual")
    result = run(run_transcript(script, adapter, settings=RunSettings(concurrency=1)))
    first, second = result.runs[0].turns
    assert first.verdict != "crashed"
    assert second.verdict == "crashed" and second.crash is not None
    assert (second.crash.type, second.crash.message) == (
        "RuntimeError",
        "billing database is not configured",
    )


# -- the session's time ran ahead of this process's ---------------------------------------------


def test_the_session_time_outruns_the_compute(corpus_audio: dict[str, Path]) -> None:
    """Wall-clock free: the session's time on the virtual clock is several times the CPU time
    the whole process spent on the run (every thread), so the run took less wall time than the
    conversation it ran, whatever the machine's load."""
    scenario = next(s for s in SCENARIOS if s.id == "tools_that_await")
    adapter = LiveKitAdapter(scenario.factory(), tail_silence_s=TAIL_S, clock="virtual")
    script = scenario_script(scenario, corpus_audio)
    cpu = time.process_time()
    _, replies, session_s = run(_converse(adapter, script))
    cpu = time.process_time() - cpu
    # Two fixtures of speech and the 2 s warehouse lookup: about 6 s of conversation.
    assert session_s > 4.0
    assert session_s > 3 * cpu, (session_s, cpu)
    assert sum(r.metadata["livekit"]["turn_session_s"] for r in replies) <= session_s


def test_a_run_paced_on_the_wall_keeps_the_wall_clock() -> None:
    """The virtual clock is for max speed: a real-time speed, the adapter's or the session's
    (``--agent-eval-speed``, which wins), runs on the wall's clock."""
    script = transcript(Turn(user="Hello there!"))

    async def one_turn(adapter: LiveKitAdapter, speed: float | None) -> AgentReply:
        info = ConversationInfo(transcript=script, run_index=0, speed=speed)
        conversation = await adapter.start_conversation(info)
        try:
            return await conversation.respond(turn_input(script, 0))
        finally:
            await conversation.aclose()

    for adapter, speed in (
        (LiveKitAdapter(_receptionist(0.5), clock="virtual", speed=1.0), None),
        (LiveKitAdapter(_receptionist(0.5), clock="virtual"), 1.0),
    ):
        reply = run(one_turn(adapter, speed))
        assert reply.reply == "Hello! How can I help you?"
        assert "clock" not in reply.metadata["livekit"] and reply.metadata["speed"] == 1.0


def test_a_clock_that_is_neither_is_refused() -> None:
    with pytest.raises(ValueError, match='clock must be "real", "virtual" or None'):
        LiveKitAdapter(_receptionist(0.5), clock="fast")  # type: ignore[arg-type]


# -- a turn past its turn_timeout_s fails on either clock ------------------------------------------


@pytest.mark.parametrize("clock", ["virtual", "real"])
def test_a_turn_past_its_timeout_fails_on_either_clock(clock: str) -> None:
    """The warehouse lookup awaits 2 s; with turn_timeout_s = 1 the turn fails in real time.
    On the virtual clock those 2 s pass in a fraction of the wall's, so the runner's own
    deadline (wall time) alone would let it pass: the turn's timeout counts the session's
    time there."""
    from corpus_agents import OrderAgent

    scenario = next(s for s in SCENARIOS if s.id == "tools_that_await")
    assert scenario.agent is OrderAgent
    script = dataclasses.replace(transcript(Turn(user="Check the warehouse.")), turn_timeout_s=1.0)
    adapter = LiveKitAdapter(scenario.factory(), clock=clock)  # type: ignore[arg-type]
    result = run(run_transcript(script, adapter, settings=RunSettings(concurrency=1)))
    (turn,) = result.runs[0].turns
    assert turn.verdict == "failed", (turn.verdict, turn.error)
    assert "no reply within turn_timeout_s=1s" in (turn.error or "")


def test_a_turns_timeline_names_the_virtual_clock(corpus_audio: dict[str, Path]) -> None:
    """The timeline's times on the virtual clock are the session's: the record says so, as
    the reply's metadata does."""
    scenario = next(s for s in SCENARIOS if s.id == "tools_that_await")
    adapter = LiveKitAdapter(scenario.factory(), tail_silence_s=TAIL_S, clock="virtual")
    script = scenario_script(scenario, corpus_audio)
    result = run(run_transcript(script, adapter, settings=RunSettings(concurrency=1)))
    turns = result.runs[0].turns
    assert turns and all(t.metadata["livekit"]["clock"] == "virtual" for t in turns)
    assert all(t.timeline is not None and t.timeline.clock == "virtual" for t in turns)
