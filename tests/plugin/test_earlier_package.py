"""A project written for the earlier package (0.3.0), run unchanged: what it types, what it
reads in the terminal, and what its CI greps for."""

from __future__ import annotations

import pytest

from .conftest import Project, lit


def test_running_an_empty_python_transcript_fails_with_a_clear_message(project: Project) -> None:
    project.echo_agent("Booked.")
    project.test_file(
        "test_empty.py",
        """
        from pytest_agent_eval import Transcript

        @pytest.mark.agent_eval
        async def test_empty(agent_eval):
            draft = Transcript(id="draft", turns=[])
            await agent_eval.run(transcript=draft)
        """,
    )

    result = project.run_live()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*"
            + lit("transcript 'draft' has no turns, so there is nothing to run; add at least one")
            + "*"
        ]
    )
    result.stdout.no_fnmatch_line("*Traceback*")
    result.stdout.no_fnmatch_line("*During handling*")


SPACED_IDS = {
    "booking.yaml": """\
        id: "booking: happy path"
        tags: [gate:booking]
        turns:
          - user: Book a table
            expect:
              reply_contains_any: [booked]
        """,
    "cancel.yaml": """\
        id: cancel booking [v2]
        tags: [gate:booking]
        turns:
          - user: Cancel it
            expect:
              reply_contains_any: [booked]
        """,
}


def _spaced_ids(project: Project, extra_config: str = "") -> None:
    project.pyproject('report_path = "report.md"\n' + extra_config)
    project.echo_agent("Booked for two.")
    for name, text in SPACED_IDS.items():
        project.transcript(name, text)


def test_ids_with_spaces_and_colons_run_under_a_safe_test_name(project: Project) -> None:
    _spaced_ids(project)

    result = project.run_live("-v")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/booking.yaml::booking_happy_path PASSED*",
            "tests/evals/cancel.yaml::cancel_booking_v2 PASSED*",
        ]
    )
    # the summary table and the markdown report show the real ids
    result.stdout.fnmatch_lines_random(
        ["booking: happy path  *PASS*", "cancel booking [[]v2] *PASS*"]
    )
    report = (project.path / "report.md").read_text()
    assert "booking: happy path" in report and "cancel booking [v2]" in report


def test_k_selects_by_the_real_id_or_the_test_name(project: Project) -> None:
    _spaced_ids(project)

    by_word = project.run_live("-k", "happy")
    by_name = project.run_live("-k", "cancel_booking_v2")
    by_real_id = project.run_live("-k", "booking:")
    by_node = project.run_live("tests/evals/booking.yaml::booking_happy_path")

    by_word.assert_outcomes(passed=1, deselected=1)
    by_name.assert_outcomes(passed=1, deselected=1)
    by_real_id.assert_outcomes(passed=1, deselected=1)
    by_node.assert_outcomes(passed=1)


def test_must_pass_accepts_the_real_id(project: Project) -> None:
    _spaced_ids(
        project,
        """
        [tool.agent_eval.groups.booking]
        tags = ["gate:booking"]
        must_pass = ["booking: happy path", "cancel_booking_v2"]
        enforce = true
        """,
    )

    result = project.run_live()

    result.assert_outcomes(passed=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*must_pass: booking: happy path ok*"])


def test_two_ids_that_would_share_a_test_name_are_a_collection_error(project: Project) -> None:
    project.echo_agent("Booked.")
    project.transcript("a.yaml", "id: booking flow\nturns:\n  - user: hi\n")
    project.transcript("b.yaml", "id: booking_flow\nturns:\n  - user: hi\n")

    result = project.run_live()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*b.yaml: id 'booking_flow' and id 'booking flow' (in */a.yaml) both become the test"
            " name 'booking_flow' (spaces and signs become '_'); make the ids differ in letters"
            " or digits"
        ]
    )


