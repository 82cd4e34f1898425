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
    "Evaluator",
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


# Added deliberately on top of the compat names: every error class, the per-run and per-turn
# results, and the class of the agent_eval fixture.
ADDED_NAMES = {
    "AgentEvalError",
    "ConfigError",
    "AudioFixtureError",
    "AdapterError",
    "AgentTimeoutError",
    "AgentCrashError",
    "AgentFailedError",
    "JudgeError",
    "MissingExtraError",
    "RunResult",
    "TurnResult",
    "AgentEval",
}


# Every other name the docs teach: the records a transcript and its results are made of (the
# types of public fields, so the Python API builds all that YAML can), the adapter protocol,
# the settings, the loaders and the variant expansion (issue 23), the run settings (issue 33).
TAUGHT_NAMES = {
    "AgentSpeech",
    "AgentTurn",
    "AudioCondition",
    "BargeIn",
    "Case",
    "Greeting",
    "GreetingExpect",
    "Handoff",
    "InterruptConfig",
    "Message",
    "ToolCallOutcomeConfig",
    "Usage",
    "Variant",
    "VoiceSettings",
    "AgentAdapter",
    "CallableAdapter",
    "Conversation",
    "ConversationInfo",
    "TurnInput",
    "JudgeSettings",
    "RunSettings",  # a simulation's run settings (docs/simulations.md); runner is private
    "Settings",
    "load_settings",
    "load_transcripts",
    "load_transcript_file",
    "expand",
}


def test_all_is_the_compat_surface_plus_the_deliberate_additions() -> None:
    assert set(pytest_agent_eval.__all__) == COMPAT_NAMES | ADDED_NAMES | TAUGHT_NAMES


def test_every_facade_name_is_the_object_of_its_home_module() -> None:
    import importlib

    homes = (
        "models",
        "errors",
        "evaluators",
        "adapters",
        "_config",
        "_loader",
        "_expansion",
        "_runner",
    )
    for name in sorted(set(pytest_agent_eval.__all__) - {"__version__", "AgentEval"}):
        value = getattr(pytest_agent_eval, name)
        found = [
            home
            for home in homes
            if getattr(importlib.import_module(f"pytest_agent_eval.{home}"), name, None) is value
        ]
        if name in ("JudgeEvaluator", "ToolCallArgsJudgeEvaluator"):
            found.append("evaluators.judge")
        assert found, f"{name} is not the object of any home module"


def test_every_error_class_is_exported_from_the_package() -> None:
    from pytest_agent_eval import errors

    classes = {
        name
        for name, value in vars(errors).items()
        if isinstance(value, type) and issubclass(value, errors.AgentEvalError)
    }
    assert classes <= set(pytest_agent_eval.__all__)
    assert pytest_agent_eval.TranscriptError is errors.TranscriptError


def test_models_module_offers_results() -> None:
    from pytest_agent_eval.models import RunResult, TurnResult  # noqa: F401


