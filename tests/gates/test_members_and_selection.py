"""Groups in real pytest runs: plain tests marked into a group are members of it (as in the
earlier package), and what a selection leaves out never fails a gate, worded the same in the
terminal and every report."""

from __future__ import annotations

import textwrap

import pytest

CONFTEST = """
import pytest
from pytest_agent_eval import AgentReply


@pytest.fixture
def llm_eval_agent():
    async def agent(history):
        return AgentReply("booked" if "bad" not in history[-1].content else "sorry", [])

    return agent
"""

PLAIN_TESTS = """
import pytest


@pytest.mark.booking
def test_plain_ok():
    pass


@pytest.mark.booking
def test_plain_bad():
    assert "booked" in "sorry"


def test_named_in_must_pass():
    pass


@pytest.mark.booking
@pytest.mark.skip(reason="not today")
def test_plain_skipped():
    pass
"""


def _project(
    pytester: pytest.Pytester, groups: str, *, transcripts: dict[str, str], plain: str = ""
) -> None:
    pyproject = '[tool.agent_eval]\nyaml_dirs = ["tests/evals"]\n' + textwrap.dedent(groups)
    pytester.makefile(".toml", pyproject=pyproject)
    pytester.makeconftest(CONFTEST)
    evals = pytester.mkdir("tests").joinpath("evals")
    evals.mkdir()
    for name, user in transcripts.items():
        evals.joinpath(f"{name}.yaml").write_text(
            f"id: {name}\ntags: [gate:booking]\nturns:\n  - user: {user}\n"
            "    expect:\n      reply_contains_any: [booked]\n",
            encoding="utf-8",
        )
    if plain:
        pytester.path.joinpath("tests", "test_plain.py").write_text(plain, encoding="utf-8")


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest("-p", "no:cacheprovider", "--agent-eval-live", *args)


MEMBERS = """
[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
pytest_markers = ["booking"]
must_pass = ["test_named_in_must_pass", "test_plain_ok"]
threshold = 0.6
"""


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["serial", "xdist"])
def test_plain_tests_marked_into_a_group_are_members(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    _project(pytester, MEMBERS, transcripts={"booking_ok": "Book"}, plain=PLAIN_TESTS)

    result = _run(pytester, "--agent-eval-report=r.md", *xdist)

    result.assert_outcomes(passed=3, failed=1, skipped=1)
    # The eval and the two marked plain tests that ran are counted (the skipped one is not),
    # the plain test named in must_pass joins too; the failing plain member is absorbed by
    # the passing group, as the earlier package did.
    result.stdout.fnmatch_lines(
        [
            "booking: 3/4 passed (75%) >= 60% required -- PASSED",
            "  failures: test_plain_bad",
            "  must_pass: test_named_in_must_pass ok",
            "  must_pass: test_plain_ok ok",
            "exit code overridden to 0: 1 eval failure(s) absorbed by passing groups: "
            "tests/test_plain.py::test_plain_bad",
        ]
    )
    assert result.ret == 0
    assert "did not run" not in result.stdout.str()
    markdown = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert "| booking | 3 | 4 | 0.75 | 0.60 | ✅ PASS |" in markdown
    # The eval tables list evals only, not the plain tests.
    assert "test_plain_ok" not in markdown.split("## Groups")[0]


def test_a_failing_plain_member_with_a_setup_error_is_never_absorbed(
    pytester: pytest.Pytester,
) -> None:
    plain = """
import pytest


@pytest.fixture
def broken():
    raise RuntimeError("no database")


@pytest.mark.booking
def test_needs_db(broken):
    pass
"""
    _project(pytester, MEMBERS.replace(', "test_plain_ok"', ""), transcripts={"ok": "Book"})
    pytester.path.joinpath("tests", "test_plain.py").write_text(plain, encoding="utf-8")
    pytester.path.joinpath("tests", "test_more.py").write_text(
        "def test_named_in_must_pass():\n    pass\n", encoding="utf-8"
    )

    result = _run(pytester)

    result.assert_outcomes(passed=2, errors=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 2/2 passed (100%) >= 60% required -- PASSED",
            "  errored (verdict not reached, not counted): test_needs_db",
            "1 error(s) (never absorbed): tests/test_plain.py::test_needs_db; "
            "gates did not change the outcome (exit status 1)",
        ]
    )


