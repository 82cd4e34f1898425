"""``agent-eval capacity`` with injected provider faults (``--fault-rate``) and conversations
that stop answering: each counted per step under its own cause, with the K where it began.

The agents here ask LiveKit's real ``ScriptedLLM`` stand-in through LiveKit's own LLM stream,
whose retries (or none) decide whether a 429 or a timeout ends the conversation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_agent_eval.__main__ import main

pytest.importorskip("livekit.agents", reason="needs the livekit extra")

TRANSCRIPT = """\
id: chat
turns:
  - user: "hello"
  - user: "book a table"
"""

AGENTS = '''\
import asyncio

from livekit.agents import APIConnectOptions, llm

from pytest_agent_eval.adapters.livekit import Rule, ScriptedLLM

SCRIPTED = ScriptedLLM([Rule(r".*", reply="ok")])


async def _ask(retries: int) -> str:
    ctx = llm.ChatContext.empty()
    ctx.add_message(role="user", content="hello")
    options = APIConnectOptions(max_retry=retries, retry_interval=0.0, timeout=5.0)
    words = []
    async with SCRIPTED.chat(chat_ctx=ctx, conn_options=options) as stream:
        async for chunk in stream:
            if chunk.delta is not None and chunk.delta.content:
                words.append(chunk.delta.content)
    return "".join(words)


async def fragile(history):
    """No retries: the provider's first 429 or timeout ends the conversation."""
    return await _ask(0)


async def retrying(history):
    """Retries as a production client does: a fault costs time, not the conversation."""
    return await _ask(20)


class TwoLines:
    """Serves two callers; from the third on the agent never answers (it hangs, no error)."""

    consumes_audio = False

    async def start_conversation(self, info):
        return Line(hangs=info.run_index >= 2)


class Line:
    def __init__(self, hangs):
        self.hangs = hangs

    async def respond(self, turn):
        if self.hangs:
            await asyncio.Event().wait()
        return await _ask(0)

    async def aclose(self):
        return None
'''


def _project(tmp_path: Path) -> tuple[Path, str]:
    module = f"fault_agents_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(AGENTS)
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "chat.yaml").write_text(TRANSCRIPT)
    (tmp_path / "pyproject.toml").write_text('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    return tmp_path, module


def _run(project: Path, *args: str) -> int:
    return main(
        [
            "capacity", "--rootdir", str(project), "--json", str(project / "out.json"),
            "--html", str(project / "out.html"), "--loop-lag-ms", "5000",
            "--p95-latency-ms", "60000", "--fault-timeout-s", "0.05", *args,
        ]
    )  # fmt: skip


def test_retried_faults_are_counted_and_cost_no_conversation(tmp_path: Path) -> None:
    project, module = _project(tmp_path)
    code = _run(
        project, "--agent", f"{module}:retrying", "--steps", "1,2,4", "--repeats", "1",
        "--fault-rate", "0.4",
    )  # fmt: skip
    assert code == 0
    data = json.loads((project / "out.json").read_text())
    assert data["plan"]["fault_rate"] == 0.4
    steps = data["steps"]
    assert [s["turns"] for s in steps] == [2, 4, 8]
    injected = [sum(s["faults_injected"].values()) for s in steps]
    # Draws are seeded per step (K=4's sequence fails 3 of its 11 requests, both kinds).
    assert steps[2]["faults_injected"] == {"429": 2, "timeout": 1}
    for step, faults in zip(steps, injected, strict=True):
        # Every request was a turn or a retry after a fault: the stand-in counted each.
        assert step["provider_requests"] == step["turns"] + faults
        assert step["failures"] == [] and step["fault_failures"] == []
        assert step["within_budget"] is True
    assert data["began_at_k"]["fault_failures"] is None


def test_a_conversation_a_fault_ends_is_the_faults_not_the_agents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, module = _project(tmp_path)
    code = _run(
        project, "--agent", f"{module}:fragile", "--steps", "1,2", "--repeats", "1",
        "--fault-rate", "1",
    )  # fmt: skip
    # Nothing could be evaluated: an error of the run (2), not a failed gate or agent.
    assert code == 2
    err = capsys.readouterr().err
    assert "could not evaluate the agent at K=1: injected faults ended every conversation" in err
    data = json.loads((project / "out.json").read_text())
    (step,) = data["steps"]
    assert step["failures"] == [] and step["unanswered"] == []
    assert len(step["fault_failures"]) == 1
    assert "injected provider fault" in step["fault_failures"][0]
    assert step["provider_requests"] == sum(step["faults_injected"].values()) == 1
    assert data["began_at_k"] == {
        "failures": None,
        "stopped_answering": None,
        "refused": None,
        "past_threshold": None,
        "fault_failures": 1,
    }


def test_sessions_that_stop_answering_are_named_with_the_step_they_began(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, module = _project(tmp_path)
    code = _run(
        project, "--agent", f"{module}:TwoLines", "--steps", "1,2,4", "--repeats", "1",
        "--answer-timeout-s", "0.5", "--refine", "0",
    )  # fmt: skip
    assert code == 0
    data = json.loads((project / "out.json").read_text())
    assert [s["k"] for s in data["steps"]] == [1, 2, 4]
    four = data["steps"][2]
    assert len(four["unanswered"]) == 2  # sessions 3 and 4
    assert all("no answer within 0.5 s" in line for line in four["unanswered"])
    assert four["failures"] == []
    assert "2 conversation(s) stopped answering" in four["over_budget"]
    assert data["began_at_k"]["stopped_answering"] == 4
    assert data["knee"]["k"] == 2
    assert "stopped answering began at K=4" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--fault-rate", "1.5"], "fault_rate must be between 0 and 1"),
        (["--answer-timeout-s", "0"], "answer_timeout_s must be > 0"),
    ],
)
def test_bad_fault_options_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    project, module = _project(tmp_path)
    assert _run(project, "--agent", f"{module}:retrying", *args) == 2
    assert message in capsys.readouterr().err
