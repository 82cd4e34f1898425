"""A simulated caller heard by a real in-process LiveKit `AgentSession`: each utterance is
synthesized on the fly with the offline voice, streamed into the session, heard by its own STT
(`FixtureTextSTT` reads what the fixture's provenance says it speaks), and checked with the
voice expectations of ``every_turn``. A text agent gets the text."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

pytest.importorskip("livekit.agents", reason="needs the livekit extra")
pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")

from sim_models import CallerCall, End, ScriptedCaller, ScriptedJudge

from pytest_agent_eval import Transcript
from pytest_agent_eval._config import JudgeSettings
from pytest_agent_eval._runner import RunSettings
from pytest_agent_eval.models import Expect, TranscriptResult
from pytest_agent_eval.simulation import (
    CallerSettings,
    Simulation,
    SimulationSettings,
    run_simulation,
)

EXAMPLE_DIR = Path(__file__).resolve().parents[2] / "examples" / "voice-livekit"
BOOK = "Hi, I am Alice and I would like a table for two at seven pm."
NAME = "What name is the booking under?"


def _example_agent() -> ModuleType:
    # The name tests/livekit uses too: one copy of the example per process. Imported at
    # collection, on the main thread, as LiveKit's plugins require.
    name = "voice_livekit_booking_agent"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, EXAMPLE_DIR / "booking_agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


booking = _example_agent()


def booking_caller(call: CallerCall) -> str | End:
    if call.may_end and any("Alice" in line for line in call.agent_lines[1:]):
        return End("goal_reached", "Booked, and the name is right.")
    return BOOK if call.turn == 1 else NAME


def simulate(tmp_path: Path, every_turn: Expect, caller: ScriptedCaller) -> TranscriptResult:
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter

    def decide(criterion: str, conversation: str) -> tuple[str, str]:
        ok = "[agent called tool book_table]" in conversation
        return ("met" if ok else "not_met"), "Turn 1 calls book_table." if ok else "no booking"

    sim = Simulation(
        transcript=Transcript(id="voice-booking", turns=[], runs=1),
        persona="Alice, booking a table for two at seven.",
        criteria=["The agent books the table."],
        max_turns=4,
        every_turn=every_turn,
    )
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=ScriptedJudge(decide).model)),
        caller=CallerSettings(model=caller.model),
        audio_dir=tmp_path / "caller-audio",
    )
    adapter = LiveKitAdapter(booking.make_session, timeout_s=20.0)
    return asyncio.run(run_simulation(sim, adapter, settings=settings))


def test_a_livekit_session_hears_the_callers_synthesized_speech(tmp_path: Path) -> None:
    caller = ScriptedCaller(booking_caller)
    result = simulate(tmp_path, Expect(heard_wer_max=0.1, max_latency_ms=60_000), caller)
    assert result.verdict == "passed", result.runs[0].error
    (run,) = result.runs
    assert [t.user for t in run.turns] == [BOOK, NAME]
    for turn in run.turns:
        # Its own STT heard the words the caller spoke, from the WAV made on the fly.
        assert turn.heard is not None and turn.wer == 0.0
        assert turn.audio is not None and Path(turn.audio).is_file()
        assert Path(turn.audio).parent == tmp_path / "caller-audio"
        assert turn.latency_s is not None  # measured: the latency limit observed something
    assert [c.name for c in run.turns[0].tool_calls] == ["book_table"]
    assert "Alice" in run.turns[1].reply
    # The caller was told it is on a phone call.
    assert "a voice agent, on a phone call" in caller.calls[0].instructions

    # The same words again are not synthesized again: the fixtures are reused as they are.
    made = {p: p.stat().st_mtime_ns for p in (tmp_path / "caller-audio").glob("*.wav")}
    assert len(made) == 2
    simulate(tmp_path, Expect(heard_wer_max=0.1), ScriptedCaller(booking_caller))
    assert {p: p.stat().st_mtime_ns for p in (tmp_path / "caller-audio").glob("*.wav")} == made


def test_a_latency_limit_on_every_turn_fails_a_voice_run(tmp_path: Path) -> None:
    # No reply comes within a microsecond: measured, and failed (not an error).
    result = simulate(tmp_path, Expect(max_latency_ms=0.001), ScriptedCaller(booking_caller))
    (run,) = result.runs
    assert run.verdict == "failed"
    failed = [e for t in run.turns for e in t.evaluations if not e.passed]
    assert failed and not any(e.errored for e in failed)


def test_a_text_agent_gets_the_callers_text_and_no_audio(tmp_path: Path) -> None:
    from pytest_agent_eval import AgentReply

    heard: list[Any] = []

    async def agent(history: Any) -> AgentReply:
        heard.append(history[-1].content)
        return AgentReply("Booked under Alice.")

    sim = Simulation(
        transcript=Transcript(id="text", turns=[]),
        persona="Alice",
        criteria=["books"],
    )
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=ScriptedJudge(lambda c, v: ("met", "ok")).model)),
        caller=CallerSettings(model=ScriptedCaller(booking_caller).model),
        audio_dir=tmp_path / "caller-audio",
    )
    result = asyncio.run(run_simulation(sim, agent, settings=settings))
    assert result.verdict == "passed"
    assert heard == [BOOK, NAME]
    assert all(t.audio is None for t in result.runs[0].turns)
    assert not (tmp_path / "caller-audio").exists()


def test_a_saved_voice_conversation_runs_again_as_a_transcript_on_its_fixtures(
    tmp_path: Path,
) -> None:
    from dataclasses import replace

    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval._runner import run_transcript
    from pytest_agent_eval.adapters.livekit import LiveKitAdapter
    from pytest_agent_eval.synthesize._plan import Planner, check_fixture

    judge = ScriptedJudge(lambda c, v: ("met", "Turn 1 calls book_table."))
    sim = Simulation(
        transcript=Transcript(id="voice-booking", turns=[], runs=1),
        persona="Alice, booking a table for two at seven.",
        criteria=["The agent books the table."],
        max_turns=4,
        every_turn=Expect(heard_wer_max=0.1),
    )
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=judge.model)),
        caller=CallerSettings(model=ScriptedCaller(booking_caller).model),
        audio_dir=tmp_path / "caller-audio",
        save_dir=tmp_path / "saved",
    )
    adapter = LiveKitAdapter(booking.make_session, timeout_s=20.0)
    assert asyncio.run(run_simulation(sim, adapter, settings=settings)).verdict == "passed"

    saved = tmp_path / "saved" / "voice-booking-run1.yaml"
    transcript = load_transcript_file(saved)
    assert [t.user for t in transcript.turns] == [BOOK, NAME]
    assert all(
        t.audio is not None and t.audio.parent == saved.parent / "audio" for t in transcript.turns
    )
    # The copied fixtures are fresh for their text (synthesize_audio --check would pass).
    plan = Planner(None).plan([transcript])
    assert not plan.problems
    assert all(check_fixture(spec).is_fresh for spec in plan.specs)
    # And the transcript runs on them, no caller involved.
    replayed = asyncio.run(
        run_transcript(
            replace(transcript, runs=1),
            LiveKitAdapter(booking.make_session, timeout_s=20.0),
            settings=RunSettings(judge=JudgeSettings(model=judge.model)),
        )
    )
    assert replayed.verdict == "passed"
    assert [t.heard for t in replayed.runs[0].turns] == [BOOK, NAME]


VOICE_CONFTEST = """

