"""The agent contract: the ``llm_eval_agent`` fixture, what an agent may return, its history."""

from __future__ import annotations

import pytest

from .conftest import Project, lit

BOOKING = """\
    id: booking
    turns:
      - user: Book a table for two
        expect:
          reply_contains_any: [booked]
          tool_calls_include: [create_booking]
"""


def test_missing_agent_fixture_names_it_and_shows_a_conftest_snippet(project: Project) -> None:
    project.transcript("booking", BOOKING)

    result = project.run_live()

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*ERROR at setup of transcript: booking*",
            "no 'llm_eval_agent' fixture: YAML transcripts need it to know which agent to talk to.",
            "Define it in a conftest.py next to (or above) your transcripts, for example:",
            "    # tests/conftest.py",
            "    import pytest",
            "    from pytest_agent_eval import AgentReply",
            "    @pytest.fixture",
            "    def llm_eval_agent():",
            "        async def my_agent(history):",
            "*",
            "        return my_agent",
        ]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.stdout.no_fnmatch_line("*fixture 'llm_eval_agent' not found*")


def test_missing_agent_fixture_is_reported_even_when_not_live(project: Project) -> None:
    project.transcript("booking", BOOKING)

    result = project.run()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["no 'llm_eval_agent' fixture: *"])


def test_agent_fixture_can_differ_per_directory(project: Project) -> None:
    # One folder has an agent, the other forgot it: only the second errors.
    project.conftest(
        "@pytest.fixture\ndef llm_eval_agent():\n"
        "    return lambda history: AgentReply('booked', ['create_booking'])\n",
        folder="tests/evals/with_agent",
    )
    project.transcript("booking", BOOKING, folder="tests/evals/with_agent")
    project.transcript("other", BOOKING.replace("booking", "other"), folder="tests/evals/bare")

    result = project.run_live("-v")

    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/with_agent/booking.yaml::booking PASSED*",
            "tests/evals/bare/other.yaml::other ERROR*",
        ]
    )


def test_parametrized_agent_fixture_runs_each_transcript_per_agent(project: Project) -> None:
    project.conftest(
        """
        @pytest.fixture(params=["fast", "smart"])
        def llm_eval_agent(request):
            def agent(history):
                return AgentReply(f"booked by the {request.param} agent", ["create_booking"])
            return agent
        """
    )
    project.transcript("booking", BOOKING)

    result = project.run_live("-v")

    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/booking.yaml::booking[[]fast] PASSED*",
            "tests/evals/booking.yaml::booking[[]smart] PASSED*",
        ]
    )


def test_parametrized_agent_fixture_honours_ids_marks_and_per_param_outcomes(
    project: Project,
) -> None:
    project.conftest(
        """
        @pytest.fixture(
            params=[pytest.param("a", id="alpha"), "b", pytest.param("c", marks=pytest.mark.skip)],
        )
        def llm_eval_agent(request):
            def agent(history):
                tools = ["create_booking"] if request.param == "a" else []
                return AgentReply(f"booked by {request.param}", tools)
            return agent
        """
    )
    project.transcript("booking", BOOKING)

    result = project.run_live("-v")

    result.assert_outcomes(passed=1, failed=1, skipped=1)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/booking.yaml::booking[[]alpha] PASSED*",
            "tests/evals/booking.yaml::booking[[]b] FAILED*",
            "tests/evals/booking.yaml::booking[[]c] SKIPPED*",
        ]
    )


AGENTS = {
    "async_agent_reply": """
        async def agent(history):
            return AgentReply("Booked!", ["create_booking"])
    """,
    "sync_agent_reply_positional_tool_call": """
        def agent(history):
            return AgentReply("booked", [ToolCall("create_booking", {"party": 2})])
    """,
    "tuple_of_names": """
        async def agent(history):
            return ("BOOKED for two", ["check_slots", "create_booking"])
    """,
    "tuple_of_tool_calls_sync": """
        def agent(history):
            return "booked", [ToolCall("create_booking", {"party": 2})]
    """,
    "tuple_of_name_args_pairs": """
        def agent(history):
            return "booked", [("create_booking", {"party": 2})]
    """,
}


