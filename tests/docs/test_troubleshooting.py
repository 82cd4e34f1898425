"""docs/troubleshooting.md quotes the project's own messages: each one is checked here against
what the program really prints, in the runs a user makes.

An entry is ``<!-- error: KEY -->`` above a ``text`` block holding the message; ``...`` in it
stands for any text, and line breaks and runs of spaces are one space. Each KEY names the
scenario that makes the program say it: a pytest run of a small project (evals off and live, a
project whose transcripts do not load, one with a bad setting, a voice project whose fixture is
missing, then stale, then without its sidecar), the fixture check of the synthesizer, and an
import without an extra. The message must appear in that scenario's output. A page entry
without a scenario, or a scenario key without an entry, fails too.
"""

from __future__ import annotations

import importlib.util
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
    "tests/evals/refill.yaml": (
        "id: refill\nturns:\n  - user: hi\n  - user: 'Hi. [pause two] I need a refill.'\n"
    ),
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
    """A voice project's fixture missing, then stale (its text changed), then without its
    sidecar: what pytest and ``synthesize_audio --check`` say of each."""
    project = _write(root, VOICE_PROJECT)
    transcript = project / "tests/evals/booking.yaml"
    outputs = {"fixture-missing": _pytest(project)}
    _run(project, "-m", "pytest_agent_eval.synthesize_audio")
    transcript.write_text(transcript.read_text().replace("two", "three"))
    outputs["fixture-stale"] = _pytest(project)
    _run(project, "-m", "pytest_agent_eval.synthesize_audio")
    (project / "tests/evals/audio/booking_t1.wav.hash").unlink()
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


def _outputs(tmp_path: Path) -> dict[str, str]:
    """Every scenario's output, by the entry key it must show."""
    text = _write(tmp_path / "text", TEXT_PROJECT)
    off = _pytest(text, "tests/evals/agent/heard.yaml")
    live = _pytest(text, "--agent-eval-live", "-rs")
    broken = _pytest(_write(tmp_path / "broken", BROKEN_PROJECT))
    config = _pytest(_write(tmp_path / "config", CONFIG_PROJECT))
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
        **dict.fromkeys(
            [
                "unknown-field",
                "invalid-regex",
                "yaml-escape",
                "yaml-tab",
                "yaml-tag",
                "pause-marker",
                "load-errors",
            ],
            broken,
        ),
    }
    outputs.update(_import_outputs(tmp_path / "import"))
    if importlib.util.find_spec("hibari") is not None:  # the offline voice makes the fixture
        outputs.update(_voice_outputs(tmp_path / "voice"))
    return outputs


VOICE_KEYS = {"fixture-missing", "fixture-stale", "sidecar-missing", "check-sidecar-missing"}


@pytest.fixture(scope="module")
def outputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    return _outputs(tmp_path_factory.mktemp("troubleshooting"))


def test_every_entry_has_a_scenario_and_a_fix(outputs: dict[str, str]) -> None:
    entries = documented()
    assert set(entries) == set(outputs) | VOICE_KEYS
    text = PAGE.read_text(encoding="utf-8")
    for key in entries:
        after = text.split(f"<!-- error: {key} -->", 1)[1].split("<!-- error:", 1)[0]
        assert "**Fix:**" in after, f"{key} has no fix"


def test_every_message_is_what_the_program_prints(outputs: dict[str, str]) -> None:
    if not set(outputs) >= VOICE_KEYS:
        pytest.skip("the voice entries need the voice extra: pip install -e '.[voice]'")
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
