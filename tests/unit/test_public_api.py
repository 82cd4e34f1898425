"""The public surface and the import rules that keep the plugin light."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest_agent_eval

SRC = Path(pytest_agent_eval.__file__).parent

# The names users of the earlier package type (spec/compat.md), plus __version__.
COMPAT_NAMES = {
    "Turn",
    "Expect",
    "Transcript",
    "JudgeConfig",
    "ToolCall",
    "ToolCallArgsConfig",
    "AgentReply",
    "EvalResult",
    "TurnContext",
    "TranscriptResult",
    "TranscriptError",
    "ContainsEvaluator",
    "ToolCallEvaluator",
    "ToolCallArgsEvaluator",
    "JudgeEvaluator",
    "ToolCallArgsJudgeEvaluator",
    "__version__",
}


def test_all_is_exactly_the_compat_surface() -> None:
    assert set(pytest_agent_eval.__all__) == COMPAT_NAMES


def test_models_module_offers_results() -> None:
    from pytest_agent_eval.models import RunResult, TurnResult  # noqa: F401


def test_importing_the_package_and_plugin_stays_light() -> None:
    code = (
        "import sys, pytest_agent_eval, pytest_agent_eval.plugin\n"
        "heavy = [m for m in ('pydantic_ai', 'openai', 'livekit', 'numpy', 'soundfile', 'hibari', "
        "'faster_whisper', 'jsonschema') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level > 0:
            base = path.relative_to(SRC).parent.parts
            parents = base[: len(base) - (node.level - 1)] if node.level > 1 else base
            module = ".".join((*parents, node.module)) if node.module else ".".join(parents)
            names.add(module.split(".")[0] if module else "")
    return names


# Data flows one way: nothing imports the plugin; models/errors/config import no stage.
FORBIDDEN = {
    "models.py": {"loader", "runner", "plugin", "adapters", "evaluators", "report", "synthesize"},
    "loader.py": {"runner", "plugin", "adapters", "evaluators", "report", "synthesize"},
    "runner.py": {"plugin", "report", "synthesize", "loader"},
}


def test_import_arrows() -> None:
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC)
        imported = _imports(path)
        assert "plugin" not in imported or rel.name == "plugin.py", f"{rel} imports plugin"
        if rel.parts[0] == "audio_fixtures":
            assert not imported & {"synthesize", "adapters", "runner", "plugin", "report"}, rel
        if rel.parts[0] == "report":
            assert not imported & {"runner", "adapters", "synthesize"}, rel
        banned = FORBIDDEN.get(str(rel), set())
        assert not imported & banned, f"{rel} imports {imported & banned}"
