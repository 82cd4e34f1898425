"""Every YAML expectation, passing and failing, with the reason users read on failure.

Each test writes several transcripts against one scripted agent (the user's words pick the
reply and tool calls) and checks each transcript's verdict and failure message.
"""

from __future__ import annotations

import pytest

from .conftest import Project, lit

SCRIPTED_AGENT = """
SCRIPT = {
    "plain": AgentReply("Your table is BOOKED for Tuesday at 10:30, ref BK-4821."),
    "silent": AgentReply("Done."),
    "a-b-c": AgentReply("ok", ["search", "check_slots", "create_booking"]),
    "c-a": AgentReply("ok", ["create_booking", "search"]),
    "twice": AgentReply(
        "ok",
        [
            ToolCall("book_slot", {"time": "9am", "party": 2}),
            ToolCall("book_slot", {"time": "10am", "party": 2, "guest": {"name": "Ana", "vip": True}}),
        ],
    ),
    "exact": AgentReply("ok", [ToolCall("book_slot", {"time": "10am"})]),
    "names-only": AgentReply("ok", ["book_slot"]),
}


@pytest.fixture
def llm_eval_agent():
    async def agent(history):
        return SCRIPT[history[-1].content]
    return agent
"""


def _transcript(project: Project, tid: str, user: str, expect: str) -> None:
    body = "\n".join("      " + line for line in expect.strip().splitlines())
    project.transcript(tid, f"id: {tid}\nturns:\n  - user: {user}\n    expect:\n{body}\n")


def _run(project: Project, cases: dict[str, tuple[str, str]]) -> pytest.RunResult:
    project.conftest(SCRIPTED_AGENT)
    for tid, (user, expect) in cases.items():
        _transcript(project, tid, user, expect)
    return project.run_live("-v")


def _verdicts(result: pytest.RunResult, passed: list[str], failed: list[str]) -> None:
    result.assert_outcomes(passed=len(passed), failed=len(failed))
    result.stdout.fnmatch_lines_random(
        [f"tests/evals/{t}.yaml::{t} PASSED*" for t in passed]
        + [f"tests/evals/{t}.yaml::{t} FAILED*" for t in failed]
    )


def test_reply_contains_any_and_all_are_case_insensitive(project: Project) -> None:
    result = _run(
        project,
        {
            "any_ok": ("plain", "reply_contains_any: [cancelled, booked]"),
            "all_ok": ("plain", "reply_contains_all: [TUESDAY, table, bk-4821]"),
            "any_bad": ("plain", "reply_contains_any: [cancelled, refunded]"),
            "all_bad": ("plain", "reply_contains_all: [tuesday, wednesday, friday]"),
        },
    )

    _verdicts(result, passed=["any_ok", "all_ok"], failed=["any_bad", "all_bad"])
    reply = "(reply was 'Your table is BOOKED for Tuesday at 10:30, ref BK-4821.')"
    result.stdout.fnmatch_lines_random(
        [
            lit(
                "      - turns[0].expect.reply_contains_any (any_bad.yaml:5) fail: reply "
                f"contains none of ['cancelled', 'refunded'] {reply}"
            ),
            lit(
                "      - turns[0].expect.reply_contains_all (all_bad.yaml:5) fail: reply is "
                f"missing ['wednesday', 'friday'] {reply}"
            ),
        ]
    )


