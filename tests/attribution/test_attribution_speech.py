"""The speech-output counterfactual (issue 35): a reply right in text and wrong in the
caller's ear. The LiveKit example's restaurant agent on a real AgentSession speaks with the
offline voice, its reply audio saved; in the faulty agent the text-to-speech step says "50"
where the reply says "15". The turn's check listens to the reply audio (offline Whisper, the
tiny.en model of the project's Whisper extra) for the party size: it fails, and attribution
transcribes the same audio against the reply text and names ``speech_output``, with what the
audio said and what the text said. The faithful agent passes the same check. The same on the
Pipecat example's bot on a real pipeline, its reply audio saved by the adapter: a TTS service
whose words (the reply text) say 15 and whose voice says 50."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fault_corpus import FIFTEEN, PYPROJECT, attributions

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_AGENT = EXAMPLES / "voice-livekit" / "booking_agent.py"
EXAMPLE_BOT = EXAMPLES / "voice-pipecat" / "bot.py"

SPOKEN_PARTY = """
class SpokenParty:
    \"\"\"What the caller hears: the reply audio must say the party of 15.\"\"\"

    name = "spoken_party"

    def evaluate(self, ctx):
        heard = transcribe(read_wav(ctx.audio_out)).lower()
        said = "15" in heard or "fifteen" in heard
        return EvalResult(said, "the reply audio says 15" if said else "no 15 in the reply audio")
"""

TEST_SPEECH = f'''
import pytest
from booking_agent import RULES, VAD, RestaurantAgent
from livekit.agents import Agent, AgentSession

from pytest_agent_eval import EvalResult, Expect, Turn
from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    ScriptedLLM,
    SynthesizerTTS,
    eval_session_kwargs,
)
from pytest_agent_eval.voice._fixtures import read_wav, transcribe


class MisspeakingAgent(RestaurantAgent):
    """Its reply text says 15; its voice says 50 (a TTS reading the number wrong)."""

    def tts_node(self, text, model_settings):
        async def said():
            async for chunk in text:
                yield chunk.replace("15", "50")

        return Agent.default.tts_node(self, said(), model_settings)


{SPOKEN_PARTY}


def adapter(agent, out):
    def factory():
        session = AgentSession(
            stt=FixtureTextSTT(),
            vad=VAD,
            llm=ScriptedLLM(RULES),
            tts=SynthesizerTTS(),
            **eval_session_kwargs(),
        )
        return session, agent()

    return LiveKitAdapter(factory, timeout_s=20.0, audio_out_dir=out)


TURNS = [Turn(user="{FIFTEEN}", audio="audio/fifteen.wav", expect=Expect(evaluators=[SpokenParty()]))]


@pytest.mark.parametrize("agent", [MisspeakingAgent, RestaurantAgent])
async def test_speech(agent_eval, agent, tmp_path):
    result = await agent_eval.run(adapter(agent, tmp_path), TURNS, id=agent.__name__)
    result.assert_threshold()
'''

PIPECAT_SPEECH = f'''
import bot
import pytest
from bot import RULES, booking_args

from pytest_agent_eval import EvalResult, Expect, Turn
from pytest_agent_eval.adapters.pipecat import PipecatAdapter, Rule, SynthesizerTTSService
from pytest_agent_eval.voice._fixtures import read_wav, transcribe


class MisspeakingTTS(SynthesizerTTSService):
    """Its words (the reply text) say 15; its voice says 50 (a TTS reading the number wrong)."""

    def _speak(self, text):
        pcm, times = super()._speak(text.replace("15", "50"))
        return pcm, [(word, t) for word, (_, t) in zip(text.split(), times)]


SAYS_PARTY = [
    Rule(
        RULES[0].pattern,
        tool="book_table",
        args=booking_args,
        reply=lambda ctx: f"Booked a table for {{ctx.tool_result['party_size']}}.",
    ),
    *RULES[1:],
]

{SPOKEN_PARTY}

TURNS = [Turn(user="{FIFTEEN}", audio="audio/fifteen.wav", expect=Expect(evaluators=[SpokenParty()]))]


@pytest.mark.parametrize("tts", [MisspeakingTTS, SynthesizerTTSService])
async def test_speech(agent_eval, tts, tmp_path, monkeypatch):
    monkeypatch.setattr(bot, "RULES", SAYS_PARTY)
    monkeypatch.setattr(bot, "SynthesizerTTSService", tts)
    adapter = PipecatAdapter(run_bot=bot.run_bot, timeout_s=20.0, audio_out_dir=tmp_path)
    result = await agent_eval.run(adapter, TURNS, id=tts.__name__)
    result.assert_threshold()
'''

TRANSCRIPT = f"""
id: synth
turns:
  - user: "{FIFTEEN}"
    audio: audio/fifteen.wav
"""


@pytest.fixture(scope="module")
def frameworks() -> None:
    """Imported before `pytester` snapshots the loaded modules (numpy cannot load twice)."""
    pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")
    pytest.importorskip("pipecat", reason="needs the pipecat extra")
    pytest.importorskip("faster_whisper", reason="needs the livekit extra (offline Whisper)")
    import pytest_agent_eval.synthesize  # noqa: F401  (numpy, soundfile, the TTS)


@pytest.mark.parametrize("framework", ["livekit", "pipecat"])
def test_a_voice_that_says_another_number_than_the_text_is_speech_output(
    frameworks: None, pytester: pytest.Pytester, framework: str
) -> None:
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    if framework == "livekit":
        shutil.copy(EXAMPLE_AGENT, pytester.path / "booking_agent.py")
        (pytester.path / "test_speech.py").write_text(TEST_SPEECH)
        faulty, faithful = "MisspeakingAgent", "RestaurantAgent"
    else:
        shutil.copy(EXAMPLE_BOT, pytester.path / "bot.py")
        (pytester.path / "test_speech.py").write_text(PIPECAT_SPEECH)
        faulty, faithful = "MisspeakingTTS", "SynthesizerTTSService"
    (pytester.path / "pyproject.toml").write_text(
        PYPROJECT.replace('yaml_dirs = ["evals"]\n', "")
        .replace('testpaths = ["evals"]', 'testpaths = ["."]')
        .replace("runs = 1\n", "runs = 1\nattribute = true\n")
    )
    (pytester.path / "synth.yaml").write_text(TRANSCRIPT)
    ensure_fixtures(
        [load_transcript_file(pytester.path / "synth.yaml")], jobs=1
    ).raise_for_failures()

    result = pytester.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "--agent-eval-results=r.json"
    )
    result.assert_outcomes(passed=1, failed=1)
    found = attributions(pytester.path / "r.json")

    assert found[faithful] == ("passed", None)  # the check hears a faithful voice
    verdict, misspoken = found[faulty]
    assert verdict == "failed" and misspoken["cause"] == "speech_output"
    (said,) = [e for e in misspoken["evidence"] if e["counterfactual"] == "reply_audio"]
    assert said["verdict"] == "found" and said["turn"] == 0
    assert said["intended"] == "15" and said["heard"] in ("50", "fifty")
    # Nothing of the agent was rerun: the reply audio was enough.
    assert [e["counterfactual"] for e in misspoken["evidence"]] == ["reply_audio"]
    result.stdout.fnmatch_lines(
        ['*cause: speech_output — the reply audio says "*", its text "15"*']
    )