@pytest.mark.parametrize("kind", sorted(AGENTS))
def test_agent_return_shapes_are_accepted(project: Project, kind: str) -> None:
    project.agent(AGENTS[kind])
    project.transcript("booking", BOOKING)

    result = project.run_live()

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize("style", ["sync", "async"])
def test_plain_string_reply_is_accepted(project: Project, style: str) -> None:
    prefix = "async " if style == "async" else ""
    project.agent(f"{prefix}def agent(history):\n    return 'Your table is booked.'\n")
    project.transcript(
        "plain",
        """\
        id: plain
        turns:
          - user: Book a table
            expect:
              reply_contains_all: [table, booked]
              tool_calls_exclude: [create_booking]
        """,
    )

    result = project.run_live()

    result.assert_outcomes(passed=1)


def test_unusable_return_value_fails_the_run_with_a_clear_message(project: Project) -> None:
    project.agent("return {'reply': 'booked'}\n")
    project.transcript("booking", BOOKING)

    result = project.run_live()

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "LLM eval ERROR: 1 of 1 run(s) could not evaluate the agent*",
            "  run 1: ERROR*",
            "    turn 1 [[]ERROR] user: 'Book a table for two'",
            "      error: AdapterError: the agent returned dict {'reply': 'booked'}; expected"
            " AgentReply(reply, tool_calls), a (reply, tool_calls) tuple, or a plain string*",
        ]
    )


def test_bad_tool_call_in_the_return_value_is_named(project: Project) -> None:
    project.agent("return 'booked', ['create_booking', 42]\n")
    project.transcript("booking", BOOKING)

    result = project.run_live()

    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "      error: AdapterError: the agent returned a bad tool call: a tool call must be"
            " a name, ToolCall(name, args) or (name, args); got 42*"
        ]
    )


def test_agent_fixture_returning_a_non_callable_is_a_clear_failure(project: Project) -> None:
    project.conftest("@pytest.fixture\ndef llm_eval_agent():\n    return 42\n")
    project.transcript("booking", BOOKING)

    result = project.run_live()

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "'llm_eval_agent' returned an unusable agent: expected an agent callable"
            " (history -> reply) or an adapter with start_conversation(); got int"
        ]
    )
    result.stdout.no_fnmatch_line("*INTERNALERROR*")


def test_history_offers_attribute_and_key_access_and_keeps_earlier_tool_calls(
    project: Project,
) -> None:
    project.conftest(
        """
        import json


        @pytest.fixture
        def llm_eval_agent():
            def agent(history):
                last = history[-1]
                assert last.role == last["role"] == "user"
                assert last.content == last["content"]
                if len(history) == 1:
                    return AgentReply(
                        "Booked, reference BK-7.",
                        [ToolCall("create_booking", {"party": 2}, output={"ref": "BK-7"})],
                    )
                # The history is plain OpenAI chat messages: it survives JSON as is.
                plain = json.loads(json.dumps(history))
                call = plain[1]["tool_calls"][0]
                summary = [
                    "roles=" + ",".join(m["role"] for m in plain),
                    "call=" + call["function"]["name"] + call["function"]["arguments"],
                    "result=" + plain[2]["content"],
                    "linked=" + str(plain[2]["tool_call_id"] == call["id"]),
                    "said=" + history[3].content,
                    "now=" + last.content,
                ]
                return " | ".join(summary)
            return agent
        """
    )
    project.transcript(
        "history",
        """\
        id: history
        turns:
          - user: Book for two
          - user: What did you do?
            expect:
              reply_contains_all:
                - "roles=user,assistant,tool,assistant,user |"
                - 'call=create_booking{"party": 2} |'
                - 'result={"ref": "BK-7"} |'
                - "linked=True |"
                - "said=Booked, reference BK-7. |"
                - "now=What did you do?"
        """,
    )

    result = project.run_live("-v")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*::history PASSED*"])