def test_not_live_line_has_what_ci_greps_for_on_one_line(project: Project) -> None:
    project.echo_agent("Booked.")
    project.transcript("a.yaml", "id: a\nturns:\n  - user: hi\n")
    project.transcript("b.yaml", "id: b\nturns:\n  - user: hi\n")

    result = project.run()

    result.assert_outcomes(skipped=2)
    lines = [line for line in result.outlines if "eval test(s) skipped" in line]
    assert len(lines) == 1
    for needed in (
        "2 eval test(s) skipped",
        "live mode is off",
        "--agent-eval-live",
        "EVAL_LIVE=1",
    ):
        assert needed in lines[0]
    assert lines[0].startswith(
        "2 eval test(s) skipped — live mode is off. Pass --agent-eval-live or set EVAL_LIVE=1."
    )


def test_yaml_syntax_error_says_invalid_yaml_at_line(project: Project) -> None:
    project.echo_agent("Booked.")
    project.transcript("bad.yaml", 'id: broken\nturns:\n  - user: "hi\n    expect: {}\n')

    result = project.run()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*/tests/evals/bad.yaml:*: invalid YAML at line *, column *: *"])


def test_unknown_field_suggestion_says_did_you_mean(project: Project) -> None:
    project.echo_agent("Booked.")
    project.transcript(
        "bad.yaml",
        "id: typo\nturns:\n  - user: hi\n    expect:\n      reply_contain_any: [booked]\n",
    )

    result = project.run()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*/tests/evals/bad.yaml:5, transcript 'typo', turn 1, "
            "turns[[]0].expect.reply_contain_any: unknown field 'reply_contain_any' "
            "(Did you mean 'reply_contains_any'?). Allowed here: *"
        ]
    )


GATED = """\
    [tool.agent_eval.groups.booking]
    tags = ["gate:booking"]
    threshold = 0.5
    must_pass = ["simple_test"]

    [tool.agent_eval.groups.payments]
    pytest_markers = ["payments"]
"""


def _gated_project(project: Project) -> None:
    project.pyproject('report_path = "report.md"\n' + GATED)
    project.agent(
        """
        if "refund" in history[-1].content:
            return AgentReply("Sorry, no.", [])
        return AgentReply("Booked *table_for_two* | <b>now</b>", [ToolCall("create_booking", {"party_size": 2})])
        """
    )
    project.transcript(
        "simple.yaml",
        """\
        id: simple_test
        tags: [gate:booking]
        turns:
          - user: Book a table
            expect:
              tool_calls_include: [create_booking]
        """,
    )
    project.transcript(
        "refund.yaml",
        """\
        id: refund_flow
        tags: [gate:booking]
        turns:
          - user: I want a refund
            expect:
              reply_contains_any: [refunded]
        """,
    )
    project.test_file(
        "test_pay.py",
        """
        @pytest.mark.payments
        @pytest.mark.agent_eval
        def test_pay(agent_eval):
            agent_eval.run_sync(turns=[Turn("Pay")]).assert_threshold()
        """,
    )


def test_group_summary_section_in_the_earlier_format(project: Project) -> None:
    _gated_project(project)

    result = project.run_live("--strict-markers")

    result.assert_outcomes(passed=2, failed=1)
    assert result.ret == 0  # the booking group absorbs refund_flow
    result.stdout.fnmatch_lines(
        [
            "*=== group summary ===*",
            "booking: 1/2 passed (50%) >= 50% required -- PASSED",
            "  failures: refund_flow",
            "  must_pass: simple_test ok",
            "payments: 1/1 passed (100%) >= 100% required -- PASSED",
            "exit code overridden to 0: 1 eval failure(s) absorbed by passing groups: "
            "tests/evals/refund.yaml::refund_flow",
        ]
    )
    # pytest_markers are registered: no warning, and --strict-markers accepts them
    result.stdout.no_fnmatch_line("*PytestUnknownMarkWarning*")
    result.stdout.no_fnmatch_line("*'payments' not found in `markers`*")


def test_markdown_report_groups_table_and_verbatim_text(project: Project) -> None:
    _gated_project(project)

    project.run_live()

    text = (project.path / "report.md").read_text()
    lines = text.splitlines()
    header = lines.index("## Groups") + 2
    assert lines[header] == "| Group | Passed | Total | Rate | Threshold | Status |"
    assert lines[header + 2] == "| booking | 1 | 2 | 0.50 | 0.50 | ✅ PASS |"
    assert lines[header + 3] == "| payments | 1 | 1 | 1.00 | 1.00 | ✅ PASS |"
    # `grep simple_test report.md` finds the transcript; names and replies are as written,
    # with only the pipe (table) and the tag (HTML) escaped.
    assert [line for line in lines if "simple_test" in line]
    assert "- Reply: Booked *table_for_two* \\| &lt;b>now&lt;/b>" in text
    assert '- Tool calls: create_booking({"party_size": 2})' in text
    assert "\\_" not in text and "\\*" not in text