# Added by the test: the simulated caller and the criteria judge, as FunctionModels.
import re as _re

from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import FunctionModel


BOOK = __BOOK__
NAME = __NAME__


def _caller(messages, info):
    prompt = str(messages[-1].parts[-1].content)
    agent = _re.findall(r"^AGENT: (.*)$", prompt, flags=_re.MULTILINE)
    if any(t.name == "end_conversation" for t in info.output_tools):
        done = {"outcome": "goal_reached", "reason": "Booked."}
        return ModelResponse(parts=[ToolCallPart("end_conversation", done)])
    text = BOOK if not agent else NAME
    return ModelResponse(parts=[TextPart(text)])


def _judge(messages, info):
    conversation = str(messages[-1].parts[-1].content)
    met = "[agent called tool book_table]" in conversation
    verdict = {"reasoning": "Turn 1 books.", "verdict": "met" if met else "not_met"}
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])


@pytest.fixture
def llm_eval_caller_model():
    return FunctionModel(_caller)


@pytest.fixture
def llm_eval_judge_model():
    return FunctionModel(_judge)
"""

VOICE_CONFTEST = VOICE_CONFTEST.replace("__BOOK__", repr(BOOK)).replace("__NAME__", repr(NAME))

VOICE_SIMULATION = """\
id: voice_booking
runs: 1
persona: Alice, booking a table for two at seven.
criteria:
  - The agent books the table.
max_turns: 3
variants: [clean, phone]
every_turn:
  heard_wer_max: 0.1
