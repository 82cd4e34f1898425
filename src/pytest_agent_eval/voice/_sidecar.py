"""The ``<name>.wav.hash`` sidecar: which inputs made a WAV, and the key that sums them up.

A sidecar is a small JSON file written after its WAV. It records the exact text, every input
that shapes the audio (backend and its version, model, voice, speed, seed, sample rate,
post-processing), where each phrase and each word sits in the audio, and the WAV's size and
sha256. The key
is a sha256 over the format version, the text and the inputs, so any change to them makes a
different key; the readable copy of the inputs lets `describe_changes` say *why* a fixture is
stale. The same key travels inside the WAV (see `_provenance`), so a WAV that lost its sidecar
is still known as synthesized.

The earlier pytest-agent-eval (0.3) wrote a sidecar holding only ``sha256(user.strip())`` in
hex; `read_legacy_hash` reads that one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._atomic import write_atomic
from ..errors import AudioFixtureError

__all__ = [
    "FORMAT_VERSION",
    "SIDECAR_SUFFIX",
    "Sidecar",
    "TimedPhrase",
    "TimedWord",
    "describe_changes",
    "fixture_key",
    "legacy_text_matches",
    "read_legacy_hash",
    "read_sidecar",
    "sidecar_path",
    "write_sidecar",
]

FORMAT_VERSION = 2
"""Bumped whenever the pipeline changes in a way the inputs do not show; every fixture made by
an older format is then stale for ``--check`` and the synthesizer (a replay in pytest does not
compare it). 2: one engine call per phrase with a fixed pause between sentences, pause
markers, phrase timings, provenance inside the WAV."""

_LEGACY_HASH = re.compile(r"\s*([0-9a-f]{64})\s*")

SIDECAR_SUFFIX = ".hash"


def sidecar_path(wav_path: str | os.PathLike[str]) -> Path:
    """``booking.wav`` -> ``booking.wav.hash``, in the same folder."""
    p = Path(wav_path)
    return p.with_name(p.name + SIDECAR_SUFFIX)


def fixture_key(
    text: str, inputs: Mapping[str, Any], *, format_version: int = FORMAT_VERSION
) -> str:
    """sha256 (hex) of the format version, the exact text and the inputs (canonical JSON)."""
    payload = json.dumps(
        {"format": format_version, "text": text, "inputs": dict(inputs)},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    )
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class TimedPhrase:
    """One phrase of a synthesized fixture and where it sits in the WAV."""

    text: str
    start_s: float
    """Start of the phrase's audio, in seconds from the start of the WAV."""
    end_s: float
    """End of the phrase's audio."""

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "start_s": self.start_s, "end_s": self.end_s}


@dataclass(frozen=True, slots=True)
class TimedWord:
    """One word of a synthesized fixture and where it sits in the WAV (`_words` measures it)."""

    text: str
    start_s: float
    end_s: float
    """When the word's audio is over: a stand-in STT may hand the word out only once the audio
    it was given reaches this point."""

    def to_dict(self) -> dict[str, Any]:
        return {"text": self.text, "start_s": self.start_s, "end_s": self.end_s}


