"""The reports show the handoffs and the active agent of every turn whose record has them,
not only when a check (``agent_is``, ``handoff_to``) asks."""

from __future__ import annotations

from .conftest import Project


def test_handoffs_and_the_active_agent_are_in_both_reports_without_a_check(
    project: Project,
) -> None:
    project.conftest(
        """
        from pytest_agent_eval.models import Handoff

        @pytest.fixture
        def llm_eval_agent():
            def agent(history):
                return AgentReply(
                    "Billing here.",
                    [],
                    handoffs=[Handoff("Greeter", "Billing")],
                    active_agent="Billing",
                )
            return agent
        """
    )
    project.transcript(
        "route",
        """
        id: route
        turns:
          - user: My invoice is wrong.
            expect:
              reply_contains_any: [billing]
        """,
    )

    result = project.run_live("--agent-eval-report=r.md", "--agent-eval-html=r.html")

    result.assert_outcomes(passed=1)
    markdown = (project.path / "r.md").read_text(encoding="utf-8")
    assert "- Handoffs: Greeter -> Billing" in markdown
    assert "- Active agent: Billing" in markdown
    html = (project.path / "r.html").read_text(encoding="utf-8")
    assert "<dt>Handoffs</dt>" in html and "Greeter -&gt; Billing" in html
    assert "<dt>Active agent</dt>" in html
