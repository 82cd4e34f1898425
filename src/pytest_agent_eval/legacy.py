"""Old import paths that still work, each with a `DeprecationWarning` naming what to use instead.

When a module moves or stops being public, its old path goes in `MOVED` (old module -> name ->
``"new.module:attr"``, or ``"none: what to do instead"``), and the module file is deleted. A
finder installed by the package serves the old path as a small module whose attributes warn
and hand back the new object, so code written against the earlier package (0.3) or our 0.4 docs
keeps running while its warnings say where each name went. One table, one mechanism: nothing
else in the package knows about old paths.

The earlier package's keyword and attribute names on result records (``turn_index=``,
``eval_results``) are not here: they are the seed's names and keep working without a warning
(`pytest_agent_eval.models`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence
from os import PathLike
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .models import Transcript

__all__ = ["MOVED", "build_evaluators", "install", "load_transcript", "moved_attr"]

_PACKAGE = "pytest_agent_eval"

MOVED: dict[str, dict[str, str]] = {
    # The earlier package's loader module (0.3).
    f"{_PACKAGE}.yaml_loader": {
        "load_transcript": f"{_PACKAGE}.legacy:load_transcript",
        "TranscriptError": f"{_PACKAGE}:TranscriptError",
    },
    # The pause markup's module of 0.4, now the voice package's (its four taught names are
    # public there; the rest resolve to the private module).
    f"{_PACKAGE}.speech": {
        "Pause": f"{_PACKAGE}.voice:Pause",
        "Phrase": f"{_PACKAGE}.voice:Phrase",
        "split_speech": f"{_PACKAGE}.voice:split_speech",
        "spoken_text": f"{_PACKAGE}.voice:spoken_text",
        "MAX_PAUSE_S": f"{_PACKAGE}.voice._speech:MAX_PAUSE_S",
        "PauseMarkupError": f"{_PACKAGE}.voice._speech:PauseMarkupError",
        "has_pause_markup": f"{_PACKAGE}.voice._speech:has_pause_markup",
        "phrases_of": f"{_PACKAGE}.voice._speech:phrases_of",
    },
    # The voice-fixture module of 0.4 (its docs taught AudioClip, read_embedded and
    # judge_fixture from here), now the framework-neutral voice package: the names
    # `pytest_agent_eval.voice` exports resolve there, the rest to its private module.
    f"{_PACKAGE}.audio_fixtures": {
        "AudioClip": f"{_PACKAGE}.voice:AudioClip",
        "AudioStats": f"{_PACKAGE}.voice._fixtures:AudioStats",
        "CacheStats": f"{_PACKAGE}.voice._fixtures:CacheStats",
        "DEFAULT_MAX_FIXTURE_S": f"{_PACKAGE}.voice._fixtures:DEFAULT_MAX_FIXTURE_S",
        "EmbeddedRecord": f"{_PACKAGE}.voice:EmbeddedRecord",
        "FORMAT_VERSION": f"{_PACKAGE}.voice._fixtures:FORMAT_VERSION",
        "FixtureState": f"{_PACKAGE}.voice._fixtures:FixtureState",
        "INTERRUPTED": f"{_PACKAGE}.voice._fixtures:INTERRUPTED",
        "LEGACY_NOTE": f"{_PACKAGE}.voice._fixtures:LEGACY_NOTE",
        "MARKUP_FIX": f"{_PACKAGE}.voice._fixtures:MARKUP_FIX",
        "MAX_COMMENT_BYTES": f"{_PACKAGE}.voice._fixtures:MAX_COMMENT_BYTES",
        "Origin": f"{_PACKAGE}.voice._fixtures:Origin",
        "PostProcess": f"{_PACKAGE}.voice._fixtures:PostProcess",
        "Provenance": f"{_PACKAGE}.voice._fixtures:Provenance",
        "RECORDING_FIX": f"{_PACKAGE}.voice._fixtures:RECORDING_FIX",
        "RECORDING_NOTE": f"{_PACKAGE}.voice._fixtures:RECORDING_NOTE",
        "SIDECAR_SUFFIX": f"{_PACKAGE}.voice._fixtures:SIDECAR_SUFFIX",
        "SILENCE_FLOOR_DBFS": f"{_PACKAGE}.voice._fixtures:SILENCE_FLOOR_DBFS",
        "SYNTHESIZE_COMMAND": f"{_PACKAGE}.voice._fixtures:SYNTHESIZE_COMMAND",
        "Sidecar": f"{_PACKAGE}.voice._fixtures:Sidecar",
        "TimedPhrase": f"{_PACKAGE}.voice._fixtures:TimedPhrase",
        "TranscriptCache": f"{_PACKAGE}.voice._fixtures:TranscriptCache",
        "TranscriptKey": f"{_PACKAGE}.voice._fixtures:TranscriptKey",
        "Verdict": f"{_PACKAGE}.voice:FixtureCheck",
        "audio_problem": f"{_PACKAGE}.voice._fixtures:audio_problem",
        "audio_stats": f"{_PACKAGE}.voice._fixtures:audio_stats",
        "clean_stale_temp_files": f"{_PACKAGE}.voice._fixtures:clean_stale_temp_files",
        "clip_from_pcm16": f"{_PACKAGE}.voice._fixtures:clip_from_pcm16",
        "decoded_audio_mime": f"{_PACKAGE}.voice._fixtures:decoded_audio_mime",
        "default_transcript_cache_dir": f"{_PACKAGE}.voice._fixtures:default_transcript_cache_dir",
        "describe_changes": f"{_PACKAGE}.voice._fixtures:describe_changes",
        "embedded_comment": f"{_PACKAGE}.voice._fixtures:embedded_comment",
        "encode_wav": f"{_PACKAGE}.voice._fixtures:encode_wav",
        "fixture_key": f"{_PACKAGE}.voice._fixtures:fixture_key",
        "judge_fixture": f"{_PACKAGE}.voice:judge_fixture",
        "legacy_text_matches": f"{_PACKAGE}.voice._fixtures:legacy_text_matches",
        "load_whisper": f"{_PACKAGE}.voice._fixtures:load_whisper",
        "max_fixture_s": f"{_PACKAGE}.voice._fixtures:max_fixture_s",
        "normalize_for_wer": f"{_PACKAGE}.voice._fixtures:normalize_for_wer",
        "normalize_level": f"{_PACKAGE}.voice._fixtures:normalize_level",
        "pcm_sha256": f"{_PACKAGE}.voice._fixtures:pcm_sha256",
        "postprocess": f"{_PACKAGE}.voice._fixtures:postprocess",
        "prove_fixture_text": f"{_PACKAGE}.voice._fixtures:prove_fixture_text",
        "read_embedded": f"{_PACKAGE}.voice:read_embedded",
        "read_legacy_hash": f"{_PACKAGE}.voice._fixtures:read_legacy_hash",
        "read_provenance": f"{_PACKAGE}.voice._fixtures:read_provenance",
        "read_sidecar": f"{_PACKAGE}.voice._fixtures:read_sidecar",
        "read_wav": f"{_PACKAGE}.voice._fixtures:read_wav",
        "read_wav_comment": f"{_PACKAGE}.voice._fixtures:read_wav_comment",
        "recognizer_identity": f"{_PACKAGE}.voice._fixtures:recognizer_identity",
        "render_phrases": f"{_PACKAGE}.voice._fixtures:render_phrases",
        "resample": f"{_PACKAGE}.voice._fixtures:resample",
        "set_default_transcript_cache_dir": f"{_PACKAGE}.voice._fixtures:set_default_transcript_cache_dir",
        "set_max_fixture_s": f"{_PACKAGE}.voice._fixtures:set_max_fixture_s",
        "sidecar_path": f"{_PACKAGE}.voice._fixtures:sidecar_path",
        "synthesize_command": f"{_PACKAGE}.voice._fixtures:synthesize_command",
        "to_pcm16_bytes": f"{_PACKAGE}.voice._fixtures:to_pcm16_bytes",
        "transcribe": f"{_PACKAGE}.voice._fixtures:transcribe",
        "transcribe_pcm": f"{_PACKAGE}.voice._fixtures:transcribe_pcm",
        "transcript_cache": f"{_PACKAGE}.voice:transcript_cache",
        "trim_silence": f"{_PACKAGE}.voice._fixtures:trim_silence",
        "validate_fixture": f"{_PACKAGE}.voice._fixtures:validate_fixture",
        "voiced_frames": f"{_PACKAGE}.voice._fixtures:voiced_frames",
        "word_error_rate": f"{_PACKAGE}.voice._fixtures:word_error_rate",
        "write_sidecar": f"{_PACKAGE}.voice._fixtures:write_sidecar",
        "write_wav_atomic": f"{_PACKAGE}.voice._fixtures:write_wav_atomic",
    },
    # The synthesizer's command module of 0.4, named by the `agent-eval-synthesize`
    # script an earlier install wrote (the script now runs synthesize_audio:main).
    f"{_PACKAGE}.synthesize.cli": {
        "main": f"{_PACKAGE}.synthesize_audio:main",
        "build_parser": f"{_PACKAGE}.synthesize._cli:build_parser",
    },
    # Plumbing made private (issue 33: a public surface of at most 25 modules). The names the
    # docs teach resolve to their public homes (the package, `evaluators`); the rest to the
    # private module, with a warning that says so. `report` exported nothing and is not here;
    # `python -m pytest_agent_eval.schema` is `python -m pytest_agent_eval._schema` now (a
    # contributor's command: no module path can serve it). The earlier package's shims
    # `evaluators.contains` and `evaluators.tool_call` are old paths like any other.
    f"{_PACKAGE}.runner": {
        "RunScript": f"{_PACKAGE}._runner:RunScript",
        "RunSettings": f"{_PACKAGE}:RunSettings",
        "assistant_messages": f"{_PACKAGE}._runner:assistant_messages",
        "crash_of": f"{_PACKAGE}._runner:crash_of",
        "describe_exception": f"{_PACKAGE}._runner:describe_exception",
        "heard_wer": f"{_PACKAGE}._runner:heard_wer",
        "passes_needed": f"{_PACKAGE}._runner:passes_needed",
        "run_transcript": f"{_PACKAGE}._runner:run_transcript",
        "turn_evaluators": f"{_PACKAGE}._runner:turn_evaluators",
    },
    f"{_PACKAGE}.config": {
        "ConfigWarning": f"{_PACKAGE}._config:ConfigWarning",
        "DEFAULT_CONCURRENCY": f"{_PACKAGE}._config:DEFAULT_CONCURRENCY",
        "DEFAULT_JUDGE_MAX_CHARS": f"{_PACKAGE}._config:DEFAULT_JUDGE_MAX_CHARS",
        "DEFAULT_JUDGE_MODEL": f"{_PACKAGE}._config:DEFAULT_JUDGE_MODEL",
        "DEFAULT_TURN_TIMEOUT_S": f"{_PACKAGE}._config:DEFAULT_TURN_TIMEOUT_S",
        "GateConfig": f"{_PACKAGE}._config:GateConfig",
        "JudgeSettings": f"{_PACKAGE}:JudgeSettings",
        "LIMITS": f"{_PACKAGE}._config:LIMITS",
        "SPEED_NAMES": f"{_PACKAGE}._config:SPEED_NAMES",
        "SUBSET_GATES_CHOICES": f"{_PACKAGE}._config:SUBSET_GATES_CHOICES",
        "Settings": f"{_PACKAGE}:Settings",
        "check_limit": f"{_PACKAGE}._config:check_limit",
        "find_pyproject": f"{_PACKAGE}._config:find_pyproject",
        "load_settings": f"{_PACKAGE}:load_settings",
        "parse_bool_env": f"{_PACKAGE}._config:parse_bool_env",
        "parse_settings": f"{_PACKAGE}._config:parse_settings",
        "parse_shard": f"{_PACKAGE}._config:parse_shard",
        "parse_speed": f"{_PACKAGE}._config:parse_speed",
    },
    f"{_PACKAGE}.gates": {
        "ExitDecision": f"{_PACKAGE}._gates:ExitDecision",
        "GateLine": f"{_PACKAGE}._gates:GateLine",
        "GateResult": f"{_PACKAGE}._gates:GateResult",
        "decide_exit": f"{_PACKAGE}._gates:decide_exit",
        "evaluate_gate": f"{_PACKAGE}._gates:evaluate_gate",
        "evaluate_gates": f"{_PACKAGE}._gates:evaluate_gates",
        "is_member": f"{_PACKAGE}._gates:is_member",
    },
    f"{_PACKAGE}.loader": {
        "MAX_YAML_NODES": f"{_PACKAGE}._loader:MAX_YAML_NODES",
        "Presets": f"{_PACKAGE}._loader:Presets",
        "Subject": f"{_PACKAGE}._loader:Subject",
        "TRANSCRIPT_SUFFIXES": f"{_PACKAGE}._loader:TRANSCRIPT_SUFFIXES",
        "YamlDocument": f"{_PACKAGE}._loader:YamlDocument",
        "find_transcript_files": f"{_PACKAGE}._loader:find_transcript_files",
        "is_ignored_file": f"{_PACKAGE}._loader:is_ignored_file",
        "iter_audio_paths": f"{_PACKAGE}._loader:iter_audio_paths",
        "load_transcript_file": f"{_PACKAGE}:load_transcript_file",
        "load_transcript_text": f"{_PACKAGE}._loader:load_transcript_text",
        "load_transcripts": f"{_PACKAGE}:load_transcripts",
        "read_yaml_document": f"{_PACKAGE}._loader:read_yaml_document",
        "transcript_schema": f"{_PACKAGE}._loader:transcript_schema",
    },
    f"{_PACKAGE}.schema": {
        "PACKAGED_SCHEMA": f"{_PACKAGE}._schema:PACKAGED_SCHEMA",
        "TABLE_END": f"{_PACKAGE}._schema:TABLE_END",
        "TABLE_START": f"{_PACKAGE}._schema:TABLE_START",
        "build_schema": f"{_PACKAGE}._schema:build_schema",
        "expectations_table": f"{_PACKAGE}._schema:expectations_table",
        "reference_page": f"{_PACKAGE}._schema:reference_page",
        "render_schema": f"{_PACKAGE}._schema:render_schema",
        "replace_table": f"{_PACKAGE}._schema:replace_table",
        "schema_reference": f"{_PACKAGE}._schema:schema_reference",
    },
    f"{_PACKAGE}.expansion": {
        "SUFFIX_PATTERN": f"{_PACKAGE}._expansion:SUFFIX_PATTERN",
        "derive": f"{_PACKAGE}._expansion:derive",
        "expand": f"{_PACKAGE}:expand",
        "expand_cases": f"{_PACKAGE}._expansion:expand_cases",
        "expand_variants": f"{_PACKAGE}._expansion:expand_variants",
        "id_suffix": f"{_PACKAGE}._expansion:id_suffix",
    },
    f"{_PACKAGE}.evaluators.base": {
        "CheckSource": f"{_PACKAGE}.evaluators._base:CheckSource",
        "DeterministicEvaluator": f"{_PACKAGE}.evaluators._base:DeterministicEvaluator",
        "Evaluator": f"{_PACKAGE}.evaluators:Evaluator",
        "evaluate_safely": f"{_PACKAGE}.evaluators:evaluate_safely",
        "evaluator_name": f"{_PACKAGE}.evaluators:evaluator_name",
        "located": f"{_PACKAGE}.evaluators._base:located",
        "shorten": f"{_PACKAGE}.evaluators._base:shorten",
        "source_of": f"{_PACKAGE}.evaluators._base:source_of",
        "text_problems": f"{_PACKAGE}.evaluators._base:text_problems",
        "unobserved": f"{_PACKAGE}.evaluators._base:unobserved",
        "with_source": f"{_PACKAGE}.evaluators._base:with_source",
    },
    f"{_PACKAGE}.evaluators.contains": {
        "ContainsEvaluator": f"{_PACKAGE}.evaluators:ContainsEvaluator",
        "EvalResult": f"{_PACKAGE}.evaluators:EvalResult",
        "TurnContext": f"{_PACKAGE}:TurnContext",
    },
    f"{_PACKAGE}.evaluators.tool_call": {
        "EvalResult": f"{_PACKAGE}.evaluators:EvalResult",
        "ToolCallArgsEvaluator": f"{_PACKAGE}.evaluators:ToolCallArgsEvaluator",
        "ToolCallEvaluator": f"{_PACKAGE}.evaluators:ToolCallEvaluator",
        "TurnContext": f"{_PACKAGE}:TurnContext",
    },
    # Names public modules lost (served by the module's own __getattr__ through moved_attr).
    f"{_PACKAGE}.evaluators": {
        "build_evaluators": f"{_PACKAGE}.legacy:build_evaluators",
    },
    # A fixture check's result was ``Verdict`` (0.4): `Verdict` is the run's verdict alone now.
    f"{_PACKAGE}.voice": {
        "Verdict": f"{_PACKAGE}.voice:FixtureCheck",
    },
}
"""Old module -> {name: ``"module:attr"`` of its replacement, or ``"none: what instead"``}."""


def _replacement_text(target: str, name: str) -> str:
    if target.startswith("none:"):
        return target.removeprefix("none:").strip()
    module = target.partition(":")[0]
    attr = target.partition(":")[2]
    if attr != name and "._" not in module and module != f"{_PACKAGE}.legacy":
        return f"it is {attr} now: import {attr} from {module}"  # a rename
    if module == f"{_PACKAGE}.legacy" and attr == "build_evaluators":
        return (
            "a turn's Expect(...) decides its evaluators (the runner builds them); "
            f"{_PACKAGE}.legacy.build_evaluators keeps the earlier function"
        )
    if module == f"{_PACKAGE}.legacy":  # kept as code here: the public loader is the new home
        return f"use {_PACKAGE}.load_transcript_file(path) (it takes a Path)"
    if module == f"{_PACKAGE}.voice._speech" and attr == "PauseMarkupError":
        return f"catch {_PACKAGE}.TranscriptError, which a malformed pause marker raises"
    if "._" in module:  # no public home: say so, and where it resolves for now
        return f"it is no longer public (for now it is {module}.{attr}, which may change)"
    return f"import it from {module}"


def _resolve(target: str) -> Any:
    module, _, attr = target.partition(":")
    return getattr(importlib.import_module(module), attr)


class _MovedModule(types.ModuleType):
    """An old module path: each attribute warns once per use and returns the new object."""

    def __init__(self, name: str, names: dict[str, str]) -> None:
        super().__init__(name, f"Moved: the names of {name} live elsewhere now (see each warning).")
        self.__all__ = sorted(names)
        self._names = names

    def __getattr__(self, attr: str) -> Any:
        names: dict[str, str] = self.__dict__.get("_names", {})
        if attr.startswith("__") or attr not in names:
            known = ", ".join(sorted(names)) or "none"
            raise AttributeError(
                f"module {self.__name__!r} has no attribute {attr!r}; the old names it still "
                f"serves, each with a DeprecationWarning, are: {known}"
            )
        target = names[attr]
        if target.startswith("none:"):
            raise AttributeError(
                f"{self.__name__}.{attr} is no longer public: {_replacement_text(target, attr)}"
            )
        warnings.warn(
            f"{self.__name__}.{attr} moved; {_replacement_text(target, attr)}",
            DeprecationWarning,
            stacklevel=2,
        )
        return _resolve(target)

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self.__dict__.get("_names", {})})


class _LegacyFinder(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Serves the old module paths of `MOVED` that no longer exist as files."""

    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _MovedModule(spec.name, MOVED[spec.name])

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run: the module's attributes resolve on use."""


