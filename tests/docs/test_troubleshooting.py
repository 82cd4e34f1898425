"""docs/troubleshooting.md shows the project's own messages: each one is triggered here.

An entry is ``<!-- error: KEY -->`` above a ``text`` block holding the message; ``...`` in it
stands for any text, and line breaks and runs of spaces are one space. Each KEY has a trigger
below that makes the real code say it (the loader, the config parser, the fixture checks, and
one pytest run of a small project for what only a run prints). A page entry without a trigger,
or a trigger without an entry, fails too.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_agent_eval.audio_fixtures import validate_fixture
from pytest_agent_eval.config import parse_settings
from pytest_agent_eval.errors import AgentEvalError, require_extra
from pytest_agent_eval.loader import load_transcript_text

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "troubleshooting.md"
_ENTRY = re.compile(r"<!-- error: (?P<key>[\w-]+) -->\n```text\n(?P<message>.*?)```", re.DOTALL)


def documented() -> dict[str, str]:
    return {m["key"]: m["message"] for m in _ENTRY.finditer(PAGE.read_text(encoding="utf-8"))}


def _flat(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _pattern(message: str) -> re.Pattern[str]:
    return re.compile(".*?".join(re.escape(part) for part in _flat(message).split("...")))


def _raised(action: Callable[[], object]) -> str:
    try:
        action()
    except (AgentEvalError, ValueError) as exc:
        return str(exc)
    raise AssertionError("no error was raised")


def _transcript(text: str, name: str = "booking") -> str:
    path = Path(f"tests/evals/{name}.yaml")
    return _raised(lambda: load_transcript_text(text, path=path))


# ---- the triggers ------------------------------------------------------------------------------

_PROJECT = {
    "pyproject.toml": "[tool.agent_eval]\nyaml_dirs = ['tests/evals']\n",
    "tests/evals/no_agent/hello.yaml": "id: no_agent\nturns:\n  - user: hi\n",
    "tests/evals/agent/conftest.py": (
        "import pytest\n\n\n@pytest.fixture\ndef llm_eval_agent():\n"
        "    return lambda history: 'hello'\n"
    ),
    "tests/evals/agent/judged.yaml": (
        "id: judged\nturns:\n  - user: hi\n    expect:\n"
        "      judge:\n        rubric: The reply is polite.\n"
    ),
    "tests/evals/agent/heard.yaml": (
        "id: heard\nturns:\n  - user: hi\n    expect:\n      heard_contains_any: [hi]\n"
    ),
}


def _project_runs(project: Path) -> dict[str, str]:
    """The small project's pytest output: not live (one eval skipped), then live."""
    for name, text in _PROJECT.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "EVAL_LIVE"))}
    env.pop("OPENAI_API_KEY", None)
    outputs = {}
    for mode, args in {
        "off": ["tests/evals/agent/heard.yaml"],
        "live": ["--agent-eval-live", "-rs"],
    }.items():
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        outputs[mode] = done.stdout + done.stderr
    return outputs


def _missing_extra(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setitem(sys.modules, "livekit.agents", None)  # as if it were not installed
    return _raised(
        lambda: require_extra("livekit.agents", extra="livekit", feature="LiveKitAdapter")
    )


def _config_value() -> str:
    return _raised(lambda: parse_settings({"threshold": 2}, rootdir=Path(".")))


def _config_unknown_key() -> str:
    _, warnings = parse_settings({"runz": 2}, rootdir=Path("."))
    (warning,) = warnings
    return warning


def _fixture_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "tests" / "evals").mkdir(parents=True)
    return _raised(
        lambda: validate_fixture("tests/evals/booking_t1.wav", yaml_path="tests/evals/booking.yaml")
    )


IN_PROCESS: dict[str, Callable[..., str]] = {
    "unknown-field": lambda: _transcript(
        "id: booking\nturns:\n  - user: hi\n    expect:\n      reply_contain_any: [x]\n"
    ),
    "invalid-regex": lambda: _transcript(
        'id: booking\nturns:\n  - user: hi\n    expect:\n      reply_matches_all: ["BK-(\\\\d+"]\n'
    ),
    "yaml-tag": lambda: _transcript("id: t\nturns: !!python/object:os.system\n  - user: hi\n"),
    "pause-marker": lambda: _transcript(
        "id: refill\nturns:\n  - user: hi\n  - user: 'Hi. [pause two] I need a refill.'\n",
        name="refill",
    ),
    "config-value": _config_value,
    "config-unknown-key": _config_unknown_key,
}
FROM_A_RUN = {
    "live-mode-off": "off",
    "no-agent-fixture": "live",
    "judge-model": "live",
    "heard-on-text-turn": "live",
}
WITH_FIXTURES = {"missing-extra", "fixture-missing"}


def test_every_entry_has_a_trigger_and_a_fix() -> None:
    entries = documented()
    assert set(entries) == set(IN_PROCESS) | set(FROM_A_RUN) | WITH_FIXTURES
    text = PAGE.read_text(encoding="utf-8")
    for key in entries:
        after = text.split(f"<!-- error: {key} -->", 1)[1].split("<!-- error:", 1)[0]
        assert "**Fix:**" in after, f"{key} has no fix"


@pytest.mark.parametrize("key", sorted(IN_PROCESS))
def test_the_message_is_what_the_code_says(key: str) -> None:
    said = IN_PROCESS[key]()
    assert _pattern(documented()[key]).fullmatch(_flat(said)), said


def test_the_missing_extra_message(monkeypatch: pytest.MonkeyPatch) -> None:
    said = _missing_extra(monkeypatch)
    assert _pattern(documented()["missing-extra"]).fullmatch(_flat(said)), said


def test_the_missing_fixture_message(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    said = _fixture_missing(tmp_path, monkeypatch)
    assert _pattern(documented()["fixture-missing"]).fullmatch(_flat(said)), said


def test_the_messages_are_what_a_run_prints(tmp_path: Path) -> None:
    # One test, so the two pytest runs happen once (a module fixture would run per xdist worker).
    outputs = _project_runs(tmp_path)
    for key, mode in FROM_A_RUN.items():
        assert _pattern(documented()[key]).search(_flat(outputs[mode])), (key, outputs[mode])


def test_a_drifted_message_is_caught() -> None:
    # The check can fail: one changed word and the page no longer matches.
    said = IN_PROCESS["config-value"]()
    assert not _pattern(documented()["config-value"].replace("between", "within")).fullmatch(
        _flat(said)
    )
