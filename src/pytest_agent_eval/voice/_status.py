"""The one definition of a fixture's state (fresh, missing, stale, invalid) and of what a WAV
proves it says.

`judge_fixture` is the only place that decides whether a fixture can be used: ``--check``, the
synthesizer, ``--verify`` and the pytest gate all call it, so they cannot disagree on a
recording, a hand-edited sidecar or a WAV that lost its sidecar. It runs in one of two modes:

- *strict* (``key`` given: ``--check`` and the synthesizer): every input of the key must match,
  engine version and post-processing included;
- *replay* (no ``key``: pytest before a run): the recorded text and every voice setting the
  transcript asks for must match; engine versions are not compared, so CI can replay
  committed or cached fixtures without the engine.

Everything else is the same in both modes. `prove_fixture_text` answers a different question
with the same provenance: may a fixture-text STT answer with this turn's text?
"""

from __future__ import annotations

import enum
import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AudioFixtureError
from ._provenance import Origin, Provenance, pcm_sha256, read_provenance
from ._sidecar import FORMAT_VERSION, Sidecar, TimedWord, describe_changes, legacy_text_matches
from ._validate import RECORDING_FIX, TOO_LONG_FIX, audio_problem, max_fixture_s

__all__ = [
    "INTERRUPTED",
    "LEGACY_NOTE",
    "MARKUP_FIX",
    "RECORDING_NOTE",
    "TIMINGS_FIX",
    "UNTIMED",
    "FixtureCheck",
    "FixtureState",
    "judge_fixture",
    "prove_fixture_text",
]

RECORDING_NOTE = "no sidecar: a recording, used as it is and never synthesized over"
INTERRUPTED = "an earlier synthesis of it was interrupted"
LEGACY_NOTE = (
    "made by pytest-agent-eval 0.3 (its .wav.hash holds only a hash of the text), used as a "
    "recording of that text; re-synthesize it with --force for full provenance"
)
MARKUP_FIX = "fix the pause marker in the turn's 'user' text"
UNTIMED = "its sidecar has no word timings (made before they were recorded)"
TIMINGS_FIX = (
    "Add them with python -m pytest_agent_eval.synthesize_audio PATH, PATH being the "
    "transcripts (YAML files or their folder) that use the fixture: the WAV is kept byte for "
    "byte, only its sidecar gains the timings"
)


class FixtureState(enum.Enum):
    """Whether a fixture can be used as it is."""

    FRESH = "up to date"
    MISSING = "missing"
    STALE = "stale"
    INVALID = "invalid"
    """Cannot be used and synthesizing will not help: unusable voice settings or markup, a
    broken recording, a fixture over the duration cap."""


@dataclass(frozen=True, slots=True, kw_only=True)
class FixtureCheck:
    """What `judge_fixture` found."""

    state: FixtureState
    origin: Origin | None = None
    """Who made the WAV; None when it is missing."""
    reasons: tuple[str, ...] = ()
    note: str | None = None
    """A remark on a usable fixture (a predecessor's fixture), worth one line."""
    fix: str | None = None
    """What fixes it, when the synthesize command does not (a recording, bad markup)."""
    record: Sidecar | None = None
    """The sidecar of a synthesized fixture."""
    untimed: bool = False
    """Usable, but its sidecar has no word timings (`UNTIMED`): the synthesize command adds
    them without touching the WAV, and ``--check`` asks for that."""


def _settings_changes(recorded: Mapping[str, Any], wanted: Mapping[str, Any]) -> list[str]:
    return [
        f"{name.replace('_', ' ')} changed: {recorded.get(name)!r} -> {value!r}"
        for name, value in wanted.items()
        if value is not None and recorded.get(name) != value
    ]


def _too_long(seconds: float, limit: float) -> str:
    return f"{seconds:.1f} s long, over the {limit:g} s limit for a fixture"


