"""``agent-eval capacity`` on small real agents (plain async callables): the reports, the gate,
and the errors bad input gets. The voice frameworks have their own files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_agent_eval.__main__ import main

TRANSCRIPT = """\
id: {id}
turns:
  - user: "hello"
  - user: "book a table"
  - user: "thanks"
"""

AGENTS = '''\
import asyncio
import logging
import time


async def waiting(history):
    """Waits on a provider: the loop stays free. It logs that it did, as a framework would."""
    await asyncio.sleep(0.05)
    logging.getLogger("provider").warning("provider answered slowly (%d ms)", 50)
    return "ok"


async def busy(history):
    """A CPU regression: a busy loop in the agent's own code holds the event loop."""
    end = time.perf_counter() + 0.4
    while time.perf_counter() < end:
        pass
    return "ok"


def make_waiting():
    return waiting


class ThreeLines:
    """An adapter whose agent serves three callers at once: a fourth session is refused."""

    consumes_audio = False

    async def start_conversation(self, info):
        if info.run_index >= 3:
            raise RuntimeError("all lines busy")
        return Line()


class Unprepared:
    """An adapter whose own prepare raises: the user's code, not ours."""

    consumes_audio = False

    async def prepare(self, transcript):
        raise OSError("the agent's database is not reachable")

    async def start_conversation(self, info):
        return Line()


class Line:
    async def respond(self, turn):
        await asyncio.sleep(0.01)
        return "ok"

    async def aclose(self):
        return None
