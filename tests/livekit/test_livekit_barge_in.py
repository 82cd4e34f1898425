"""Barge-in on a real AgentSession: Silero VAD, the offline Whisper STT and the offline voice
as the agent's TTS. The agent stops; the agent does not stop; and a barge-in that cannot be
tested is rejected, never passed."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from livekit.agents import Agent, AgentSession, RunContext, function_tool
from livekit_support import booking, run

from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._runner import RunSettings, run_transcript
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    Rule,
    ScriptedLLM,
    SynthesizerTTS,
    WhisperSTT,
    eval_session_kwargs,
)
from pytest_agent_eval.adapters.livekit._replay import replays_served
from pytest_agent_eval.adapters.livekit.session._barge_in import played_words, word_offset_s
from pytest_agent_eval.errors import AdapterError
from pytest_agent_eval.models import TranscriptResult

MENU = (
    "Our menu has many dishes. We serve mushroom risotto, lentil curry, grilled fish and "
    "polenta, and a chocolate cake."
)
RULES = [
    Rule(r"\bspecial\b", tool="slow_lookup", reply="Found it: {output}."),
    Rule(r"\bvegan\b", reply="Yes, we have mushroom risotto and lentil curry."),
    Rule(r"\bmenu\b", reply=MENU),
    Rule(r"\bhello\b", reply="Hi!"),
]
INTERRUPTION = "Do you have any vegan dishes on the menu?"


def _transcript(folder: Path, interrupt: str, *, first: str = "Tell me about the menu.") -> str:
    return f"""
id: barge
turns:
  - user: "{first}"
    expect:
      reply_contains_any: [dishes, hi]
  - user: "{INTERRUPTION}"
    audio: vegan.wav
    interrupt: {interrupt}
    expect:
      reply_contains_any: [risotto]
"""


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory, whisper_loaded: None) -> Path:
    """The fixtures of the barge-in turns; every test that takes it runs WhisperSTT sessions,
    so it also has the model loaded before any session starts (``whisper_loaded``)."""
    from pytest_agent_eval.synthesize import ensure_fixtures

    folder = tmp_path_factory.mktemp("barge_in")
    script = load_transcript_text(
        _transcript(folder, "{after_ms: 1000, stop_within_ms: 1000}"), path=folder / "f.yaml"
    )
    ensure_fixtures([script], jobs=1).raise_for_failures()
    return folder


def _session(  # type: ignore[no-untyped-def]
    *,
    allow_interruptions: bool = True,
    min_interruption_s: float | None = None,
    stt: type = WhisperSTT,
    agent: type = Agent,
    greeting_tool: bool = False,
):
    def factory() -> tuple[AgentSession, Agent]:
        kwargs = eval_session_kwargs()
        interruption = kwargs["turn_handling"]["interruption"]
        # On a loaded test machine Whisper can take more than LiveKit's 2 s to transcribe the
        # interruption, and LiveKit then resumes the paused reply (a "false interruption"):
        # a verdict about the machine, not the agent. Wait longer for the transcript here.
        interruption["false_interruption_timeout"] = 15.0
        if min_interruption_s is not None:
            interruption["min_duration"] = min_interruption_s
        instructions = (
            [Rule(r"greet", tool="opening_hours", reply="Welcome! We are open {output}.")]
            if greeting_tool
            else []
        )
        session = AgentSession(
            stt=stt(),
            vad=booking.VAD,
            llm=ScriptedLLM(RULES, instructions=instructions),
            tts=SynthesizerTTS(),
            **kwargs,
        )
        return session, agent(
            instructions="Answer menu questions.", allow_interruptions=allow_interruptions
        )

    return factory


FILLER = "Let me look that up for you in our kitchen system, this may take a little while."


class LookupAgent(Agent):
    """Says a filler line from its slow tool, then answers with the tool's result."""

    @function_tool
    async def slow_lookup(self, ctx: RunContext) -> str:
        """Look the dish up in the slow kitchen system."""
        self.session.say(FILLER)
        await asyncio.sleep(4.0)  # the kitchen system's own time
        return "the special is ready"