SELECTION = """
[tool.agent_eval.groups.booking]
tags = ["gate:booking"]
must_pass = ["bad_case"]
enforce = true
"""


@pytest.mark.parametrize(
    "how",
    [
        ("-k", "good"),
        ("--agent-eval-tags", "smoke"),
        ("--deselect", "DESELECT"),
        ("tests/evals/good_case.yaml",),
        ("tests/evals/good_case.yaml::good_case",),
    ],
)
def test_a_must_pass_entry_left_out_by_the_selection_warns_and_never_fails(
    pytester: pytest.Pytester, how: tuple[str, ...]
) -> None:
    """``-k``, tags, deselection, or the file or node id of a test given as a path."""
    _project(pytester, SELECTION, transcripts={"good_case": "Book", "bad_case": "Book, bad"})
    evals = pytester.path / "tests" / "evals"
    if how[0] == "--agent-eval-tags":
        good = evals / "good_case.yaml"
        good.write_text(good.read_text().replace("[gate:booking]", "[gate:booking, smoke]"))
    args = how if how[0] != "--deselect" else ("--deselect", "tests/evals/bad_case.yaml::bad_case")

    result = _run(pytester, *args, "--agent-eval-report=r.md", "--agent-eval-html=r.html")

    result.assert_outcomes(passed=1)
    assert result.ret == 0
    warning = "  WARNING: must_pass entry 'bad_case' did not run"
    result.stdout.fnmatch_lines(
        [
            "booking: 1/1 passed (100%) >= 100% required -- PASSED",
            warning,
            "  enforced: a FAILED here fails the run",
            "gates did not change the outcome (exit status 0)",
        ]
    )
    out = result.stdout.str()
    assert "FAILED" not in out.split("group summary")[1].replace("a FAILED here", "")
    # The same words in both reports.
    markdown = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert f"- booking: {warning.strip()}" in markdown
    assert "| booking | 1 | 1 | 1.00 | 1.00 | ✅ PASS |" in markdown
    html = (pytester.path / "r.html").read_text(encoding="utf-8")
    assert "WARNING: must_pass entry &#x27;bad_case&#x27; did not run" in html


def test_in_a_full_run_a_must_pass_entry_that_did_not_run_fails(
    pytester: pytest.Pytester,
) -> None:
    """Nothing was left out by a selection: an entry that names nothing that ran (a typo, a
    removed eval) fails its enforced group."""
    _project(
        pytester,
        SELECTION.replace('"bad_case"', '"removed_case"'),
        transcripts={"good_case": "Book"},
    )

    result = _run(pytester)

    result.assert_outcomes(passed=1)
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "booking: 1/1 passed (100%) >= 100% required -- FAILED",
            "  must_pass: removed_case did not run (counts as FAILED)",
            "enforced group(s) failed: booking (exit status 1)",
        ]
    )


def test_a_group_whose_members_all_were_skipped_says_so(pytester: pytest.Pytester) -> None:
    _project(
        pytester,
        """
        [tool.agent_eval.groups.booking]
        pytest_markers = ["booking"]
        enforce = true
        """,
        transcripts={"other": "Book"},
    )
    pytester.path.joinpath("tests", "test_plain.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.booking\n@pytest.mark.skip(reason='later')\ndef test_a():\n    pass\n\n"
        "@pytest.mark.booking\n@pytest.mark.skip(reason='later')\ndef test_b():\n    pass\n",
        encoding="utf-8",
    )

    result = _run(pytester, "--agent-eval-report=r.md")

    result.assert_outcomes(passed=1, skipped=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines(["booking: SKIPPED (2 matched, all skipped)"])
    markdown = (pytester.path / "r.md").read_text(encoding="utf-8")
    assert "| booking | 0 | 0 | - | 1.00 | ⏭ SKIPPED |" in markdown
