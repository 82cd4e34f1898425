"""Every module's ``__all__``, pinned: a change to what a module exports is a deliberate edit here.

Like httpx's ``test_exported_members``, for the whole package: the table below is the public
surface (and, for ``_private`` modules, the surface between our own modules). A module added,
removed or changing its ``__all__`` fails here with the line to paste. Also checked: every module
declares ``__all__``, and every name in it is defined at the module's top level (a definition,
an assignment or an import, lazy ``TYPE_CHECKING`` re-exports included). Read statically, so no
optional dependency is imported.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest_agent_eval

SRC = Path(pytest_agent_eval.__file__).parent

EXPORTS: dict[str, list[str]] = {
    "(package)": [
        "AdapterError",
        "AgentEval",
        "AgentEvalError",
        "AgentReply",
        "AudioFixtureError",
        "ConfigError",
        "ContainsEvaluator",
        "EvalResult",
        "Evaluator",
        "Expect",
        "JudgeConfig",
        "JudgeError",
        "JudgeEvaluator",
        "MissingExtraError",
        "RunResult",
        "ToolCall",
        "ToolCallArgsConfig",
        "ToolCallArgsEvaluator",
        "ToolCallArgsJudgeEvaluator",
        "ToolCallEvaluator",
        "Transcript",
        "TranscriptError",
        "TranscriptResult",
        "Turn",
        "TurnContext",
        "TurnResult",
        "__version__",
    ],
    "_async": [
        "SessionLoop",
        "call_in_thread",
        "on_loop_close",
        "run_sync",
    ],
    "_atomic": [
        "FILE_MODE",
        "WrittenFile",
        "clean_stale_temp_files",
        "temp_prefix",
        "write_atomic",
    ],
    "_compat": [],
    "_compat.pydantic_ai": [
        "close_built_model",
        "drift_problems",
        "infer_judge_model",
        "no_sdk_retry_settings",
        "pydantic_ai_version",
        "usage_of",
    ],
    "_compat.pytest": [
        "NO_PARAM_WORDS",
        "PYTEST_VERSION",
        "PytestDriftError",
        "drift_problems",
        "fixture_defs",
        "fixture_scope",
        "make_callspec",
    ],
    "_records": [
        "EvalRecord",
        "SessionRecords",
        "TestOutcome",
        "Verdict",
        "put_records",
        "serialized_records",
    ],
    "_retry": [
        "ERROR_TEXT_MAX_CHARS",
        "backoff_delay",
        "describe_error",
        "http_status",
        "is_transient",
        "retry_after_s",
    ],
    "_sanitize": [
        "REDACTED",
        "SECRET_ENV_PATTERN",
        "clean_text",
        "redact_secrets",
        "scrub",
        "secret_values",
        "strip_controls",
    ],
    "_serialize": [
        "from_json",
        "to_json",
    ],
    "_text": [
        "TOOL_ARGS_MAX_CHARS",
        "clip",
        "compact_json",
        "did_you_mean",
        "format_tool_call",
        "patterns_as_written",
        "safe_name",
        "short_repr",
        "shorten",
    ],
    "adapters": [
        "AgentAdapter",
        "CallableAdapter",
        "Conversation",
        "ConversationInfo",
        "TurnInput",
    ],
    "adapters._args": [
        "coerce_args",
        "reply_text",
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
        "SegmentSTT",
        "SessionFactory",
        "SessionInfo",
        "SynthesizerTTS",
        "WhisperSTT",
        "eval_session_kwargs",
        "parse_number",
        "publish_eval_events",
    ],
    "adapters.livekit._adapter": [
        "LiveKitAdapter",
        "LiveKitConversation",
        "SessionFactory",
        "SessionInfo",
    ],
    "adapters.livekit._audio": [
        "FixtureAudio",
        "SpeechSegment",
        "VADMirror",
        "content_key",
        "load_fixture_audio",
    ],
    "adapters.livekit._compat": [
        "LIVEKIT_AGENTS_VERSION",
        "LiveKitInternalsError",
        "TESTED_WITH",
        "ToolExceptionRecord",
        "activity_agent",
        "activity_current_speech",
        "activity_has_queued_speech",
        "activity_on_enter_task",
        "activity_recognition",
        "activity_running_speech_tasks",
        "activity_scheduling_paused",
        "agent_in_a_session",
        "agent_switch_lock",
        "agent_switch_task",
        "run_assert_over",
        "running_activity",
        "running_in_on_enter",
        "running_speech",
        "running_tool_call",
        "session_activity",
        "session_target_agent",
        "task_answers",
        "task_hands_back",
        "tool_exception_record",
    ],
    "adapters.livekit._io": [
        "CaptureAudioOutput",
        "CaptureTextOutput",
        "FrameQueueInput",
    ],
    "adapters.livekit._logs": [
        "LiveKitLogScope",
        "ToolErrorSink",
        "hold_livekit_logs",
        "resolve_level",
    ],
    "adapters.livekit._options": [
        "eval_session_kwargs",
    ],
    "adapters.livekit._room": [
        "HELPER_HINT",
        "LiveKitRoomAdapter",
        "LiveKitRoomConversation",
    ],
    "adapters.livekit._room_events": [
        "EVAL_EVENTS_TOPIC",
        "EVAL_EVENTS_VERSION",
        "EVAL_LISTENER_ATTRIBUTE",
        "EvalEventPublisher",
        "parse_eval_event",
        "publish_eval_events",
    ],
    "adapters.livekit._room_observer": [
        "ReplyStream",
        "RoomObserver",
        "TurnLog",
    ],
    "adapters.livekit._scripted": [
        "Rule",
        "ScriptContext",
        "ScriptedLLM",
        "parse_number",
    ],
    "adapters.livekit._stt": [
        "FixtureTextSTT",
        "SegmentListener",
        "SegmentSTT",
        "WhisperSTT",
        "assign_phrases",
    ],
    "adapters.livekit._tts": [
        "SynthesizerTTS",
    ],
    "adapters.livekit._turn": [
        "SessionClosedError",
        "SessionProbe",
        "SpeechTexts",
        "TurnCapture",
        "TurnRecorder",
        "llm_usage",
        "speech_dict",
        "usage_delta",
    ],
    "adapters.openai": [
        "DEFAULT_MAX_STEPS",
        "OpenAIAdapter",
        "Tool",
        "ToolSpec",
    ],
    "adapters.pydantic_ai": [
        "PydanticAIAdapter",
        "render_output",
        "tool_calls_from_messages",
    ],
    "adapters.smolagents": [
        "INTERNAL_TOOLS",
        "SmolagentsAdapter",
    ],
    "audio_fixtures": [
        "AudioClip",
        "AudioStats",
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
        "Verdict",
        "audio_problem",
        "audio_stats",
        "clean_stale_temp_files",
        "clip_from_pcm16",
        "decoded_audio_mime",
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
        "render_phrases",
        "resample",
        "set_max_fixture_s",
        "sidecar_path",
        "synthesize_command",
        "to_pcm16_bytes",
        "transcribe",
        "trim_silence",
        "validate_fixture",
        "voiced_frames",
        "word_error_rate",
        "write_sidecar",
        "write_wav_atomic",
    ],
    "audio_fixtures._clip": [
        "AudioClip",
        "MAX_COMMENT_BYTES",
        "PCM16_SCALE",
        "clean_stale_temp_files",
        "clip_from_pcm16",
        "encode_wav",
        "read_wav",
        "read_wav_comment",
        "resample",
        "to_pcm16_bytes",
        "write_wav_atomic",
    ],
    "audio_fixtures._effects": [
        "PostProcess",
        "normalize_level",
        "postprocess",
        "render_phrases",
        "trim_silence",
    ],
    "audio_fixtures._provenance": [
        "EmbeddedRecord",
        "Origin",
        "PROVENANCE_MARKER",
        "Provenance",
        "embedded_comment",
        "parse_embedded",
        "pcm_sha256",
        "read_embedded",
        "read_provenance",
    ],
    "audio_fixtures._sidecar": [
        "FORMAT_VERSION",
        "SIDECAR_SUFFIX",
        "Sidecar",
        "TimedPhrase",
        "describe_changes",
        "fixture_key",
        "legacy_text_matches",
        "read_legacy_hash",
        "read_sidecar",
        "sidecar_path",
        "write_sidecar",
    ],
    "audio_fixtures._stats": [
        "AudioStats",
        "SILENCE_FLOOR_DBFS",
        "audio_stats",
        "dbfs",
        "voiced_frames",
    ],
    "audio_fixtures._status": [
        "FixtureState",
        "INTERRUPTED",
        "LEGACY_NOTE",
        "MARKUP_FIX",
        "RECORDING_NOTE",
        "Verdict",
        "judge_fixture",
        "prove_fixture_text",
    ],
    "audio_fixtures._validate": [
        "DEFAULT_MAX_FIXTURE_S",
        "RECORDING_FIX",
        "SYNTHESIZE_COMMAND",
        "TOO_LONG_FIX",
        "audio_problem",
        "decoded_audio_mime",
        "max_fixture_s",
        "set_max_fixture_s",
        "synthesize_command",
        "validate_fixture",
    ],
    "audio_fixtures.wer": [
        "normalize_for_wer",
        "word_error_rate",
    ],
    "audio_fixtures.whisper": [
        "WHISPER_SAMPLE_RATE",
        "load_whisper",
        "resolve_whisper_model",
        "transcribe",
    ],
    "collection": [
        "TranscriptFile",
        "TranscriptItem",
        "collect_transcript_file",
        "seen_ids_key",
        "seen_names_key",
        "transcript_test_name",
    ],
    "config": [
        "DEFAULT_CONCURRENCY",
        "DEFAULT_JUDGE_MAX_CHARS",
        "DEFAULT_JUDGE_MODEL",
        "DEFAULT_TURN_TIMEOUT_S",
        "GateConfig",
        "JudgeSettings",
        "LIMITS",
        "PytestConfigLike",
        "SUBSET_GATES_CHOICES",
        "SessionSettings",
        "Settings",
        "add_options",
        "check_limit",
        "find_pyproject",
        "load_settings",
        "parse_bool_env",
        "parse_settings",
        "session_settings",
    ],
    "errors": [
        "AdapterError",
        "AgentEvalError",
        "AudioFixtureError",
        "ConfigError",
        "JudgeError",
        "MissingExtraError",
        "TranscriptError",
        "require_extra",
    ],
    "eval_items": [
        "FAILURE_TEXT_MAX_CHARS",
        "NOT_LIVE_REASON",
        "UNASSERTED_NOTE",
        "assert_unasserted_results",
        "attach_records",
        "deselect_by_tags",
        "eval_record",
        "failure_text",
        "is_eval_item",
        "is_python_eval",
        "item_param",
        "item_tags",
        "mark_eval_item",
        "plan_evals",
        "redact_report",
        "register_group_markers",
        "start_records",
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
        "build_evaluators",
        "evaluate_safely",
        "evaluator_name",
    ],
    "evaluators._judge_cache": [
        "CachedVerdict",
        "VerdictCache",
        "verdict_key",
    ],
    "evaluators._judge_prompt": [
        "JUDGE_PROMPT_VERSION",
        "JudgePrompt",
        "build_reply_prompt",
        "build_tool_args_prompt",
        "render_history",
    ],
    "evaluators._judge_retry": [
        "rejects_temperature",
    ],
    "evaluators.base": [
        "DeterministicEvaluator",
        "Evaluator",
        "evaluate_safely",
        "evaluator_name",
        "shorten",
        "unobserved",
    ],
    "evaluators.contains": [
        "ContainsEvaluator",
        "EvalResult",
        "TurnContext",
    ],
    "evaluators.judge": [
        "DEFAULT_JUDGE_MODEL",
        "JUDGE_PROMPT_VERSION",
        "JudgeEvaluator",
        "JudgeModel",
        "OutputMode",
        "ToolCallArgsJudgeEvaluator",
    ],
    "evaluators.reply": [
        "ContainsEvaluator",
        "InvalidPatternError",
        "LatencyEvaluator",
    ],
    "evaluators.tool_call": [
        "EvalResult",
        "ToolCallArgsEvaluator",
        "ToolCallEvaluator",
        "TurnContext",
    ],
    "evaluators.tools": [
        "ToolCallArgsEvaluator",
        "ToolCallEvaluator",
        "describe_calls",
        "is_subsequence",
    ],
    "expectations": [
        "EXPECTATIONS",
        "ExpectKey",
        "Expectation",
        "build_evaluators",
        "build_greeting_checks",
        "expect_defs",
        "expect_keys",
        "expect_schema",
        "transcript_key_schemas",
        "transcript_keys",
    ],
    "expectations.agents": [
        "ActiveAgentEvaluator",
        "EXPECTATION",
        "HandoffEvaluator",
    ],
    "expectations.base": [
        "Check",
        "ExpectKey",
        "Expectation",
        "Problem",
        "no_evaluators",
        "no_greeting_checks",
        "string_list",
        "text_problems",
        "unobserved",
    ],
    "expectations.greeting": [
        "EXPECTATION",
        "GREETING_SCHEMA",
        "GreetingEvaluator",
    ],
    "expectations.heard": [
        "EXPECTATION",
    ],
    "expectations.judge": [
        "EXPECTATION",
        "JUDGE_SCHEMA",
    ],
    "expectations.latency": [
        "EXPECTATION",
    ],
    "expectations.reply_contains_none": [
        "EXPECTATION",
        "ReplyContainsNoneEvaluator",
    ],
    "expectations.reply_text": [
        "EXPECTATION",
        "check_regexes",
    ],
    "expectations.tool_args": [
        "EXPECTATION",
        "TOOL_CALL_ARGS_SCHEMA",
    ],
    "expectations.tool_calls": [
        "EXPECTATION",
    ],
    "expectations.tool_outcome": [
        "EXPECTATION",
        "TOOL_CALL_OUTCOME_SCHEMA",
        "ToolOutcomeEvaluator",
        "given_back",
    ],
    "fixture": [
        "AGENT_FIXTURE",
        "AgentEval",
        "JUDGE_MODEL_FIXTURE",
        "MISSING_AGENT_MESSAGE",
        "RecordedEval",
        "adapter_or_fail",
        "call_async_test",
        "check_audio_fixtures",
        "close_session_loop",
        "loop_key",
        "record_result",
        "records_key",
        "session_key",
        "session_loop",
    ],
    "gates": [
        "ExitDecision",
        "GateResult",
        "decide_exit",
        "evaluate_gate",
        "evaluate_gates",
        "is_member",
    ],
    "loader": [
        "MAX_YAML_NODES",
        "TRANSCRIPT_SUFFIXES",
        "find_transcript_files",
        "is_ignored_file",
        "iter_audio_paths",
        "load_transcript_file",
        "load_transcript_text",
        "load_transcripts",
        "transcript_schema",
    ],
    "models": [
        "AgentReply",
        "AgentSpeech",
        "AgentTurn",
        "EvalResult",
        "Expect",
        "Greeting",
        "GreetingExpect",
        "Handoff",
        "JudgeConfig",
        "MAX_RUNS",
        "MAX_TURN_TIMEOUT_S",
        "Message",
        "RunResult",
        "SCORE_MAX_DECIMALS",
        "ToolCall",
        "ToolCallArgsConfig",
        "ToolCallOutcomeConfig",
        "ToolOutcome",
        "Transcript",
        "TranscriptResult",
        "Turn",
        "TurnContext",
        "TurnResult",
        "Usage",
        "VoiceSettings",
        "passes_needed",
        "score_and_threshold_text",
        "sum_usage",
        "wilson_interval",
    ],
    "plugin": [
        "agent_eval",
        "check_space_form_paths",
    ],
    "report": [],
    "report._format": [
        "AGENT_SPEECH_LABEL",
        "NO_RESULT",
        "SCORE_DECIMALS",
        "TOOL_ARGS_MAX_CHARS",
        "cost_lines",
        "fmt_agent_speech",
        "fmt_interval",
        "fmt_latency",
        "fmt_planned_runs",
        "fmt_rate",
        "fmt_record_score",
        "fmt_runs",
        "fmt_score",
        "fmt_seconds",
        "fmt_threshold",
        "fmt_tokens",
        "fmt_tool_call",
        "fmt_usage",
        "fmt_usage_per_run",
        "fmt_variant",
        "greeting_shown",
        "heard_rows",
        "session_facts",
        "shorten",
        "shown_markers",
        "side_by_side",
        "verdict_label",
    ],
    "report.account": [
        "format_account",
        "format_score_line",
    ],
    "report.files": [
        "GITHUB_STEP_SUMMARY_LIMIT_BYTES",
        "append_step_summary",
        "resolve_report_path",
        "write_atomic",
    ],
    "report.html": [
        "AUDIO_EMBED_BUDGET_BYTES",
        "AUDIO_EMBED_LIMIT_BYTES",
        "AudioStore",
        "render_chart_svg",
        "render_html",
    ],
    "report.markdown": [
        "INTERRUPTED",
        "NOTHING_RAN",
        "baseline_section",
        "interrupted_lines",
        "md_escape",
        "md_escape_lines",
        "md_table",
        "render_markdown",
        "render_summary_markdown",
        "side_by_side_section",
    ],
    "report.not_live": [
        "NotLiveSummary",
        "not_live_line",
    ],
    "report.records": [
        "EvalRecord",
        "RecordCollector",
        "ReportData",
        "SessionRecords",
        "TestOutcome",
        "Verdict",
        "iter_results",
        "read_record",
        "serialized_records",
    ],
    "report.results_file": [
        "BASELINE_HEADER",
        "BaselineComparison",
        "BaselineError",
        "EvalChange",
        "RESULTS_SCHEMA_VERSION",
        "SIGNIFICANCE",
        "baseline_rows",
        "compare_with_baseline",
        "fisher_exact_p",
        "load_baseline",
        "results_document",
    ],
    "report.session": [
        "AgentEvalReporter",
        "WrittenReports",
        "reporter_key",
    ],
    "report.terminal": [
        "TerminalLine",
        "baseline_lines",
        "format_table",
        "gate_lines",
        "group_summary_lines",
        "summary_lines",
    ],
    "runner": [
        "RunSettings",
        "assistant_messages",
        "describe_exception",
        "passes_needed",
        "run_transcript",
    ],
    "schema": [
        "PACKAGED_SCHEMA",
        "TABLE_END",
        "TABLE_START",
        "build_schema",
        "expectations_table",
        "render_schema",
        "replace_table",
    ],
    "schema.__main__": [
        "main",
    ],
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
    "synthesize.backend": [
        "BUILTIN_BACKENDS",
        "DEFAULT_BACKEND",
        "ENTRY_POINT_GROUP",
        "Execution",
        "TTSBackend",
        "available_backends",
        "get_backend",
        "package_version",
    ],
    "synthesize.backends": [],
    "synthesize.backends._espeak_worker": [
        "main",
    ],
    "synthesize.backends.espeak": [
        "EspeakBackend",
    ],
    "synthesize.backends.hibari": [
        "HibariBackend",
    ],
    "synthesize.backends.openai": [
        "OPENAI_MODELS",
        "OPENAI_VOICES",
        "OpenAIBackend",
        "SpeechAPIError",
    ],
    "synthesize.backends.piper": [
        "PiperBackend",
    ],
    "synthesize.cli": [
        "build_parser",
        "main",
    ],
    "synthesize.plan": [
        "BUILTIN_DEFAULTS",
        "DEFAULT_SAMPLE_RATE",
        "FixtureNoteWarning",
        "FixtureProblem",
        "FixtureSpec",
        "FixtureState",
        "FixtureStatus",
        "INTERRUPTED",
        "LEGACY_NOTE",
        "Plan",
        "Planner",
        "RECORDING_NOTE",
        "check_fixture",
        "display_path",
        "fixture_problems",
        "fixture_statuses",
        "sidecar_for",
    ],
    "synthesize.preflight": [
        "StaleAudioMode",
        "UnreadyFixtures",
        "unready_fixtures",
    ],
    "synthesize.prune": [
        "find_orphans",
        "prune_orphans",
    ],
    "synthesize.run": [
        "FixtureResult",
        "SynthesisSummary",
        "default_jobs",
        "ensure_fixtures",
        "make_fixture",
        "speech_pieces",
        "synthesize_specs",
    ],
    "synthesize.verify": [
        "DEFAULT_MAX_WER",
        "VerifyResult",
        "verify_fixtures",
    ],
    "synthesize_audio": [
        "main",
    ],
    "yaml_loader": [
        "TranscriptError",
        "load_transcript",
    ],
}


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


def test_every_module_declares_an_all_of_names_it_defines() -> None:
    for name, tree in _modules().items():
        declared = _declared_all(tree)
        assert declared is not None, f"{name} declares no __all__"
        assert len(declared) == len(set(declared)), f"{name}: __all__ lists a name twice"
        missing = set(declared) - _top_level_names(tree)
        assert not missing, f"{name}: __all__ names {sorted(missing)}, not defined there"


def test_every_module_exports_exactly_the_pinned_names() -> None:
    actual = {name: sorted(_declared_all(tree) or []) for name, tree in _modules().items()}
    problems = []
    for name in sorted(set(actual) | set(EXPORTS)):
        if actual.get(name) != EXPORTS.get(name):
            entry = f'"{name}": {actual.get(name)!r},'.replace("'", '"')
            problems.append(
                f"{name}: pinned {EXPORTS.get(name)!r}, module has {actual.get(name)!r}; if the "
                f"change is deliberate, set the entry to: {entry}"
                if name in actual
                else f"{name}: pinned but the module is gone; remove its entry"
            )
    assert not problems, "\n".join(problems)


def test_the_package_exports_resolve_at_run_time() -> None:
    for name in pytest_agent_eval.__all__:
        assert getattr(pytest_agent_eval, name) is not None, name
