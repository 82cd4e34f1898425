"""docs/troubleshooting.md quotes the project's own messages: each one is checked here against
what the program really prints, in the runs a user makes.

An entry is ``<!-- error: KEY -->`` above a ``text`` block holding the message; ``...`` in it
stands for any text, and line breaks and runs of spaces are one space. Each KEY names the
scenario that makes the program say it: a pytest run of a small project (evals off and live, a
project whose transcripts do not load, one with a bad setting, one whose agent module or
conftest does not import, one with a pyproject.toml in a sub-folder, a voice project whose
fixture is missing, then stale, then without its sidecar), the fixture check of the synthesizer, and an
import without an extra. The message must appear in that scenario's output. A page entry
without a scenario, or a scenario key without an entry, fails too.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

from child_pytest import child_pytest_env

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "troubleshooting.md"
_ENTRY = re.compile(r"<!-- error: (?P<key>[\w-]+) -->\n```text\n(?P<message>.*?)```", re.DOTALL)


def documented() -> dict[str, str]:
    return {m["key"]: m["message"] for m in _ENTRY.finditer(PAGE.read_text(encoding="utf-8"))}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _pattern(message: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in _flat(message).split("...")))


# ---- the scenarios -----------------------------------------------------------------------------

AGENT = (
    "import pytest\n\n\n@pytest.fixture\ndef llm_eval_agent():\n"
    "    return lambda history: 'hello'\n"
)
TEXT_PROJECT = {
    "pyproject.toml": "[tool.agent_eval]\nyaml_dirs = ['tests/evals']\nrunz = 2\n",
    "tests/evals/no_agent/hello.yaml": "id: no_agent\nturns:\n  - user: hi\n",
    "tests/evals/agent/conftest.py": AGENT,
    "tests/evals/agent/judged.yaml": (
        "id: judged\nturns:\n  - user: hi\n    expect:\n"
        "      judge:\n        rubric: The reply is polite.\n"
    ),
    "tests/evals/agent/heard.yaml": (
        "id: heard\nturns:\n  - user: hi\n    expect:\n      heard_contains_any: [hi]\n"
    ),
    "tests/evals/crash/conftest.py": (
        "import pytest\n\n\n@pytest.fixture\ndef llm_eval_agent():\n"
        "    def agent(history):\n        raise RuntimeError('menu service down')\n\n"
        "    return agent\n"
    ),
    "tests/evals/crash/menu.yaml": "id: menu\nturns:\n  - user: What is on the menu?\n",
}
BROKEN_PROJECT = {
    "pyproject.toml": "[tool.agent_eval]\nyaml_dirs = ['tests/evals']\nlive = true\n",
    "tests/conftest.py": AGENT,
    "tests/evals/good.yaml": "id: good\nturns:\n  - user: hi\n",
    "tests/evals/booking.yaml": (
        "id: booking\nturns:\n  - user: hi\n    expect:\n      reply_contain_any: [x]\n"
    ),
    "tests/evals/reference.yaml": (
        "id: reference\nturns:\n  - user: hi\n    expect:\n"
        '      reply_matches_all: ["BK-(\\\\d+"]\n'
    ),
    "tests/evals/escape.yaml": (
        'id: escape\nturns:\n  - user: hi\n    expect:\n      reply_matches_any: ["BK-\\d+"]\n'
    ),
    "tests/evals/tabs.yaml": "id: tabs\nturns:\n\t- user: hi\n",
    "tests/evals/tagged.yaml": "id: tagged\nturns: !!python/object:os.system\n  - user: hi\n",
    "tests/evals/tagged/scenarios.yaml": (
        "scenarios:\n  - label: Book\n    instructions: You want a room.\n"
        "    agent_expectations: The agent books it.\n    tags: booking\n"
    ),
    "tests/evals/refill.yaml": (
        "id: refill\nturns:\n  - user: hi\n  - user: 'Hi. [pause two] I need a refill.'\n"
    ),
}
SIM_CONFTEST = """
import os

import pytest
from pydantic_ai.messages import ModelResponse, ToolCallPart
from pydantic_ai.models.function import FunctionModel

os.environ["OPENAI_BASE_URL"] = "{base_url}"
os.environ["OPENAI_API_KEY"] = "loopback-key"


def hangs_up(messages, info):
    args = {{"outcome": "goal_reached", "reason": "Done."}}
    return ModelResponse(parts=[ToolCallPart("end_conversation", args)])


@pytest.fixture
def llm_eval_agent():
    return lambda history: "Which order is it about?"


