"""The ``<name>.wav.hash`` sidecar: which inputs made a WAV, and the key that sums them up.

A sidecar is a small JSON file written after its WAV. It records the exact text, every input
that shapes the audio (backend and its version, model, voice, speed, seed, sample rate,
post-processing) and the WAV's size and sha256. The key is a sha256 over the format version,
the text and the inputs, so any change to them makes a different key; the readable copy of the
inputs lets `describe_changes` say *why* a fixture is stale.
"""

from __future__ import annotations

import hashlib
import json
import os
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
    "describe_changes",
    "fixture_key",
    "read_sidecar",
    "sidecar_path",
    "write_sidecar",
]

FORMAT_VERSION = 1
"""Bumped whenever the pipeline changes in a way the inputs do not show; every fixture made by
an older format is then stale."""

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

    def to_dict(self) -> dict[str, Any]:
        """The JSON document written to disk."""
        doc: dict[str, Any] = {"pending": True} if self.pending else {}
        return doc | {
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
        return cls(
            text=text,
            inputs=dict(inputs),
            key=key,
            format=fmt,
            wav_bytes=wav.get("bytes"),
            wav_sha256=wav.get("sha256"),
            duration_s=wav.get("duration_s"),
            pending=bool(data.get("pending", False)),
        )

    def to_json(self) -> str:
        """Pretty JSON (stable key order, so committed sidecars diff cleanly)."""
        return json.dumps(self.to_dict(), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


def read_sidecar(wav_path: str | os.PathLike[str]) -> Sidecar | None:
    """The sidecar of ``wav_path``, or None when there is none.

    Raises:
        AudioFixtureError: When the sidecar exists but cannot be read (for example one written by
            an older version of this tool, which held only a bare hash).
    """
    path = sidecar_path(wav_path)
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except (OSError, UnicodeDecodeError) as exc:
        raise AudioFixtureError(f"{path}: cannot read the sidecar ({exc})") from exc
    try:
        return Sidecar.from_dict(json.loads(raw))
    except (json.JSONDecodeError, ValueError) as exc:
        raise AudioFixtureError(
            f"{path}: not a sidecar this version understands ({exc}); it may come from an older "
            "version. The fixture counts as stale: python -m pytest_agent_eval.synthesize_audio "
            "re-creates it"
        ) from exc


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
