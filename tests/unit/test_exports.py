"""The public surface, pinned: a change to what it exports is a deliberate edit here.

Like httpx's ``test_exported_members``: the façade (``pytest_agent_eval``) and every public
module, that is every module with no ``_private`` part in its path (the adapters' modules,
`pytest_agent_eval.models`, the modules the docs teach, the commands), plus the old paths the
legacy table still serves. Private modules (``_name``, or anything under a ``_package``) are
free to change; they are only held to declaring an ``__all__`` of names they define. A public
module added, removed or changing its ``__all__`` fails here with the line to paste; so does a
module the docs import from that is not public, or a name they import that it does not export.
Read statically, so no optional dependency is imported.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest_agent_eval
from pytest_agent_eval import legacy

SRC = Path(pytest_agent_eval.__file__).parent
REPO = SRC.parent.parent

PUBLIC: dict[str, list[str]] = {
    "(package)": [
        "AdapterError",
        "AgentAdapter",
        "AgentCrashError",
        "AgentEval",
        "AgentEvalError",
        "AgentFailedError",
        "AgentReply",
        "AgentSpeech",
        "AgentTimeoutError",
        "AgentTurn",
        "AudioCondition",
        "AudioFixtureError",
        "BargeIn",
        "CallableAdapter",
        "Case",
        "ConfigError",
        "ContainsEvaluator",
        "Conversation",
        "ConversationInfo",
        "EvalResult",
        "Evaluator",
        "Expect",
        "Greeting",
        "GreetingExpect",
        "Handoff",
        "InterruptConfig",
        "JudgeConfig",
        "JudgeError",
        "JudgeEvaluator",
        "JudgeSettings",
        "Message",
        "MissingExtraError",
        "RunResult",
        "RunSettings",
        "Settings",
        "ToolCall",
        "ToolCallArgsConfig",
        "ToolCallArgsEvaluator",
        "ToolCallArgsJudgeEvaluator",
        "ToolCallEvaluator",
        "ToolCallOutcomeConfig",
        "Transcript",
        "TranscriptError",
        "TranscriptResult",
        "Turn",
        "TurnContext",
        "TurnInput",
        "TurnResult",
        "Usage",
        "Variant",
        "VoiceSettings",
        "__version__",
        "expand",
        "load_settings",
        "load_transcript_file",
        "load_transcripts",
    ],
    "__main__": ["main"],
    "adapters": [
        "AgentAdapter",
        "CallableAdapter",
        "Conversation",
        "ConversationInfo",
        "TurnInput",
    ],
    "adapters.base": [
        "AgentAdapter",
        "AgentCallable",
        "CallableAdapter",
        "Conversation",
        "ConversationInfo",
        "GreetingConversation",
        "PreparingAdapter",
        "TurnInput",
        "as_adapter",
        "coerce_reply",
    ],
    "adapters.langchain": [
        "DEFAULT_MAX_STEPS",
        "LangChainAdapter",
        "text_of",
        "tool_calls_from_messages",
    ],
    "adapters.livekit": [
        "EVAL_EVENTS_TOPIC",
        "EVAL_LISTENER_ATTRIBUTE",
        "FixtureTextSTT",
        "LiveKitAdapter",
        "LiveKitConversation",
        "LiveKitRoomAdapter",
        "LiveKitRoomConversation",
        "Rule",
        "ScriptContext",
        "ScriptedLLM",
        "ScriptedRealtimeModel",
        "SegmentSTT",
        "SessionFactory",
        "SessionInfo",
        "SynthesizerTTS",
        "WhisperSTT",
        "eval_session_kwargs",
        "parse_number",
        "publish_eval_events",
    ],
    "adapters.livekit.offline": [],
    "adapters.livekit.realtime": [
        "CassetteError",
        "OpenAIRealtimeReplay",
        "RealtimeCall",
        "ScriptedRealtimeModel",
        "ScriptedRealtimeSession",
    ],
    "adapters.livekit.realtime.openai": ["CassetteError", "OpenAIRealtimeReplay", "RECORD_ENV"],
    "adapters.livekit.room": [],
    "adapters.livekit.session": [],
    "adapters.openai": ["DEFAULT_MAX_STEPS", "OpenAIAdapter", "Tool", "ToolSpec"],
    "adapters.pipecat": [
        "BotFactory",
        "BotInfo",
        "FixtureTextSTTService",
        "InProcessTransport",
        "PipecatAdapter",
        "PipecatConversation",
        "Rule",
        "SUPPORTED",
        "ScriptContext",
        "ScriptedLLMService",
        "SynthesizerTTSService",
        "WhisperSTTService",
        "parse_number",
    ],
    "adapters.pydantic_ai": ["PydanticAIAdapter", "render_output", "tool_calls_from_messages"],
    "adapters.smolagents": ["INTERNAL_TOOLS", "SmolagentsAdapter"],
    "errors": [
        "AdapterError",
        "AgentCrashError",
        "AgentEvalError",
        "AgentFailedError",
        "AgentTimeoutError",
        "AudioFixtureError",
        "ConfigError",
        "JudgeError",
        "MissingExtraError",
        "TranscriptError",
        "install_command",
        "require_extra",
    ],
    "evaluators": [
        "ContainsEvaluator",
        "EvalResult",
        "Evaluator",
        "JudgeEvaluator",
        "LatencyEvaluator",
        "ToolCall",
        "ToolCallArgsEvaluator",
        "ToolCallArgsJudgeEvaluator",
        "ToolCallEvaluator",
        "evaluate_safely",
        "evaluator_name",
    ],
    "evaluators.judge": [
        "DEFAULT_JUDGE_MODEL",
        "JUDGE_PROMPT_VERSION",
        "JudgeEvaluator",
        "JudgeModel",
        "OutputMode",
        "ToolCallArgsJudgeEvaluator",
        "build_model",
    ],
    "legacy": ["MOVED", "build_evaluators", "install", "load_transcript", "moved_attr"],
    "models": [
        "AgentReply",
        "AgentSpeech",
        "AgentTurn",
        "AudioCondition",
        "BargeIn",
        "CallEnd",
        "CallExpect",
        "Case",
        "Crash",
        "DtmfInput",
        "EvalResult",
        "Expect",
        "Greeting",
        "GreetingExpect",
        "Handoff",
        "InterruptConfig",
        "JudgeConfig",
        "MAX_RUNS",
        "MAX_TURN_TIMEOUT_S",
        "Message",
        "PhoneCall",
        "RunResult",
        "SCORE_MAX_DECIMALS",
        "SimulatedCaller",
        "Timeline",
        "TimelineEvent",
        "ToolCall",
        "ToolCallArgsConfig",
        "ToolCallOutcomeConfig",
        "ToolCalledConfig",
        "ToolOutcome",
        "Transcript",
        "TranscriptResult",
        "Turn",
        "TurnContext",
        "TurnResult",
        "Usage",
        "Variant",
        "Verdict",
        "VoiceSettings",
        "describe_conditions",
        "passes_needed",
        "percentile",
        "score_and_threshold_text",
        "sum_usage",
        "wilson_interval",
    ],
    "plugin": ["agent_eval", "check_space_form_paths"],
    "simulation": [
        "CallerConfig",
        "CallerError",
        "CallerSettings",
        "Criterion",
        "DEFAULT_MAX_TURNS",
        "DEFAULT_MIN_TURNS",
        "Simulation",
        "SimulationSettings",
        "collect_simulation_file",
        "load_simulation_file",
        "run_simulation",
        "simulation_schema",
    ],
    "synthesize": [
        "DEFAULT_SAMPLE_RATE",
        "ENTRY_POINT_GROUP",
        "FixtureProblem",
        "FixtureResult",
        "FixtureSpec",
        "FixtureState",
        "FixtureStatus",
        "Planner",
        "SynthesisSummary",
        "TTSBackend",
        "VerifyResult",
        "available_backends",
        "check_fixture",
        "ensure_fixtures",
        "fixture_problems",
        "get_backend",
        "synthesize_specs",
        "verify_fixtures",
    ],
    "synthesize_audio": ["main"],
    "voice": [
        "AudioClip",
        "EmbeddedRecord",
        "FixtureCheck",
        "Pause",
        "Phrase",
        "judge_fixture",
        "read_embedded",
        "split_speech",
        "spoken_text",
        "transcript_cache",
    ],
}
"""Every public module -> its ``__all__``."""

LEGACY: dict[str, list[str]] = {
    "yaml_loader": ["TranscriptError", "load_transcript"],
    "speech": [
        "MAX_PAUSE_S",
        "Pause",
        "PauseMarkupError",
        "Phrase",
        "has_pause_markup",
        "phrases_of",
        "split_speech",
        "spoken_text",
    ],
    "audio_fixtures": [
        "AudioClip",
        "AudioStats",
        "CacheStats",
        "DEFAULT_MAX_FIXTURE_S",
        "EmbeddedRecord",
        "FORMAT_VERSION",
        "FixtureState",
        "INTERRUPTED",
        "LEGACY_NOTE",
        "MARKUP_FIX",
        "MAX_COMMENT_BYTES",
        "Origin",
        "PostProcess",
        "Provenance",
        "RECORDING_FIX",
        "RECORDING_NOTE",
        "SIDECAR_SUFFIX",
        "SILENCE_FLOOR_DBFS",
        "SYNTHESIZE_COMMAND",
        "Sidecar",
        "TimedPhrase",
        "TranscriptCache",
        "TranscriptKey",
        "Verdict",
        "audio_problem",
        "audio_stats",
        "clean_stale_temp_files",
        "clip_from_pcm16",
        "decoded_audio_mime",
        "default_transcript_cache_dir",
        "describe_changes",
        "embedded_comment",
        "encode_wav",
        "fixture_key",
        "judge_fixture",
        "legacy_text_matches",
        "load_whisper",
        "max_fixture_s",
        "normalize_for_wer",
        "normalize_level",
        "pcm_sha256",
        "postprocess",
        "prove_fixture_text",
        "read_embedded",
        "read_legacy_hash",
        "read_provenance",
        "read_sidecar",
        "read_wav",
        "read_wav_comment",
        "recognizer_identity",
        "render_phrases",
        "resample",
        "set_default_transcript_cache_dir",
        "set_max_fixture_s",
        "sidecar_path",
        "synthesize_command",
        "to_pcm16_bytes",
        "transcribe",
        "transcribe_pcm",
        "transcript_cache",
        "trim_silence",
        "validate_fixture",
        "voiced_frames",
        "word_error_rate",
        "write_sidecar",
        "write_wav_atomic",
    ],
    "synthesize.cli": ["build_parser", "main"],
    "runner": [
        "RunScript",
        "RunSettings",
        "assistant_messages",
        "crash_of",
        "describe_exception",
        "heard_wer",
        "passes_needed",
        "run_transcript",
        "turn_evaluators",
    ],
    "config": [
        "ConfigWarning",
        "DEFAULT_CONCURRENCY",
        "DEFAULT_JUDGE_MAX_CHARS",
        "DEFAULT_JUDGE_MODEL",
        "DEFAULT_TURN_TIMEOUT_S",
        "GateConfig",
        "JudgeSettings",
        "LIMITS",
        "SPEED_NAMES",
        "SUBSET_GATES_CHOICES",
        "Settings",
        "check_limit",
        "find_pyproject",
        "load_settings",
        "parse_bool_env",
        "parse_settings",
        "parse_shard",
        "parse_speed",
    ],
    "gates": [
        "ExitDecision",
        "GateLine",
        "GateResult",
        "decide_exit",
        "evaluate_gate",
        "evaluate_gates",
        "is_member",
    ],
    "loader": [
        "MAX_YAML_NODES",
        "Presets",
        "Subject",
        "TRANSCRIPT_SUFFIXES",
        "YamlDocument",
        "find_transcript_files",
        "is_ignored_file",
        "iter_audio_paths",
        "load_transcript_file",
        "load_transcript_text",
        "load_transcripts",
        "read_yaml_document",
        "transcript_schema",
    ],
    "schema": [
        "PACKAGED_SCHEMA",
        "TABLE_END",
        "TABLE_START",
        "build_schema",
        "expectations_table",
        "reference_page",
        "render_schema",
        "replace_table",
        "schema_reference",
    ],
    "expansion": [
        "SUFFIX_PATTERN",
        "derive",
        "expand",
        "expand_cases",
        "expand_variants",
        "id_suffix",
    ],
    "evaluators.base": [
        "CheckSource",
        "DeterministicEvaluator",
        "Evaluator",
        "evaluate_safely",
        "evaluator_name",
        "located",
        "shorten",
        "source_of",
        "text_problems",
        "unobserved",
        "with_source",
    ],
    "evaluators.contains": ["ContainsEvaluator", "EvalResult", "TurnContext"],
    "evaluators.tool_call": [
        "EvalResult",
        "ToolCallArgsEvaluator",
        "ToolCallEvaluator",
        "TurnContext",
    ],
    "evaluators": ["build_evaluators"],
    "voice": ["Verdict"],
}
"""Old module (under the package) -> the names the legacy table serves there, each with a
`DeprecationWarning` naming its replacement (tests/unit/test_legacy.py checks each one)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts) or "(package)"