def test_reply_matches_any_and_all(project: Project) -> None:
    result = _run(
        project,
        {
            # Quoted and with doubled backslashes, as the docs tell users to write them.
            "match_any_ok": ("plain", 'reply_matches_any: ["ref (BK|XX)-\\\\d{4}", "nope"]'),
            "match_all_ok": ("plain", 'reply_matches_all: ["\\\\d{1,2}:\\\\d{2}", "^your"]'),
            "single_quoted": ("plain", "reply_matches_any: ['bk-\\d+']"),
            "match_any_bad": ("plain", 'reply_matches_any: ["^booked", "\\\\bwed"]'),
            "match_all_bad": ("plain", 'reply_matches_all: ["tuesday", "\\\\d{3}:", "am$"]'),
        },
    )

    _verdicts(
        result,
        passed=["match_any_ok", "match_all_ok", "single_quoted"],
        failed=["match_any_bad", "match_all_bad"],
    )
    result.stdout.fnmatch_lines_random(
        [
            lit(
                "      - turns[0].expect.reply_matches_any (match_any_bad.yaml:5) fail: reply "
                "matches none of the patterns ['^booked', '\\bwed']"
            )
            + " (reply was *)",
            lit(
                "      - turns[0].expect.reply_matches_all (match_all_bad.yaml:5) fail: reply "
                "does not match ['\\d{3}:', 'am$']"
            )
            + " (reply was *)",
        ]
    )


def test_tool_calls_include_and_exclude(project: Project) -> None:
    result = _run(
        project,
        {
            "include_ok": ("a-b-c", "tool_calls_include: [create_booking, search]"),
            "exclude_ok": ("a-b-c", "tool_calls_exclude: [cancel_booking]"),
            "no_tools_ok": ("silent", "tool_calls_exclude: [create_booking]"),
            "include_bad": ("a-b-c", "tool_calls_include: [search, send_email, refund]"),
            "exclude_bad": ("a-b-c", "tool_calls_exclude: [check_slots, refund]"),
            "none_called": ("silent", "tool_calls_include: [create_booking]"),
        },
    )

    _verdicts(
        result,
        passed=["include_ok", "exclude_ok", "no_tools_ok"],
        failed=["include_bad", "exclude_bad", "none_called"],
    )
    seen = "(saw search(), check_slots(), create_booking())"
    result.stdout.fnmatch_lines_random(
        [
            lit(
                "      - turns[0].expect.tool_calls_include (include_bad.yaml:5) fail: expected "
                "tool calls not made: ['send_email', 'refund'] " + seen
            ),
            lit(
                "      - turns[0].expect.tool_calls_exclude (exclude_bad.yaml:5) fail: forbidden "
                "tool calls made: ['check_slots'] " + seen
            ),
            lit(
                "      - turns[0].expect.tool_calls_include (none_called.yaml:5) fail: expected "
                "tool calls not made: ['create_booking'] (saw no tool calls)"
            ),
        ]
    )


def test_tool_calls_ordered_is_a_subsequence_check(project: Project) -> None:
    result = _run(
        project,
        {
            # Gaps are allowed: check_slots between the two does not matter.
            "gaps_ok": (
                "a-b-c",
                "tool_calls_include: [search, create_booking]\ntool_calls_ordered: true",
            ),
            "unordered_ok": (
                "c-a",
                "tool_calls_include: [search, create_booking]\ntool_calls_ordered: false",
            ),
            "wrong_order": (
                "c-a",
                "tool_calls_include: [search, create_booking]\ntool_calls_ordered: true",
            ),
            "ordered_missing": (
                "c-a",
                "tool_calls_include: [search, refund]\ntool_calls_ordered: true",
            ),
        },
    )

    _verdicts(result, passed=["gaps_ok", "unordered_ok"], failed=["wrong_order", "ordered_missing"])
    result.stdout.fnmatch_lines_random(
        [
            lit(
                "      - turns[0].expect.tool_calls_ordered (wrong_order.yaml:6) fail: tool calls "
                "not in the order ['search', 'create_booking'] (saw create_booking(), search())"
            ),
            # A missing tool is reported as missing, and the order as one that cannot hold
            # because of it, not as out of order.
            lit(
                "      - turns[0].expect.tool_calls_include (ordered_missing.yaml:5) fail: "
                "expected tool calls not made: ['refund'] (saw create_booking(), search())"
            ),
            lit(
                "      - turns[0].expect.tool_calls_ordered (ordered_missing.yaml:6) fail: the "
                "order ['search', 'refund'] cannot hold: ['refund'] not called (saw "
                "create_booking(), search())"
            ),
        ]
    )
    result.stdout.no_fnmatch_line("*not in the order ['search', 'refund']*")


