"""docs/llms.txt, the one-page summary for coding agents, cannot drift from the code.

Every field of the transcript schema is in its YAML example, which the loader accepts; every
public name of ``pytest_agent_eval`` and of the adapters it names is in it; the extras and the
docs pages it lists are the ones that exist.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

import pytest_agent_eval
from pytest_agent_eval._expectations import expect_keys, transcript_keys
from pytest_agent_eval._loader import load_transcript_text
from pytest_agent_eval._schema import build_schema

ROOT = Path(__file__).resolve().parents[2]
LLMS = ROOT / "docs" / "llms.txt"


@pytest.fixture(scope="module")
def text() -> str:
    return LLMS.read_text(encoding="utf-8")


def _example(text: str) -> str:
    (block,) = re.findall(r"```yaml\n(.*?)```", text, re.DOTALL)
    return block


def test_the_yaml_example_loads_and_has_every_schema_field(text: str) -> None:
    example = _example(text)
    transcript = load_transcript_text(example, path=Path("tests/evals/example.yaml"))
    assert transcript.turns
    schema = build_schema()
    names = {
        name for obj in [schema, *schema["$defs"].values()] for name in obj.get("properties", {})
    }
    names |= {key.name for key in (*expect_keys(), *transcript_keys())}
    assert len(names) > 40
    missing = sorted(n for n in names if not re.search(rf"\b{re.escape(n)}\b", example))
    assert not missing, f"llms.txt's YAML example lacks {missing}"
    assert schema["$id"] in example  # the schema comment editors use


def test_every_public_name_is_there(text: str) -> None:
    from pytest_agent_eval import adapters
    from pytest_agent_eval.adapters import livekit, pipecat

    names = [*pytest_agent_eval.__all__, *adapters.__all__]
    names += ["LiveKitAdapter", "LiveKitRoomAdapter", "ScriptedLLM", "Rule", "FixtureTextSTT"]
    names += ["WhisperSTT", "SynthesizerTTS", "eval_session_kwargs"]
    names += ["PipecatAdapter", "InProcessTransport", "ScriptedLLMService"]
    names += ["FixtureTextSTTService", "WhisperSTTService", "SynthesizerTTSService"]
    assert set(names) - set(pytest_agent_eval.__all__) - set(adapters.__all__) <= set(
        livekit.__all__
    ) | set(pipecat.__all__)
    missing = [name for name in names if f"`{name}" not in text and f".{name}" not in text]
    assert not missing, f"llms.txt does not mention {missing}"


def test_extras_and_pages_are_the_real_ones(text: str) -> None:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    extras = set(pyproject["project"]["optional-dependencies"])
    listed = set(re.findall(r"`(\w+)`", text.split("- Extras:", 1)[1].split("\n\n", 1)[0]))
    assert listed == extras
    pages = {p.name for p in (ROOT / "docs").glob("*.md")} - {"contributing.md"}
    section = text.split("## Docs", 1)[1]
    named = set(re.findall(r"[\w-]+\.md", section))
    assert named <= {p.name for p in (ROOT / "docs").glob("*.md")}, named
    assert pages <= named, f"llms.txt's docs list lacks {sorted(pages - named)}"
