"""Choosing which evals run: ``-k`` on transcript ids and tags, and ``--agent-eval-tags``."""

from __future__ import annotations

import pytest

from .conftest import Project

TAGGED = """\
    id: {tid}
    tags: {tags}
    turns:
      - user: hello
        expect:
          reply_contains_any: [hello]
"""


@pytest.fixture
def tagged(project: Project) -> Project:
    project.echo_agent("hello")
    project.transcript("booking", TAGGED.format(tid="booking_confirmation", tags="[smoke]"))
    project.transcript("refund", TAGGED.format(tid="refund_policy", tags="['gate:billing']"))
    project.transcript("chitchat", TAGGED.format(tid="small_talk", tags="[]"))
    project.test_file(
        "test_python.py",
        """
        @pytest.mark.agent_eval(tags=["smoke"])
        def test_python_quick(agent_eval):
            agent_eval.run_sync(turns=[Turn("hello")]).assert_threshold()


        @pytest.mark.agent_eval(tags=["slow"])
        def test_python_slow(agent_eval):
            agent_eval.run_sync(turns=[Turn("hello")]).assert_threshold()


        def test_ordinary():
            pass
        """,
    )
    return project


def test_k_selects_a_transcript_by_id(tagged: Project) -> None:
    result = tagged.run_live("-v", "-k", "refund_policy")

    result.assert_outcomes(passed=1, deselected=5)
    result.stdout.fnmatch_lines(["tests/evals/refund.yaml::refund_policy PASSED*"])


def test_k_selects_transcripts_by_tag(tagged: Project) -> None:
    result = tagged.run_live("-v", "-k", "smoke")

    result.stdout.fnmatch_lines(["tests/evals/booking.yaml::booking_confirmation PASSED*"])
    for other in ("refund_policy", "small_talk", "test_python_slow", "test_ordinary"):
        result.stdout.no_fnmatch_line(f"*{other}*")
    assert result.ret == pytest.ExitCode.OK


def test_k_with_a_gate_tag(tagged: Project) -> None:
    result = tagged.run_live("-v", "-k", "gate:billing")

    result.assert_outcomes(passed=1, deselected=5)
    result.stdout.fnmatch_lines(["tests/evals/refund.yaml::refund_policy PASSED*"])


def test_k_not_tag_excludes_tagged_transcripts(tagged: Project) -> None:
    result = tagged.run_live("-v", "-k", "not smoke")

    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/refund.yaml::refund_policy PASSED*",
            "tests/evals/chitchat.yaml::small_talk PASSED*",
            "tests/test_python.py::test_ordinary PASSED*",
        ]
    )
    result.stdout.no_fnmatch_line("*booking_confirmation*")


def test_agent_eval_tags_keeps_matching_evals_and_every_ordinary_test(tagged: Project) -> None:
    result = tagged.run_live("-v", "--agent-eval-tags", "smoke")

    result.assert_outcomes(passed=3, deselected=3)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/booking.yaml::booking_confirmation PASSED*",
            "tests/test_python.py::test_python_quick PASSED*",
            "tests/test_python.py::test_ordinary PASSED*",
        ]
    )
    result.stdout.no_fnmatch_line("*small_talk*")


@pytest.mark.parametrize(
    "args",
    [
        ["--agent-eval-tags", "gate:billing,slow"],
        ["--agent-eval-tags", "gate:billing", "--agent-eval-tags", "slow"],
    ],
    ids=["comma-separated", "repeated"],
)
def test_agent_eval_tags_accepts_several(tagged: Project, args: list[str]) -> None:
    result = tagged.run_live("-v", *args)

    result.assert_outcomes(passed=3, deselected=3)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/refund.yaml::refund_policy PASSED*",
            "tests/test_python.py::test_python_slow PASSED*",
            "tests/test_python.py::test_ordinary PASSED*",
        ]
    )


def test_tag_selection_also_applies_when_not_live(tagged: Project) -> None:
    result = tagged.run("--agent-eval-tags", "smoke")

    result.assert_outcomes(passed=1, skipped=2, deselected=3)


def test_a_transcript_file_or_node_id_can_be_given_on_the_command_line(tagged: Project) -> None:
    by_file = tagged.run_live("-v", "tests/evals/refund.yaml")
    by_node = tagged.run_live("-v", "tests/evals/booking.yaml::booking_confirmation")

    by_file.assert_outcomes(passed=1)
    by_file.stdout.fnmatch_lines(["tests/evals/refund.yaml::refund_policy PASSED*"])
    by_node.assert_outcomes(passed=1)
    by_node.stdout.fnmatch_lines(["tests/evals/booking.yaml::booking_confirmation PASSED*"])


def test_yaml_dirs_are_relative_to_the_rootdir_not_the_working_directory(
    tagged: Project, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Running from a subfolder still finds tests/evals through the rootdir's pyproject.
    monkeypatch.chdir(tagged.path / "tests")

    result = tagged.run_live("-v", "evals")

    result.assert_outcomes(passed=3)
    if pytest.__version__.split(".")[:2] != ["8", "0"]:
        # pytest 8.0 takes a pyproject.toml as rootdir marker only with [tool.pytest]; the
        # transcripts are found through pyproject.toml either way (asserted above).
        result.stdout.fnmatch_lines(["rootdir: *", "configfile: pyproject.toml"])


def test_m_agent_eval_selects_every_marked_eval(tagged: Project) -> None:
    evals = tagged.run_live("-m", "agent_eval")
    others = tagged.run_live("-m", "not agent_eval", "-v")

    evals.assert_outcomes(passed=5, deselected=1)
    others.assert_outcomes(passed=1, deselected=5)
    others.stdout.fnmatch_lines(["tests/test_python.py::test_ordinary PASSED*"])


def test_k_with_a_hyphenated_dotted_id(project: Project) -> None:
    project.echo_agent("hello")
    project.transcript("v2", TAGGED.format(tid="book-slot.v2", tags="[]"))
    project.transcript("v1", TAGGED.format(tid="book-slot.v1", tags="[]"))

    result = project.run_live("-v", "-k", "book-slot.v2")

    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["tests/evals/v2.yaml::book-slot.v2 PASSED*"])


def test_k_selects_python_evals_by_marker_tag(tagged: Project) -> None:
    result = tagged.run_live("-v", "-k", "smoke")

    result.assert_outcomes(passed=2, deselected=4)
    result.stdout.fnmatch_lines_random(
        [
            "tests/evals/booking.yaml::booking_confirmation PASSED*",
            "tests/test_python.py::test_python_quick PASSED*",
        ]
    )