def test_importing_the_package_and_plugin_stays_light() -> None:
    code = (
        "import sys, pytest_agent_eval, pytest_agent_eval.plugin\n"
        "import pytest_agent_eval.adapters.langchain, pytest_agent_eval.adapters.smolagents\n"
        "heavy = [m for m in ('pydantic_ai', 'openai', 'livekit', 'numpy', 'soundfile', 'hibari', "
        "'faster_whisper', 'jsonschema', 'langchain_core', 'smolagents') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


# Data flows one way: YAML -> models -> runner -> adapter -> evaluators -> results -> reports.
# Each part of the package may import only the parts listed here (with `_private` helpers),
# whether the import is absolute or relative, at the top or inside a function, or only for
# type checking. A part is a top-level module or subpackage. The pytest side (_collection,
# _fixture, _eval_items, plugin) sits on top; nothing imports plugin.
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "_sanitize": set(),
    "_serialize": {"_sanitize"},
    "_atomic": set(),
    # A LiveKit session report on disk: read and checked, its delays; for the importer and the
    # stand-ins' replayed latency alike.
    "_session_report": {"errors"},
    # The JSON entries the judge's and the caller's caches keep on disk.
    "_json_store": {"_atomic"},
    "_async": set(),
    # Which YAML file is which, from its text: collection asks before importing simulation.
    "_file_kind": set(),
    "_text": {"models", "_sanitize"},  # models only for type checking
    "_retry": {"_text"},
    "_compat": {"models", "errors"},
    "models": {"errors", "_serialize"},
    "_records": {"models", "_serialize"},
    # Pure settings, no pytest; builds the judges' JudgeSettings (evaluators._judge_settings).
    "_config": {"errors", "models", "_text", "_conditions", "evaluators"},  # condition presets
    # The pytest side of the settings: options, which layer wins, config-time warnings.
    "_options": {"_config", "errors"},
    # The one resolver of a Python eval's threshold, runs and tags (fixture and eval_items).
    "_eval_plan": {"_config"},
    # The catalog of audio conditions: data only (kinds, presets, YAML values).
    "_conditions": {"models", "_text", "errors"},
    # One transcript -> several (variants): copies of models.
    "_expansion": {"models"},
    # The framework-neutral voice core both voice adapters share; apply() reads the catalog of
    # audio conditions (their kinds and defaults), the scripted rules and the TTS engines use
    # the retry and text helpers.
    "voice": {"errors", "_atomic", "_conditions", "models", "_text", "_retry"},
    "_expectations": {"models", "errors", "evaluators", "_text", "_serialize"},
    # A transcript's problems, listed once for the loader and the runner: the registry's key
    # checks, pause markers (voice), conditions and interruptions.
    "_problems": {"models", "errors", "_conditions", "_expectations", "voice", "_serialize"},
    "_loader": {
        "_problems",
        "models",
        "errors",
        "_expectations",
        "voice",  # pause markup
        "_conditions",  # variants and conditions: presets resolved at load
        "_text",
        "_serialize",
    },
    "evaluators": {
        "models",
        "errors",
        "_text",
        "_atomic",
        "_json_store",
        "_retry",
        "_compat",
        "_async",
    },
    "adapters": {
        "models",
        "errors",
        "_config",
        "voice",  # fixtures, conditions, hearing, barge-in planning; a text turn's words
        "_conditions",  # a turn's chain of audio conditions (FixtureTextSTT refuses them)
        "_text",
        "_retry",
        "_compat",
        "_atomic",
        "_async",
        "_turn_taking",  # the LiveKit turn-taking runner plays the pack's stimuli
        "_serialize",  # room mode's timeline crosses from the agent's process as JSON
        "_session_report",  # a stand-in's latency replayed from LiveKit session reports
    },
    # The far end of an outbound call (issue 37), the runner's script of such a run: it says
    # what the far end says next from what the agent did, and judges the call at the end.
    "_far_end": {"models", "errors", "evaluators"},
    "_runner": {
        "_far_end",
        "_problems",
        "models",
        "errors",
        "_config",
        "adapters",
        "evaluators",
        "_expectations",
        "voice",  # words without pause markers; the WER of what a voice adapter heard
        "_conditions",  # each turn's chain of audio conditions and its seed
        "_text",
        "_sanitize",
        "_async",
    },
    "_gates": {"_records", "_config", "models"},
    # Failure attribution (issue 35): reruns a failed voice run through the runner (as text)
    # and writes why on the run; the record itself lives in models, with the results.
    "_attribution": {"models", "_runner", "voice", "_sanitize"},
    "_report": {
        "models",
        "errors",
        "_config",
        "_gates",
        "_records",
        "_text",
        "_atomic",
        "_serialize",
        "_sanitize",
        "voice",
        "_turn_taking",  # the conformance table, from a turn-taking item's record
    },
    "synthesize": {
        "_turn_taking",  # the pack command and the turn-taking markers' rendering
        "models",
        "errors",
        "_config",
        "_loader",
        "voice",
        "_text",
        "_retry",
        "_atomic",
        "_async",
    },
    "synthesize_audio": {"synthesize"},
    # Turn-taking conformance (issue 34): stimuli, their sounds and rendering, the pack and the
    # metrics; data and audio only (the framework runners live in their adapters).
    "_turn_taking": {"errors", "models", "voice", "_atomic"},
    # Turn-taking gates: a YAML file's turn_taking: block (read as the loader reads YAML),
    # collected as transcript items, run against the agent fixture's adapter through its
    # framework's turn-taking runner, scored with _turn_taking's metrics.
    "_turn_gate": {
        "_turn_taking",
        "_conditions",  # lines: the built-in condition presets a stimulus is heard over
        "errors",
        "models",
        "_loader",
        "voice",
        "_expansion",
        "_collection",
        "_fixture",
        "adapters",
    },
    "_schema": {"_expectations", "_conditions", "_atomic"},
    "_fixture": {
        "_records",  # what a test ran (an EvalRecord), kept on its item
        "models",
        "errors",
        "_config",
        "_options",
        "_eval_plan",
        "adapters",
        "_runner",
        "_attribution",  # explains each failed voice run, when asked (attribute)
        "synthesize",
        "_conditions",  # a text agent skips a transcript that only changes audio
        "_report",  # the live progress of a running eval, on the terminal (report.progress)
        "_async",
        "_compat",
        "_turn_taking",  # a turn-taking item's record, kept with its result
    },
    "_collection": {
        "models",
        "errors",
        "_loader",
        "_expansion",
        "_fixture",
        "_report",
        "_compat",
        "_text",
    },
    "_eval_items": {
        "_eval_plan",
        "models",
        "_records",
        "_collection",
        "_fixture",
        "_report",
        "_sanitize",
        "_text",
        "_turn_taking",  # a turn-taking item's record, onto its eval record
    },
    # Shards: the plan reads which items are evals and their transcripts, and hands itself to
    # the report side (which writes it to the results file), as _eval_items hands records.
    "_shard": {"_collection", "_eval_items", "_fixture", "_report"},
    "plugin": {
        "errors",
        "_options",
        "_config",
        "_collection",
        "_fixture",
        "_eval_items",
        "_report",
        "voice",  # its time shim, in place before a conftest imports pipecat
        "_compat",  # so is Pipecat's import without its own deprecation warnings (-W error)
        "_loader",
        "_shard",
        "simulation",  # its files collected (lazily) beside transcripts, by collection
        "_turn_gate",  # so are turn_taking: files
        "_file_kind",  # told apart from transcripts without importing simulation
        "_capacity",  # --agent-eval-capacity: the capacity run over the selected transcripts
    },
    # The façade re-exports what the docs teach; the settings, loaders and expansion lazily.
    # _compat first of all, for its effect: it takes the package out of pytest's rewriting.
    "__init__": {
        "_compat",
        "errors",
        "models",
        "evaluators",
        "_fixture",
        "adapters",
        "_config",
        "_loader",
        "_expansion",
        "_runner",  # RunSettings, lazily
        "legacy",
    },
    # Old import paths: targets named by string and imported on use; the earlier loader's
    # function calls today's loader.
    "legacy": {"_loader", "models", "_expectations"},
    # `init`: writes a sample project, and synthesizes the LiveKit sample's fixture.
    "_scaffold": {"errors", "_config", "_loader", "synthesize", "voice", "_atomic"},
    # `import`: a real conversation becomes a transcript (validated by the loader before it is
    # written) with recording fixtures cut from the call and heard by offline Whisper.
    "_importers": {"errors", "_config", "_loader", "voice", "_text", "_atomic", "_session_report"},
    # `capacity`: the project's transcripts (loader) and agent (its llm_eval_agent fixture,
    # named in _fixture) run by K sessions over the adapter protocol, as the runner runs turns;
    # the reports written atomically; Pipecat's clock shim (voice) before a conftest loads;
    # the ramp's loop run as every eval's (_async: Ctrl-C wakes it).
    "_capacity": {
        "_async",
        "errors",
        "_config",
        "_loader",
        "models",
        "adapters",
        "_runner",
        "voice",
        "_fixture",
        "_atomic",
    },
    # The `python -m pytest_agent_eval` dispatcher: init, import, merge (report._merge),
    # capacity.
    "__main__": {"_scaffold", "_importers", "_report", "_capacity"},
    # Simulated callers: a transcript part (loader, models) plus the caller and criteria judge
    # (models through _compat, the judges' retry and cache), run by the runner on a RunScript,
    # spoken with the offline voice (synthesize), and collected as transcript items.
    "simulation": {
        "models",
        "errors",
        "_config",
        "_loader",
        "_expectations",
        "_runner",
        "adapters",
        "evaluators",
        "voice",
        "synthesize",
        "_schema",
        "_collection",
        "_fixture",
        "_report",
        "_async",
        "_atomic",
        "_json_store",
        "_compat",
        "_retry",
        "_serialize",
        "_text",
        "_file_kind",
    },
}

