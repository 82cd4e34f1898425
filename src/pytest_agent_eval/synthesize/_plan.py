"""Which fixtures a set of transcripts needs, with what inputs, and whether each is up to date.

Planning reads only YAML-derived objects and the small sidecar files; checking a fixture stats
its WAV but never reads it, so a warm run over an up-to-date suite costs one ``stat`` and one
small JSON read per fixture.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, MissingExtraError
from ..models import Transcript, VoiceSettings
from ..models._far_end import far_end_wav, spoken_lines
from ..voice._fixtures import (
    ALIGNMENT,
    INTERRUPTED,
    LEGACY_NOTE,
    MARKUP_FIX,
    RECORDING_NOTE,
    FixtureCheck,
    FixtureState,
    Origin,
    PostProcess,
    Sidecar,
    TimedPhrase,
    TimedWord,
    fixture_key,
    judge_fixture,
    max_fixture_s,
    synthesize_command,
)
from ..voice._speech import (
    TURN_TAKING_MARKUP_VERSION,
    Pause,
    PauseMarkupError,
    has_turn_taking_markup,
    split_speech,
)
from ..voice._tts._registry import DEFAULT_BACKEND, TTSBackend, get_backend

__all__ = [
    "BUILTIN_DEFAULTS",
    "DEFAULT_SAMPLE_RATE",
    "INTERRUPTED",
    "LEGACY_NOTE",
    "RECORDING_NOTE",
    "FixtureNoteWarning",
    "FixtureProblem",
    "FixtureSpec",
    "FixtureState",
    "FixtureStatus",
    "Plan",
    "Planner",
    "check_fixture",
    "display_path",
    "fixture_problems",
    "fixture_statuses",
    "sidecar_for",
]

DEFAULT_SAMPLE_RATE = 16000
"""Fixtures are 16 kHz unless configured otherwise: the rate speech recognizers (Whisper,
telephony STT) take natively, a third the size of 48 kHz in a repository, and enough for
speech. Adapters that stream at another rate resample (the LiveKit adapter does)."""

BUILTIN_DEFAULTS = VoiceSettings(backend=DEFAULT_BACKEND, sample_rate=DEFAULT_SAMPLE_RATE)
"""The bottom layer under ``[tool.agent_eval.voice]``, the transcript's and the turn's."""


class FixtureNoteWarning(UserWarning):
    """Kept so that a ``filterwarnings`` entry naming it still imports; nothing raises it any
    more. A usable fixture worth a remark (one made by pytest-agent-eval 0.3) is a note, not
    a warning: `fixture_statuses` returns it, and the pytest plugin shows it in the terminal
    summary and the reports, so ``filterwarnings = ["error"]`` projects run."""


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
    part: str = ""
    """What of the transcript says it when not a turn: a far end's line
    (``far_end.greeting``); empty for a turn's fixture."""

    @property
    def label(self) -> str:
        """``turn N``, or the far end's line (``far_end.greeting``)."""
        return self.part or f"turn {self.turn_index + 1}"

    @property
    def where(self) -> str:
        """``file:line, transcript 'id', turn N`` for messages."""
        head = display_path(self.yaml_path)
        if self.line:
            head += f":{self.line}"
        return f"{head}, transcript {self.transcript_id!r}, {self.label}"


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
    fix: str | None = None
    """What fixes it when the synthesize command does not (a recording: re-record it; a
    malformed pause marker: edit the text). None: `fix_command`, or nothing for INVALID."""
    origin: Origin | None = None
    """Who made the WAV (None when it is missing or the turn could not be planned)."""
    part: str = ""
    """A far end's line (``far_end.greeting``) when the fixture is not a turn's."""

    @property
    def label(self) -> str:
        """``turn N``, or the far end's line (``far_end.greeting``)."""
        return self.part or f"turn {self.turn_index + 1}"

    @property
    def reason(self) -> str:
        """The reasons as one phrase."""
        return "; ".join(self.reasons)

    @property
    def fix_command(self) -> str:
        """The exact command that makes the fixture ("" when synthesizing cannot fix it)."""
        if self.state is FixtureState.INVALID or self.fix is not None:
            return ""
        return synthesize_command(display_path(self.yaml_path) if self.yaml_path else None)

    @property
    def message(self) -> str:
        """What a user reads: where, what, and what fixes it (for synthesized fixtures, the
        exact command; for a recording, re-recording it)."""
        head = display_path(self.yaml_path)
        if self.line:
            head += f":{self.line}"
        where = f"{head}: transcript {self.transcript_id!r}, {self.label}"
        what = f"audio fixture {display_path(self.wav)} is {self.state.value} ({self.reason})"
        fix = self.fix or self.fix_command
        return f"{where}: {what}. Fix: {fix}" if fix else f"{where}: {what}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureStatus:
    """A spec and what `check_fixture` found."""

    spec: FixtureSpec
    state: FixtureState
    reasons: tuple[str, ...] = ()
    origin: Origin | None = None
    note: str | None = None
    """A remark on a usable fixture (made by pytest-agent-eval 0.3)."""
    fix: str | None = None
    untimed: bool = False
    """Usable, but its sidecar has no word timings: the synthesizer adds them (the WAV is
    kept), and ``--check`` reports it until then."""

    @classmethod
    def of(cls, spec: FixtureSpec, verdict: FixtureCheck) -> FixtureStatus:
        """``spec`` with what `judge_fixture` found."""
        return cls(
            spec=spec, state=verdict.state, reasons=verdict.reasons, origin=verdict.origin,
            note=verdict.note, fix=verdict.fix, untimed=verdict.untimed,
        )  # fmt: skip

    @property
    def is_fresh(self) -> bool:
        return self.state is FixtureState.FRESH

    @property
    def is_recording(self) -> bool:
        """A WAV with neither sidecar nor provenance: used as it is, never synthesized over."""
        return self.origin is Origin.RECORDING

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
            fix=self.fix,
            origin=self.origin,
            part=s.part,
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
        """Specs for every ``audio:`` turn, and every spoken line of a far end heard as audio
        (``far_end: {as: audio}``), deduplicated by WAV path."""
        plan = Plan()
        by_wav: dict[Path, FixtureSpec] = {}
        for transcript in transcripts:
            for index, turn in enumerate(transcript.turns):
                if turn.audio is None:
                    continue
                wav = _absolute_wav(transcript, turn.audio)
                layered = self.settings_for(transcript, index)
                self._add(plan, by_wav, transcript, index, turn.user, wav, layered, turn.line)
            far = transcript.far_end
            if far is None or far.played_as != "audio":
                continue
            line = far_end_line(transcript)
            for part, text in spoken_lines(far):
                wav = _absolute_wav(transcript, _far_end_wav(transcript, part))
                layered = self.far_end_settings(transcript)
                self._add(plan, by_wav, transcript, 0, text, wav, layered, line, f"far_end.{part}")
        return plan

    def far_end_settings(self, transcript: Transcript) -> VoiceSettings:
        """The layered settings of a far end's spoken lines: the transcript's voice."""
        merged = self.defaults
        for layer in (transcript.voice, self.overrides):
            if layer is not None:
                merged = layer.merged_over(merged)
        return merged

    def _add(
        self,
        plan: Plan,
        by_wav: dict[Path, FixtureSpec],
        transcript: Transcript,
        index: int,
        text: str,
        wav: Path,
        layered: VoiceSettings,
        line: int | None,
        part: str = "",
    ) -> None:
        def problem(reason: str, fix: str | None = None) -> FixtureProblem:
            return _problem(
                transcript, index, wav, FixtureState.INVALID, reason, fix=fix, line=line, part=part
            )

        markup = _markup_problem(text)
        if markup is not None:
            plan.problems.append(problem(markup, MARKUP_FIX))
            return
        try:
            resolved, inputs = self.resolve(layered)
        except (ConfigError, MissingExtraError) as exc:
            plan.problems.append(problem(str(exc)))
            return
        if has_turn_taking_markup(text):
            inputs = {**inputs, "turn_taking_markup": TURN_TAKING_MARKUP_VERSION}
        spec = FixtureSpec(
            wav=wav,
            text=text,
            settings=resolved,
            inputs=inputs,
            key=fixture_key(text, inputs),
            transcript_id=transcript.id,
            yaml_path=transcript.path,
            turn_index=index,
            line=line,
            part=part,
        )
        first = by_wav.get(wav)
        if first is None:
            by_wav[wav] = spec
            plan.specs.append(spec)
        elif first.key != spec.key:
            plan.problems.append(
                problem(
                    f"{first.where} uses the same WAV with different text or voice; "
                    "give one of them another 'audio:' path"
                )
            )