def _top_level_names(tree: ast.Module) -> set[str]:
    """Names bound by the module's own top-level statements (also inside if/try blocks)."""
    names: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                names.add(node.name)
            elif isinstance(node, ast.Assign):
                for target in node.targets:
                    names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
            elif isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(
                node.target, ast.Name
            ):
                names.add(node.target.id)
            elif isinstance(node, ast.Import | ast.ImportFrom):
                names.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, ast.If | ast.Try):
                visit(node.body)
                visit(node.orelse)
                for handler in getattr(node, "handlers", []):
                    visit(handler.body)

    visit(tree.body)
    return names


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            return list(ast.literal_eval(node.value))
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id == "__all__"
            and node.value is not None
        ):
            return list(ast.literal_eval(node.value))
    return None


def _modules() -> dict[str, ast.Module]:
    return {_module_name(p): ast.parse(p.read_text("utf-8")) for p in sorted(SRC.rglob("*.py"))}


def _is_public(name: str) -> bool:
    return not any(part.startswith("_") and part != "__main__" for part in name.split("."))


def test_every_module_declares_an_all_of_names_it_defines() -> None:
    for name, tree in _modules().items():
        declared = _declared_all(tree)
        assert declared is not None, f"{name} declares no __all__"
        assert len(declared) == len(set(declared)), f"{name}: __all__ lists a name twice"
        missing = set(declared) - _top_level_names(tree)
        assert not missing, f"{name}: __all__ names {sorted(missing)}, not defined there"