class AbandoningLookupAgent(Agent):
    """Says a filler line from its slow tool; the tool gives up (its task ends cancelled) once
    its speech is interrupted, as LiveKit suggests for long tools
    (``ctx.speech_handle.wait_if_not_interrupted``)."""

    @function_tool
    async def slow_lookup(self, ctx: RunContext) -> str:
        """Look the dish up in the slow kitchen system."""
        self.session.say(FILLER)
        lookup = asyncio.ensure_future(asyncio.sleep(20.0))  # the kitchen system's own time
        await ctx.speech_handle.wait_if_not_interrupted([lookup])
        if ctx.speech_handle.interrupted:
            lookup.cancel()
            raise asyncio.CancelledError  # the caller moved on: the lookup is abandoned
        return "the special is ready"


class GreetingAgent(Agent):
    """Greets on entry with a tool call (its opening hours)."""

    async def on_enter(self) -> None:
        self.session.generate_reply(instructions="Greet the caller.")

    @function_tool
    async def opening_hours(self, ctx: RunContext) -> str:
        """Today's opening hours."""
        return "until ten"


def _run(folder: Path, interrupt: str, factory: object, **kwargs: str) -> TranscriptResult:
    script = load_transcript_text(_transcript(folder, interrupt, **kwargs), path=folder / "t.yaml")
    adapter = LiveKitAdapter(factory, timeout_s=60.0)  # type: ignore[arg-type]
    return run(run_transcript(script, adapter, settings=RunSettings(concurrency=1)))


def test_the_agent_stops_when_spoken_over_and_answers_the_interruption(folder: Path) -> None:
    # A generous budget: this checks that the agent stops, not how fast this machine is.
    served = replays_served()
    result = _run(folder, "{at_word: 5, stop_within_ms: 4000}", _session())
    # A barge-in streams in real time, its VAD computing (never replayed), at any speed.
    assert replays_served() == served
    (run_result,) = result.runs
    first, second = run_result.turns
    assert first.error is None and second.error is None, (first.error, second.error)
    barge = second.barge_in
    assert barge is not None and barge.precondition is None
    assert barge.stopped and not barge.resumed
    assert barge.stop_latency_s is not None
    # The session needs about min_interruption_duration of speech before it reacts.
    assert barge.min_interruption_s == 0.5 and barge.stop_latency_s > 0.3
    # Word 5 of the reply ("dishes.") sits about a second into it.
    assert barge.reply_position_s is not None and 0.7 < barge.reply_position_s < 2.5
    assert barge.played_s is not None and barge.played_s < 4.0  # not the whole reply
    check = next(e for e in second.evaluations if e.name == "interrupt")
    assert check.passed, check.reasoning
    # What it does next: it heard the interruption and answered it.
    assert "vegan" in (second.heard or "").lower()
    assert "risotto" in second.reply and MENU not in second.reply
    # The interrupted reply is turn 1's, as far as the session kept it, not turn 2's.
    assert first.reply.startswith("Our menu has many dishes.")
    assert result.passed


def test_an_agent_that_cannot_be_interrupted_fails_the_check(folder: Path) -> None:
    result = _run(
        folder, "{after_ms: 800, stop_within_ms: 1500}", _session(allow_interruptions=False)
    )
    (run_result,) = result.runs
    first, second = run_result.turns
    assert second.error is None, second.error
    barge = second.barge_in
    assert barge is not None and barge.precondition is None
    assert not barge.stopped and barge.stop_latency_s is None
    assert barge.played_s is not None and barge.played_s > 4.0  # the whole reply played
    check = next(e for e in second.evaluations if e.name == "interrupt")
    assert not check.passed and not check.errored
    assert "the agent kept speaking: interrupted at" in check.reasoning
    assert first.reply == MENU
    assert not result.passed


def test_a_barge_in_whose_precondition_is_not_met_is_rejected_not_passed(folder: Path) -> None:
    # The reply ("Hi!") is over long before the interruption is due: nothing to interrupt.
    ended = _run(folder, "{after_ms: 4000, stop_within_ms: 1500}", _session(), first="hello")
    second = ended.runs[0].turns[1]
    check = next(e for e in second.evaluations if e.name == "interrupt")
    assert check.errored and not check.passed
    assert "the barge-in was not tested: the agent's reply ended after" in check.reasoning
    assert "before the interruption was due (4000 ms into the reply)" in check.reasoning
    # The turn still ran, as an ordinary turn after the reply: the agent answered it.
    assert "risotto" in second.reply
    assert not ended.passed

    # The interrupting speech (about 2 s) is shorter than the session's minimum: rejected.
    short = _run(folder, "{after_ms: 800, stop_within_ms: 1500}", _session(min_interruption_s=3.0))
    second = short.runs[0].turns[1]
    check = next(e for e in second.evaluations if e.name == "interrupt")
    assert check.errored, check.reasoning
    assert "shorter than the session's minimum interruption duration (3 s)" in check.reasoning
    assert not short.passed