# Single modules allowed one more arrow than their part, and why.
EXCEPTIONS: dict[str, set[str]] = {}


def _part(module: tuple[str, ...]) -> str:
    """``("pytest_agent_eval", "report", "html")`` -> ``"report"``."""
    return module[1] if len(module) > 1 else "__init__"


def _imported_parts(rel: Path, source: str) -> set[str]:
    """The parts of the package a module (at ``rel`` under the package) imports, wherever and
    however it imports them."""
    package = ("pytest_agent_eval", *rel.parent.parts)
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        targets: list[tuple[str, ...]] = []
        if isinstance(node, ast.ImportFrom) and node.level:
            base = package[: len(package) - (node.level - 1)]
            if node.module:
                targets.append((*base, *node.module.split(".")))
            else:  # from . import x, y: each name may be a module
                targets += [(*base, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
            "pytest_agent_eval"
        ):
            module = tuple(node.module.split("."))  # type: ignore[union-attr]
            targets += [(*module, a.name) for a in node.names] if len(module) == 1 else [module]
        elif isinstance(node, ast.Import):
            targets += [
                tuple(a.name.split("."))
                for a in node.names
                if a.name.split(".")[0] == "pytest_agent_eval"
            ]
        found.update(_part(t) for t in targets)
    own = _part(("pytest_agent_eval", *rel.with_suffix("").parts))
    return found - {own}


def _own_part(path: Path) -> str:
    rel = path.relative_to(SRC)
    if rel.parts == ("__init__.py",):
        return "__init__"
    return rel.parts[0].removesuffix(".py")


def test_import_arrows_follow_the_table_for_every_module() -> None:
    problems = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        part = _own_part(path)
        if part not in ALLOWED:
            problems.append(f"{rel}: part {part!r} is not in ALLOWED; add it with its imports")
            continue
        imported = _imported_parts(path.relative_to(SRC), path.read_text("utf-8"))
        extra = imported - ALLOWED[part] - EXCEPTIONS.get(rel, set())
        if extra:
            problems.append(f"{rel} ({part}) imports {sorted(extra)}, against the data flow")
    assert not problems, "\n".join(problems)
    assert not any("plugin" in allowed for allowed in ALLOWED.values())


def test_the_arrow_reader_sees_every_kind_of_import() -> None:
    # The reader must catch what a lazy, relative or absolute import would hide.
    source = (
        "from __future__ import annotations\n"
        "import pytest_agent_eval._runner\n"
        "from pytest_agent_eval import adapters\n"
        "from .. import synthesize\n"
        "from ._format import fmt_score\n"
        "if TYPE_CHECKING:\n"
        "    from ..loader import load_transcripts\n"
        "def f():\n"
        "    from ..plugin import agent_eval\n"
    )
    found = _imported_parts(Path("report/probe.py"), source)
    assert found == {"_runner", "adapters", "synthesize", "loader", "plugin"}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _module_graph() -> dict[str, set[str]]:
    """Module -> the modules of ours it imports (top level, lazily or for type checking), plus
    the parent packages each import runs (importing ``a.b.c`` runs ``a/b/__init__.py``)."""
    modules = {_module_name(p): p for p in SRC.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text("utf-8"))):
            found: list[str] = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                    base = f"{base}.{node.module}" if node.module else base
                else:
                    base = node.module or ""
                if base.split(".")[0] == "pytest_agent_eval":
                    found += [f"{base}.{a.name}" for a in node.names] or [base]
                    found.append(base)
            elif isinstance(node, ast.Import):
                found += [a.name for a in node.names if a.name.split(".")[0] == "pytest_agent_eval"]
            for target in found:
                while target not in modules and "." in target:
                    target = target.rpartition(".")[0]
                parts = target.split(".")
                targets.update(".".join(parts[:i]) for i in range(2, len(parts) + 1))
        graph[name] = {
            t for t in targets if t in modules and t != name and not name.startswith(t + ".")
        }
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(component)

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


# Circles in the package: none left (issue 23). Keep it empty: a new circle fails below.
KNOWN_CYCLES: list[set[str]] = []


def test_no_module_imports_itself_back_in_a_circle() -> None:
    cycles = _cycles(_module_graph())
    new = [sorted(c) for c in cycles if c not in KNOWN_CYCLES]
    assert not new, f"import circles: {new}"
    gone = [sorted(c) for c in KNOWN_CYCLES if c not in cycles]
    assert not gone, f"these circles are gone or changed; update KNOWN_CYCLES: {gone}"


def test_the_cycle_finder_sees_a_circle() -> None:
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert _cycles({"a": {"b"}, "b": set()}) == []
