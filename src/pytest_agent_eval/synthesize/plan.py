"""Which fixtures a set of transcripts needs, with what inputs, and whether each is up to date.

Planning reads only YAML-derived objects and the small sidecar files; checking a fixture stats
its WAV but never reads it, so a warm run over an up-to-date suite costs one ``stat`` and one
small JSON read per fixture.
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..audio_fixtures import (
    FORMAT_VERSION,
    PostProcess,
    Sidecar,
    describe_changes,
    fixture_key,
    read_sidecar,
    synthesize_command,
)
from ..errors import AudioFixtureError, ConfigError, MissingExtraError
from ..models import Transcript, VoiceSettings
from .backend import DEFAULT_BACKEND, TTSBackend, get_backend

__all__ = [
    "BUILTIN_DEFAULTS",
    "DEFAULT_SAMPLE_RATE",
    "INTERRUPTED",
    "RECORDING_NOTE",
    "FixtureProblem",
    "FixtureSpec",
    "FixtureState",
    "FixtureStatus",
    "Plan",
    "Planner",
    "check_fixture",
    "display_path",
    "fixture_problems",
    "sidecar_for",
]

DEFAULT_SAMPLE_RATE = 16000
"""Fixtures are 16 kHz unless configured otherwise: the rate speech recognizers (Whisper,
telephony STT) take natively, a third the size of 48 kHz in a repository, and enough for
speech. Adapters that stream at another rate resample (the LiveKit adapter does)."""

BUILTIN_DEFAULTS = VoiceSettings(backend=DEFAULT_BACKEND, sample_rate=DEFAULT_SAMPLE_RATE)
"""The bottom layer under ``[tool.agent_eval.voice]``, the transcript's and the turn's."""


RECORDING_NOTE = "no sidecar: a recording, used as it is and never synthesized over"
INTERRUPTED = "an earlier synthesis of it was interrupted"


def display_path(path: Path | str | None) -> str:
    """``path`` relative to the working folder when it is under it, for messages."""
    if path is None:
        return "<no file>"
    p = Path(path)
    try:
        return str(p.relative_to(Path.cwd()))
    except ValueError:
        return str(p)


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureSpec:
    """One WAV fixture to have: where, what it says, and every input that shapes it."""

    wav: Path
    text: str
    settings: VoiceSettings
    """Fully resolved (the backend's defaults filled in)."""
    inputs: Mapping[str, Any]
    """What goes into the key and the sidecar."""
    key: str
    transcript_id: str
    yaml_path: Path | None
    turn_index: int
    """0-based index of the first turn that uses this fixture."""
    line: int | None = None

    @property
    def where(self) -> str:
        """``file:line, transcript 'id', turn N`` for messages."""
        head = display_path(self.yaml_path)
        if self.line:
            head += f":{self.line}"
        return f"{head}, transcript {self.transcript_id!r}, turn {self.turn_index + 1}"


class FixtureState(enum.Enum):
    """Whether a fixture can be used as it is."""

    FRESH = "up to date"
    MISSING = "missing"
    STALE = "stale"
    INVALID = "invalid"
    """The turn's voice settings cannot be used (unknown backend or voice, not installed)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureProblem:
    """A fixture a transcript needs that is missing, stale, or cannot be made as configured."""

    transcript_id: str
    yaml_path: Path | None
    turn_index: int
    """0-based; messages say ``turn N`` with N = turn_index + 1."""
    wav: Path
    state: FixtureState
    reasons: tuple[str, ...]
    line: int | None = None

    @property
    def reason(self) -> str:
        """The reasons as one phrase."""
        return "; ".join(self.reasons)

    @property
    def fix_command(self) -> str:
        """The exact command that makes the fixture."""
        if self.state is FixtureState.INVALID:
            return ""
        return synthesize_command(display_path(self.yaml_path) if self.yaml_path else None)

    @property
    def message(self) -> str:
        """What a user reads: where, what, and the command that fixes it."""
        head = display_path(self.yaml_path)
        if self.line:
            head += f":{self.line}"
        where = f"{head}: transcript {self.transcript_id!r}, turn {self.turn_index + 1}"
        what = f"audio fixture {display_path(self.wav)} is {self.state.value} ({self.reason})"
        if self.state is FixtureState.INVALID:
            return f"{where}: {what}"
        return f"{where}: {what}. Fix: {self.fix_command}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureStatus:
    """A spec and what `check_fixture` found."""

    spec: FixtureSpec
    state: FixtureState
    reasons: tuple[str, ...] = ()

    @property
    def is_fresh(self) -> bool:
        return self.state is FixtureState.FRESH

    @property
    def is_recording(self) -> bool:
        """A WAV without a sidecar: used as it is, never synthesized over."""
        return self.reasons == (RECORDING_NOTE,)

    def problem(self) -> FixtureProblem:
        """This status as a `FixtureProblem`."""
        s = self.spec
        return FixtureProblem(
            transcript_id=s.transcript_id,
            yaml_path=s.yaml_path,
            turn_index=s.turn_index,
            wav=s.wav,
            state=self.state,
            reasons=self.reasons,
            line=s.line,
        )


@dataclass(slots=True)
class Plan:
    """The fixtures of a set of transcripts: one spec per WAV path, and the turns that could not
    be planned (bad settings, or two turns wanting different audio at one path)."""

    specs: list[FixtureSpec] = field(default_factory=list)
    problems: list[FixtureProblem] = field(default_factory=list)


class Planner:
    """Turns transcripts into `FixtureSpec`s; caches backends and resolved settings."""

    def __init__(
        self,
        defaults: VoiceSettings | None = None,
        *,
        overrides: VoiceSettings | None = None,
        postprocess: PostProcess | None = None,
    ) -> None:
        """
        Args:
            defaults: ``[tool.agent_eval.voice]`` (layered over `BUILTIN_DEFAULTS`).
            overrides: Command-line settings; they win over every layer.
            postprocess: Post-processing parameters (part of every key).
        """
        self.defaults = (defaults or VoiceSettings()).merged_over(BUILTIN_DEFAULTS)
        self.overrides = overrides
        self.postprocess = postprocess or PostProcess()
        self._backends: dict[str, TTSBackend] = {}
        self._resolved: dict[tuple[Any, ...], tuple[VoiceSettings, dict[str, Any]]] = {}

    def backend(self, name: str) -> TTSBackend:
        """The (cached) backend instance called ``name``."""
        if name not in self._backends:
            self._backends[name] = get_backend(name)
        return self._backends[name]

    def settings_for(self, transcript: Transcript, turn_index: int) -> VoiceSettings:
        """The layered, not yet resolved, settings of one turn."""
        turn = transcript.turns[turn_index]
        merged = self.defaults
        for layer in (transcript.voice, turn.voice, self.overrides):
            if layer is not None:
                merged = layer.merged_over(merged)
        return merged

    def resolve(self, settings: VoiceSettings) -> tuple[VoiceSettings, dict[str, Any]]:
        """The backend-resolved settings and the key inputs for ``settings``.

        Raises:
            ConfigError, MissingExtraError: From the backend.
        """
        cache_key = tuple(settings.to_dict().values())
        if cache_key not in self._resolved:
            name = settings.backend or DEFAULT_BACKEND
            backend = self.backend(name)
            resolved = backend.resolve(settings)
            sample_rate = resolved.sample_rate or DEFAULT_SAMPLE_RATE
            resolved = VoiceSettings(**{**resolved.to_dict(), "sample_rate": sample_rate})
            inputs = {
                "backend": name,
                "backend_version": backend.version(),
                "model": resolved.model,
                "voice": resolved.voice,
                "speed": resolved.speed,
                "seed": resolved.seed,
                "sample_rate": sample_rate,
                "language": resolved.language,
                "postprocess": self.postprocess.to_dict(),
            }
            self._resolved[cache_key] = (resolved, inputs)
        return self._resolved[cache_key]

    def plan(self, transcripts: Iterable[Transcript]) -> Plan:
        """Specs for every ``audio:`` turn, deduplicated by WAV path."""
        plan = Plan()
        by_wav: dict[Path, FixtureSpec] = {}
        for transcript in transcripts:
            for index, turn in enumerate(transcript.turns):
                if turn.audio is None:
                    continue
                wav = _absolute_wav(transcript, turn.audio)
                layered = self.settings_for(transcript, index)
                try:
                    resolved, inputs = self.resolve(layered)
                except (ConfigError, MissingExtraError) as exc:
                    plan.problems.append(
                        _problem(transcript, index, wav, FixtureState.INVALID, str(exc))
                    )
                    continue
                spec = FixtureSpec(
                    wav=wav,
                    text=turn.user,
                    settings=resolved,
                    inputs=inputs,
                    key=fixture_key(turn.user, inputs),
                    transcript_id=transcript.id,
                    yaml_path=transcript.path,
                    turn_index=index,
                    line=turn.line,
                )
                first = by_wav.get(wav)
                if first is None:
                    by_wav[wav] = spec
                    plan.specs.append(spec)
                elif first.key != spec.key:
                    plan.problems.append(
                        _problem(
                            transcript,
                            index,
                            wav,
                            FixtureState.INVALID,
                            f"{first.where} uses the same WAV with different text or voice; "
                            "give one of them another 'audio:' path",
                        )
                    )
        return plan


def _absolute_wav(transcript: Transcript, audio: str | os.PathLike[str]) -> Path:
    wav = Path(audio).expanduser()
    if not wav.is_absolute() and transcript.path is not None:
        wav = Path(transcript.path).parent / wav
    return wav.absolute()


def _problem(
    transcript: Transcript, index: int, wav: Path, state: FixtureState, reason: str
) -> FixtureProblem:
    return FixtureProblem(
        transcript_id=transcript.id,
        yaml_path=transcript.path,
        turn_index=index,
        wav=wav,
        state=state,
        reasons=(reason,),
        line=transcript.turns[index].line,
    )


def check_fixture(spec: FixtureSpec) -> FixtureStatus:
    """Compare a fixture on disk with its spec: one ``stat`` and one sidecar read, no audio."""
    try:
        size = spec.wav.stat().st_size
    except FileNotFoundError:
        return FixtureStatus(spec=spec, state=FixtureState.MISSING, reasons=("WAV missing",))
    try:
        sidecar = read_sidecar(spec.wav)
    except AudioFixtureError as exc:
        return FixtureStatus(
            spec=spec, state=FixtureState.STALE, reasons=(f"sidecar unreadable: {exc}",)
        )
    if sidecar is None:
        # A WAV nobody synthesized (a human recording): not ours to judge or overwrite.
        return FixtureStatus(spec=spec, state=FixtureState.FRESH, reasons=(RECORDING_NOTE,))
    if sidecar.pending:
        return FixtureStatus(spec=spec, state=FixtureState.STALE, reasons=(INTERRUPTED,))
    if sidecar.key == spec.key:
        reasons: list[str] = []
    else:
        reasons = describe_changes(sidecar, spec.text, spec.inputs, format_version=FORMAT_VERSION)
    if not reasons and sidecar.wav_bytes is not None and sidecar.wav_bytes != size:
        reasons = [
            f"WAV changed since it was synthesized ({size} bytes, the sidecar says "
            f"{sidecar.wav_bytes})"
        ]
    if reasons:
        return FixtureStatus(spec=spec, state=FixtureState.STALE, reasons=tuple(reasons))
    return FixtureStatus(spec=spec, state=FixtureState.FRESH)


def fixture_problems(
    transcript: Transcript,
    defaults: VoiceSettings | None = None,
    *,
    planner: Planner | None = None,
    strict: bool = True,
) -> list[FixtureProblem]:
    """Every audio fixture of ``transcript`` that is missing, stale or cannot be made.

    For the pytest plugin: call it before a voice transcript's conversation starts and fail (or
    skip) with each problem's ``.message``, which ends with the exact command to fix it. Cheap:
    no audio is read and no engine is loaded.

    Args:
        transcript: A loaded transcript.
        defaults: ``Settings.voice`` (``[tool.agent_eval.voice]``).
        planner: Reuse one `Planner` across transcripts to share its caches (``defaults`` is
            then ignored).
        strict: True (``--check``): every input of the key must match, engine version and
            post-processing included, so the backend must be installed. False (running evals
            on cached fixtures): the fixture is usable when its recorded text and every voice
            setting the transcript asks for match; engine versions are not compared and no
            backend needs to be installed, so CI can replay committed or cached fixtures
            without the engine, its exact version, network or keys.
    """
    planner = planner or Planner(defaults)
    if not strict:
        return _replay_problems(transcript, planner)
    plan = planner.plan([transcript])
    statuses = [check_fixture(spec) for spec in plan.specs]
    problems = plan.problems + [s.problem() for s in statuses if not s.is_fresh]
    return sorted(problems, key=lambda p: p.turn_index)


def _replay_problems(transcript: Transcript, planner: Planner) -> list[FixtureProblem]:
    problems: list[FixtureProblem] = []
    for index, turn in enumerate(transcript.turns):
        if turn.audio is None:
            continue
        wav = _absolute_wav(transcript, turn.audio)
        reasons = _replay_reasons(wav, turn.user, planner.settings_for(transcript, index))
        if reasons:
            state = FixtureState.MISSING if reasons == ["WAV missing"] else FixtureState.STALE
            problems.append(_problem(transcript, index, wav, state, "; ".join(reasons)))
    return problems


def _replay_reasons(wav: Path, text: str, wanted: VoiceSettings) -> list[str]:
    try:
        size = wav.stat().st_size
    except FileNotFoundError:
        return ["WAV missing"]
    try:
        sidecar = read_sidecar(wav)
    except AudioFixtureError as exc:
        return [f"sidecar unreadable: {exc}"]
    if sidecar is None:
        return []  # a recording: used as it is
    if sidecar.pending:
        return [INTERRUPTED]
    reasons = [] if sidecar.text == text else ["text changed"]
    for name, value in wanted.to_dict().items():
        recorded = sidecar.inputs.get(name)
        if value is not None and recorded != value:
            reasons.append(f"{name.replace('_', ' ')} changed: {recorded!r} -> {value!r}")
    if not reasons and sidecar.wav_bytes is not None and sidecar.wav_bytes != size:
        reasons.append(
            f"WAV changed since it was synthesized ({size} bytes, the sidecar says "
            f"{sidecar.wav_bytes})"
        )
    return reasons


def sidecar_for(
    spec: FixtureSpec, *, wav_bytes: int, wav_sha256: str, duration_s: float
) -> Sidecar:
    """The sidecar recording ``spec``'s inputs for a WAV just written."""
    return Sidecar(
        text=spec.text,
        inputs=dict(spec.inputs),
        key=spec.key,
        wav_bytes=wav_bytes,
        wav_sha256=wav_sha256,
        duration_s=round(duration_s, 4),
    )