def far_end_line(transcript: Transcript) -> int | None:
    """The line of ``transcript``'s ``far_end:`` (its location ``file:line``), or None."""
    where = transcript.locations.get("far_end", "")
    number = where.rpartition(":")[2]
    return int(number) if number.isdigit() else None


def _absolute_wav(transcript: Transcript, audio: str | os.PathLike[str]) -> Path:
    wav = Path(audio).expanduser()
    if not wav.is_absolute() and transcript.path is not None:
        wav = Path(transcript.path).parent / wav
    return wav.absolute()


def _markup_problem(text: str) -> str | None:
    """Why ``text``'s pause markers cannot be rendered, or None."""
    try:
        parts = split_speech(text)
    except PauseMarkupError as exc:
        return str(exc)
    silence = sum(p.seconds for p in parts if isinstance(p, Pause))
    if silence > max_fixture_s():
        return (
            f"its pauses add up to {silence:g} s, over the {max_fixture_s():g} s limit for a "
            "fixture (max_fixture_s in [tool.agent_eval])"
        )
    return None


def _problem(
    transcript: Transcript,
    index: int,
    wav: Path,
    state: FixtureState,
    reason: str,
    *,
    fix: str | None = None,
    line: int | None = None,
    part: str = "",
) -> FixtureProblem:
    return FixtureProblem(
        transcript_id=transcript.id,
        yaml_path=transcript.path,
        turn_index=index,
        wav=wav,
        state=state,
        reasons=(reason,),
        line=line if line is not None or part else transcript.turns[index].line,
        fix=fix,
        part=part,
    )


