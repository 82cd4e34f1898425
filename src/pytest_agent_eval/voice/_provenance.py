"""Where a WAV fixture came from: this tool (sidecar, or the key inside the WAV), the earlier
pytest-agent-eval (a bare-hash sidecar), or someone's recording (neither).

The synthesizer writes its key into the WAV itself, as a JSON comment (``ICMT`` in a
``LIST/INFO`` chunk after the samples, which soundfile reads back as ``comment``). So a WAV
whose sidecar was lost (a CI cache keyed on ``*.wav`` alone, a copy that skipped dot-hash files)
is still known as synthesized, and is made again rather than trusted as a recording. The comment
also holds the sha256 of the samples, so an edited WAV that kept the comment is not mistaken
for what was synthesized.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import wave
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import AudioFixtureError
from ._clip import MAX_COMMENT_BYTES, read_wav_comment
from ._sidecar import Sidecar, TimedPhrase, fixture_key, read_legacy_hash, read_sidecar

__all__ = [
    "PROVENANCE_MARKER",
    "EmbeddedRecord",
    "Origin",
    "Provenance",
    "embedded_comment",
    "parse_embedded",
    "pcm_sha256",
    "read_embedded",
    "read_provenance",
]

PROVENANCE_MARKER = "pytest-agent-eval"
"""Value of ``made_by`` in the comment: what tells our comment from any other."""


class Origin(enum.Enum):
    """Who made a fixture's WAV, as far as the files can prove it."""

    SYNTHESIZED = "synthesized"
    """This tool, with its sidecar beside the WAV."""
    EMBEDDED = "synthesized, sidecar lost"
    """This tool (its key is inside the WAV), but the sidecar is gone."""
    LEGACY = "made by pytest-agent-eval 0.3"
    """The earlier package: its sidecar holds only a hash of the text."""
    RECORDING = "recording"
    """Neither sidecar nor provenance: a human recording, say. Never written over or pruned."""

    @property
    def is_ours(self) -> bool:
        """True for files a synthesizer made (this tool or its predecessor)."""
        return self is not Origin.RECORDING


@dataclass(frozen=True, slots=True, kw_only=True)
class EmbeddedRecord:
    """The provenance a synthesized WAV carries inside itself."""

    key: str
    format: int
    inputs: Mapping[str, Any]
    pcm_sha256: str
    """sha256 of the ``data`` chunk's bytes (the samples as written)."""
    text: str | None = None
    """The text, when it fit in the comment (libsndfile reads about 2 KB of it)."""
    phrase_times: tuple[tuple[float, float], ...] = ()
    """Start and end of each phrase of ``text``, when they fit."""

    @property
    def key_is_consistent(self) -> bool:
        """True when ``key`` is the key of the recorded text (if any) and inputs."""
        return self.text is None or self.key == fixture_key(
            self.text, self.inputs, format_version=self.format
        )

    def made_from(self, text: str) -> bool:
        """True when this WAV was synthesized from exactly ``text`` (the key proves it even
        when the text itself did not fit in the comment)."""
        return self.key == fixture_key(text, self.inputs, format_version=self.format)

    def as_sidecar(self, text: str) -> Sidecar:
        """The record as a `Sidecar` for ``text`` (which it must be `made_from`)."""
        from ._speech import phrases_of

        phrases: tuple[TimedPhrase, ...] = ()
        texts = phrases_of(text)
        if len(texts) == len(self.phrase_times):
            phrases = tuple(
                TimedPhrase(t, s, e) for t, (s, e) in zip(texts, self.phrase_times, strict=True)
            )
        return Sidecar(
            text=text, inputs=dict(self.inputs), key=self.key, format=self.format, phrases=phrases
        )


