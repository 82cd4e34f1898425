"""The YAML expectations on what a LiveKit session observes, through pytest itself, on real
AgentSessions (the corpus agents, Silero VAD, FixtureTextSTT on synthesized WAVs): the
greeting, a reply holding what the agent said on its own, tool outcomes, the active agent and
handoffs, and heard per segment in the report."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent

CONFTEST = f"""
import sys

import pytest

sys.path.insert(0, {str(HERE)!r})  # the corpus agents live with the LiveKit tests

from corpus_agents import GreeterAgent, Kitchen, Pharmacist, Receptionist, Scenario

from pytest_agent_eval.adapters.livekit import LiveKitAdapter

AGENTS = {{
    "greeted": GreeterAgent,
    "not_greeted": Receptionist,
    "billing": Receptionist,
    "still_at_reception": Receptionist,
    "dessert": Kitchen,
    "refill": Pharmacist,
}}


@pytest.fixture
def llm_eval_agent(request):
    agent = AGENTS[request.node.transcript.id]
    return LiveKitAdapter(Scenario("yaml", agent, ()).factory(), tail_silence_s=0.7)
"""


def _transcripts(audio: dict[str, Path]) -> dict[str, str]:
    def spoken(key: str) -> str:
        from corpus_agents import PHRASES

        return f'  - user: "{PHRASES[key]}"\n    audio: {audio[key]}\n'

    return {
        "greeted": "id: greeted\ngreeting:\n  contains_any: [welcome]\n  contains_none: [sorry]\n"
        "turns:\n"
        + spoken("hello")
        + "    expect: {reply_contains_any: [help], agent_is: GreeterAgent}\n",
        "not_greeted": "id: not_greeted\ngreeting: {contains_any: [welcome]}\nturns:\n"
        + spoken("hello"),
        "billing": "id: billing\nturns:\n"
        + spoken("bill_then_charge")
        + textwrap.indent(
            textwrap.dedent(
                """\
                expect:
                  # The reply is everything said in the turn, the new agent's intro included.
                  reply_contains_all: ["this is billing", "refunded"]
                  heard_contains_all: ["my bill", "charged twice"]
                  agent_is: BillingAgent
                  handoff_to: BillingAgent
                  handoff_from: Receptionist
                  tool_calls_outcome:
                    - {tool: transfer_to_billing, status: ok}
                """
            ),
            "    ",
        ),
        "still_at_reception": "id: still_at_reception\nturns:\n"
        + spoken("bill_then_charge")
        + "    expect: {agent_is: Receptionist}\n",
        "dessert": "id: dessert\nturns:\n"
        + spoken("dessert")
        + textwrap.indent(
            textwrap.dedent(
                """\
                expect:
                  tool_calls_outcome:
                    - {tool: dessert_menu, status: error, output_contains: ["service is down"]}
                    - {tool: dessert_menu, output_matches: ["^RuntimeError: "]}
                """
            ),
            "    ",
        ),
        "refill": "id: refill\nturns:\n"
        + spoken("refill")
        + "    expect:\n      tool_calls_outcome: [{tool: verify_identity, status: ok}]\n",
    }


@pytest.fixture
def project(pytester: pytest.Pytester, corpus_audio: dict[str, Path]) -> pytest.Pytester:
    # The corpus WAVs are shared by the module's tests, outside each project: an audio root.
    roots = sorted({str(path.parent) for path in corpus_audio.values()})
    pytester.makepyprojecttoml(
        f'[tool.agent_eval]\nyaml_dirs = ["evals"]\nruns = 1\naudio_roots = {roots!r}\n'.replace(
            "'", '"'
        )
    )
    pytester.makeconftest(CONFTEST)
    evals = pytester.mkdir("evals")
    for name, text in _transcripts(corpus_audio).items():
        (evals / f"{name}.yaml").write_text(text)
    return pytester


def test_livekit_observed_expectations_pass_and_fail_for_the_right_reason(
    project: pytest.Pytester,
) -> None:
    result = project.runpytest_subprocess(
        "--agent-eval-live", "-p", "no:cacheprovider", "--agent-eval-report", "r.md"
    )
    result.assert_outcomes(passed=3, failed=3)
    out = result.stdout.str()
    for passing in ("greeted", "billing", "dessert"):
        assert f"FAILED evals/{passing}.yaml" not in out
    result.stdout.fnmatch_lines(
        [
            "*transcript: not_greeted _*",
            "    greeting [[]FAIL[]]: the agent said nothing before turn 1",
            "      - greeting (not_greeted.yaml:*) fail: greeting contains none of [[]'welcome'] "
            "(the agent said nothing before turn 1)",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*transcript: still_at_reception _*",
            "      agent-initiated (on_enter, BillingAgent*): 'Hi, this is billing. How can I help?'",
            "      reply: 'Hi, this is billing. How can I help? I see a duplicate charge and I "
            "have refunded it.'",
            "      heard, segment 1 of 2: 'I have a question about my bill.'",
            "      heard, segment 2 of 2 (WER of all 2: 0.00): 'Why was I charged twice?'",
            "      - turns[[]*].expect.agent_is (still_at_reception.yaml:*) fail: the active agent at the "
            "end of the turn is BillingAgent, not "
            "Receptionist; handoffs in this turn: Receptionist -> BillingAgent",
        ]
    )
    result.stdout.fnmatch_lines(
        [
            "*transcript: refill _*",
            "      - turns[[]*].expect.tool_calls_outcome[[]0] (refill.yaml:*) fail: verify_identity was "
            "still running when the turn "
            "ended: expected it to return",
        ]
    )
    report = (project.path / "r.md").read_text(encoding="utf-8")
    assert "- Agent-initiated (greeting, GreeterAgent, at " in report
    assert "Welcome to Pytest Services\\!" not in report  # "!" is not escaped
    assert ": Welcome to Pytest Services!" in report
    assert "- Heard, segment 1 of 2: I have a question about my bill." in report
    assert "- Agent-initiated (on_enter, BillingAgent, at " in report  # verbatim
