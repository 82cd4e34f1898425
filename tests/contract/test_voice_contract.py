"""The voice adapter contract (issue 33): one corpus of behaviours run through every voice
adapter available in process, asserting the same verdict class for the same behaviour, the
same record shapes and metadata keys, and the same timeline event kinds (less what an adapter
declares unobserved).

Each behaviour is run through the runner (``run_transcript``), as a test file would run it.
An adapter joins by adding one `Corpus` to `CORPORA`: for each behaviour, an adapter playing it
on real components (a real ``AgentSession`` or Pipecat pipeline with Silero VAD, the scripted
models) and the turns that make the agent do it. Not joined: room mode (it needs a
livekit-server and keeps no timeline yet).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

TESTS = Path(__file__).resolve().parents[1]
for _folder in ("livekit", "pipecat", "realtime", "contract"):
    if str(TESTS / _folder) not in sys.path:
        sys.path.insert(0, str(TESTS / _folder))

from pytest_agent_eval._runner import RunSettings, run_transcript  # noqa: E402
from pytest_agent_eval.models import (  # noqa: E402
    AudioCondition,
    InterruptConfig,
    Timeline,
    Transcript,
    TranscriptResult,
    Turn,
    TurnResult,
)

BEHAVIOURS = (
    "greeting",
    "tool",
    "slow_tool",
    "failing_tool",
    "handoff",
    "memory",
    "split_by_vad",
    "barge_in",
    "silent",
    "crash",
    "broken_model",
    "audio_condition",
)

VERDICT = {
    "silent": "failed",
    "crash": "crashed",
    "broken_model": "crashed",
    "audio_condition": "error",
}
"""The run's verdict for each behaviour; ``passed`` for the others.

``broken_model``: the scripted model's rule callback (the user's function, though our model
calls it) raises: a crash of the agent at the callback's line on every adapter, not an ERROR.

