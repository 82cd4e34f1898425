"""Through real pytest runs: the greeting, tool outcome and agent expectations in YAML, pause
markup kept away from text agents, and one message per failure."""

from __future__ import annotations

import pytest

from .conftest import Project

# A text adapter whose conversations observe a greeting: the optional protocol method.
GREETING_ADAPTER = """
from pytest_agent_eval.adapters.base import ConversationInfo
from pytest_agent_eval.models import AgentSpeech, Greeting


class Conversation:
    def greeting(self):
        return Greeting([AgentSpeech(text="Welcome to Chez Pytest!", cause="greeting",
                                     agent="Host")])

    async def respond(self, turn):
        return AgentReply("Booked: a table for two.")

    async def aclose(self):
        pass


class Adapter:
    consumes_audio = False

    async def start_conversation(self, info: ConversationInfo):
        return Conversation()


@pytest.fixture
def llm_eval_agent():
    return Adapter()
"""

GREETED = """
id: greeted
runs: 2
greeting:
  contains_any: [welcome]
  contains_none: [sorry]
turns:
  - user: A table for two?
    expect: {reply_contains_any: [booked]}
"""


def test_a_greeting_check_passes_on_an_adapter_that_observes_the_greeting(
    project: Project,
) -> None:
    project.conftest(GREETING_ADAPTER)
    project.transcript("greeted", GREETED)
    result = project.run_live("--agent-eval-report", "r.md")
    result.assert_outcomes(passed=1)
    report = (project.path / "r.md").read_text(encoding="utf-8")
    assert report.count("**Greeting** (before turn 1)") == 2  # one per run
    assert "- Agent-initiated (greeting, Host): Welcome to Chez Pytest!" in report
    assert "- ✅ greeting (greeted.yaml:3) — greeting text checks passed" in report


def test_a_failing_greeting_check_fails_the_run_and_shows_what_was_said(project: Project) -> None:
    project.conftest(GREETING_ADAPTER)
    project.transcript("greeted", GREETED.replace("[welcome]", "[hello]"))
    result = project.run_live()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "  run 1: FAILED *",
            "    greeting [FAIL]",
            "      agent-initiated (greeting, Host): 'Welcome to Chez Pytest!'",
            "      - greeting (greeted.yaml:3) fail: greeting contains none of ['hello'] "
            "(greeting was 'Welcome to Chez Pytest!')",
            "    turn 1 [ok] user: 'A table for two?'",
            "  run 2: FAILED * same as run 1",
        ]
    )


def test_a_greeting_check_on_an_adapter_that_cannot_observe_it_errors(project: Project) -> None:
    """contains_none alone would pass on an empty greeting; without a greeting() method there
    is no greeting to check, so the run fails with the reason, never passes."""
    project.echo_agent("Booked: a table for two.")
    project.transcript("greeted", GREETED.replace("contains_any: [welcome]\n  ", ""))
    result = project.run_live()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "    greeting [ERROR]: not observed by this adapter",
            "      - greeting (greeted.yaml:3) errored: cannot be checked: this adapter does not "
            "report what the "
            "agent says before turn 1 (its conversations have no greeting() method); *",
        ]
    )


def test_tool_outcomes_pass_on_recorded_results_and_error_on_bare_names(
    project: Project,
) -> None:
    project.agent(
        """
        if "order" in history[-1].content:
            return AgentReply("It ships tomorrow.", [ToolCall("lookup", output="ships tomorrow",
                                                            done=True)])
        if "dessert" in history[-1].content:
            return AgentReply("No desserts.", [ToolCall("menu", output="Error", is_error=True,
                                                        error="RuntimeError: menu is down")])
        return AgentReply("Done.", ["lookup"])  # names only: outcome not observed
        """
    )
    project.transcript(
        "outcomes",
        """
        id: outcomes
        turns:
          - user: Where is my order?
            expect:
              tool_calls_outcome:
                - {tool: lookup, status: ok, output_contains: [tomorrow]}
          - user: Any dessert?
            expect:
              tool_calls_outcome:
                - {tool: menu, status: error, output_matches: ["menu is (down|closed)"]}
          - user: Again please
            expect:
              tool_calls_outcome:
                - {tool: lookup, status: error}
        """,
    )
    result = project.run_live()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "    turn 1 [ok] user: 'Where is my order?'",
            "    turn 2 [ok] user: 'Any dessert?'",
            "    turn 3 [ERROR] user: 'Again please'",
            "      - turns[[]2].expect.tool_calls_outcome[[]0] (outcomes.yaml:14) errored: cannot be "
            "checked: the adapter did not record how "
            "1 call(s) to lookup ended *",
        ]
    )