LANGGRAPH_CONFTEST = """
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langchain_core.utils.function_calling import convert_to_openai_tool
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition

from pytest_agent_eval.adapters.langchain import LangChainAdapter


@tool
def create_booking(party_size: int) -> str:
    '''Book a table.'''
    return "BK-7"


class Scripted(BaseChatModel):
    @property
    def _llm_type(self):
        return "scripted"

    def _generate(self, messages, stop=None, run_manager=None, **kwargs):
        last = messages[-1]
        if isinstance(last, ToolMessage):
            message = AIMessage(f"Booked, reference {last.content}.")
        else:
            message = AIMessage("", tool_calls=[{"name": "create_booking", "args": {"party_size": 2}, "id": "c1"}])
        return ChatResult(generations=[ChatGeneration(message=message)])

    def bind_tools(self, tools, **kwargs):
        return self.bind(tools=[convert_to_openai_tool(t) for t in tools])


def build_graph():
    bound = Scripted().bind_tools([create_booking])
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda state: {"messages": [bound.invoke(state["messages"])]})
    graph.add_node("tools", ToolNode([create_booking]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


@pytest.fixture
def llm_eval_agent():
    return LangChainAdapter(build_graph())
"""

BOOKING_YAML = """\
    id: "booking: langgraph"
    runs: 2
    turns:
      - user: Book a table for two
        expect:
          reply_contains_any: [BK-7]
          tool_calls_include: [create_booking]
          tool_calls_args:
            - tool: create_booking
              args: {party_size: 2}
"""


def test_a_langgraph_agent_through_the_earlier_adapter_name(project: Project) -> None:
    pytest.importorskip("langgraph", reason="needs the [langchain] extra")
    project.conftest(LANGGRAPH_CONFTEST)
    project.transcript("booking.yaml", BOOKING_YAML)

    result = project.run_live("-v")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tests/evals/booking.yaml::booking_langgraph PASSED*"])


SMOLAGENTS_CONFTEST = """
from smolagents import Model, ToolCallingAgent, tool
from smolagents.models import ChatMessage, ChatMessageToolCall, ChatMessageToolCallFunction, MessageRole
from smolagents.monitoring import LogLevel

from pytest_agent_eval.adapters.smolagents import SmolagentsAdapter


@tool
def create_booking(party_size: int) -> str:
    '''Book a table.

    Args:
        party_size: How many people.
    '''
    return "BK-7"


def _call(name, arguments):
    function = ChatMessageToolCallFunction(name=name, arguments=arguments)
    tool_call = ChatMessageToolCall(function=function, id=name, type="function")
    return ChatMessage(role=MessageRole.ASSISTANT, content="", tool_calls=[tool_call])


class Scripted(Model):
    def generate(self, messages, stop_sequences=None, response_format=None, tools_to_call_from=None, **kwargs):
        last = messages[-1].content
        text = "".join(b.get("text", "") for b in last) if isinstance(last, list) else str(last)
        if "Observation:" in text:
            return _call("final_answer", {"answer": "Booked, reference BK-7."})
        return _call("create_booking", {"party_size": 2})


@pytest.fixture
def llm_eval_agent():
    agent = ToolCallingAgent(tools=[create_booking], model=Scripted(), verbosity_level=LogLevel.OFF)
    return SmolagentsAdapter(agent)
"""


def test_a_smolagents_agent_through_the_earlier_adapter_name(project: Project) -> None:
    pytest.importorskip("smolagents", reason="needs the [smolagents] extra")
    project.conftest(SMOLAGENTS_CONFTEST)
    project.transcript("booking.yaml", BOOKING_YAML.replace("langgraph", "smolagents"))

    result = project.run_live("-v")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["tests/evals/booking.yaml::booking_smolagents PASSED*"])