"""


def test_a_voice_simulation_through_pytest_plays_the_callers_audio_and_guards_variants(
    pytester: pytest.Pytester,
) -> None:
    import shutil

    shutil.copytree(
        EXAMPLE_DIR,
        pytester.path,
        dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("evals", "__pycache__", ".agent_eval_cache"),
    )
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text() + VOICE_CONFTEST)
    (pytester.path / "evals").mkdir()
    (pytester.path / "evals" / "voice_booking.yaml").write_text(VOICE_SIMULATION)
    result = pytester.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "-v", "--agent-eval-html=report.html"
    )
    # clean passes; phone changes the caller's audio, which FixtureTextSTT (it reads the
    # fixture's text, it does not listen) cannot be affected by: an ERROR that says so, never
    # a pass for the wrong reason.
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        [
            "*voice_booking.yaml::voice_booking?clean? PASSED*",
            "*voice_booking?phone? ERROR*",
        ]
    )
    assert "variant 'phone' (telephone(" in result.stdout.str()
    assert "Use an STT that listens, such as WhisperSTT()" in result.stdout.str()
    # The caller's speech, synthesized once per utterance, shared by both variants.
    made = sorted((pytester.path / ".agent_eval_cache" / "caller" / "audio").glob("*.wav"))
    assert len(made) == 2
    html = (pytester.path / "report.html").read_text()
    # Each turn of the clean run plays the caller's audio; the conversation's end is there.
    assert html.count("<audio") >= 2
    assert "User audio" in html
    assert "simulated caller" in html and "by the caller after turn 2" in html


def _hearing_simulation(caller: ScriptedCaller, tmp_path: Path, *, audio_out: bool) -> Any:
    from livekit.agents import AgentSession

    from pytest_agent_eval.adapters.livekit import (
        FixtureTextSTT,
        LiveKitAdapter,
        ScriptedLLM,
        SynthesizerTTS,
        eval_session_kwargs,
    )
    from pytest_agent_eval.simulation import CallerConfig

    def speaking_session() -> tuple[Any, Any]:
        # The example's session, with a voice: its replies are spoken, and saved.
        session = AgentSession(
            stt=FixtureTextSTT(),
            vad=booking.VAD,
            llm=ScriptedLLM(booking.RULES),
            tts=SynthesizerTTS(),
            **eval_session_kwargs(),
        )
        return session, booking.RestaurantAgent()

    sim = Simulation(
        transcript=Transcript(id="hearing", turns=[], runs=1),
        persona="Alice, booking a table for two at seven.",
        criteria=["The agent books the table."],
        max_turns=3,
        caller=CallerConfig(hears="audio"),
    )
    settings = SimulationSettings(
        run=RunSettings(judge=JudgeSettings(model=ScriptedJudge(lambda c, v: ("met", "ok")).model)),
        caller=CallerSettings(model=caller.model, retries=0),
        audio_dir=tmp_path / "caller-audio",
    )
    adapter = LiveKitAdapter(
        speaking_session, timeout_s=30.0, audio_out_dir=tmp_path / "replies" if audio_out else None
    )
    return asyncio.run(run_simulation(sim, adapter, settings=settings))


def test_a_caller_that_hears_audio_gets_what_whisper_hears_of_the_reply(tmp_path: Path) -> None:
    from pytest_agent_eval.voice._fixtures import read_wav, transcribe, word_error_rate

    caller = ScriptedCaller(booking_caller)
    result = _hearing_simulation(caller, tmp_path, audio_out=True)
    (run,) = result.runs
    assert run.turns and run.turns[0].audio_out is not None, run.error
    # The caller's second turn was written from what Whisper hears of the first reply's audio
    # (which is close to the reply's words), not from the reply's text.
    heard = caller.calls[1].agent_lines[-1]
    reply = run.turns[0].reply
    assert heard == transcribe(read_wav(run.turns[0].audio_out))
    assert heard != reply  # the text says 19:00 and BK-101; a listener hears them otherwise
    assert word_error_rate(reply, heard) <= 0.3, (reply, heard)


def test_a_caller_that_hears_audio_without_saved_reply_audio_is_an_error(tmp_path: Path) -> None:
    result = _hearing_simulation(ScriptedCaller(booking_caller), tmp_path, audio_out=False)
    assert result.verdict == "error"
    error = result.runs[0].error or ""
    assert "caller.hears is audio, but the reply of turn 1 has no saved audio to hear" in error
    assert "audio_out_dir" in error
