"""The judge counterfactual (issue 35): a failed judged check asked again on the same reply.
A judge that said no once and yes when asked again is the failure's cause (``judge``); one that
says no again is not, and the other counterfactuals decide. The agent is the LiveKit example's
restaurant agent on a real AgentSession hearing the fixture's words; the judges are pydantic-ai
`FunctionModel`s, counting their calls."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from fault_corpus import FIFTEEN, PYPROJECT, attributions

EXAMPLE_AGENT = (
    Path(__file__).resolve().parents[2] / "examples" / "voice-livekit" / "booking_agent.py"
)

CONFTEST = """
from pathlib import Path

import pytest
from booking_agent import RULES, VAD, RestaurantAgent
from livekit.agents import AgentSession
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

from pytest_agent_eval.adapters.livekit import (
    FixtureTextSTT,
    LiveKitAdapter,
    ScriptedLLM,
    eval_session_kwargs,
)


@pytest.fixture
def llm_eval_agent():
    def factory():
        session = AgentSession(
            stt=FixtureTextSTT(), vad=VAD, llm=ScriptedLLM(RULES), **eval_session_kwargs()
        )
        return session, RestaurantAgent()

    return LiveKitAdapter(factory, timeout_s=20.0)


@pytest.fixture
def llm_eval_judge_model():
    log = Path(__file__).parent / "judge_calls.log"
    calls = []

    def judge(messages, info):
        calls.append(1)
        with log.open("a") as out:
            out.write("call\\n")
        passed = {mode!r} == "flaky" and len(calls) > 1  # no at first; a flaky one then yes
        said = f"call {{len(calls)}}: " + ("yes" if passed else "no")
        verdict = {{"passed": passed, "reasoning": said}}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])

    return FunctionModel(judge)
"""

YAML = f"""
id: {{mode}}_judge
turns:
  - user: "{FIFTEEN}"
    audio: ../audio/fifteen.wav
    expect:
      judge:
        rubric: The reply confirms the booking.
"""


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("livekit.agents", reason="needs the livekit extra")
    pytest.importorskip("livekit.plugins.silero", reason="needs the livekit extra")
    from pytest_agent_eval._loader import load_transcript_file
    from pytest_agent_eval.synthesize import ensure_fixtures

    root = tmp_path_factory.mktemp("judge_corpus")
    shutil.copy(EXAMPLE_AGENT, root / "booking_agent.py")
    (root / "conftest.py").write_text('"""Puts the project folder on sys.path."""\n')
    (root / "pyproject.toml").write_text(
        PYPROJECT.replace("runs = 1\n", "runs = 1\nattribute = true\njudge_cache = true\n")
    )
    for mode in ("flaky", "strict"):
        folder = root / "evals" / mode
        folder.mkdir(parents=True)
        (folder / "conftest.py").write_text(CONFTEST.format(mode=mode))
        (folder / f"{mode}.yaml").write_text(YAML.format(mode=mode))
    transcripts = [load_transcript_file(p) for p in sorted((root / "evals").rglob("*.yaml"))]
    ensure_fixtures(transcripts, jobs=1).raise_for_failures()
    return root


def test_a_judge_that_flips_when_asked_again_is_the_cause(
    pytester: pytest.Pytester, corpus: Path
) -> None:
    shutil.copytree(corpus, pytester.path, dirs_exist_ok=True)
    result = pytester.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "--agent-eval-results=r.json"
    )
    result.assert_outcomes(failed=2)  # attribution never changes a verdict
    found = attributions(pytester.path / "r.json")

    verdict, flaky = found["flaky_judge"]
    assert verdict == "failed" and flaky["cause"] == "judge"
    (asked,) = flaky["evidence"]
    assert (asked["counterfactual"], asked["verdict"], asked["turn"]) == (
        "judge_rerun",
        "passed",
        0,
    )
    assert "says yes" in asked["detail"] and "call 2: yes" in asked["detail"]
    # Asked once by the run, once by attribution (the cache, on, is not consulted): nothing
    # of the agent was rerun.
    flaky_calls = (pytester.path / "evals" / "flaky" / "judge_calls.log").read_text()
    assert flaky_calls.count("call") == 2

    verdict, strict = found["strict_judge"]
    assert verdict == "failed" and strict["cause"] == "agent_logic"
    assert [(e["counterfactual"], e["verdict"]) for e in strict["evidence"]] == [
        ("judge_rerun", "failed"),
        ("heard_words", "none"),
        ("fixture_hearing", "error"),
        ("text_rerun", "failed"),
    ]
    result.stdout.fnmatch_lines(["*cause: judge — asked again on the same reply*"])