def check_fixture(spec: FixtureSpec) -> FixtureStatus:
    """Compare a fixture on disk with its spec, strictly (every input of the key): the one
    definition in `judge_fixture`. A synthesized fixture costs one ``stat`` and one sidecar
    read; a WAV without a sidecar is opened for its header (and scanned, for a recording)."""
    verdict = judge_fixture(spec.wav, spec.text, key=spec.key, inputs=spec.inputs)
    return FixtureStatus.of(spec, verdict)


def fixture_statuses(
    transcript: Transcript, planner: Planner, *, strict: bool = True
) -> tuple[list[FixtureProblem], list[str]]:
    """The problems of ``transcript``'s fixtures and the notes on usable ones (see
    `fixture_problems` for ``strict``)."""
    problems: list[FixtureProblem] = []
    notes: list[str] = []
    if strict:
        plan = planner.plan([transcript])
        problems += plan.problems
        for spec in plan.specs:
            status = check_fixture(spec)
            if not status.is_fresh:
                problems.append(status.problem())
            elif status.note:
                notes.append(f"{display_path(spec.wav)}: {status.note}")
        return sorted(problems, key=lambda p: p.turn_index), notes
    for index, turn in enumerate(transcript.turns):
        if turn.audio is None:
            continue
        wav = _absolute_wav(transcript, turn.audio)
        wanted = planner.settings_for(transcript, index).to_dict()
        verdict = judge_fixture(wav, turn.user, wanted=wanted)
        if verdict.state is not FixtureState.FRESH:
            problems.append(
                FixtureProblem(
                    transcript_id=transcript.id,
                    yaml_path=transcript.path,
                    turn_index=index,
                    wav=wav,
                    state=verdict.state,
                    reasons=verdict.reasons,
                    line=turn.line,
                    fix=verdict.fix,
                    origin=verdict.origin,
                )
            )
        elif verdict.note:
            notes.append(f"{display_path(wav)}: {verdict.note}")
    far = transcript.far_end
    if far is None or far.played_as != "audio":
        return problems, notes
    wanted = planner.far_end_settings(transcript).to_dict()
    for part, text in spoken_lines(far):
        wav = _absolute_wav(transcript, _far_end_wav(transcript, part))
        verdict = judge_fixture(wav, text, wanted=wanted)
        if verdict.state is not FixtureState.FRESH:
            problems.append(
                FixtureProblem(
                    transcript_id=transcript.id,
                    yaml_path=transcript.path,
                    turn_index=0,
                    wav=wav,
                    state=verdict.state,
                    reasons=verdict.reasons,
                    line=far_end_line(transcript),
                    fix=verdict.fix,
                    origin=verdict.origin,
                    part=f"far_end.{part}",
                )
            )
        elif verdict.note:
            notes.append(f"{display_path(wav)}: {verdict.note}")
    return problems, notes


def _far_end_wav(transcript: Transcript, part: str) -> str:
    """Where a far end's line ``part`` is, by the id the transcript was written with (a
    variant's and a case's lines are the transcript's own: `far_end_fixture`)."""
    return far_end_wav(transcript.base_id or transcript.id, part)


def fixture_problems(
    transcript: Transcript,
    defaults: VoiceSettings | None = None,
    *,
    planner: Planner | None = None,
    strict: bool = True,
) -> list[FixtureProblem]:
    """Every audio fixture of ``transcript`` that is missing, stale or cannot be used.

    For the pytest plugin: call it before a voice transcript's conversation starts and fail (or
    skip) with each problem's ``.message``, which ends with what fixes it (the exact command
    for a synthesized fixture; "re-record or replace it" for a recording). Cheap: no engine is
    loaded, and only WAVs without a sidecar are opened. A usable fixture made by
    pytest-agent-eval 0.3 is not a problem; `fixture_statuses` also returns its note.

    The decision is `judge_fixture`'s, the same one ``--check`` and the synthesizer use.

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
    problems, _notes = fixture_statuses(transcript, planner or Planner(defaults), strict=strict)
    return problems


def sidecar_for(
    spec: FixtureSpec,
    *,
    wav_bytes: int | None,
    wav_sha256: str | None,
    duration_s: float,
    phrases: tuple[TimedPhrase, ...] = (),
    words: tuple[TimedWord, ...] = (),
) -> Sidecar:
    """The sidecar recording ``spec``'s inputs (and phrase and word timings) for a WAV just
    written."""
    return Sidecar(
        text=spec.text,
        inputs=dict(spec.inputs),
        key=spec.key,
        wav_bytes=wav_bytes,
        wav_sha256=wav_sha256,
        duration_s=round(duration_s, 4),
        phrases=phrases,
        words=words,
        word_alignment=ALIGNMENT if words else None,
    )