def judge_fixture(
    wav: str | os.PathLike[str],
    text: str,
    *,
    key: str | None = None,
    inputs: Mapping[str, Any] | None = None,
    wanted: Mapping[str, Any] | None = None,
    max_duration_s: float | None = None,
) -> FixtureCheck:
    """Decide whether the fixture at ``wav`` can stand for a turn saying ``text``.

    Args:
        wav: The WAV path.
        text: The turn's ``user`` text, markup included.
        key: Strict mode: the fixture key the turn wants (`fixture_key` of text and inputs).
        inputs: Strict mode: the inputs behind ``key``, to say what changed.
        wanted: Replay mode: the voice settings the transcript asks for (None values are not
            compared).
        max_duration_s: The duration cap; None for the process's `max_fixture_s`.

    Cost: one ``stat`` and one small sidecar read for a synthesized fixture; the WAV's header
    and chunks when it has no sidecar; for a recording, also a level scan that stops at the
    first voiced frame.
    """
    from ._speech import PauseMarkupError, split_speech

    path = Path(wav)
    limit = max_fixture_s() if max_duration_s is None else max_duration_s
    try:
        split_speech(text)
    except PauseMarkupError as exc:
        return FixtureCheck(state=FixtureState.INVALID, reasons=(str(exc),), fix=MARKUP_FIX)
    try:
        size = path.stat().st_size
    except FileNotFoundError:
        return FixtureCheck(state=FixtureState.MISSING, reasons=("WAV missing",))
    prov = read_provenance(path)
    origin = prov.origin
    if prov.sidecar_error is not None:
        return FixtureCheck(
            state=FixtureState.STALE, origin=origin, reasons=(f"sidecar unreadable: {prov.sidecar_error}",)
        )  # fmt: skip
    if origin is Origin.LEGACY:
        assert prov.legacy_hash is not None
        if not legacy_text_matches(prov.legacy_hash, text):
            return FixtureCheck(
                state=FixtureState.STALE,
                origin=origin,
                reasons=("text changed (its sidecar is pytest-agent-eval 0.3's hash of the text)",),
            )
        problem = audio_problem(path, max_duration_s=limit)
        if problem is not None:  # a synthesizer's file, so the synthesizer may replace it
            return FixtureCheck(
                state=FixtureState.STALE, origin=origin, reasons=(f"WAV {problem}",)
            )
        return FixtureCheck(state=FixtureState.FRESH, origin=origin, note=LEGACY_NOTE)
    if origin is Origin.RECORDING:
        problem = audio_problem(path, max_duration_s=limit)
        if problem is not None:
            fix = TOO_LONG_FIX if " long, over the " in problem else RECORDING_FIX
            return FixtureCheck(
                state=FixtureState.INVALID, origin=origin, reasons=(f"a recording that {problem}",),
                fix=fix,
            )  # fmt: skip
        return FixtureCheck(state=FixtureState.FRESH, origin=origin, reasons=(RECORDING_NOTE,))
    if origin is Origin.EMBEDDED:
        assert prov.embedded is not None
        made = "/".join(str(prov.embedded.inputs.get(k)) for k in ("backend", "voice"))
        return FixtureCheck(
            state=FixtureState.STALE,
            origin=origin,
            reasons=(
                f"its sidecar is missing; the WAV carries this tool's provenance ({made}), so it "
                "is a fixture this tool made, to be synthesized again (it is not taken for a "
                "recording)",
            ),
        )
    sidecar = prov.sidecar
    assert sidecar is not None
    if sidecar.pending:
        return FixtureCheck(state=FixtureState.STALE, origin=origin, reasons=(INTERRUPTED,))
    if not sidecar.key_is_consistent:
        return FixtureCheck(
            state=FixtureState.STALE,
            origin=origin,
            reasons=("sidecar edited by hand: its key does not match its own text and inputs",),
        )
    if key is not None:
        reasons = (
            []
            if sidecar.key == key
            else describe_changes(sidecar, text, inputs or {}, format_version=FORMAT_VERSION)
        )
    else:
        reasons = [] if sidecar.text == text else ["text changed"]
        reasons += _settings_changes(sidecar.inputs, wanted or {})
    if not reasons and sidecar.wav_bytes is not None and sidecar.wav_bytes != size:
        reasons = [
            f"WAV changed since it was synthesized ({size} bytes, the sidecar says "
            f"{sidecar.wav_bytes})"
        ]
    if reasons:
        return FixtureCheck(
            state=FixtureState.STALE, origin=origin, reasons=tuple(reasons), record=sidecar
        )
    if sidecar.duration_s is not None and sidecar.duration_s > limit:
        return FixtureCheck(
            state=FixtureState.INVALID,
            origin=origin,
            reasons=(_too_long(sidecar.duration_s, limit),),
            fix="shorten the turn's text or pauses, or raise max_fixture_s in [tool.agent_eval]",
            record=sidecar,
        )
    return FixtureCheck(
        state=FixtureState.FRESH, origin=origin, record=sidecar, untimed=not sidecar.words
    )