@dataclass(frozen=True, slots=True, kw_only=True)
class Sidecar:
    """What a fixture's sidecar says about its WAV."""

    text: str
    """The exact text the WAV speaks (a turn's ``user``)."""
    inputs: Mapping[str, Any] = field(default_factory=dict)
    """Every input that shaped the audio: ``backend``, ``backend_version``, ``model``, ``voice``,
    ``speed``, ``seed``, ``sample_rate``, ``language``, ``postprocess``."""
    key: str = ""
    """`fixture_key` of ``text`` and ``inputs``; filled in when left empty."""
    format: int = FORMAT_VERSION
    wav_bytes: int | None = None
    """Size of the WAV when it was written; a cheap stat tells if the WAV was replaced since."""
    wav_sha256: str | None = None
    """sha256 of the WAV file's bytes."""
    duration_s: float | None = None
    """Length of the audio in seconds."""
    pending: bool = False
    """Written just before the WAV is renamed into place and replaced by the final sidecar
    right after: a pending sidecar left behind means that write was interrupted."""
    phrases: tuple[TimedPhrase, ...] = ()
    """Each phrase (sentence, or words between pause markers) and its place in the WAV; empty
    in sidecars of format 1, which did not record them."""
    words: tuple[TimedWord, ...] = ()
    """Each word and its place in the WAV, measured once when the fixture was made (or added
    later by the synthesize command, which leaves the WAV as it is); empty in sidecars written
    before word timings existed. Not part of the key: they describe the audio, not its inputs."""
    word_alignment: str | None = None
    """How ``words`` were measured (`pytest_agent_eval.voice._words.ALIGNMENT`)."""
    events: tuple[Mapping[str, Any], ...] = ()
    """Where each marked element (filler, pause, noise, backchannel, side speech) landed in the
    WAV: ``kind``, ``start_s``, ``end_s`` and ``text`` or ``sound``. Written only for texts with
    turn-taking markers; like ``words``, not part of the key."""

    def __post_init__(self) -> None:
        if not self.key:
            object.__setattr__(
                self, "key", fixture_key(self.text, self.inputs, format_version=self.format)
            )

    @property
    def backend(self) -> str | None:
        """The TTS backend that made the WAV."""
        return self.inputs.get("backend")

    @property
    def voice(self) -> str | None:
        """The voice that made the WAV."""
        return self.inputs.get("voice")

    @property
    def sample_rate(self) -> int | None:
        """Sample rate of the WAV in Hz."""
        return self.inputs.get("sample_rate")

    @property
    def key_is_consistent(self) -> bool:
        """True when ``key`` is the key of this record's own text and inputs: False for a
        sidecar edited by hand (its text or inputs changed without a new synthesis)."""
        return self.key == fixture_key(self.text, self.inputs, format_version=self.format)

    def to_dict(self) -> dict[str, Any]:
        """The JSON document written to disk."""
        doc: dict[str, Any] = {"pending": True} if self.pending else {}
        doc |= {
            "format": self.format,
            "key": self.key,
            "text": self.text,
            "inputs": dict(self.inputs),
            "wav": {
                "bytes": self.wav_bytes,
                "sha256": self.wav_sha256,
                "duration_s": self.duration_s,
            },
        }
        if self.phrases:
            doc["phrases"] = [p.to_dict() for p in self.phrases]
        if self.words:
            doc["words"] = [w.to_dict() for w in self.words]
            doc["word_alignment"] = self.word_alignment
        if self.events:
            doc["events"] = [dict(e) for e in self.events]
        return doc

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Sidecar:
        """Inverse of `to_dict`.

        Raises:
            ValueError: When a required field is missing or has the wrong type.
        """
        if not isinstance(data, Mapping):
            raise ValueError("not a JSON object")
        text, key, inputs = data.get("text"), data.get("key"), data.get("inputs", {})
        fmt = data.get("format")
        if not isinstance(text, str):
            raise ValueError("'text' is missing or not a string")
        if not isinstance(key, str) or not key:
            raise ValueError("'key' is missing or not a string")
        if not isinstance(fmt, int):
            raise ValueError("'format' is missing or not an integer")
        if not isinstance(inputs, Mapping):
            raise ValueError("'inputs' is not an object")
        wav = data.get("wav") or {}
        if not isinstance(wav, Mapping):
            raise ValueError("'wav' is not an object")
        return cls(
            text=text,
            inputs=dict(inputs),
            key=key,
            format=fmt,
            wav_bytes=wav.get("bytes"),
            wav_sha256=wav.get("sha256"),
            duration_s=wav.get("duration_s"),
            pending=bool(data.get("pending", False)),
            phrases=_phrases(data.get("phrases") or []),
            words=_words(data.get("words") or []),
            word_alignment=_optional_str(data.get("word_alignment"), "word_alignment"),
            events=_events(data.get("events") or []),
        )

    def to_json(self) -> str:
        """Pretty JSON (stable key order, so committed sidecars diff cleanly)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def _phrases(raw: Any) -> tuple[TimedPhrase, ...]:
    if not isinstance(raw, list):
        raise ValueError("'phrases' is not a list")
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise ValueError("a phrase is not an object")
        text, start, end = item.get("text"), item.get("start_s"), item.get("end_s")
        if not isinstance(text, str) or not all(isinstance(v, int | float) for v in (start, end)):
            raise ValueError("a phrase needs 'text', 'start_s' and 'end_s'")
        assert isinstance(start, int | float) and isinstance(end, int | float)
        out.append(TimedPhrase(text, float(start), float(end)))
    return tuple(out)


def _events(raw: Any) -> tuple[Mapping[str, Any], ...]:
    if not isinstance(raw, list) or not all(isinstance(e, Mapping) for e in raw):
        raise ValueError("'events' is not a list of objects")
    return tuple(dict(e) for e in raw)


def _words(raw: Any) -> tuple[TimedWord, ...]:
    if not isinstance(raw, list):
        raise ValueError("'words' is not a list")
    out = []
    for item in raw:
        if not isinstance(item, Mapping):
            raise ValueError("a word is not an object")
        text, start, end = item.get("text"), item.get("start_s"), item.get("end_s")
        if not isinstance(text, str) or not all(isinstance(v, int | float) for v in (start, end)):
            raise ValueError("a word needs 'text', 'start_s' and 'end_s'")
        assert isinstance(start, int | float) and isinstance(end, int | float)
        out.append(TimedWord(text, float(start), float(end)))
    return tuple(out)


def _optional_str(raw: Any, name: str) -> str | None:
    if raw is not None and not isinstance(raw, str):
        raise ValueError(f"'{name}' is not a string")
    return raw


def _read_text(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AudioFixtureError(f"{path}: cannot read the sidecar ({exc})") from None


def read_legacy_hash(wav_path: str | os.PathLike[str]) -> str | None:
    """The bare sha256 (hex) a sidecar of the earlier pytest-agent-eval holds, or None when the
    sidecar is missing or is not of that kind."""
    raw = _read_text(sidecar_path(wav_path))
    match = _LEGACY_HASH.fullmatch(raw) if raw is not None else None
    return match.group(1) if match else None


def legacy_text_matches(digest: str, text: str) -> bool:
    """True when ``digest`` is what the earlier package wrote for ``text``: the sha256 of the
    UTF-8 bytes of the stripped ``user`` (the unstripped text is accepted too)."""
    return digest in {
        hashlib.sha256(text.strip().encode("utf-8")).hexdigest(),
        hashlib.sha256(text.encode("utf-8")).hexdigest(),
    }


def read_sidecar(wav_path: str | os.PathLike[str]) -> Sidecar | None:
    """The sidecar of ``wav_path``, or None when there is none.

    A bare-hash sidecar of the earlier pytest-agent-eval is not a record of what the WAV says,
    so it reads as None too; `read_legacy_hash` reads it.

    Raises:
        AudioFixtureError: When the sidecar exists but cannot be read.
    """
    path = sidecar_path(wav_path)
    raw = _read_text(path)
    if raw is None or _LEGACY_HASH.fullmatch(raw):
        return None
    try:
        return Sidecar.from_dict(json.loads(raw))
    except (json.JSONDecodeError, ValueError) as exc:
        raise AudioFixtureError(f"{path}: not a sidecar this version understands ({exc})") from None


def write_sidecar(wav_path: str | os.PathLike[str], sidecar: Sidecar) -> Path:
    """Write the sidecar of ``wav_path`` atomically (temp file + rename). Returns its path."""
    path = sidecar_path(wav_path)
    write_atomic(path, sidecar.to_json())
    return path


def _show(value: Any) -> str:
    return "unset" if value is None else str(value)


def describe_changes(
    old: Sidecar, text: str, inputs: Mapping[str, Any], *, format_version: int = FORMAT_VERSION
) -> list[str]:
    """Why a fixture recorded in ``old`` no longer matches ``text`` and ``inputs``.

    Returns:
        Short reasons, e.g. ``["text changed", "voice changed: heart -> joe"]``; empty when the
        key matches.
    """
    if old.key == fixture_key(text, inputs, format_version=format_version):
        return []
    reasons: list[str] = []
    if old.format != format_version:
        reasons.append(f"fixture format changed: {old.format} -> {format_version}")
    if old.text != text:
        reasons.append("text changed")
    for name in sorted(set(old.inputs) | set(inputs)):
        before, after = old.inputs.get(name), inputs.get(name)
        if before == after:
            continue
        if isinstance(before, Mapping) or isinstance(after, Mapping):
            b, a = dict(before or {}), dict(after or {})
            for sub in sorted(set(b) | set(a)):
                if b.get(sub) != a.get(sub):
                    reasons.append(
                        f"{name}.{sub} changed: {_show(b.get(sub))} -> {_show(a.get(sub))}"
                    )
        else:
            reasons.append(f"{name.replace('_', ' ')} changed: {_show(before)} -> {_show(after)}")
    if not reasons:
        reasons.append("key does not match the recorded inputs (sidecar edited by hand?)")
    return reasons