def test_runs_never_share_history(project: Project) -> None:
    project.conftest(
        """
        @pytest.fixture
        def llm_eval_agent():
            async def agent(history):
                users = sum(1 for m in history if m.role == "user")
                mine = sum(1 for m in history if m.role == "assistant")
                # Tampering with the list handed in must not leak into later turns or runs.
                history.append({"role": "user", "content": "injected"})
                history.clear()
                return f"users={users} assistants={mine}"
            return agent
        """
    )
    project.transcript(
        "fresh",
        """\
        id: fresh
        runs: 6
        threshold: 1.0
        turns:
          - user: one
            expect: {reply_contains_all: ["users=1 assistants=0"]}
          - user: two
            expect: {reply_contains_all: ["users=2 assistants=1"]}
          - user: three
            expect: {reply_contains_all: ["users=3 assistants=2"]}
        """,
    )

    result = project.run_live("--agent-eval-concurrency=3")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)


def test_failure_shows_the_users_words_reply_and_tools_seen(project: Project) -> None:
    project.agent(
        "return AgentReply('Sorry, fully booked.', [ToolCall('check_slots', {'n': 2})])\n"
    )
    project.transcript("booking", BOOKING)

    result = project.run_live()

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    turn 1 [[]FAIL] user: 'Book a table for two'",
            "      reply: 'Sorry, fully booked.'",
            '      tools: check_slots({"n": 2})',
            lit(
                "      - turns[0].expect.tool_calls_include (booking.yaml:6) fail: expected tool"
                " calls not made: ['create_booking'] (saw check_slots({\"n\": 2}))"
            ),
        ]
    )


PYTHON_VALUED_ARGS_AGENT = """
import datetime


@pytest.fixture
def llm_eval_agent():
    def agent(history):
        call = ToolCall("create_booking", {"day": datetime.date(2026, 12, 24), "party": 2})
        return AgentReply("booked", [call])
    return agent
"""


def test_tool_call_args_with_python_values_work_without_xdist(project: Project) -> None:
    project.conftest(PYTHON_VALUED_ARGS_AGENT)
    project.transcript("booking", BOOKING)
    project.transcript("other", BOOKING.replace("booking", "other").replace("[booked]", "[nope]"))

    result = project.run_live()

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(['      tools: create_booking({"day": "2026-12-24", "party": 2})'])


def test_tool_call_args_with_python_values_survive_xdist(project: Project) -> None:
    project.conftest(PYTHON_VALUED_ARGS_AGENT)
    project.transcript("booking", BOOKING)
    project.transcript("other", BOOKING.replace("booking", "other").replace("[booked]", "[nope]"))

    result = project.pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--agent-eval-live"
    )

    result.stdout.no_fnmatch_line("*INTERNALERROR*")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["      tools: create_booking(*2026*)"])


def test_stateful_agent_from_a_factory_is_fresh_for_every_run(project: Project) -> None:
    # docs/python-api.md: an agent keeping its own state is created per run with a factory.
    project.conftest(
        """
        from pytest_agent_eval.adapters.base import CallableAdapter

        created = []


        class Waiter:
            def __init__(self):
                created.append(self)
                self.turns = 0

            def respond(self, history):
                self.turns += 1
                return f"turn {self.turns} of waiter {len(created)}"


        @pytest.fixture
        def llm_eval_agent():
            return CallableAdapter(factory=lambda: Waiter().respond)
        """
    )
    project.transcript(
        "waiter",
        """\
        id: waiter
        runs: 4
        threshold: 1.0
        turns:
          - user: one
            expect: {reply_matches_all: ["^turn 1 of waiter [1-4]$"]}
          - user: two
            expect: {reply_matches_all: ["^turn 2 of waiter [1-4]$"]}
        """,
    )

    result = project.run_live()

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=1)