@pytest.fixture
def llm_eval_caller_model():
    return FunctionModel(hangs_up, model_name="hangs-up")
"""
SIMULATION = "persona: Dana wants a refund.\ncriteria: [The agent looks the order up.]\n"
SIM_PROJECT = {
    "pyproject.toml": (
        "[tool.agent_eval]\nyaml_dirs = ['tests/evals']\nlive = true\nretries = 0\n"
    ),
    "tests/evals/early.yaml": f"id: early\n{SIMULATION}",
    "tests/evals/self_hosted.yaml": (
        f"id: self_hosted\n{SIMULATION}caller:\n  model: openai:served-model\n"
    ),
}
MODULE_PROJECT = {
    # The agent lives in src/, which is not on sys.path: the fixture's import fails.
    "pyproject.toml": "[tool.agent_eval]\nyaml_dirs = ['tests/evals']\n",
    "src/my_agent.py": "def make_agent():\n    return lambda history: 'hello'\n",
    "tests/conftest.py": (
        "import pytest\n\n\n@pytest.fixture\ndef llm_eval_agent():\n"
        "    from my_agent import make_agent\n\n    return make_agent()\n"
    ),
    "tests/evals/hello.yaml": "id: hello\nturns:\n  - user: hi\n",
}
CONFTEST_PROJECT = {
    **MODULE_PROJECT,
    # The same import at the top of the conftest: pytest cannot load it at all.
    "tests/conftest.py": (
        "import pytest\nfrom my_agent import make_agent\n\n\n@pytest.fixture\n"
        "def llm_eval_agent():\n    return make_agent()\n"
    ),
}
SUB_FOLDER_PROJECT = {
    "pyproject.toml": "[tool.agent_eval]\nyaml_dirs = ['tests']\n",
    "tests/voice/pyproject.toml": "# settings for the voice evals\n[tool.agent_eval]\nruns = 5\n",
    "tests/voice/conftest.py": AGENT,
    "tests/voice/evals/hello.yaml": "id: hello\nturns:\n  - user: hi\n",
}
CONFIG_PROJECT = {
    "pyproject.toml": "[tool.agent_eval]\nthreshold = 2\n",
    "tests/evals/good.yaml": "id: good\nturns:\n  - user: hi\n",
}
VOICE_CONFTEST = """
import pytest
from pytest_agent_eval import AgentReply


class Conversation:
    async def respond(self, turn):
        return AgentReply("heard you", heard=turn.text)

    async def aclose(self):
        return None


class VoiceAdapter:
    consumes_audio = True

    async def start_conversation(self, info):
        return Conversation()


@pytest.fixture
def llm_eval_agent():
    return VoiceAdapter()
"""
VOICE_PROJECT = {
    "pyproject.toml": "[tool.agent_eval]\nyaml_dirs = ['tests/evals']\nlive = true\n",
    "tests/conftest.py": VOICE_CONFTEST,
    "tests/evals/booking.yaml": (
        "id: booking\nturns:\n  - user: A table for two, please.\n    audio: audio/booking_t1.wav\n"
    ),
}


REALTIME_CONFTEST = """
import asyncio
import os
import sys
import threading

import pytest
from livekit.agents import Agent, AgentSession
from livekit.plugins.openai import realtime

from pytest_agent_eval.adapters.livekit import LiveKitAdapter
from pytest_agent_eval.adapters.livekit.realtime import OpenAIRealtimeReplay

sys.path.insert(0, {realtime_tests!r})  # the loopback provider of the realtime tests
from openai_provider import ScriptedProvider


def make_session():
    return AgentSession(llm=realtime.RealtimeModel()), Agent(instructions="You are the desk.")


@pytest.fixture
def llm_eval_agent(request):
    if "provider" not in request.node.name:
        return OpenAIRealtimeReplay(LiveKitAdapter(make_session))
    # A provider that fails in the middle of its first response and closes with 1011.
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()
    provider = ScriptedProvider(rules=[], close_mid_response=(1, 1011, "keepalive ping timeout"))
    url = asyncio.run_coroutine_threadsafe(provider.start(), loop).result(30)
    os.environ["OPENAI_BASE_URL"] = url
    os.environ["OPENAI_API_KEY"] = "sk-loopback"
    return LiveKitAdapter(make_session)