'''


def _project(tmp_path: Path, conftest: str | None = None) -> tuple[Path, str]:
    """A project with one text transcript and an agents module of a name unique to the test."""
    module = f"capacity_agents_{tmp_path.name}"
    (tmp_path / f"{module}.py").write_text(AGENTS)
    evals = tmp_path / "evals"
    evals.mkdir()
    (evals / "chat.yaml").write_text(TRANSCRIPT.format(id="chat"))
    (tmp_path / "pyproject.toml").write_text('[tool.agent_eval]\nyaml_dirs = ["evals"]\n')
    if conftest is not None:
        (tmp_path / "conftest.py").write_text(conftest.replace("MODULE", module))
    return tmp_path, module


def _run(project: Path, *args: str) -> int:
    return main(
        [
            "capacity",
            "--rootdir",
            str(project),
            "--json",
            str(project / "out.json"),
            "--html",
            str(project / "out.html"),
            *args,
        ]
    )


def test_a_waiting_agent_reports_every_step_and_passes_its_gate(tmp_path: Path) -> None:
    project, module = _project(tmp_path)
    code = _run(
        project,
        "--agent",
        f"{module}:make_waiting",
        "--steps",
        "1,2",
        "--repeats",
        "2",
        # Budgets no loaded machine breaks for an agent that only waits: this test is about
        # what the report holds, not how fast this machine is.
        "--loop-lag-ms",
        "5000",
        "--p95-latency-ms",
        "60000",
        "--min-sessions-per-core",
        "1",
    )
    assert code == 0
    data = json.loads((project / "out.json").read_text())
    assert data["complete"] is True
    assert [s["k"] for s in data["steps"]] == [1, 2]
    assert [s["turns"] for s in data["steps"]] == [6, 12]  # 3 turns x K sessions x 2 repeats
    assert all(s["within_budget"] and not s["failures"] for s in data["steps"])
    # What was logged during each step, counted by message.
    assert [s["log_warnings"] for s in data["steps"]] == [
        {"provider answered slowly (50 ms)": 6},
        {"provider answered slowly (50 ms)": 12},
    ]
    assert data["knee"]["k"] == 2
    assert data["knee"]["first_over_budget_k"] is None
    assert data["knee"]["bounded"] is False  # the ramp ended before any step went over
    assert data["gate"] == {"min_sessions_per_core": 1.0, "passed": True}
    assert data["machine"]["logical_cores"] >= 1
    html = (project / "out.html").read_text()
    assert "<svg" in html and "at least 2.00 sessions per core" in html


def test_a_busy_loop_in_the_agent_fails_the_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, module = _project(tmp_path)
    code = _run(
        project,
        "--agent",
        f"{module}:busy",
        "--steps",
        "1,2",
        "--repeats",
        "1",
        "--loop-lag-ms",
        "250",
        "--min-sessions-per-core",
        "1",
    )
    assert code == 1
    assert "capacity gate failed" in capsys.readouterr().err
    data = json.loads((project / "out.json").read_text())
    # The ramp stopped at the first step over budget, and said why.
    assert [s["k"] for s in data["steps"]] == [1]
    assert data["knee"]["k"] == 0
    assert data["knee"]["bounded"] is True
    assert any("loop lag" in why for why in data["steps"][0]["over_budget"])
    assert data["gate"]["passed"] is False


def test_refining_halves_the_gap_to_the_first_step_over_budget(tmp_path: Path) -> None:
    project, module = _project(tmp_path)
    code = _run(
        project, "--agent", f"{module}:ThreeLines", "--max-sessions", "8", "--repeats", "1",
        "--loop-lag-ms", "5000", "--p95-latency-ms", "60000", "--refine", "2",
    )  # fmt: skip
    assert code == 0
    data = json.loads((project / "out.json").read_text())
    # 1, 2, 4 (over: a session refused), then 3 (within), the gap closed.
    assert [s["k"] for s in data["steps"]] == [1, 2, 3, 4]
    assert data["knee"]["k"] == 3
    assert data["knee"]["first_over_budget_k"] == 4
    (four,) = (s for s in data["steps"] if s["k"] == 4)
    (failure,) = four["failures"]
    assert failure.startswith("session 4, chat: starting failed: RuntimeError: all lines busy")


def test_the_agent_is_the_projects_llm_eval_agent_fixture_by_default(tmp_path: Path) -> None:
    conftest = (
        "import pytest\n\n\n@pytest.fixture\ndef llm_eval_agent():\n"
        "    from MODULE import waiting\n\n    return waiting\n"
    )
    project, _ = _project(tmp_path, conftest)
    assert _run(project, "--steps", "1", "--repeats", "1", "--loop-lag-ms", "5000") == 0
    data = json.loads((project / "out.json").read_text())
    assert data["agent"].startswith("llm_eval_agent (")
    assert data["steps"][0]["turns"] == 3


@pytest.mark.parametrize(
    ("args", "conftest", "message"),
    [
        (["--steps", "1,x"], None, "--steps: steps must be whole numbers"),
        (["--agent", "nocolon"], None, "--agent must be MODULE:ATTR"),
        (["--agent", "MODULE:missing"], None, "has no 'missing'"),
        ([], None, "no llm_eval_agent fixture"),
        (
            [],
            "import pytest\n\n@pytest.fixture\ndef llm_eval_agent(tmp_path):\n    return None\n",
            "takes other fixtures (tmp_path)",
        ),
        (["missing.yaml"], None, "no such transcript file or folder"),
        (["--repeats", "0", "--agent", "MODULE:waiting"], None, "repeats must be >= 1"),
    ],
)
def test_bad_input_exits_2_saying_what_is_wrong(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    conftest: str | None,
    message: str,
) -> None:
    project, module = _project(tmp_path, conftest)
    args = [a.replace("MODULE", module) for a in args]
    args = [str(project / a) if a.endswith(".yaml") else a for a in args]
    assert _run(project, *args) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: capacity") or err.startswith("error: --steps"), err
    assert message in err
    assert not (project / "out.json").exists()


def test_the_command_is_listed_in_the_usage(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "capacity" in capsys.readouterr().out


def test_the_pyproject_table_sets_the_plan_and_options_win(tmp_path: Path) -> None:
    project, module = _project(tmp_path)
    (project / "pyproject.toml").write_text(
        '[tool.agent_eval]\nyaml_dirs = ["evals"]\n\n[tool.agent_eval.capacity]\n'
        f'agent = "{module}:make_waiting"\nsteps = [1, 2]\nrepeats = 1\nloop_lag_ms = 5000\np95_latency_ms = 60000\n'
        "min_sessions_per_core = 1000\n"
    )
    # The table's gate is far above what one process does: exit 1, unless an option lowers it.
    assert _run(project) == 1
    data = json.loads((project / "out.json").read_text())
    assert data["plan"]["steps"] == [1, 2]
    assert data["plan"]["repeats"] == 1
    assert data["gate"] == {"min_sessions_per_core": 1000.0, "passed": False}
    assert _run(project, "--steps", "1", "--min-sessions-per-core", "0.5") == 0
    assert json.loads((project / "out.json").read_text())["plan"]["steps"] == [1]


def test_a_bad_pyproject_table_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project, _ = _project(tmp_path)
    (project / "pyproject.toml").write_text("[tool.agent_eval.capacity]\nrepeat = 3\n")
    assert _run(project) == 2
    assert "[tool.agent_eval.capacity]: unknown key 'repeat'" in capsys.readouterr().err


def test_without_psutil_the_command_names_the_extra(tmp_path: Path) -> None:
    project, module = _project(tmp_path)
    # psutil made unimportable in a fresh interpreter, as where the extra is not installed.
    code = (
        "import sys; sys.modules['psutil'] = None\n"
        "from pytest_agent_eval.__main__ import main\n"
        f"sys.exit(main(['capacity', '--rootdir', {str(project)!r}, '--agent', "
        f"'{module}:make_waiting']))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert done.returncode == 2, done.stderr
    # The command that adds the extra to this installation (from its folder, where it is one).
    from pytest_agent_eval.errors import install_command

    assert install_command("capacity") in done.stderr and "[capacity]" in done.stderr
    assert not (project / "agent-eval-capacity.json").exists()


def test_an_adapter_that_cannot_prepare_exits_2_naming_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, module = _project(tmp_path)
    assert _run(project, "--agent", f"{module}:Unprepared", "--steps", "1") == 2
    err = capsys.readouterr().err
    assert (
        "error: the agent could not be run: OSError: the agent's database is not reachable" in err
    )
    assert "Traceback" not in err


def test_a_folder_for_the_results_file_is_refused_before_the_ramp(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, module = _project(tmp_path)
    folder = project / "reports"
    folder.mkdir()
    code = main(
        [
            "capacity",
            "--rootdir",
            str(project),
            "--json",
            str(folder),
            "--agent",
            f"{module}:waiting",
        ]
    )
    assert code == 2
    err = capsys.readouterr().err
    assert f"--json {folder} is a folder; give a file path" in err
    assert "K=1" not in err  # nothing ran