def test_tool_calls_args_subset_and_exact(project: Project) -> None:
    result = _run(
        project,
        {
            # The second call matches: any matching call is enough.
            "subset_any_call": (
                "twice",
                "tool_calls_args:\n  - tool: book_slot\n    args: {time: 10am}",
            ),
            "subset_nested": (
                "twice",
                "tool_calls_args:\n  - tool: book_slot\n    args: {guest: {name: Ana}}",
            ),
            "exact_ok": (
                "exact",
                "tool_calls_args:\n  - tool: book_slot\n    args: {time: 10am}\n    mode: exact",
            ),
            "exact_extra_keys": (
                "twice",
                "tool_calls_args:\n  - tool: book_slot\n    args: {time: 9am}\n    mode: exact",
            ),
            "subset_no_match": (
                "twice",
                "tool_calls_args:\n  - tool: book_slot\n    args: {time: 11am, party: 2}",
            ),
            "not_called": (
                "exact",
                "tool_calls_args:\n  - tool: cancel_slot\n    args: {time: 10am}",
            ),
            "args_not_captured": (
                "names-only",
                "tool_calls_args:\n  - tool: book_slot\n    args: {time: 10am}",
            ),
        },
    )

    _verdicts(
        result,
        passed=["subset_any_call", "subset_nested", "exact_ok"],
        failed=["exact_extra_keys", "subset_no_match", "not_called", "args_not_captured"],
    )
    result.stdout.fnmatch_lines_random(
        [
            lit(
                "      - turns[0].expect.tool_calls_args[0] (exact_extra_keys.yaml:6) fail: no "
                "call to book_slot has matching arguments (exact): call 1: party: not expected "
                "(got 2); call 2: time: expected '9am', got '10am'; party: not expected (got 2); "
                "guest: not expected (got {'name': 'Ana', 'vip': True}) (saw "
                'book_slot({"party": 2, "time": "9am"}), book_slot({"guest": {"name": "Ana", '
                '"vip": true}, "party": 2, "time": "10am"}))'
            ),
            lit(
                "      - turns[0].expect.tool_calls_args[0] (subset_no_match.yaml:6) fail: no "
                "call to book_slot has matching arguments (subset): call 1: time: expected "
                "'11am', got '9am'; call 2: time: expected '11am', got '10am' (saw *"
            ).replace("[*]", "*"),
            lit(
                "      - turns[0].expect.tool_calls_args[0] (not_called.yaml:6) fail: cancel_slot "
                'was not called, so its arguments (subset of {"time": "10am"}) could not match'
                ' (saw book_slot({"time": "10am"}))'
            ),
            lit(
                "      - turns[0].expect.tool_calls_args[0] (args_not_captured.yaml:6) fail: "
                "book_slot was called but its arguments were not captured; return "
                "ToolCall(name, args) from the agent or use an adapter that records them"
            ),
        ]
    )


def test_turn_without_expect_only_needs_the_agent_not_to_crash(project: Project) -> None:
    project.conftest(SCRIPTED_AGENT)
    project.transcript(
        "smoke",
        """\
        id: smoke
        turns:
          - user: plain
          - user: silent
            expect: {}
          - user: unknown words
        """,
    )

    result = project.run_live()

    # The third turn's KeyError is an agent crash: that fails the run.
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "    turn 1 [[]ok] user: 'plain'",
            "    turn 2 [[]ok] user: 'silent'",
            "    turn 3 [[]CRASHED] user: 'unknown words'",
            "      crashed: KeyError: 'unknown words' (at conftest.py:*",
        ]
    )
