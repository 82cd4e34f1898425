"""A project written for the earlier package (0.3.0), run unchanged: what it types, what it
reads in the terminal, and what its CI greps for."""

from __future__ import annotations

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

    result.assert_outcomes(failed=1)
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