def test_every_public_module_exports_exactly_the_pinned_names() -> None:
    actual = {
        name: sorted(_declared_all(tree) or [])
        for name, tree in _modules().items()
        if name == "(package)" or _is_public(name)
    }
    problems = []
    for name in sorted(set(actual) | set(PUBLIC)):
        if actual.get(name) != PUBLIC.get(name):
            entry = f'"{name}": {actual.get(name)!r},'.replace("'", '"')
            problems.append(
                f"{name}: pinned {PUBLIC.get(name)!r}, module has {actual.get(name)!r}; if the "
                f"change is deliberate, set the entry to: {entry}"
                if name in actual
                else f"{name}: pinned but the module is gone (or private now); remove its "
                "entry, and give its old path to the legacy table if users were taught it"
            )
    assert not problems, "\n".join(problems)


def test_the_legacy_table_serves_exactly_the_pinned_old_names() -> None:
    served = {
        module.removeprefix("pytest_agent_eval."): sorted(names)
        for module, names in legacy.MOVED.items()
    }
    assert served == LEGACY
    for module, names in LEGACY.items():
        if module in PUBLIC:  # a public module that lost names: its __getattr__ serves them
            assert not set(names) & set(PUBLIC[module]), f"{module} exports an old name"
            continue
        path = SRC.joinpath(*module.split("."))
        assert not path.with_suffix(".py").exists() and not path.is_dir(), (
            f"{module} is in the legacy table but its file still exists: delete the file"
        )


