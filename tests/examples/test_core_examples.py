"""The core example projects in examples/ run, as users would run them, through the plugin.

Each example is copied into pytester's folder and run with ``--agent-eval-live``. A second set
of tests breaks one expectation per example to show the checks bite, with the message users see.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from conftest import ExampleProjects

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

# example -> the tests that pass ("path::name"), and the ones failing on purpose.
EXPECTED: dict[str, tuple[list[str], list[str]]] = {
    "single-turn": (
        [
            "tests/evals/opening_hours.yaml::opening_hours",
            "tests/evals/vegan_options.yaml::vegan_options",
        ],
        ["tests/evals/refund_policy.yaml::refund_policy"],
    ),
    "multi-turn": (
        [
            "tests/evals/asks_for_party_size.yaml::asks_for_party_size",
            "tests/evals/book_then_cancel.yaml::book_then_cancel",
        ],
        [],
    ),
    "tool-calls": (
        [
            "tests/evals/book_and_email.yaml::book_and_email",
            "tests/evals/full_slot.yaml::full_slot_moves_an_hour",
        ],
        [],
    ),
    "regex": (["tests/evals/booking_reference.yaml::booking_reference"], []),
    "python-api": (
        [
            "tests/evals/quick_booking.yaml::quick_booking",
            "tests/test_booking.py::test_books_small_groups[[]1]",
            "tests/test_booking.py::test_books_small_groups[[]4]",
            "tests/test_booking.py::test_books_small_groups[[]8]",
            "tests/test_booking.py::test_large_groups_are_sent_to_the_phone[[]9]",
            "tests/test_booking.py::test_large_groups_are_sent_to_the_phone[[]20]",
            "tests/test_booking.py::test_asks_for_party_size_then_books",
        ],
        [],
    ),
}


@pytest.fixture(autouse=True)
def _not_live_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("EVAL_LIVE", raising=False)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_is_a_small_project(name: str) -> None:
    root = EXAMPLES / name
    config = tomllib.loads((root / "pyproject.toml").read_text())
    assert config["tool"]["agent_eval"]["yaml_dirs"] == ["tests/evals"]
    assert (root / "tests" / "conftest.py").is_file()
    assert sorted((root / "tests" / "evals").glob("*.yaml"))
    readme = (root / "README.md").read_text().strip().splitlines()
    assert 5 <= len(readme) <= 10, f"{name}/README.md has {len(readme)} lines"


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs_live(pytester: pytest.Pytester, examples: ExampleProjects, name: str) -> None:
    examples.copy(name)
    passed, failed = EXPECTED[name]

    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-live", "-v")

    result.assert_outcomes(passed=len(passed), failed=len(failed))
    result.stdout.fnmatch_lines_random(
        [f"{test} PASSED*" for test in passed] + [f"{test} FAILED*" for test in failed]
    )
    assert result.ret == (pytest.ExitCode.TESTS_FAILED if failed else pytest.ExitCode.OK)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_is_skipped_with_one_line_when_not_live(
    pytester: pytest.Pytester, examples: ExampleProjects, name: str
) -> None:
    examples.copy(name)
    passed, failed = EXPECTED[name]
    total = len(passed) + len(failed)

    result = pytester.runpytest("-p", "no:cacheprovider")

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(skipped=total)
    result.stdout.fnmatch_lines(
        [f"{total} eval test(s) skipped — live mode is off. Pass --agent-eval-live*"]
    )


def test_single_turn_known_failure_explains_itself(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    # Documented in examples/single-turn/README.md: refund_policy fails on purpose.
    examples.copy("single-turn")

    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-live")

    result.stdout.fnmatch_lines(
        [
            "LLM eval failed: score=0.00 < threshold=1.00 (0/3 runs passed)",
            "*",
            "  run 1: FAILED*",
            "    turn 1 [[]FAIL] user: 'Can I get a refund for a cancelled dinner?'",
            "      reply: 'Sorry, I can only answer questions about opening hours, parking and the"
            " menu.'",
            "      - turns[[]0].expect.reply_contains_any (refund_policy.yaml:*) fail: reply contains"
            " none of [[]'refund'] (reply was *)",
        ]
    )


def test_single_turn_is_green_without_the_known_failure(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    examples.copy("single-turn")

    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--agent-eval-live", "-k", "not known-failure"
    )

    assert result.ret == pytest.ExitCode.OK
    result.assert_outcomes(passed=2, deselected=1)


def test_multi_turn_readme_quick_check(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    examples.copy("multi-turn")

    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--agent-eval-live", "--agent-eval-runs", "1"
    )

    result.assert_outcomes(passed=2)


def test_python_api_readme_smoke_selection(
    pytester: pytest.Pytester, examples: ExampleProjects
) -> None:
    examples.copy("python-api")

    result = pytester.runpytest(
        "-p", "no:cacheprovider", "--agent-eval-live", "--agent-eval-tags", "smoke", "-v"
    )

    # The three parametrized cases of the smoke-tagged test; everything else is deselected.
    result.assert_outcomes(passed=3, deselected=4)
    result.stdout.fnmatch_lines_random(
        [f"tests/test_booking.py::test_books_small_groups[[]{n}] PASSED*" for n in (1, 4, 8)]
    )


# example, file, text replaced, replacement, a line of the failure users then see.
BREAKAGES = [
    (
        "multi-turn",
        "tests/evals/book_then_cancel.yaml",
        "args: {reference: BK-2041}",
        "args: {reference: BK-9999}",
        "      - turns[[]2].expect.tool_calls_args[[]0] (book_then_cancel.yaml:23) fail: no call"
        " to cancel_booking has matching arguments (subset): reference: expected 'BK-9999', got"
        ' \'BK-2041\' (saw cancel_booking({"reference": "BK-2041"}))',
    ),
    (
        "tool-calls",
        "tests/evals/book_and_email.yaml",
        "tool_calls_include: [check_availability, create_booking, send_email]",
        "tool_calls_include: [check_availability, send_email, create_booking]",
        "      - turns[[]0].expect.tool_calls_ordered (book_and_email.yaml:8) fail: tool calls not"
        " in the order [[]'check_availability', 'send_email', 'create_booking'] (saw *)",
    ),
    (
        "tool-calls",
        "tests/evals/book_and_email.yaml",
        'args: {party: 2, date: tomorrow, time: "19:00"}',
        'args: {party: 2, time: "19:00"}',
        "      - turns[[]0].expect.tool_calls_args[[]1] (book_and_email.yaml:15) fail: no call to"
        " create_booking has matching arguments (exact): date: not expected (got 'tomorrow')"
        " (saw *)",
    ),
    (
        "regex",
        "tests/evals/booking_reference.yaml",
        "'^(sure|great|done)\\b'",
        "'^(great|done)\\b'",
        "      - turns[[]0].expect.reply_matches_all (booking_reference.yaml:*) fail: reply does"
        " not match [[]'^(great|done)\\b'] (reply was *)",
    ),
    (
        "python-api",
        "tests/test_booking.py",
        'reply_contains_any=["call us"]',
        'reply_contains_any=["email us"]',
        # A turn built in Python: its check is named by its key, without a line.
        "      - turns[[]0].expect.reply_contains_any fail: reply contains none of [[]'email us']"
        " (reply was *)",
    ),
]


@pytest.mark.parametrize(
    ("name", "path", "old", "new", "line"),
    BREAKAGES,
    ids=[f"{b[0]}-{i}" for i, b in enumerate(BREAKAGES)],
)
def test_breaking_an_expectation_fails_the_example(
    pytester: pytest.Pytester,
    examples: ExampleProjects,
    name: str,
    path: str,
    old: str,
    new: str,
    line: str,
) -> None:
    root = examples.copy(name)
    examples.edit(root / path, old, new, 1)

    result = pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-live")

    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*LLM eval failed: score=0.00 < threshold=*", "*", line])