def test_words_are_placed_by_their_share_of_the_speech() -> None:
    text = "one two three"
    assert word_offset_s(text, 1, 0.5, 2.5) == 0.5
    assert word_offset_s(text, 2, 0.5, 2.5) == pytest.approx(0.5 + 2.0 * 4 / 14)
    with pytest.raises(AdapterError, match="the reply has 3 word"):
        word_offset_s(text, 4, 0.0, 1.0)


# -- the two turns of a barge-in, each with what it said ----------------------------------------


def test_fixture_text_stt_hears_the_interrupting_turn_and_the_cut_reply_is_what_played(
    folder: Path,
) -> None:
    """Issue 21: FixtureTextSTT heard nothing in an interrupt: turn (heard '', a "false
    interruption"), the interrupted reply was quoted whole though a part of it played, and
    the interrupting turn's duration read 0.00 s."""
    result = _run(folder, "{at_word: 5, stop_within_ms: 4000}", _session(stt=FixtureTextSTT))
    (run_result,) = result.runs
    first, second = run_result.turns
    assert first.error is None and second.error is None, (first.error, second.error)
    assert second.heard == INTERRUPTION
    assert "risotto" in second.reply and MENU not in second.reply
    barge = second.barge_in
    assert barge is not None and barge.stopped and not barge.resumed
    check = next(e for e in second.evaluations if e.name == "interrupt")
    assert check.passed, check.reasoning
    # What played, not the whole reply: its first words, as far as its audio went.
    said = barge.interrupted_text
    assert said is not None and MENU.startswith(said) and len(said) < len(MENU)
    assert said.startswith("Our menu has many dishes.")
    assert first.reply == said
    assert barge.played_s is not None
    assert first.metadata["livekit"]["reply_audio_s"] <= barge.played_s + 0.05
    # The interrupting turn's own time: the runner asked for it once the cut reply was
    # over, and its answer then still had to play, in real time: the session's time on the
    # virtual clock a max-speed barge-in runs on (issue 38), where wall time is compute.
    livekit = second.metadata["livekit"]
    assert second.metadata["livekit"]["clock"] == "virtual" and second.duration_s > 0
    assert round(livekit["turn_session_s"], 2) >= livekit["reply_audio_s"]  # (as rounded)
    assert result.passed


def test_speech_of_the_interrupted_turn_never_becomes_the_next_turns_reply(folder: Path) -> None:
    """Issue 21: after an uninterruptible reply the next turn's "reply" was the tail of the
    previous one (here the slow tool's answer, said after the interruption), with a latency
    counted from the interrupting speech. The tail belongs to the turn that asked for it."""
    script = f"""
id: barge_tail
turns:
  - user: "What is the special today?"
  - user: "{INTERRUPTION}"
    audio: vegan.wav
    interrupt: {{after_ms: 1000, stop_within_ms: 1500}}
"""
    factory = _session(stt=FixtureTextSTT, agent=LookupAgent, allow_interruptions=False)
    adapter = LiveKitAdapter(factory, timeout_s=60.0)
    loaded = load_transcript_text(script, path=folder / "tail.yaml")
    result = run(run_transcript(loaded, adapter, settings=RunSettings(concurrency=1)))
    first, second = result.runs[0].turns
    assert first.error is None and second.error is None, (first.error, second.error)
    assert first.reply == FILLER  # it could not be cut: it played to its end
    (call,) = first.tool_calls
    assert (call.name, call.outcome) == ("slow_lookup", "pending")  # still running at the cut
    # The tool's answer, said during turn 2, is turn 1's: never turn 2's reply or latency.
    assert "Found it" not in second.reply
    meta = second.metadata["livekit"]
    assert meta["late_speech"] == [{"turn_index": 0, "text": "Found it: the special is ready."}]
    (late,) = meta["late_tool_results"]
    assert (late["name"], late["output"], late["cancelled"]) == (
        "slow_lookup",
        "the special is ready",
        False,
    )
    if not second.reply:
        assert second.latency_s is None
    barge = second.barge_in
    assert barge is not None and not barge.stopped
    assert barge.interrupted_text == FILLER


