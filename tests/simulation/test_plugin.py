"""Simulation files as pytest tests, as a user runs them: collected from yaml_dirs, the caller and
judge from fixtures, the terminal account, markdown, HTML, JUnit and the results file; caller
failures as ERRORs no group absorbs; saved conversations that run again as transcripts."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

CONFTEST = """
import re
from pathlib import Path

import pytest
from pydantic_ai.messages import ModelRequest, ModelResponse, TextPart, ToolCallPart, UserPromptPart
from pydantic_ai.models.function import FunctionModel

from pytest_agent_eval import AgentReply, ToolCall

LOG = Path(__file__).parent / "caller_requests.log"
JUDGE_LOG = Path(__file__).parent / "judge_requests.log"
MODE = "{mode}"
JUDGE = "{judge}"


def _prompt(messages):
    return "\\n".join(
        p.content for m in messages if isinstance(m, ModelRequest) for p in m.parts
        if isinstance(p, UserPromptPart) and isinstance(p.content, str)
    )


def caller(messages, info):
    with LOG.open("a") as log:
        log.write("request\\n")
    prompt = _prompt(messages)
    agent = re.findall(r"^AGENT: (.*)$", prompt, flags=re.MULTILINE)
    may_end = any(t.name == "end_conversation" for t in info.output_tools)
    if MODE == "broken":
        return ModelResponse(parts=[TextPart("As an AI language model, I cannot role-play.")])
    if may_end and any("RF-" in line for line in agent):
        args = {{"outcome": "goal_reached", "reason": "The refund is issued."}}
        return ModelResponse(parts=[ToolCallPart("end_conversation", args)])
    if agent and "Which order" in agent[-1]:
        return ModelResponse(parts=[TextPart("It is order 1234.")])
    return ModelResponse(parts=[TextPart("Hi, my blender arrived broken, I want a refund.")])


def _instructions(messages, info):
    # On AgentInfo in later pydantic-ai releases, on the request in 1.0.
    found = getattr(info, "instructions", None)
    return found or next(
        (m.instructions for m in reversed(messages) if getattr(m, "instructions", None)), ""
    )


def judge(messages, info):
    with JUDGE_LOG.open("a") as log:
        log.write("request\\n")
    conversation = _prompt(messages)
    instructions = _instructions(messages, info)
    if "<criterion>" not in instructions:  # a transcript's rubric judge (a saved one)
        ok = "lookup_order" in conversation
        verdict = {{"passed": ok, "reasoning": "rubric: lookup_order " + ("seen" if ok else "missing")}}
        return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])
    criterion = instructions.split("<criterion>\\n", 1)[1]
    if JUDGE == "strict":  # the model behind the same name changed
        verdict = {{"reasoning": "The lookup came too late.", "verdict": "not_met"}}
    elif "apolog" in criterion:
        verdict = {{"reasoning": "Nowhere does the agent apologise.", "verdict": "not_met"}}
    else:
        ok = "[agent called tool lookup_order]" in conversation
        verdict = {{"reasoning": "Turn 2 calls lookup_order." if ok else "No lookup.",
                   "verdict": "met" if ok else "not_met"}}
    return ModelResponse(parts=[ToolCallPart(info.output_tools[0].name, verdict)])


@pytest.fixture
def llm_eval_caller_model():
    return FunctionModel(caller, model_name="conftest-caller")


@pytest.fixture
def llm_eval_judge_model():
    return FunctionModel(judge, model_name="conftest-judge")


@pytest.fixture
def llm_eval_agent():
    async def agent(history):
        if "1234" in history[-1].content:
            return AgentReply(
                "{refund}", [ToolCall("lookup_order", {{"order": "1234"}})]
            )
        return AgentReply("Which order is it about?")
    return agent
"""

SIMULATION = """\
id: refund
runs: 2
threshold: 1.0
tags: [refunds]
persona: Dana, polite but in a hurry.
goal: A refund for order 1234.
criteria:
  - The agent looks the order up before refunding.
max_turns: 6
every_turn:
  reply_contains_none: ["I cannot help"]