``audio_condition``: a turn under an audio condition, heard by an STT that knows a fixture's
text rather than recognizing it (the corpus's agents): such a hearing cannot say what the
condition did to the words, so every adapter refuses it, an ERROR. Hearing through a condition
needs real recognition (Whisper), which the contract does not load."""

CONDITION = AudioCondition("gain", {"db": -6})

BARGE_IN = InterruptConfig(stop_within_ms=1500, after_ms=1500)

Case = tuple[Any, list[Turn]]
"""An adapter playing the behaviour, and the turns that make its agent do it."""


@dataclass
class Corpus:
    """One adapter's way to play every behaviour. ``cases(audio)`` maps behaviour -> `Case`,
    given ``audio()``: the WAV fixtures it needs (made once, on first use)."""

    name: str
    audio: Callable[[Path], dict[str, Path]]
    cases: Callable[[dict[str, Path]], dict[str, Case]]


def _memory_audio(folder: Path) -> dict[str, Path]:
    from contract_agents import synthesize_memory

    (folder / "memory").mkdir()
    return synthesize_memory(folder / "memory")


def remembered(audio: dict[str, Path]) -> list[Turn]:
    """The caller says their name, then asks it back."""
    from contract_agents import MEMORY_PHRASES

    return [Turn(user=MEMORY_PHRASES[k], audio=audio[k]) for k in ("my_name", "ask_name")]


def conditioned(turns: list[Turn]) -> list[Turn]:
    """``turns`` under the corpus's audio condition."""
    for turn in turns:
        turn.conditions = [CONDITION]
    return turns


# -- LiveKit, a classic (STT, LLM, TTS) pipeline in process ---------------------------------------


def _livekit_audio(folder: Path) -> dict[str, Path]:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    from corpus_agents import synthesize
    from pipecat_support import synthesize_phrases

    (folder / "voice").mkdir()
    story = {f"voice_{k}": v for k, v in synthesize_phrases(folder / "voice").items()}
    return {**synthesize(folder), **story, **_memory_audio(folder)}


def _livekit_cases(audio: dict[str, Path]) -> dict[str, Case]:
    from contract_agents import BROKEN_MODEL_RULES, remembering_factory, speaking_factory
    from corpus_agents import INSTRUCTIONS, PHRASES, RULES, SCENARIOS, Receptionist
    from pipecat_support import PHRASES as VOICE_PHRASES
    from test_livekit_crash import BrokenBriefing, WarehouseNeverAnswers, _factory

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter, ScriptedLLM

    def scenario(id_: str) -> Any:
        found = next(s for s in SCENARIOS if s.id == id_)
        return LiveKitAdapter(found.factory(), tail_silence_s=0.7)

    def said(*keys: str) -> list[Turn]:
        return [Turn(user=PHRASES[k], audio=audio[k]) for k in keys]

    return {
        "greeting": (scenario("greeting_on_entry"), said("hello")),
        "tool": (scenario("tools_that_await"), said("order")),
        "slow_tool": (scenario("tools_that_await"), said("order", "warehouse")),
        "failing_tool": (scenario("tool_that_raises"), said("dessert")),
        "handoff": (scenario("handoff_end_of_audio_turn"), said("to_billing")),
        "memory": (LiveKitAdapter(remembering_factory(), tail_silence_s=0.7), remembered(audio)),
        "split_by_vad": (scenario("long_pause_inside_a_fixture"), said("order_pause_hello")),
        "barge_in": (
            LiveKitAdapter(speaking_factory(), tail_silence_s=0.7),
            [
                Turn(user=VOICE_PHRASES["story"], audio=audio["voice_story"]),
                Turn(user=VOICE_PHRASES["stop"], audio=audio["voice_stop"], interrupt=BARGE_IN),
            ],
        ),
        "silent": (LiveKitAdapter(_factory(WarehouseNeverAnswers), timeout_s=3), said("warehouse")),
        "crash": (LiveKitAdapter(_factory(BrokenBriefing)), said("hello")),
        "broken_model": (
            LiveKitAdapter(
                _factory(
                    Receptionist,
                    ScriptedLLM([*BROKEN_MODEL_RULES, *RULES], instructions=INSTRUCTIONS),
                )
            ),
            said("hello"),
        ),
        "audio_condition": (scenario("tools_that_await"), conditioned(said("order"))),
    }


# -- LiveKit, an agent on a realtime (speech-to-speech) model ----------------------------------


def _realtime_audio(folder: Path) -> dict[str, Path]:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    from corpus_agents import synthesize
    from realtime_agents import synthesize as synthesize_realtime

    (folder / "realtime").mkdir()
    story = {f"rt_{k}": v for k, v in synthesize_realtime(folder / "realtime").items()}
    return {**synthesize(folder), **story, **_memory_audio(folder)}


def _realtime_cases(audio: dict[str, Path]) -> dict[str, Case]:
    from contract_agents import (
        BROKEN_MODEL_RULES,
        BrokenRealtimeDesk,
        SilentRealtimeDesk,
        realtime_factory,
        remembering_realtime_factory,
    )
    from corpus_agents import PHRASES
    from realtime_agents import PHRASES as RT_PHRASES

    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    def desk(agent: Any = None, **options: Any) -> Any:
        factory = realtime_factory(agent) if agent is not None else realtime_factory()
        return LiveKitAdapter(factory, tail_silence_s=0.7, **options)

    def said(*keys: str) -> list[Turn]:
        return [Turn(user=PHRASES[k], audio=audio[k]) for k in keys]

    return {
        "greeting": (desk(), said("hello")),
        "tool": (desk(), said("order")),
        "slow_tool": (desk(), said("order", "warehouse")),
        "failing_tool": (desk(), said("dessert")),
        "handoff": (desk(), said("to_billing")),
        "memory": (
            LiveKitAdapter(remembering_realtime_factory(), tail_silence_s=0.7),
            remembered(audio),
        ),
        "split_by_vad": (desk(), said("order_pause_hello")),
        "barge_in": (
            desk(),
            [
                Turn(user=RT_PHRASES["story"], audio=audio["rt_story"]),
                Turn(user=RT_PHRASES["stop_rome"], audio=audio["rt_stop_rome"], interrupt=BARGE_IN),
            ],
        ),
        "silent": (desk(SilentRealtimeDesk, timeout_s=3), said("warehouse")),
        "crash": (desk(BrokenRealtimeDesk), said("hello")),
        "broken_model": (
            LiveKitAdapter(realtime_factory(rules=BROKEN_MODEL_RULES), tail_silence_s=0.7),
            said("hello"),
        ),
        "audio_condition": (desk(), conditioned(said("order"))),
    }


# -- Pipecat ----------------------------------------------------------------------------------


def _pipecat_audio(folder: Path) -> dict[str, Path]:
    pytest.importorskip("pipecat", reason="needs the pipecat extra")
    from pipecat_support import synthesize_phrases

    return {**synthesize_phrases(folder), **_memory_audio(folder)}


def _pipecat_cases(audio: dict[str, Path]) -> dict[str, Case]:
    from contract_agents import BROKEN_MODEL_RULES, remembering_bot
    from corpus_bots import SCENARIOS, voice_bot
    from pipecat_support import PHRASES
    from test_pipecat_crash import bot_with_rules, crashing_bot

    from pytest_agent_eval.adapters.pipecat import PipecatAdapter

    def bot(id_: str) -> Any:
        return PipecatAdapter(next(s for s in SCENARIOS if s.id == id_).bot)

    def said(*keys: str, **turn: Any) -> list[Turn]:
        return [Turn(user=PHRASES[k], audio=audio[k], **turn) for k in keys]

    async def never(params: Any) -> None:
        import asyncio

        await asyncio.Event().wait()  # the forecast service never answers

    def silent_bot(transport: Any) -> Any:
        worker, _, llm, _ = voice_bot(transport)
        llm.register_function("get_forecast", never)
        return worker

    return {
        "greeting": (bot("greeting_on_start"), said("hello")),
        "tool": (bot("functions_that_await"), said("weather")),
        "slow_tool": (bot("functions_that_await"), said("weather", "forecast")),
        "failing_tool": (bot("function_that_raises"), said("dessert")),
        "handoff": (bot("flows_two_nodes"), said("book")),
        "memory": (PipecatAdapter(remembering_bot), remembered(audio)),
        "split_by_vad": (bot("two_sentences_2s_pause"), said("bill_pause_charge")),
        "barge_in": (bot("barge_in"), said("story") + said("stop", interrupt=BARGE_IN)),
        "silent": (PipecatAdapter(silent_bot, timeout_s=3), said("forecast")),
        # The crashing bot's processor breaks on the second user turn.
        "crash": (PipecatAdapter(crashing_bot), said("hello", "hello")),
        "broken_model": (PipecatAdapter(bot_with_rules(*BROKEN_MODEL_RULES)), said("hello")),
        "audio_condition": (bot("functions_that_await"), said("weather", conditions=[CONDITION])),
    }


CORPORA = {
    corpus.name: corpus
    for corpus in (
        Corpus("livekit", _livekit_audio, _livekit_cases),
        Corpus("livekit-realtime", _realtime_audio, _realtime_cases),
        Corpus("pipecat", _pipecat_audio, _pipecat_cases),
    )
}

# -- running the corpus --------------------------------------------------------------------------

_results: dict[tuple[str, str, float], TranscriptResult] = {}
_audio: dict[str, dict[str, Path]] = {}


REAL_TIME = ("tool", "handoff", "memory", "split_by_vad")
"""The behaviours also played in real time (``speed=1``; the rest only at max speed, where
every adapter's turn-taking is the real-time one already, to keep the voice tier's time)."""

PLAYS = [
    pytest.param(behaviour, speed, id=f"{behaviour}-{'max' if speed == 0 else 'real'}")
    for behaviour in BEHAVIOURS
    for speed in ((0.0, 1.0) if behaviour in REAL_TIME else (0.0,))
]


def played(
    adapter_name: str,
    behaviour: str,
    tmp_path_factory: pytest.TempPathFactory,
    speed: float = 0.0,
) -> TranscriptResult:
    """``behaviour`` played once on ``adapter_name`` at ``speed`` (then remembered for the
    other tests)."""
    key = (adapter_name, behaviour, speed)
    if key not in _results:
        corpus = CORPORA[adapter_name]
        if adapter_name not in _audio:
            _audio[adapter_name] = corpus.audio(tmp_path_factory.mktemp(adapter_name))
        adapter, turns = corpus.cases(_audio[adapter_name])[behaviour]
        script = Transcript(id=f"{adapter_name}-{behaviour}", turns=turns, threshold=0.0)
        import asyncio

        _results[key] = asyncio.run(
            run_transcript(script, adapter, settings=RunSettings(concurrency=1, speed=speed))
        )
    return _results[key]


EXPECTED_KINDS = {"stream", "vad_speech", "user_speech", "end_of_turn", "agent_speech"}
"""What every answered audio turn of the corpus has: the user spoke, the agent took the turn
and answered."""


def check_timeline(turn: TurnResult) -> Timeline:
    """What every adapter's timeline of an answered audio turn says, the same way."""
    timeline = turn.timeline
    assert timeline is not None, f"turn {turn.index + 1} has no timeline"
    assert timeline.clock in ("virtual", "real")
    seen = set(timeline.kinds)
    wanted = EXPECTED_KINDS | ({"tool_call"} if turn.tool_calls else set())
    wanted -= set(timeline.unobserved)
    assert wanted <= seen, f"missing {wanted - seen} in {timeline}"
    assert not seen & set(timeline.unobserved), "an unobserved kind was drawn"
    starts = [e.t_start for e in timeline.events]
    assert starts == sorted(starts)
    end_of_turn = timeline.of("end_of_turn")[0]
    # The agent took the turn after its VAD heard speech, and answered after taking it.
    assert timeline.of("vad_speech")[0].t_start <= end_of_turn.t_start
    assert all(e.t_start >= end_of_turn.t_start for e in timeline.of("tool_call"))
    assert timeline.of("agent_speech")[-1].t_start >= end_of_turn.t_start
    names = [e.detail.get("name") for e in timeline.of("tool_call")]
    assert names == [c.name for c in turn.tool_calls]
    for event, call in zip(timeline.of("tool_call"), turn.tool_calls, strict=True):
        assert (event.detail.get("status") == "error") is call.is_error, (event, call)
        assert event.t_end is not None
    return timeline


TOOLS = ("tool", "slow_tool", "failing_tool", "silent")
"""The behaviours whose tools are the behaviour (elsewhere an agent may or may not call one)."""

CHECKED_TURNS = {"slow_tool": 2, "barge_in": 2, "memory": 2}
"""How many of a behaviour's last turns show it (1 unless said): a crashing Pipecat bot needs
a turn before the one it crashes in."""


def shape(turn: TurnResult, behaviour: str) -> dict[str, Any]:
    """What must be alike across adapters for one behaviour (no timings, no wording)."""
    return {
        "verdict": turn.verdict,
        "replied": bool(turn.reply),
        "heard": turn.heard is not None,
        "latency": turn.latency_s is not None,
        "outcomes": [c.outcome for c in turn.tool_calls] if behaviour in TOOLS else None,
        "handoffs": bool(turn.handoffs),
        "barge_in": None if turn.barge_in is None else turn.barge_in.stopped,
        "crash": turn.crash is not None,
        "timeline": turn.timeline is not None,
        # The framework's own key (``livekit``, ``pipecat``) aside.
        "metadata": sorted(k for k in turn.metadata if k not in ("livekit", "pipecat")),
    }


@pytest.mark.parametrize(("behaviour", "speed"), PLAYS)
@pytest.mark.parametrize("adapter_name", sorted(CORPORA))
def test_each_adapter_plays_the_behaviour_as_the_contract_says(
    adapter_name: str, behaviour: str, speed: float, tmp_path_factory: pytest.TempPathFactory
) -> None:
    result = played(adapter_name, behaviour, tmp_path_factory, speed)
    (run,) = result.runs
    assert run.verdict == VERDICT.get(behaviour, "passed"), [t.error for t in run.turns]
    answered = [t for t in run.turns if t.verdict == "passed"]
    for turn in answered:
        check_timeline(turn)
    timelines = [t.timeline for t in answered if t.timeline is not None]
    # A pipeline on its own clock says so at max speed; in real time every clock is the wall's.
    if speed:
        assert {t.clock for t in timelines} <= {"real"}
    if behaviour == "greeting":
        assert run.greeting is not None and run.greeting.text
    elif behaviour == "slow_tool":
        # Both calls drawn, each from its start to its end (no claim on how long: no timing).
        (fast,), (slow,) = (t.of("tool_call") for t in timelines)
        assert fast.t_end is not None and slow.t_end is not None
        assert fast.t_end >= fast.t_start and slow.t_end >= slow.t_start
    elif behaviour == "handoff":
        (timeline,) = timelines
        assert "handoff" in timeline.unobserved or timeline.of("handoff")
    elif behaviour == "memory":
        assert run.turns[-1].reply == "Your name is Maria Lopez."
    elif behaviour == "split_by_vad":
        (timeline,) = timelines
        assert len(timeline.of("vad_speech")) >= 2
    elif behaviour == "barge_in":
        first, second = run.turns
        # The interrupted reply is drawn ending; the interrupting turn marks the interruption.
        assert first.timeline is not None
        assert first.timeline.of("agent_speech")[-1].t_end is not None
        assert second.barge_in is not None and second.barge_in.stopped
        assert second.timeline is not None
        assert [e.detail["kind"] for e in second.timeline.of("interruption")] == ["real"]
    elif behaviour in ("silent", "crash", "broken_model"):
        assert run.turns[-1].timeline is None  # no reply, no record of one
    if behaviour == "broken_model":
        # At the user's callback, the same on every adapter.
        crash = run.turns[-1].crash
        assert crash is not None and (crash.type, crash.message) == (
            "RuntimeError",
            "the model broke",
        )
        assert crash.where is not None and crash.where.startswith("contract_agents.py:")
        assert crash.where.endswith(" in broken_reply")
    elif behaviour == "audio_condition":
        why = run.error or run.turns[-1].error or ""
        assert "condition" in why, why


@pytest.mark.parametrize(("behaviour", "speed"), PLAYS)
def test_the_same_behaviour_gives_the_same_record_shapes(
    behaviour: str, speed: float, tmp_path_factory: pytest.TempPathFactory
) -> None:
    checked = CHECKED_TURNS.get(behaviour, 1)
    shapes = {
        name: [
            shape(t, behaviour)
            for t in played(name, behaviour, tmp_path_factory, speed).runs[0].turns[-checked:]
        ]
        for name in sorted(CORPORA)
    }
    first, *others = shapes
    for other in others:
        assert shapes[other] == shapes[first], (first, other)