def test_the_package_exports_resolve_at_run_time() -> None:
    for name in pytest_agent_eval.__all__:
        assert getattr(pytest_agent_eval, name) is not None, name


_TAUGHT_IMPORT = re.compile(
    r"^\s*from (pytest_agent_eval(?:\.\w+)*) import \(?([\w, ]*)\)?\s*$", re.MULTILINE
)
_TAUGHT_BLOCK = re.compile(
    r"^\s*from (pytest_agent_eval(?:\.\w+)*) import \(\n(.*?)\)", re.S | re.M
)
_TAUGHT_PATH = re.compile(r"(?:python -m |::: )(pytest_agent_eval(?:\.\w+)*)")

CONTRIBUTOR_COMMANDS = {"_schema"}
"""Private modules the docs may name as a command: contributors run them from the repository
root (``python -m pytest_agent_eval._schema`` regenerates the schemas and reference pages)."""


def _taught_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
    files += sorted((REPO / "examples").rglob("*.py"))
    return [f for f in files if f.is_file()]


def test_the_docs_import_only_from_public_modules_and_only_names_they_export() -> None:
    """What the docs and examples teach is the pinned surface: a private module or an
    unexported name in an import users copy would break on the next refactor."""
    problems = []
    for path in _taught_files():
        text = path.read_text("utf-8")
        found = [(m.group(1), m.group(2)) for m in _TAUGHT_IMPORT.finditer(text)]
        found += [(m.group(1), m.group(2)) for m in _TAUGHT_BLOCK.finditer(text)]
        for module, names in found:
            key = module.removeprefix("pytest_agent_eval").removeprefix(".") or "(package)"
            if key in LEGACY:
                continue  # an old path, taught as such (migration notes)
            exported = PUBLIC.get(key)
            if exported is None:
                problems.append(f"{path.relative_to(REPO)}: imports from {module}, not public")
                continue
            for name in re.findall(r"\w+", re.sub(r"#.*", "", names)):
                if name not in exported and f"{key}.{name}" not in PUBLIC:
                    problems.append(f"{path.relative_to(REPO)}: {module} does not export {name}")
        for m in _TAUGHT_PATH.finditer(text):
            dotted = m.group(1).removeprefix("pytest_agent_eval").removeprefix(".")
            module, _, attr = dotted.rpartition(".") if dotted not in PUBLIC else (dotted, "", "")
            key = module or "(package)"
            if not dotted or dotted in PUBLIC or dotted in LEGACY or dotted in CONTRIBUTOR_COMMANDS:
                continue
            if key not in PUBLIC or attr not in PUBLIC[key]:
                problems.append(f"{path.relative_to(REPO)}: teaches {m.group(1)}, not public")
    assert not problems, "\n".join(problems)