"""
REALTIME_DESK = "id: {id}\nturns:\n  - user: Hello there\n"


def _realtime_outputs(root: Path) -> dict[str, str]:
    """A realtime agent replayed from cassettes (one missing, one cut short), recorded without
    a key, and run against a provider that closes the socket mid-response."""
    project = _write(
        root,
        {
            "pyproject.toml": "[tool.agent_eval]\nyaml_dirs = ['tests/evals']\nlive = true\n",
            "tests/conftest.py": REALTIME_CONFTEST.format(
                realtime_tests=str(ROOT / "tests" / "realtime")
            ),
            **{
                f"tests/evals/{name}.yaml": REALTIME_DESK.format(id=name)
                for name in ("desk", "damaged", "provider")
            },
            "tests/evals/cassettes/damaged.openai-realtime.json": '{"kind": "pytest-agent-ev',
        },
    )
    replayed = _pytest(project, "tests/evals/desk.yaml", "tests/evals/damaged.yaml")
    recorded = _run(
        project,
        "-c",
        "import os, sys, pytest\n"
        "os.environ['AGENT_EVAL_REALTIME_RECORD'] = '1'\n"
        "sys.exit(pytest.main(['-p', 'no:cacheprovider', '-rs', 'tests/evals/desk.yaml']))",
    )
    return {
        "realtime-cassette-missing": replayed,
        "realtime-cassette-damaged": replayed,
        "realtime-record-without-key": recorded,
        "realtime-provider-closed": _pytest(project, "tests/evals/provider.yaml"),
    }


def _write(root: Path, files: Mapping[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")
    return root


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "EVAL_LIVE"))}
    env.pop("OPENAI_API_KEY", None)
    env.pop("GITHUB_STEP_SUMMARY", None)
    env["COLUMNS"] = "80"
    return child_pytest_env(env)


def _run(cwd: Path, *args: str) -> str:
    done = subprocess.run(
        [sys.executable, *args],
        cwd=cwd,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    return done.stdout + done.stderr


def _pytest(cwd: Path, *args: str) -> str:
    return _run(cwd, "-m", "pytest", "-p", "no:cacheprovider", *args)


def _voice_outputs(root: Path) -> dict[str, str]:
    """A voice project's fixture missing, then stale (its text changed), then with a sidecar
    written before word timings, then without its sidecar: what pytest and
    ``synthesize_audio --check`` say of each."""
    project = _write(root, VOICE_PROJECT)
    transcript = project / "tests/evals/booking.yaml"
    outputs = {"fixture-missing": _pytest(project)}
    _run(project, "-m", "pytest_agent_eval.synthesize_audio")
    transcript.write_text(transcript.read_text().replace("two", "three"))
    outputs["fixture-stale"] = _pytest(project)
    _run(project, "-m", "pytest_agent_eval.synthesize_audio")
    sidecar = project / "tests/evals/audio/booking_t1.wav.hash"
    record = json.loads(sidecar.read_text())
    del record["words"], record["word_alignment"]  # as versions before word timings wrote it
    sidecar.write_text(json.dumps(record))
    outputs["check-untimed"] = _run(project, "-m", "pytest_agent_eval.synthesize_audio", "--check")
    _run(project, "-m", "pytest_agent_eval.synthesize_audio")
    sidecar.unlink()
    outputs["sidecar-missing"] = _pytest(project)
    outputs["check-sidecar-missing"] = _run(
        project, "-m", "pytest_agent_eval.synthesize_audio", "--check"
    )
    return outputs


def _import_outputs(root: Path) -> dict[str, str]:
    """``agent-eval import livekit`` on a file that is no session report, on a report of an
    older livekit-agents layout, and on a report in which the caller never spoke."""
    reports = _write(
        root,
        {
            "report.json": '{"job_id": "x", "room": "r", "events": [], "options": {}}',
            "old.json": '{"sdk_version": "0.8.0", "chat_history": {"items": []}}',
            "nouser.json": (
                '{"sdk_version": "1.2.0", "job_id": "x", "room": "r", "events": [], '
                '"options": {}, "chat_history": {"items": [{"type": "message", '
                '"role": "assistant", "content": ["Hello"]}]}}'
            ),
        },
    )

    def imported(name: str) -> str:
        return _run(
            reports, "-m", "pytest_agent_eval", "import", "livekit", name, "--out", "t.yaml"
        )

    return {
        "import-not-a-report": imported("report.json"),
        "import-old-layout": imported("old.json"),
        "import-no-user": imported("nouser.json"),
    }


def _simulation_outputs(root: Path) -> dict[str, str]:
    """A simulation whose caller hangs up before it may, and one whose caller is an
    ``openai:`` model on a server that speaks only Chat Completions (the loopback one)."""
    spec = importlib.util.spec_from_file_location(
        "troubleshooting_loopback", ROOT / "tests" / "adapters" / "loopback_chat.py"
    )
    assert spec is not None and spec.loader is not None
    loopback = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loopback)
    with loopback.ChatServer(lambda body: loopback.text_completion("Hi.")) as server:
        files = {**SIM_PROJECT, "tests/conftest.py": SIM_CONFTEST.format(base_url=server.base_url)}
        out = _pytest(_write(root, files))
    return {"sim-early-hang-up": out, "sim-openai-responses": out}


def _outputs(tmp_path: Path) -> dict[str, str]:
    """Every scenario's output, by the entry key it must show."""
    text = _write(tmp_path / "text", TEXT_PROJECT)
    off = _pytest(text, "tests/evals/agent/heard.yaml")
    live = _pytest(text, "--agent-eval-live", "-rs")
    broken = _pytest(_write(tmp_path / "broken", BROKEN_PROJECT))
    config = _pytest(_write(tmp_path / "config", CONFIG_PROJECT))
    module = _pytest(_write(tmp_path / "module", MODULE_PROJECT), "--agent-eval-live")
    conftest = _pytest(_write(tmp_path / "conftest", CONFTEST_PROJECT), "--agent-eval-live")
    sub_folder = _pytest(_write(tmp_path / "sub_folder", SUB_FOLDER_PROJECT), "--agent-eval-live")
    blocked = _run(
        tmp_path,
        "-c",
        "import sys; sys.modules['livekit.agents'] = None\n"
        "import pytest_agent_eval.adapters.livekit",
    )
    outputs = {
        "live-mode-off": off,
        "no-agent-fixture": live,
        "judge-model": live,
        "heard-on-text-turn": live,
        "agent-crashed": live,
        "config-unknown-key": live,
        "missing-extra": blocked,
        "config-value": config,
        "agent-module-not-found": module,
        "conftest-import": conftest,
        "unread-pyproject": sub_folder,
        **dict.fromkeys(
            [
                "unknown-field",
                "invalid-regex",
                "yaml-escape",
                "yaml-tab",
                "yaml-tag",
                "pause-marker",
                "load-errors",
                "scenario-tags",
            ],
            broken,
        ),
    }
    outputs.update(_simulation_outputs(tmp_path / "simulation"))
    outputs.update(_import_outputs(tmp_path / "import"))
    if importlib.util.find_spec("hibari") is not None:  # the offline voice makes the fixture
        outputs.update(_voice_outputs(tmp_path / "voice"))
    if importlib.util.find_spec("livekit.plugins.openai") is not None:
        outputs.update(_realtime_outputs(tmp_path / "realtime"))
    return outputs


