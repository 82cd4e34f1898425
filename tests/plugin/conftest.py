"""Helpers for the pytester tests: a tiny user project with pyproject, agent conftest, evals."""

from __future__ import annotations

import textwrap

import pytest

__all__ = ["Project", "lit"]


def lit(text: str) -> str:
    """``text`` as an fnmatch pattern matching itself (brackets, ``?`` and ``*`` escaped)."""
    return text.replace("[", "[[]").replace("?", "[?]").replace("*", "[*]")


class Project:
    """A user project inside ``pytester``'s folder: ``pyproject.toml``, ``tests/conftest.py``
    with the agent, and YAML transcripts under ``tests/evals``."""

    def __init__(self, pytester: pytest.Pytester) -> None:
        self.pytester = pytester
        self.path = pytester.path
        self.pyproject("")

    def pyproject(self, table: str) -> None:
        """Write ``[tool.agent_eval]`` with ``table`` as its body."""
        body = textwrap.dedent(table).strip()
        (self.path / "pyproject.toml").write_text(f"[tool.agent_eval]\n{body}\n")

    def conftest(self, source: str, folder: str = "tests") -> None:
        """Write ``folder/conftest.py``; ``source`` is dedented and follows the common imports."""
        target = self.path / folder / "conftest.py"
        target.parent.mkdir(parents=True, exist_ok=True)
        header = (
            "import pytest\nfrom pytest_agent_eval import AgentReply, ToolCall, Turn, Expect\n\n"
        )
        target.write_text(header + textwrap.dedent(source))

    def agent(self, body: str) -> None:
        """An ``llm_eval_agent`` fixture whose agent is ``def agent(history):`` + ``body``
        (write ``async def`` inside ``body`` to replace it)."""
        code = textwrap.dedent(body)
        if not code.lstrip().startswith(("def agent", "async def agent")):
            code = "def agent(history):\n" + textwrap.indent(code, "    ")
        self.conftest(
            "@pytest.fixture\n"
            "def llm_eval_agent():\n" + textwrap.indent(code, "    ") + "    return agent\n"
        )

    def echo_agent(self, reply: str, calls: str = "[]") -> None:
        """An agent returning ``AgentReply(reply, calls)`` every turn (``calls`` is code)."""
        self.agent(f"return AgentReply({reply!r}, {calls})\n")

    def transcript(self, name: str, text: str, folder: str = "tests/evals") -> None:
        """Write ``folder/name`` (``.yaml`` added when there is no suffix)."""
        if "." not in name:
            name += ".yaml"
        target = self.path / folder / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(textwrap.dedent(text).lstrip())

    def test_file(self, name: str, source: str) -> None:
        """A Python test module under ``tests/``."""
        target = self.path / "tests" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        header = (
            "import pytest\nfrom pytest_agent_eval import AgentReply, ToolCall, Turn, Expect\n\n"
        )
        target.write_text(header + textwrap.dedent(source))

    def run(self, *args: str) -> pytest.RunResult:
        """Run pytest in-process with ``args``."""
        return self.pytester.runpytest("-p", "no:cacheprovider", *args)

    def run_live(self, *args: str) -> pytest.RunResult:
        """Run pytest in-process with ``--agent-eval-live``."""
        return self.run("--agent-eval-live", *args)


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Project:
    """A fresh user project; EVAL_LIVE is cleared so the outer environment cannot leak in."""
    monkeypatch.delenv("EVAL_LIVE", raising=False)
    return Project(pytester)