"""

REFUND = "Refund issued for order 1234, reference RF-9."


def project(
    pytester: pytest.Pytester,
    *,
    mode: str = "ok",
    judge: str = "ok",
    refund: str = REFUND,
    simulation: str = SIMULATION,
    toml: str = "",
) -> Path:
    pytester.makepyprojecttoml(f'[tool.agent_eval]\nyaml_dirs = ["evals"]\nretries = 1\n{toml}')
    pytester.makeconftest(CONFTEST.format(mode=mode, judge=judge, refund=refund))
    evals = pytester.path / "evals"
    evals.mkdir(exist_ok=True)
    (evals / "refund.yaml").write_text(simulation)
    return evals


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-live", *args)


def caller_requests(pytester: pytest.Pytester, log: str = "caller_requests.log") -> int:
    path = pytester.path / log
    return len(path.read_text().splitlines()) if path.exists() else 0


def judge_requests(pytester: pytest.Pytester) -> int:
    return caller_requests(pytester, "judge_requests.log")


def cache_files(pytester: pytest.Pytester) -> dict[str, str]:
    """Every caller cache entry (turns and verdicts), by path, with its content."""
    folder = pytester.path / ".agent_eval_cache" / "caller"
    return {str(p.relative_to(folder)): p.read_text() for p in sorted(folder.rglob("*.json"))}


def test_a_simulation_file_is_a_test_and_its_account_says_how_each_call_ended(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*evals/refund.yaml::refund PASSED*"])
    assert caller_requests(pytester) == 6  # 2 runs x (2 utterances + the end)


def test_a_failed_criterion_fails_the_test_with_its_reason_everywhere(
    pytester: pytest.Pytester,
) -> None:
    project(
        pytester,
        simulation=SIMULATION.replace(
            "  - The agent looks the order up before refunding.\n",
            "  - The agent looks the order up before refunding.\n  - The agent apologises.\n",
        ),
    )
    result = run(
        pytester,
        "--junitxml=junit.xml",
        "--agent-eval-html=report.html",
        "--agent-eval-report=report.md",
        "--agent-eval-results=results.json",
    )
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "Nowhere does the agent apologise." in out
    assert "conversation:" in out
    assert "ended: by the caller after turn 2 (goal reached): The refund is issued." in out
    # JUnit: the message names the failed criterion; the caller's cost in properties.
    case = ET.parse(pytester.path / "junit.xml").getroot().find(".//testcase")
    assert case is not None
    failure = case.find("failure")
    assert failure is not None and "Nowhere does the agent apologise." in failure.get("message", "")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["agent_eval_caller_requests"] == "6"
    assert props["agent_eval_caller_cached_turns"] == "0"
    assert props["agent_eval_passed_runs"] == "0"
    # Markdown and HTML: the conversation's end and each criterion's verdict.
    md = (pytester.path / "report.md").read_text()
    assert "**Conversation** (simulated caller)" in md
    assert "Nowhere does the agent apologise." in md and "Turn 2 calls lookup_order." in md
    html = (pytester.path / "report.html").read_text()
    assert "simulated caller" in html and "Nowhere does the agent apologise." in html
    assert "by the caller after turn 2 (goal reached)" in html
    # The results file: how each run ended and what the caller cost.
    (entry,) = json.loads((pytester.path / "results.json").read_text())["evals"]
    assert entry["verdict"] == "failed"
    assert entry["simulation"]["ended"] == {"caller": 2}
    assert entry["simulation"]["caller_requests"] == 6
    assert entry["simulation"]["turns"] == [2, 2]
    assert entry["simulation"]["caller_model"] == "function:conftest-caller"


def test_a_broken_caller_is_an_error_that_no_group_absorbs(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        mode="broken",
        toml='\n[tool.agent_eval.groups.refunds]\ntags = ["refunds"]\nthreshold = 0.0\n',
    )
    result = run(pytester)
    result.assert_outcomes(errors=1)
    assert result.ret != 0
    out = result.stdout.str()
    assert "the simulated caller failed at turn 1" in out
    assert "a refusal to play the caller" in out
    assert caller_requests(pytester) == 4  # 2 runs x (1 + retries=1)


def test_the_second_session_replays_the_caller_and_its_verdicts_and_every_report_says_so(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    run(pytester, "--junitxml=first.xml").assert_outcomes(passed=1)
    # Both runs hold the same conversation: the judge is asked once or twice, as the second
    # run's judging starts before or after the first one's verdict is stored.
    judged = judge_requests(pytester)
    assert caller_requests(pytester) == 6 and judged in (1, 2)
    reports = (
        "--junitxml=second.xml",
        "--agent-eval-report=report.md",
        "--agent-eval-html=report.html",
        "--agent-eval-results=results.json",
    )
    second = run(pytester, *reports)
    second.assert_outcomes(passed=1)
    # Not one more request: neither the caller nor the criteria judge was asked.
    assert (caller_requests(pytester), judge_requests(pytester)) == (6, judged)
    props = {
        p.get("name"): p.get("value")
        for p in ET.parse(pytester.path / "second.xml").getroot().iter("property")
    }
    assert props["agent_eval_caller_requests"] == "0"
    assert props["agent_eval_caller_cached_turns"] == "6"
    # Every report says the runs were replayed, and when they were recorded.
    second.stdout.fnmatch_lines(
        ["simulated runs replayed from the caller cache: 2 of 2 (recorded since 20*UTC)*"]
    )
    md = (pytester.path / "report.md").read_text()
    assert "simulated runs replayed from the caller cache: 2 of 2 (recorded since 20" in md
    assert "- Replayed: 3 caller turn(s) and 1 criteria verdict(s) from the caller cache, " in md
    # The criteria judge is a judge model of the session ("none ran" before).
    assert "judge models: function:conftest-judge" in md
    html = (pytester.path / "report.html").read_text()
    assert "simulated runs replayed from the caller cache: 2 of 2" in html
    assert "criteria verdict(s) from the caller cache, recorded 20" in html
    (entry,) = json.loads((pytester.path / "results.json").read_text())["evals"]
    replayed = entry["simulation"]["replayed_runs"]
    assert [r["run"] for r in replayed] == [1, 2]
    assert all(r["recorded_at"].endswith(" UTC") for r in replayed)
    assert entry["simulation"]["cached_verdicts"] == 2

    # --agent-eval-no-caller-cache neither reads nor writes the cache.
    before = cache_files(pytester)
    run(pytester, "--agent-eval-no-caller-cache").assert_outcomes(passed=1)
    assert (caller_requests(pytester), judge_requests(pytester)) == (12, judged + 2)
    assert cache_files(pytester) == before


def test_when_the_model_behind_a_name_changes_the_refresh_option_asks_it_again(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    run(pytester).assert_outcomes(passed=1)
    judged = judge_requests(pytester)
    # The judge model behind the same name now fails the agent: an ordinary session replays
    # the old verdicts (and says so), the refresh asks the model and rewrites the cache.
    project(pytester, judge="strict")
    replayed = run(pytester)
    replayed.assert_outcomes(passed=1)
    replayed.stdout.fnmatch_lines(["simulated runs replayed from the caller cache: 2 of 2*"])
    before = cache_files(pytester)
    refreshed = run(pytester, "--agent-eval-refresh-caller-cache")
    refreshed.assert_outcomes(failed=1)
    assert "The lookup came too late." in refreshed.stdout.str()
    assert caller_requests(pytester) == 12 and judge_requests(pytester) == judged + 2
    after = cache_files(pytester)
    assert after.keys() == before.keys()  # the same entries, rewritten
    verdicts = [k for k in after if k.startswith("verdicts")]
    assert len(verdicts) == 1  # both runs had the same conversation
    assert all("The lookup came too late." in after[k] for k in verdicts)
    # From now on the new answers are replayed: the suite stays red.
    run(pytester).assert_outcomes(failed=1)
    assert judge_requests(pytester) == judged + 2


def test_no_caller_cache_and_refresh_together_are_refused(pytester: pytest.Pytester) -> None:
    project(pytester)
    result = run(pytester, "--agent-eval-no-caller-cache", "--agent-eval-refresh-caller-cache")
    assert result.ret != 0
    assert "contradict each other" in result.stderr.str() + result.stdout.str()


def test_a_saved_conversation_loads_and_runs_as_a_plain_transcript(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    run(pytester, "--agent-eval-save-simulations", "saved").assert_outcomes(passed=1)
    saved = sorted((pytester.path / "saved").glob("*.yaml"))
    assert [p.name for p in saved] == ["refund-run1.yaml", "refund-run2.yaml"]
    text = saved[0].read_text()
    assert text.startswith("# Saved by pytest-agent-eval (--agent-eval-save-simulations)")
    # It names its simulation relative to the rootdir: no path of this machine in the file.
    assert "from simulation 'refund' (evals/refund.yaml), run 1" in text
    assert str(pytester.path) not in text
    assert "user: Hi, my blender arrived broken, I want a refund." in text
    assert "reply_contains_none" in text  # every_turn, on each caller turn
    assert "The agent looks the order up before refunding." in text  # the criteria, as a judge
    # Frozen as a regression test: move it into yaml_dirs, it is a transcript now.
    (pytester.path / "evals" / "refund.yaml").unlink()
    saved[0].rename(pytester.path / "evals" / "refund-run1.yaml")
    before = caller_requests(pytester)
    result = run(pytester, "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*evals/refund-run1.yaml::refund-run1 PASSED*"])
    assert caller_requests(pytester) == before  # no caller: the turns are written down

    # And a changed agent fails the frozen conversation on the changed reply.
    project(pytester, refund="Sorry, I cannot help with refunds.", simulation=SIMULATION)
    (pytester.path / "evals" / "refund.yaml").unlink()
    run(pytester).assert_outcomes(failed=1)


def test_simulations_are_selected_by_their_tags_and_keyword(pytester: pytest.Pytester) -> None:
    evals = project(pytester)
    (evals / "plain.yaml").write_text("id: plain\nturns:\n  - user: order 1234\n")
    result = run(pytester, "-k", "simulation", "--collect-only", "-q")
    assert "evals/refund.yaml::refund" in result.stdout.str()
    assert "plain" not in result.stdout.str()
    result = run(pytester, "--agent-eval-tags", "refunds", "--collect-only", "-q")
    assert "evals/refund.yaml::refund" in result.stdout.str()


def test_the_callers_tokens_are_in_the_totals_and_priced_by_the_callers_model(
    pytester: pytest.Pytester,
) -> None:
    prices = (
        '[tool.agent_eval.prices."function:conftest-caller"]\n'
        "input_per_million = 1000.0\noutput_per_million = 2000.0\n"
    )
    project(pytester, toml=prices)
    result = run(
        pytester,
        "--agent-eval-html=report.html",
        "--agent-eval-report=report.md",
        "--agent-eval-results=results.json",
    )
    result.assert_outcomes(passed=1)
    (entry,) = json.loads((pytester.path / "results.json").read_text())["evals"]
    tokens = entry["simulation"]["caller_tokens"]
    total = tokens["input"] + tokens["output"]
    assert total > 0
    # The terminal's totals line names the callers, with the same count the results file has.
    line = next(x for x in result.stdout.lines if x.startswith("tokens: agent "))
    assert f"; callers {total:,} ({tokens['input']:,} in / {tokens['output']:,} out)" in line
    # Priced by the caller's own model, in the terminal and both reports.
    cost = (tokens["input"] * 1000.0 + tokens["output"] * 2000.0) / 1_000_000
    expected = f"caller function:conftest-caller {cost:.4f}"
    result.stdout.fnmatch_lines([f"Cost: *{expected}*"])
    md = (pytester.path / "report.md").read_text()
    assert f"| Callers | {tokens['input']:,} | {tokens['output']:,} | {total:,} |" in md
    assert f"callers {total:,} (" in md and expected in md
    html = (pytester.path / "report.html").read_text()
    assert "<tr><td>Callers</td>" in html and expected in html