VOICE_KEYS = {
    "fixture-missing",
    "fixture-stale",
    "check-untimed",
    "sidecar-missing",
    "check-sidecar-missing",
}
REALTIME_KEYS = {
    "realtime-cassette-missing",
    "realtime-cassette-damaged",
    "realtime-record-without-key",
    "realtime-provider-closed",
}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _outputs(tmp_path_factory.mktemp("troubleshooting"))


def test_every_entry_has_a_scenario_and_a_fix(outputs: dict[str, str]) -> None:
    entries = documented()
    assert set(entries) == set(outputs) | VOICE_KEYS | REALTIME_KEYS
    text = PAGE.read_text(encoding="utf-8")
    for key in entries:
        after = text.split(f"<!-- error: {key} -->", 1)[1].split("<!-- error:", 1)[0]
        assert "**Fix:**" in after, f"{key} has no fix"


def test_every_message_is_what_the_program_prints(outputs: dict[str, str]) -> None:
    if not set(outputs) >= VOICE_KEYS:
        pytest.skip("the voice entries need the voice extra: pip install -e '.[voice]'")
    if not set(outputs) >= REALTIME_KEYS:
        pytest.skip("the realtime entries need livekit-plugins-openai: pip install -e '.[dev]'")
    wrong = [
        f"{key}: the page says\n  {_flat(message)}\nthe program printed\n  {_flat(outputs[key])}"
        for key, message in documented().items()
        if not _pattern(message).search(_flat(outputs[key]))
    ]
    assert not wrong, "\n\n".join(wrong)


def test_a_drifted_message_is_caught(outputs: dict[str, str]) -> None:
    # The check can fail: one changed word and the page no longer matches.
    message = documented()["config-value"]
    assert _pattern(message).search(_flat(outputs["config-value"]))
    assert not _pattern(message.replace("between", "within")).search(_flat(outputs["config-value"]))
