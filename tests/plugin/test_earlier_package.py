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
