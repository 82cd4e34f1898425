"""A conditioned variant's failure put down to hearing (issue 35): one transcript, a clean
variant and a noisy one (pink noise at -3 dB SNR), against the example's restaurant agent on a
real LiveKit AgentSession hearing with offline Whisper (tiny.en, from the wheel the project
depends on). Clean, Whisper hears the booking and the agent books it; under the noise it
mishears the time ("seven pm" as "17 hours"), so the agent books nothing. Rerun under the same
noise with the agent's STT swapped for the fixture's words (its VAD hearing the noisy audio),
the booking passes: the noisy failure is ``hearing``."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fault_corpus import FIFTEEN, PYPROJECT, attributions

EXAMPLE_AGENT = (
    Path(__file__).resolve().parents[2] / "examples" / "voice-livekit" / "booking_agent.py"
)

WHISPER_AGENT = '''
"""The example's restaurant agent, hearing with offline Whisper."""

import pytest
from booking_agent import RULES, VAD, RestaurantAgent
from livekit.agents import AgentSession

from pytest_agent_eval.adapters.livekit import (
    LiveKitAdapter,
    ScriptedLLM,
    WhisperSTT,
    eval_session_kwargs,
)


@pytest.fixture
def llm_eval_agent():
    def factory():
        session = AgentSession(
            stt=WhisperSTT(), vad=VAD, llm=ScriptedLLM(RULES), **eval_session_kwargs()
        )
        return session, RestaurantAgent()

    return LiveKitAdapter(factory, timeout_s=20.0)
'''

YAML = f"""
id: line_booking
seed: 3
variants:
  - clean
  - name: noisy
    conditions: [{{noise: {{color: pink, snr_db: -3}}}}]
turns:
  - user: "{FIFTEEN}"
    audio: fifteen.wav
    expect:
      tool_calls_args:
        - tool: book_table
          args: {{party_size: 15}}
"""


@pytest.fixture(scope="module")
def frameworks() -> None:
    """Imported before `pytester` snapshots the loaded modules: what a test imports first is
    unloaded again when pytester restores them, and numpy's extension cannot load twice in one
    process (every later test of the worker would fail to import it)."""
    pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")
    pytest.importorskip("faster_whisper", reason="needs the livekit extra (offline Whisper)")
    pytest.importorskip("pedalboard", reason="needs the conditions extra")
    import pytest_agent_eval.synthesize  # noqa: F401  (numpy, soundfile, the TTS)


@pytest.fixture
def project(frameworks: None, pytester: pytest.Pytester) -> pytest.Pytester:
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    shutil.copy(EXAMPLE_AGENT, pytester.path / "booking_agent.py")
    pytester.makeconftest(WHISPER_AGENT)
    (pytester.path / "pyproject.toml").write_text(
        PYPROJECT.replace("runs = 1\n", "runs = 1\nattribute = true\n")
    )
    evals = pytester.path / "evals"
    evals.mkdir()
    (evals / "line.yaml").write_text(YAML)
    ensure_fixtures([load_transcript_file(evals / "line.yaml")], jobs=1).raise_for_failures()
    return pytester


def test_the_noisy_variant_fails_on_hearing_where_the_clean_one_passes(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "--agent-eval-results=r.json"
    )
    result.assert_outcomes(passed=1, failed=1)
    found = attributions(project.path / "r.json")

    assert found["line_booking[clean]"] == ("passed", None)
    verdict, noisy = found["line_booking[noisy]"]
    assert verdict == "failed" and noisy["cause"] == "hearing"
    misheard = [(e["heard"], e["intended"]) for e in noisy["evidence"] if e["verdict"] == "found"]
    # What Whisper heard under the noise, against the fixture's words: the time is lost.
    assert any("seven pm" in intended and "seven" not in heard for heard, intended in misheard)
    (swap,) = [e for e in noisy["evidence"] if e["counterfactual"] == "fixture_hearing"]
    assert swap["verdict"] == "passed" and swap["turn"] == 0
    assert not [e for e in noisy["evidence"] if e["counterfactual"] == "text_rerun"]
    result.stdout.fnmatch_lines(
        ["*cause: hearing — *intended*seven pm*", "*1 failed run: 1 hearing*"]
    )