def test_agent_checks_on_a_text_adapter_error_naming_why(project: Project) -> None:
    project.echo_agent("Billing here.")
    project.transcript(
        "agents",
        """
        id: agents
        turns:
          - user: Put me through to billing.
            expect:
              reply_contains_any: [billing]
              agent_is: BillingAgent
              handoff_to: BillingAgent
        """,
    )
    result = project.run_live()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "      - turns[[]0].expect.handoff_to (agents.yaml:7) errored: cannot be checked: this "
            "adapter does not report handoffs *",
            "      - turns[[]0].expect.agent_is (agents.yaml:6) errored: cannot be checked: this "
            "adapter does not report which "
            "agent is active *",
        ]
    )


def test_a_pause_marker_never_reaches_a_text_agent(project: Project) -> None:
    project.agent(
        """
        seen = [m["content"] for m in history if m["role"] == "user"]
        assert not any("pause" in text for text in seen), seen
        return AgentReply("You said: " + history[-1].content)
        """
    )
    project.transcript(
        "paused",
        """
        id: paused
        turns:
          - user: "Hi, this is Maria. [pause 2s] I need a refill."
            expect:
              reply_contains_all: ["You said: Hi, this is Maria. I need a refill."]
          - user: "Thanks.[pause 500ms]Bye."
            expect:
              reply_contains_all: ["You said: Thanks. Bye."]
        """,
    )
    result = project.run_live()
    result.assert_outcomes(passed=1)


def test_a_malformed_pause_marker_is_a_collection_error_with_file_line_and_turn(
    project: Project,
) -> None:
    project.echo_agent("ok")
    project.transcript(
        "bad",
        """
        id: bad_pause
        turns:
          - user: Hello.
          - user: "Hi. [pause two] Bye."
        """,
    )
    result = project.run()  # not live: transcripts are validated at collection anyway
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*tests/evals/bad.yaml:4, transcript 'bad_pause', turn 2, turns[[]1[]].user: "
            "malformed pause marker '[[]pause two[]]': write [[]pause 2s[]] or [[]pause 500ms[]] "
            "(a number, then s or ms)"
        ]
    )


@pytest.mark.parametrize(
    ("turns", "message"),
    [
        (
            'Turn("Hi. [pause two] Bye.")',
            "transcript 'test_bad', turn 1: user: malformed pause marker '[pause two]': write "
            "[pause 2s] or [pause 500ms] (a number, then s or ms)",
        ),
        (
            'Turn("hi", expect=Expect(reply_matches_any=["(x"]))',
            "transcript 'test_bad', turn 1: invalid regex '(x': missing ), unterminated "
            "subpattern at position 0",
        ),
    ],
    ids=["pause", "regex"],
)
def test_a_python_api_failure_is_said_once_naming_the_transcript_once(
    project: Project, turns: str, message: str
) -> None:
    """The message was shown three times (cause, "During handling", then the failure) with a
    doubled prefix "transcript 'x': transcript 'x', turn 1"."""
    project.test_file(
        "test_api.py",
        f"""
async def agent(history):
    return "hi"

async def test_bad(agent_eval):
    await agent_eval.run(agent=agent, turns=[{turns}])
""",
    )
    result = project.run_live()
    result.assert_outcomes(errors=1)
    # The failure section, not pytest's one-line short summary (older pytest repeats it there).
    out = result.stdout.str().split("short test summary info")[0]
    assert out.count(message) == 1, out
    assert "transcript 'test_bad': transcript" not in out
    assert "During handling of the above exception" not in out
    assert "The above exception was the direct cause" not in out