# -- what a fixture-text STT may answer ---------------------------------------------------------


def _refuse(wav: Path, why: str) -> AudioFixtureError:
    return AudioFixtureError(
        f"FixtureTextSTT cannot answer for audio fixture {wav}: {why}. It answers with a turn's "
        "text only when the fixture's provenance proves the WAV was synthesized from it; "
        "re-synthesize the fixture (python -m pytest_agent_eval.synthesize_audio), or use "
        "WhisperSTT to transcribe recordings"
    )


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def prove_fixture_text(wav: str | os.PathLike[str], text: str) -> tuple[TimedWord, ...]:
    """The timed words ``wav`` speaks, when its provenance proves it was synthesized from
    ``text`` and its sidecar says where each word ends.

    Proof is the sidecar (not pending, its key consistent, its text saying the same words as
    ``text``, the WAV's bytes the ones it hashed), or, without a sidecar, the key inside the
    WAV (made from ``text``, the samples the ones it hashed). Words are compared after pause
    markers are removed, so ``text`` may be the turn's ``user`` or its spoken text.

    Raises:
        AudioFixtureError: One line saying why nothing proves it (a recording, a predecessor's
            fixture, a WAV made from other text, a changed WAV), pointing to ``WhisperSTT``;
            or, for a fixture whose sidecar has no word timings (made before they were
            recorded, or one whose sidecar was lost), naming the command that adds them.
    """
    from ._speech import spoken_text

    path = Path(wav)
    prov: Provenance = read_provenance(path)
    try:
        words = spoken_text(text)
    except ValueError as exc:
        raise _refuse(path, f"the turn's text is malformed ({exc})") from None
    if prov.origin is Origin.RECORDING:
        raise _refuse(
            path, "it is a recording (no sidecar, no provenance), so nothing proves what it says"
        )
    if prov.origin is Origin.LEGACY:
        raise _refuse(
            path,
            "it was made by pytest-agent-eval 0.3, whose sidecar holds only a hash of the text, "
            "so nothing proves what the WAV says",
        )
    if prov.sidecar_error is not None:
        raise _refuse(path, f"its sidecar cannot be read ({prov.sidecar_error})")
    if prov.origin is Origin.EMBEDDED:
        record = prov.embedded
        assert record is not None
        if record.pcm_sha256 != pcm_sha256(path):
            raise _refuse(path, "its samples changed since it was synthesized")
        if record.text is not None:
            if not record.key_is_consistent:
                raise _refuse(path, "its embedded provenance does not match its own text")
            if spoken_text(record.text) != words:
                raise _refuse(path, f"it was synthesized from {record.text!r}, not from {text!r}")
            source = record.text
        elif record.made_from(text):
            source = text
        else:
            raise _refuse(path, f"it was not synthesized from {text!r}")
        sidecar = record.as_sidecar(source)
    else:
        found = prov.sidecar
        assert found is not None
        sidecar = found
        if sidecar.pending:
            raise _refuse(path, "its synthesis was interrupted")
        if not sidecar.key_is_consistent:
            raise _refuse(path, "its sidecar was edited by hand (the key does not match its text)")
        if spoken_text(sidecar.text) != words:
            raise _refuse(path, f"it was synthesized from {sidecar.text!r}, not from {text!r}")
        if sidecar.wav_sha256 is not None and sidecar.wav_sha256 != _file_sha256(path):
            raise _refuse(path, "the WAV changed since it was synthesized")
    if prov.origin is Origin.EMBEDDED:
        raise _refuse(
            path,
            "its sidecar is missing, and with it the word timings that say which words the "
            "audio the STT is given holds (the key inside the WAV proves its text, not when "
            "each word is said)",
        )
    if not sidecar.words:
        raise AudioFixtureError(
            f"FixtureTextSTT cannot answer for audio fixture {path}: {UNTIMED}, so the STT "
            f"cannot tell which words the audio it is given holds. {TIMINGS_FIX}"
        )
    return sidecar.words