def embedded_comment(sidecar: Sidecar, pcm_sha256: str) -> str:
    """The JSON comment a synthesized WAV carries: ``sidecar``'s key and inputs, the samples'
    hash, then the text and the phrase timings while they fit in `MAX_COMMENT_BYTES`."""
    doc: dict[str, Any] = {
        "made_by": PROVENANCE_MARKER,
        "format": sidecar.format,
        "key": sidecar.key,
        "inputs": dict(sidecar.inputs),
        "pcm_sha256": pcm_sha256,
        "text": sidecar.text,
        "phrases": [[p.start_s, p.end_s] for p in sidecar.phrases],
    }
    for optional in (None, "phrases", "text"):
        if optional is not None:
            doc.pop(optional)
        comment = json.dumps(doc, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
        if len(comment.encode("utf-8")) <= MAX_COMMENT_BYTES:
            return comment
    raise AudioFixtureError(
        "the fixture's inputs are too long to embed in the WAV "
        f"(more than {MAX_COMMENT_BYTES} bytes without the text)"
    )


def parse_embedded(comment: str | None) -> EmbeddedRecord | None:
    """The record in a WAV comment, or None when the comment is not ours."""
    if not comment or PROVENANCE_MARKER not in comment:
        return None
    try:
        doc = json.loads(comment)
    except json.JSONDecodeError:
        return None
    if not isinstance(doc, Mapping) or doc.get("made_by") != PROVENANCE_MARKER:
        return None
    key, fmt, inputs, pcm = (
        doc.get("key"),
        doc.get("format"),
        doc.get("inputs"),
        doc.get("pcm_sha256"),
    )
    text, times = doc.get("text"), doc.get("phrases") or []
    if not (
        isinstance(key, str)
        and isinstance(fmt, int)
        and isinstance(inputs, Mapping)
        and isinstance(pcm, str)
        and (text is None or isinstance(text, str))
        and isinstance(times, list)
    ):
        return None
    try:
        phrase_times = tuple((float(s), float(e)) for s, e in times)
    except (TypeError, ValueError):
        phrase_times = ()
    return EmbeddedRecord(
        key=key, format=fmt, inputs=dict(inputs), pcm_sha256=pcm, text=text,
        phrase_times=phrase_times,
    )  # fmt: skip


def read_embedded(wav_path: str | os.PathLike[str]) -> EmbeddedRecord | None:
    """The provenance inside ``wav_path``, or None (no comment of ours, or not readable audio).
    Reads the header and chunks, not the samples."""
    return parse_embedded(read_wav_comment(wav_path))


def pcm_sha256(wav_path: str | os.PathLike[str]) -> str | None:
    """sha256 of a PCM WAV's sample bytes (its ``data`` chunk); None when it is not a PCM WAV
    Python's ``wave`` module reads."""
    try:
        with wave.open(os.fspath(wav_path), "rb") as handle:
            return hashlib.sha256(handle.readframes(handle.getnframes())).hexdigest()
    except (wave.Error, EOFError, OSError):
        return None


@dataclass(frozen=True, slots=True, kw_only=True)
class Provenance:
    """What the files say about who made a WAV."""

    origin: Origin
    sidecar: Sidecar | None = None
    """The sidecar of this tool (`Origin.SYNTHESIZED`)."""
    embedded: EmbeddedRecord | None = None
    """The record inside the WAV (`Origin.EMBEDDED`)."""
    legacy_hash: str | None = None
    """The earlier package's bare hash (`Origin.LEGACY`)."""
    sidecar_error: str | None = None
    """Why the sidecar beside the WAV could not be read (`Origin.SYNTHESIZED`, no sidecar)."""


def read_provenance(wav_path: str | os.PathLike[str]) -> Provenance:
    """Who made ``wav_path``: the sidecar decides when there is one (one small read, the WAV is
    not opened); otherwise the WAV's own comment (its header and chunks, not the samples)."""
    path = Path(wav_path)
    try:
        sidecar = read_sidecar(path)
    except AudioFixtureError as exc:
        return Provenance(origin=Origin.SYNTHESIZED, sidecar_error=str(exc))
    if sidecar is not None:
        return Provenance(origin=Origin.SYNTHESIZED, sidecar=sidecar)
    legacy = read_legacy_hash(path)
    if legacy is not None:
        return Provenance(origin=Origin.LEGACY, legacy_hash=legacy)
    if path.is_file():
        embedded = read_embedded(path)
        if embedded is not None:
            return Provenance(origin=Origin.EMBEDDED, embedded=embedded)
    return Provenance(origin=Origin.RECORDING)