_FINDER = _LegacyFinder()


def moved_attr(module: str, name: str) -> Any:
    """``module.name`` for a public module that lost ``name``: warns as a moved module's
    attribute does (at its caller's caller: the user's line) and returns the replacement."""
    target = MOVED[module][name]
    warnings.warn(
        f"{module}.{name} moved; {_replacement_text(target, name)}",
        DeprecationWarning,
        stacklevel=3,
    )
    return _resolve(target)


def install() -> None:
    """Put the finder on ``sys.meta_path`` (idempotent; the package calls it at import)."""
    if not any(isinstance(f, _LegacyFinder) for f in sys.meta_path):
        sys.meta_path.append(_FINDER)


def build_evaluators(expect: Any, judge_settings: Any = None) -> list[Any]:
    """The earlier ``evaluators.build_evaluators``: the evaluators a turn's `Expect` asks for."""
    from ._expectations import build_evaluators as build

    return build(expect, judge_settings)


def load_transcript(
    path: str | PathLike[str], *, default_threshold: float = 0.8, default_runs: int = 1
) -> Transcript:
    """The earlier package's ``yaml_loader.load_transcript``: read and validate one transcript.

    Prefer `pytest_agent_eval.load_transcript_file`; this one also takes a ``str`` path.

    Raises:
        TranscriptError: With file, line, field path and a hint; a YAML syntax error too.
    """
    from ._loader import load_transcript_file

    return load_transcript_file(
        Path(path), default_threshold=default_threshold, default_runs=default_runs
    )