def test_a_slow_tool_cut_by_the_interruption_reads_as_cancelled(folder: Path) -> None:
    """Issue 23 (left by issue 21): a slow tool the interruption cancelled read as ``pending``
    (the cut turn's calls were taken when the interruption began, while it still ran). The
    user's turn interrupts the speech running the tool, the tool's task ends cancelled, and
    the cut turn's call now says so: ``status: cancelled`` passes, ``status: ok`` fails."""
    script = f"""
id: barge_cancel
turns:
  - user: "What is the special today?"
    expect:
      tool_calls_outcome:
        - {{tool: slow_lookup, status: cancelled}}
        - {{tool: slow_lookup, status: ok}}
  - user: "{INTERRUPTION}"
    audio: vegan.wav
    interrupt: {{after_ms: 1000, stop_within_ms: 4000}}
"""
    factory = _session(stt=FixtureTextSTT, agent=AbandoningLookupAgent)
    adapter = LiveKitAdapter(factory, timeout_s=60.0)
    loaded = load_transcript_text(script, path=folder / "cancel.yaml")
    result = run(run_transcript(loaded, adapter, settings=RunSettings(concurrency=1)))
    first, second = result.runs[0].turns
    assert first.error is None and second.error is None, (first.error, second.error)
    assert second.barge_in is not None and second.barge_in.stopped
    (call,) = first.tool_calls
    assert (call.name, call.outcome) == ("slow_lookup", "cancelled") and not call.output
    assert first.metadata["livekit"]["pending_tool_calls"] == [
        {"call_id": call.call_id, "name": "slow_lookup", "cancelled": True}
    ]
    cancelled, ok = (e for e in first.evaluations if e.name.startswith("tool_calls_outcome"))
    assert cancelled.passed, cancelled.reasoning
    assert not ok.passed and not ok.errored
    assert "was cancelled before it returned" in ok.reasoning
    assert "expected it to return" in ok.reasoning
    # The tool never answered, so its reply is never said, in either turn.
    assert "Found it" not in first.reply + second.reply


def test_the_greeting_and_its_tool_calls_reach_turn_1_on_the_barge_in_path(folder: Path) -> None:
    """Issue 21: the barge-in path dropped ``greeting_tool_calls``, which ordinary turns
    report: one function now finishes every reply."""
    factory = _session(stt=FixtureTextSTT, agent=GreetingAgent, greeting_tool=True)
    cut = _run(folder, "{at_word: 5, stop_within_ms: 4000}", factory)
    ordinary = load_transcript_text(
        'id: plain\nturns:\n  - user: "Tell me about the menu."\n', path=folder / "p.yaml"
    )
    plain = LiveKitAdapter(factory, timeout_s=60.0)
    plain_result = run(run_transcript(ordinary, plain, settings=RunSettings(concurrency=1)))
    first = cut.runs[0].turns[0]
    plain_first = plain_result.runs[0].turns[0]
    for turn in (first, plain_first):
        meta = turn.metadata["livekit"]
        assert meta["greeting"][0]["text"] == "Welcome! We are open until ten."
        assert [c["name"] for c in meta["greeting_tool_calls"]] == ["opening_hours"]
    # The same record either way: every key an ordinary turn reports, a cut turn reports.
    assert set(plain_first.metadata["livekit"]) <= set(first.metadata["livekit"])


def test_played_words_are_those_the_audio_reached() -> None:
    import numpy as np
    from livekit import rtc

    rate = 16000
    seconds = np.arange(rate * 2) / rate
    voiced = (0.3 * np.sin(2 * np.pi * 200 * seconds) * 32767).astype("<i2")
    frame = rtc.AudioFrame(
        data=voiced.tobytes(), sample_rate=rate, num_channels=1, samples_per_channel=len(voiced)
    )
    text = "one two three four"
    assert played_words(text, [frame], 2.0) == text  # played to its end
    assert played_words(text, [frame], None) == text  # not known: all of it
    assert played_words(text, [frame], 0.8) == "one two"  # "three" starts at 0.84 s
    assert played_words(text, [frame], 0.01) == "one"
